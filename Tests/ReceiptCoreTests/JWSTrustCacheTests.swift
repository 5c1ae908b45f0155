import Crypto
import Foundation
import Testing
import X509

@testable import ReceiptCore
@testable import ReceiptTrust
import TestSupport

// The JWS verdict cache (``TrustCache``): a token whose x5c chain was judged before reuses that
// judgement, and only its own signature and the time-dependent steps are checked again. These
// tests sign tokens with their own CA (root → WWDR-like intermediate → leaf, P-256) and check
// that a cached chain changes nothing in the report, hides no tampering, and stays bounded.

private enum CacheClock {
    static let now = utc("2024-06-01T00:00:00Z")
    static let signed = utc("2024-03-01T12:00:00Z")
    static var options: TrustOptions { TrustOptions(now: now) }
}

/// A small EC hierarchy; `leaf(serial:)` makes any number of distinct leaves under one
/// intermediate.
private struct CachePKI: Sendable {
    static let shared = Result { try CachePKI() }

    let rootKey = P256.Signing.PrivateKey()
    let intermediateKey = P256.Signing.PrivateKey()
    let leafKey = P256.Signing.PrivateKey()
    let intermediateName: DistinguishedName
    let root: Certificate
    let rootDER: [UInt8]
    let intermediateDER: [UInt8]
    let leafDER: [UInt8]

    static func name(_ commonName: String, ou: String? = nil) throws -> DistinguishedName {
        try TestPKI.name(commonName, ou: ou, organization: "ReceiptDash Cache Tests")
    }

    private init() throws {
        let rootName = try Self.name("ReceiptDash Cache Test Root")
        intermediateName = try Self.name("ReceiptDash Cache Test Intermediate", ou: "G9")
        root = try TestPKI.selfSigned(
            serial: .init(bytes: [0x01]), key: .init(rootKey), name: rootName,
            validity: (utc("2015-01-01T00:00:00Z"), utc("2040-01-01T00:00:00Z")), extensions: try TestPKI.rootExtensions())
        let intermediate = try TestPKI.certificate(
            serial: .init(bytes: [0x02]), publicKey: .init(intermediateKey.publicKey),
            validity: (utc("2020-01-01T00:00:00Z"), utc("2030-01-01T00:00:00Z")), issuer: rootName, subject: intermediateName,
            extensions: try TestPKI.intermediateExtensions(), issuerKey: .init(rootKey))
        rootDER = try TestPKI.der(root)
        intermediateDER = try TestPKI.der(intermediate)
        leafDER = try Self.leafDER(serial: 1, intermediateKey: intermediateKey, intermediateName: intermediateName, key: leafKey)
    }

    private static func leafDER(
        serial: UInt16, intermediateKey: P256.Signing.PrivateKey, intermediateName: DistinguishedName,
        key: P256.Signing.PrivateKey
    ) throws -> [UInt8] {
        try TestPKI.der(
            TestPKI.certificate(
                serial: .init(bytes: [0x5E, UInt8(serial >> 8), UInt8(serial & 0xFF)]), publicKey: .init(key.publicKey),
                validity: (utc("2023-01-01T00:00:00Z"), utc("2025-06-01T00:00:00Z")), issuer: intermediateName,
                subject: try name("ReceiptDash Cache Test Signing \(serial)"), extensions: try TestPKI.leafExtensions(),
                issuerKey: .init(intermediateKey)))
    }

    /// Another leaf for the same key, with its own serial and name: a distinct chain.
    func leaf(serial: UInt16) throws -> [UInt8] {
        try Self.leafDER(serial: serial, intermediateKey: intermediateKey, intermediateName: intermediateName, key: leafKey)
    }

    var anchors: TrustAnchors { TrustAnchors(roots: [root]) }


    static func transaction(bundleID: String = "com.example.receiptdash") -> String {
        let ms = Int64((CacheClock.signed.timeIntervalSince1970 * 1000).rounded())
        return #"{"transactionId":"2000000512345678","originalTransactionId":"2000000500000001","#
            + #""productId":"com.example.receiptdash.pro","bundleId":"\#(bundleID)","signedDate":\#(ms),"#
            + #""environment":"Sandbox"}"#
    }

    func token(payload: String = transaction(), leaf: [UInt8]? = nil, x5c: [[UInt8]]? = nil) throws -> String {
        let chain = (x5c ?? [leaf ?? leafDER, intermediateDER, rootDER])
            .map { "\"\(Data($0).base64EncodedString())\"" }.joined(separator: ",")
        let header = #"{"alg":"ES256","x5c":[\#(chain)]}"#
        let signingInput = Base64Text.encodeURL(Array(header.utf8)) + "." + Base64Text.encodeURL(Array(payload.utf8))
        let signature = try leafKey.signature(for: Array(signingInput.utf8))
        return signingInput + "." + Base64Text.encodeURL(signature.rawRepresentation)
    }
}

private func steps(_ report: TrustReport) -> [String] {
    report.steps.map { "\($0.name): \($0.outcome.rawValue)" }
}

private let validSteps = [
    "algorithm: pass", "x5c: pass", "signature: pass", "leaf certificate: pass", "intermediate: pass", "root: pass",
    "validity: pass",
]

@Suite struct JWSTrustCacheTests {
    private let pki: CachePKI

    init() throws {
        pki = try CachePKI.shared.get()
    }

    private func evaluate(_ token: String, _ evaluator: TrustEvaluator) async throws -> TrustReport {
        await evaluator.evaluate(try ReceiptDecoder().decode(text: token), options: CacheClock.options)
    }

    /// The first evaluation fills the cache, the second reads it: the reports are equal in
    /// every step, reason and detail.
    @Test func cachedChainGivesTheSameReport() async throws {
        let words = Wording("jws-trust-cache")
        let cache = TrustCache()
        let evaluator = TrustEvaluator(anchors: pki.anchors, cache: cache)
        let token = try pki.token()
        let cold = try await evaluate(token, evaluator)
        #expect(cache.sizes.jwsChains == 1)
        let warm = try await evaluate(token, evaluator)
        #expect(cache.sizes.jwsChains == 1)
        #expect(warm == cold)
        #expect(warm.verdict == .valid)
        #expect(steps(warm) == validSteps)
        words.said(warm.steps[2].reason)
        words.said(warm.steps[6].reason)
        // A fresh cache and the warm one agree.
        let fresh = try await evaluate(token, TrustEvaluator(anchors: pki.anchors))
        #expect(fresh == warm)
        words.check()
    }

    /// Every genuine token of the shared corpus: a cold cache, a cache warmed by every other
    /// token, and a second pass over the same cache give the same report.
    @Test(.enabled(if: SharedCorpus.isAvailable, "needs ../shared/corpus beside the package (the team's corpus); core tests use the copies in Tests/")) func corpusReportsDoNotDependOnTheCache() async throws {
        let files = SharedCorpus.files(in: "jws", suffix: ".jws")
        #expect(files.count >= 20)
        let options = TrustOptions(now: utc("2026-11-22T00:00:00Z"))
        let shared = TrustEvaluator()
        var decoded: [DecodedInput] = []
        for path in files { decoded.append(try ReceiptDecoder().decode(try SharedCorpus.bytes(path))) }
        var first: [TrustReport] = []
        for input in decoded { first.append(await shared.evaluate(input, options: options)) }
        for (index, input) in decoded.enumerated() {
            let cold = await TrustEvaluator().evaluate(input, options: options)
            let warm = await shared.evaluate(input, options: options)
            #expect(cold == first[index], "\(files[index])")
            #expect(warm == first[index], "\(files[index])")
        }
        #expect(first.filter { $0.verdict == .valid }.count >= 15)
    }

    /// A token whose payload was changed after signing, carrying the same (cached) chain as a
    /// genuine one: the signature step fails, exactly as with a cold cache.
    @Test func tamperedPayloadWithACachedChainFailsTheSignature() async throws {
        let words = Wording("jws-trust-cache")
        let evaluator = TrustEvaluator(anchors: pki.anchors)
        let genuine = try pki.token()
        #expect(try await evaluate(genuine, evaluator).verdict == .valid)
        var parts = genuine.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        parts[1] = Base64Text.encodeURL(Array(CachePKI.transaction(bundleID: "com.Example.receiptdash").utf8))
        let forged = parts.joined(separator: ".")
        let warm = try await evaluate(forged, evaluator)
        #expect(warm.verdict == .invalid)
        #expect(warm.steps.filter { $0.outcome == .fail }.map(\.name) == ["signature"])
        #expect(steps(warm) == validSteps.map { $0 == "signature: pass" ? "signature: fail" : $0 })
        words.said(warm.steps[2].reason)
        let cold = try await evaluate(forged, TrustEvaluator(anchors: pki.anchors))
        #expect(warm == cold)

        // The signature itself changed: the same.
        parts = genuine.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        var signature = try Base64Text.decode(Array(parts[2].utf8))
        signature[10] ^= 0x01
        parts[2] = Base64Text.encodeURL(signature)
        let changed = try await evaluate(parts.joined(separator: "."), evaluator)
        #expect(changed.steps.filter { $0.outcome == .fail }.map(\.name) == ["signature"])
        words.check()
    }

    /// A leaf whose certificate signature was changed is a different chain (the key holds the
    /// full DER): it fails at the intermediate even after the genuine chain was cached.
    @Test func tamperedLeafCertificateDoesNotHitTheGenuineEntry() async throws {
        let words = Wording("jws-trust-cache")
        let evaluator = TrustEvaluator(anchors: pki.anchors)
        #expect(try await evaluate(try pki.token(), evaluator).verdict == .valid)
        var leaf = pki.leafDER
        leaf[leaf.count - 1] ^= 0x01
        let report = try await evaluate(try pki.token(leaf: leaf), evaluator)
        #expect(report.verdict == .invalid)
        #expect(report.steps.filter { $0.outcome == .fail }.map(\.name) == ["intermediate"])
        words.said(report.steps.first { $0.name == "intermediate" }?.reason)
        words.check()
    }

    /// Tokens of two chains in turn: the entry found last is compared before the table is
    /// hashed, and each token still gets its own chain's report, as from a cold cache.
    @Test func chainsInTurnEachGetTheirOwnEntry() async throws {
        let cache = TrustCache()
        let evaluator = TrustEvaluator(anchors: pki.anchors, cache: cache)
        let first = try pki.token(leaf: try pki.leaf(serial: 41))
        let second = try pki.token(leaf: try pki.leaf(serial: 42))
        let cold = [
            try await evaluate(first, TrustEvaluator(anchors: pki.anchors)),
            try await evaluate(second, TrustEvaluator(anchors: pki.anchors)),
        ]
        #expect(cold[0] != cold[1])
        for round in 0..<3 {
            #expect(try await evaluate(first, evaluator) == cold[0], "round \(round)")
            #expect(try await evaluate(second, evaluator) == cold[1], "round \(round)")
        }
        #expect(cache.sizes.jwsChains == 2)
    }

    /// The same chain judged against other roots is not answered from the entry of the first.
    @Test func cacheSharedByEvaluatorsWithOtherRootsKeepsThemApart() async throws {
        let cache = TrustCache()
        let token = try pki.token()
        let ours = try await evaluate(token, TrustEvaluator(anchors: pki.anchors, cache: cache))
        let apple = try await evaluate(token, TrustEvaluator(cache: cache))
        #expect(ours.verdict == .valid)
        #expect(apple.verdict == .invalid)
        #expect(apple.steps.first { $0.name == "root" }?.outcome == .fail)
        #expect(cache.sizes.jwsChains == 2)
    }

    /// A nested token and its notification share a chain: one entry serves both, and the
    /// notification's report is the same with the entry made by the nested token first.
    @Test func nestedTokensShareTheEntry() async throws {
        let inner = try pki.token()
        let ms = Int64((CacheClock.signed.timeIntervalSince1970 * 1000).rounded())
        let payload = #"{"notificationType":"DID_RENEW","notificationUUID":"3f1b4d52-8f0e-4c1e-9a53-6a2d1f0c7b11","#
            + #""version":"2.0","signedDate":\#(ms),"data":{"bundleId":"com.example.receiptdash","#
            + #""environment":"Sandbox","signedTransactionInfo":"\#(inner)"}}"#
        let outer = try pki.token(payload: payload)
        let cache = TrustCache()
        let evaluator = TrustEvaluator(anchors: pki.anchors, cache: cache)
        _ = try await evaluate(inner, evaluator)
        let warm = try await evaluate(outer, evaluator)
        #expect(cache.sizes.jwsChains == 1)
        #expect(steps(warm) == validSteps + ["nested data.signedTransactionInfo: pass"])
        #expect(warm == (try await evaluate(outer, TrustEvaluator(anchors: pki.anchors))))
    }

    /// Hostile input: many distinct chains never hold more entries than the limit, and every
    /// one of them is still judged correctly.
    @Test func distinctChainsStayWithinTheLimit() async throws {
        let cache = TrustCache(limit: 4)
        let evaluator = TrustEvaluator(anchors: pki.anchors, cache: cache)
        var most = 0
        for serial in UInt16(2)..<UInt16(14) {
            let report = try await evaluate(try pki.token(leaf: try pki.leaf(serial: serial)), evaluator)
            #expect(report.verdict == .valid, "leaf \(serial)")
            #expect(steps(report) == validSteps, "leaf \(serial)")
            let sizes = cache.sizes
            most = max(most, sizes.jwsChains, sizes.certificates, sizes.chains, sizes.signatures, sizes.descriptions)
        }
        #expect(most == 4)
    }

    /// A token whose signature fails (forged over a genuine chain, or unsigned) is judged,
    /// chain steps and all, but leaves nothing behind: no table grows, no byte is held, and the
    /// header memo is not filled. The genuine token after it fills the cache as usual.
    @Test func forgedTokensFillNothing() async throws {
        let cache = TrustCache()
        let evaluator = TrustEvaluator(anchors: pki.anchors, cache: cache)
        let genuine = try pki.token(leaf: try pki.leaf(serial: 900))
        let parts = genuine.split(separator: ".").map(String.init)
        for n in 0..<20 {
            // Another payload under the genuine header and signature: the signature fails.
            let forged = parts[0] + "." + Base64Text.encodeURL(Array(CachePKI.transaction(bundleID: "com.example.forged\(n)").utf8)) + "."
                + parts[2]
            let report = try await evaluate(forged, evaluator)
            #expect(report.verdict == .invalid)
            #expect(steps(report).prefix(3) == ["algorithm: pass", "x5c: pass", "signature: fail"])
            // The chain is still explained.
            #expect(steps(report).contains("intermediate: pass"))
        }
        #expect(cache.sizes == .init(certificates: 0, descriptions: 0, signatures: 0, chains: 0, jwsChains: 0, receiptChains: 0))
        #expect(cache.heldBytes == 0)
        // Other tests run alongside and fill the process-wide memo: ask about this header only.
        #expect(try !JWSToken(compact: Array(genuine.utf8)).isHeaderRemembered)
        let report = try await evaluate(genuine, evaluator)
        #expect(report.verdict == .valid)
        #expect(try JWSToken(compact: Array(genuine.utf8)).isHeaderRemembered)
        #expect(cache.sizes.jwsChains == 1)
        #expect(cache.heldBytes > 0)
    }

    /// The cache is bounded in bytes as well as entries: many distinct genuine chains never
    /// hold more than `byteLimit`, and every one is still judged correctly.
    @Test func distinctChainsStayWithinTheByteLimit() async throws {
        let cache = TrustCache(limit: 4096, byteLimit: 20_000)
        let evaluator = TrustEvaluator(anchors: pki.anchors, cache: cache)
        var most = 0
        for serial in UInt16(20)..<UInt16(40) {
            let report = try await evaluate(try pki.token(leaf: try pki.leaf(serial: serial)), evaluator)
            #expect(report.verdict == .valid, "leaf \(serial)")
            most = max(most, cache.heldBytes)
        }
        #expect(most > 0)
        #expect(most <= 20_000)
    }

    /// The header's bounds are checked before anything in it is decoded, each named.
    @Test func headerBoundsAreRefusedBeforeDecoding() throws {
        let words = Wording("jws-trust-cache")
        let payload = Base64Text.encodeURL(Array(CachePKI.transaction().utf8))
        func token(header: String) -> [UInt8] {
            Array((Base64Text.encodeURL(Array(header.utf8)) + "." + payload + ".AAAA").utf8)
        }
        // 30,000 tiny x5c entries: a header of about 240 KB.
        let bomb = #"{"alg":"ES256","x5c":["# + Array(repeating: #""AAAA""#, count: 30_000).joined(separator: ",") + "]}"
        #expect(throws: ReceiptDecodingError(.limitExceeded, "")) { try JWSToken(compact: token(header: bomb)) }
        do {
            _ = try JWSToken(compact: token(header: bomb))
        } catch let error as ReceiptDecodingError {
            let size = Base64Text.encodeURL(Array(bomb.utf8)).utf8.count
            #expect(size > 200_000)
            words.said(error.reason)
        }
        // Five certificates, each small: over the count.
        let five = #"{"alg":"ES256","x5c":["# + Array(repeating: #""AAAA""#, count: 5).joined(separator: ",") + "]}"
        do {
            _ = try JWSToken(compact: token(header: five))
            Issue.record("five x5c entries were read")
        } catch let error as ReceiptDecodingError {
            #expect(error.code == .limitExceeded)
            words.said(error.reason)
        }
        // One certificate of 8,200 bytes: over the size.
        let big = #"{"alg":"ES256","x5c":[""# + Data(repeating: 0x30, count: 8_200).base64EncodedString() + #""]}"#
        do {
            _ = try JWSToken(compact: token(header: big))
            Issue.record("an 8,200-byte certificate was read")
        } catch let error as ReceiptDecodingError {
            #expect(error.code == .limitExceeded)
            words.said(error.reason)
        }
        // Apple's shape (three certificates) is read.
        #expect(try JWSToken(compact: Array(try pki.token().utf8)).certificateChain.count == 3)
        words.check()
    }
}
