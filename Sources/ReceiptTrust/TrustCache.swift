import Crypto
import Foundation
import ReceiptCore
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
/// Every table is bounded, in entries and in bytes (``byteLimit`` over all tables, counting
/// the DER each entry holds): when one would go past its limit everything is cleared, so
/// hostile input cannot grow memory without bound.
///
/// What a JWS brings is remembered only once its signature verified with its own leaf key
/// (``JWSTrustCheck`` judges a token whose signature fails through ``readOnly``, which reads
/// these tables but adds nothing to them): a stream of forged or unsigned tokens costs work,
/// never memory.
public final class TrustCache: Sendable {
    fileprivate struct State {
        // Keyed by `Data`: its hash reads a bounded prefix, equality compares all bytes, so
        // lookups stay cheap for 1-2 KB certificates.
        var certificates: [Data: Certificate] = [:]
        var descriptions: [Data: [Field]] = [:]
        var signatures: [SignaturePair: Bool] = [:]
        var chains: [ChainKey: ChainAnalysis] = [:]
        var jwsChains: [CertificateChainKey: JWSChain] = [:]
        /// A receipt's Apple chain judged apart from time, keyed by its signer's certificate
        /// then every certificate the receipt carries.
        var receiptChains: [CertificateChainKey: JudgedChain] = [:]
        /// The JWS chain found or added last, compared before hashing the chain's 3 KB of DER:
        /// a fleet's tokens come one signing chain after another.
        var lastJWSChain: (key: CertificateChainKey, chain: JWSChain)?
        /// The issuer name a receipt's signer info gave last, read: a folder's receipts name
        /// one signer. One entry, matched on its exact DER.
        var lastSignerIssuer: (der: [UInt8], name: DistinguishedName)?
        /// The bytes the entries hold, roughly (their keys' DER and a fixed cost each).
        var bytes = 0
    }

    /// The tables, shared between a cache and its ``readOnly`` view.
    fileprivate final class Storage: Sendable {
        let state = Mutex(State())
    }

    private let storage: Storage
    private let limit: Int
    /// The most bytes all tables hold together.
    public let byteLimit: Int
    /// False for a ``readOnly`` view: lookups only.
    private let remembers: Bool

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

    /// A chain of DER certificates and the roots it is judged against: a JWS's `x5c` as the
    /// header carries it, or a receipt's signer certificate then the certificates it carries.
    /// Hashed on each certificate's length and signature, compared byte for byte; only chains
    /// whose signature verified are added, and the tables are bounded.
    package struct CertificateChainKey: Hashable, Sendable {
        var anchors: Data
        var certificates: [[UInt8]]

        package init(anchors: Data, certificates: [[UInt8]]) {
            self.anchors = anchors
            self.certificates = certificates
        }

        /// Each certificate by its length and last 64 bytes (its signature): hashing all of
        /// three certificates cost more than the look-up (``hashSample(_:head:tail:into:)``).
        package func hash(into hasher: inout Hasher) {
            anchors.withUnsafeBytes { hasher.combine(bytes: $0) }
            hasher.combine(certificates.count)
            for der in certificates { hashSample(der[...], head: 0, tail: 64, into: &hasher) }
        }

        /// Each certificate compared in bulk (``sameBytes(_:_:)``).
        package static func == (a: CertificateChainKey, b: CertificateChainKey) -> Bool {
            a.anchors == b.anchors && a.certificates.count == b.certificates.count
                && zip(a.certificates, b.certificates).allSatisfy { sameBytes($0[...], $1[...]) }
        }
    }

    /// How many entries each table holds (for tests of the bound).
    struct Sizes: Equatable {
        var certificates: Int
        var descriptions: Int
        var signatures: Int
        var chains: Int
        var jwsChains: Int
        var receiptChains: Int
    }

    var sizes: Sizes {
        storage.state.withLock {
            Sizes(
                certificates: $0.certificates.count, descriptions: $0.descriptions.count, signatures: $0.signatures.count,
                chains: $0.chains.count, jwsChains: $0.jwsChains.count, receiptChains: $0.receiptChains.count)
        }
    }

    /// - Parameters:
    ///   - limit: the most entries one table holds.
    ///   - byteLimit: the most bytes all tables hold together (16 MiB: Apple's few chains take
    ///     a few tens of KB).
    public convenience init(limit: Int = 4096, byteLimit: Int = 16 << 20) {
        self.init(storage: Storage(), limit: limit, byteLimit: byteLimit, remembers: true)
    }

    private init(storage: Storage, limit: Int, byteLimit: Int, remembers: Bool) {
        self.storage = storage
        self.limit = limit
        self.byteLimit = byteLimit
        self.remembers = remembers
    }

    /// The same tables, read but never added to: for judging input whose signature did not
    /// verify.
    public var readOnly: TrustCache {
        remembers ? TrustCache(storage: storage, limit: limit, byteLimit: byteLimit, remembers: false) : self
    }

    /// The bytes held now (for tests of the bound).
    public var heldBytes: Int { storage.state.withLock { $0.bytes } }

    /// What one entry is counted as: the DER it is keyed by, and a fixed cost for the parsed
    /// value beside it (a parsed certificate holds about twice its DER).
    static func cost(_ keyBytes: Int) -> Int { 3 * keyBytes + 256 }

    private func remember<Key: Hashable & Sendable, Value: Sendable>(
        _ table: WritableKeyPath<State, [Key: Value]> & Sendable, _ key: Key, _ value: Value, bytes keyBytes: Int
    ) {
        guard remembers else { return }
        let cost = Self.cost(keyBytes)
        guard cost <= byteLimit else { return }
        storage.state.withLock { state in
            if state[keyPath: table][key] != nil {
                state[keyPath: table][key] = value
                return
            }
            if state[keyPath: table].count >= limit || state.bytes + cost > byteLimit {
                state = State()
            }
            state[keyPath: table][key] = value
            state.bytes += cost
        }
    }

    func certificate(_ der: [UInt8]) throws -> Certificate {
        let key = Data(der)
        if let cached = storage.state.withLock({ $0.certificates[key] }) { return cached }
        let parsed = try Certificate(derEncoded: der)
        remember(\.certificates, key, parsed, bytes: der.count)
        return parsed
    }

    /// The subject, issuer, serial and validity of a certificate, as report details; keyed by
    /// the DER the caller already holds, so a lookup costs no re-encoding.
    func details(_ cert: Certificate, der: [UInt8]) -> [Field] {
        let key = Data(der)
        if let cached = storage.state.withLock({ $0.descriptions[key] }) { return cached }
        let fields = [
            Field(name: "subject", value: cert.subject.text),
            Field(name: "issuer", value: cert.issuer.text),
            Field(name: "serial", value: cert.serialText),
            Field(name: "valid", value: cert.validityText),
        ]
        remember(\.descriptions, key, fields, bytes: der.count)
        return fields
    }

    /// Whether `issuer`'s key verifies the signature on `subject`.
    func issuerSigned(_ subject: Certificate, subjectDER: [UInt8], by issuer: Certificate, issuerDER: [UInt8]) -> Bool {
        let key = SignaturePair(issuer: Data(issuerDER), subject: Data(subjectDER))
        if let cached = storage.state.withLock({ $0.signatures[key] }) { return cached }
        let result = issuer.publicKey.isValidSignature(subject.signature, for: subject)
        remember(\.signatures, key, result, bytes: issuerDER.count + subjectDER.count)
        return result
    }

    /// The cached reading of a JWS chain, if any.
    func jwsChain(_ key: CertificateChainKey) -> JWSChain? {
        storage.state.withLock { state in
            if let last = state.lastJWSChain, last.key == key { return last.chain }
            guard let found = state.jwsChains[key] else { return nil }
            if remembers { state.lastJWSChain = (key, found) }
            return found
        }
    }

    /// Remembers a chain's reading (with its Apple chain judged, once it is): called only for
    /// a token whose signature verified.
    func update(_ key: CertificateChainKey, _ chain: JWSChain) {
        remember(\.jwsChains, key, chain, bytes: key.certificates.reduce(0) { $0 + $1.count })
        guard remembers else { return }
        storage.state.withLock { state in
            // Only an entry the table holds (a clear that made room for it keeps the bound).
            state.lastJWSChain = state.jwsChains[key] == nil ? nil : (key, chain)
        }
    }

    /// The distinguished name `der` encodes (a signer info's issuer), nil when it is not one;
    /// read again only when it differs from the last one read.
    func signerIssuer(_ der: [UInt8]) -> DistinguishedName? {
        if let last = storage.state.withLock({ $0.lastSignerIssuer }), sameBytes(last.der[...], der[...]) { return last.name }
        guard let name = (try? DER.parse(der)).flatMap({ try? DistinguishedName(derEncoded: $0) }) else { return nil }
        if remembers { storage.state.withLock { $0.lastSignerIssuer = (der, name) } }
        return name
    }

    /// The cached judgement of a receipt's Apple chain, if any.
    func receiptChain(_ key: CertificateChainKey) -> JudgedChain? {
        storage.state.withLock { $0.receiptChains[key] }
    }

    /// Remembers a receipt's Apple chain judged apart from time: called only for a receipt
    /// whose signature verified with the signer's key.
    func update(_ key: CertificateChainKey, _ judged: JudgedChain) {
        remember(\.receiptChains, key, judged, bytes: key.certificates.reduce(0) { $0 + $1.count })
    }

    /// The cached analysis for `key`, or `compute()`'s, remembered.
    func chain(_ key: ChainKey, compute: () async -> ChainAnalysis) async -> ChainAnalysis {
        if let cached = storage.state.withLock({ $0.chains[key] }) { return cached }
        let analysis = await compute()
        remember(\.chains, key, analysis, bytes: key.leaf.count + key.intermediates.reduce(0) { $0 + $1.count })
        return analysis
    }
}
