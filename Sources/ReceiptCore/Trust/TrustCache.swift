import Crypto
import Foundation
import SwiftASN1
import Synchronization
import X509

/// Remembers parsed certificates, issuer-signature results and the verifier's time-independent
/// verdict on each chain, so a fleet that sees the same few Apple intermediates millions of
/// times builds and checks each chain once.
///
/// Why caching a chain is exact: the verifier's answer for a (roots, leaf, intermediates) set
/// depends on time only through certificate expiry. ``TrustEvaluator`` therefore asks it with
/// RFC 5280 judged at an instant when every certificate of the candidate chain was valid
/// (``StructuralRFC5280Policy``), caches that answer, and judges validity at the signing time
/// on every call (the "validity" step). For one chain, "RFC 5280 at signing time" is exactly
/// "structural RFC 5280" and "every certificate valid at signing time". Signature results do
/// not depend on time either. Keys hold the full DER (and the roots' fingerprint), so a
/// tampered copy of a known certificate never hits the entry of the genuine one.
///
/// For a JWS the whole time-independent part is kept per `x5c` chain (``JWSChain``): the
/// certificates read, the x5c steps, the leaf's P-256 key and the worded chain steps. A token
/// whose chain was seen before costs its own signature check and the time-dependent steps
/// (validity at `signedDate`, the expiry warning) only. The key is the exact DER of every
/// certificate and the anchors' fingerprint, so the entry is exactly what a cold evaluation
/// would compute, and a token signed by a different key never shares one.
///
/// Every table is bounded: when one grows past its limit it is cleared, so hostile input
/// cannot grow memory without bound.
public final class TrustCache: Sendable {
    private struct State {
        // Keyed by `Data`: its hash reads a bounded prefix, equality compares all bytes, so
        // lookups stay cheap for 1-2 KB certificates.
        var certificates: [Data: Certificate] = [:]
        var descriptions: [Data: [Field]] = [:]
        var signatures: [SignaturePair: Bool] = [:]
        var chains: [ChainKey: ChainAnalysis] = [:]
        var jwsChains: [JWSChainKey: JWSChain] = [:]
    }

    private let state = Mutex(State())
    private let limit: Int

    struct SignaturePair: Hashable {
        var issuer: Data
        var subject: Data
    }

    /// One chain question: which verifier (Apple's, or the StoreKit test root's), the roots,
    /// the leaf and the intermediates offered, in order.
    struct ChainKey: Hashable, Sendable {
        var purpose: UInt8
        var anchors: Data
        var leaf: Data
        var intermediates: [Data]
    }

    /// A JWS `x5c` chain, DER as the header carries it, and the roots it is judged against.
    /// Hashes every byte: a hostile stream of chains alike in a prefix cannot pile them into
    /// one bucket.
    struct JWSChainKey: Hashable, Sendable {
        var anchors: Data
        var certificates: [[UInt8]]

        /// Every byte, in bulk (an array's own hash feeds the hasher one element at a time).
        func hash(into hasher: inout Hasher) {
            anchors.withUnsafeBytes { hasher.combine(bytes: $0) }
            hasher.combine(certificates.count)
            for der in certificates {
                hasher.combine(der.count)
                der.withUnsafeBytes { hasher.combine(bytes: $0) }
            }
        }
    }

    /// How many entries each table holds (for tests of the bound).
    struct Sizes: Equatable {
        var certificates: Int
        var descriptions: Int
        var signatures: Int
        var chains: Int
        var jwsChains: Int
    }

    var sizes: Sizes {
        state.withLock {
            Sizes(
                certificates: $0.certificates.count, descriptions: $0.descriptions.count, signatures: $0.signatures.count,
                chains: $0.chains.count, jwsChains: $0.jwsChains.count)
        }
    }

    public init(limit: Int = 4096) {
        self.limit = limit
    }

    private func remember<Key: Hashable & Sendable, Value: Sendable>(
        _ table: WritableKeyPath<State, [Key: Value]> & Sendable, _ key: Key, _ value: Value
    ) {
        state.withLock { state in
            if state[keyPath: table].count >= limit { state[keyPath: table].removeAll(keepingCapacity: true) }
            state[keyPath: table][key] = value
        }
    }

    func certificate(_ der: [UInt8]) throws -> Certificate {
        let key = Data(der)
        if let cached = state.withLock({ $0.certificates[key] }) { return cached }
        let parsed = try Certificate(derEncoded: der)
        remember(\.certificates, key, parsed)
        return parsed
    }

    /// The subject, issuer, serial and validity of a certificate, as report details; keyed by
    /// the DER the caller already holds, so a lookup costs no re-encoding.
    func details(_ cert: Certificate, der: [UInt8]) -> [Field] {
        let key = Data(der)
        if let cached = state.withLock({ $0.descriptions[key] }) { return cached }
        let fields = [
            Field(name: "subject", value: cert.subject.description),
            Field(name: "issuer", value: cert.issuer.description),
            Field(name: "serial", value: cert.serialText),
            Field(name: "valid", value: cert.validityText),
        ]
        remember(\.descriptions, key, fields)
        return fields
    }

    /// Whether `issuer`'s key verifies the signature on `subject`.
    func issuerSigned(_ subject: Certificate, subjectDER: [UInt8], by issuer: Certificate, issuerDER: [UInt8]) -> Bool {
        let key = SignaturePair(issuer: Data(issuerDER), subject: Data(subjectDER))
        if let cached = state.withLock({ $0.signatures[key] }) { return cached }
        let result = issuer.publicKey.isValidSignature(subject.signature, for: subject)
        remember(\.signatures, key, result)
        return result
    }

    /// The cached reading of a JWS chain, or `read()`'s, remembered.
    func jwsChain(_ key: JWSChainKey, read: () async -> JWSChain) async -> JWSChain {
        if let cached = state.withLock({ $0.jwsChains[key] }) { return cached }
        let chain = await read()
        remember(\.jwsChains, key, chain)
        return chain
    }

    /// Stores the entry again with its Apple chain judged (`chain.apple` set).
    func update(_ key: JWSChainKey, _ chain: JWSChain) {
        remember(\.jwsChains, key, chain)
    }

    /// The cached analysis for `key`, or `compute()`'s, remembered.
    func chain(_ key: ChainKey, compute: () async -> ChainAnalysis) async -> ChainAnalysis {
        if let cached = state.withLock({ $0.chains[key] }) { return cached }
        let analysis = await compute()
        remember(\.chains, key, analysis)
        return analysis
    }
}
