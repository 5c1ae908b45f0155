import Crypto
import Foundation
import PlainWords
import ReceiptCore
import X509

/// The steps for a StoreKit 2 JWS: `alg`, the `x5c` chain, the ES256 signature over
/// `header.payload`, Apple's marker OIDs and validity at `signedDate`; Xcode-signed tokens are
/// reported as test data.
struct JWSTrustCheck {
    let evaluator: TrustEvaluator
    let options: TrustOptions

    func run(_ token: JWSToken, environment: String?) async -> TrustReport {
        var steps: [TrustReport.Step] = []
        // alg, x5c, signature, four Apple chain steps, validity and a warning: room at once.
        steps.reserveCapacity(10)
        // signedDate where the payload has one; an AppTransaction may carry only receiptCreationDate.
        func milliseconds(_ key: String) -> Date? {
            switch token.payload[key] {
            case .integer(let ms): Date(timeIntervalSince1970: Double(ms) / 1000)
            case .number(let ms): AppleDate.fromEpochMilliseconds(ms)
            default: nil
            }
        }
        let signedDate = milliseconds("signedDate")
        var time = signedDate ?? milliseconds("receiptCreationDate")
        var timeSource = signedDate == nil && time != nil ? "receiptCreationDate" : "signedDate"
        if options.onlineChecks != nil {
            // As Apple's libraries do with online checks: the chain must be valid now.
            time = options.now
            timeSource = "now, online checks"
        }

        if token.algorithm == "ES256" {
            steps.append(.init(.algorithm, outcome: .pass, reason: "alg is ES256 (ECDSA P-256 with SHA-256)"))
        } else {
            steps.append(
                .init(.algorithm, failing: "algorithm-not-es256", reason: "alg is \(token.algorithm ?? "missing"), Apple signs with ES256"))
        }
        let key = TrustCache.CertificateChainKey(anchors: evaluator.anchors.fingerprint, certificates: token.certificateChain)
        // Nothing of this token is remembered until its signature verified: until then the
        // cache is only read.
        let cached = evaluator.cache.jwsChain(key)
        var read = cached ?? JWSChain(token.certificateChain, cache: evaluator.cache.readOnly)
        steps += read.x5cSteps
        let chain = read.certificates

        guard let leaf = chain.first else {
            steps.append(.init(.signature, outcome: .skipped, reason: "no certificate to check the signature with"))
            return TrustReport(verdict: .invalid, steps: steps, validationTime: time, validationTimeSource: timeSource)
        }
        let signature = signatureStep(token, read.leafKey)
        steps.append(signature)
        let signed = signature.outcome == .pass
        // A forged token is judged with the cache read-only: its chain is still explained.
        var evaluator = self.evaluator
        if signed {
            token.rememberHeader()
            if cached == nil { evaluator.cache.update(key, read) }
        } else {
            evaluator.cache = evaluator.cache.readOnly
        }

        let kid = token.header["kid"]?.text
        if read.singleSelfIssued, kid == "Apple_Xcode_Key" || environment == "Xcode" || read.storeKitNamed {
            if let problems = await evaluator.storeKitCertificateProblems(leaf.0, der: leaf.1) {
                steps.append(
                    .init(
                        .testCertificate, failing: "xcode-certificate-invalid",
                        reason: "Xcode's self-signed \"\(leaf.0.displayName)\" certificate " + problems.joined(separator: " and "),
                        details: evaluator.details(leaf.0, der: leaf.1)))
            } else {
                steps.append(
                    .init(
                        .testCertificate, outcome: .warning,
                        reason: "signed by Xcode's self-signed \"\(leaf.0.displayName)\" key: StoreKit testing data, never from the App Store",
                        details: evaluator.details(leaf.0, der: leaf.1)))
            }
            evaluator.validity([(.certificate, leaf.0)], time: time, timeSource: timeSource, now: options.now, steps: &steps)
            return TrustReport(
                verdict: TrustEvaluator.verdict(steps, success: .test), steps: steps, validationTime: time,
                validationTimeSource: timeSource)
        }
        let judged: JudgedChain
        if let cached = read.apple {
            judged = cached
        } else {
            // The chain must be leaf, intermediate[, root]: the intermediate is taken from x5c[1] only.
            let candidates = chain.count > 1 ? [chain[1]] : []
            judged = await evaluator.appleChainSteps(leaf: leaf, candidates: candidates)
            read.apple = judged
            evaluator.cache.update(key, read)
        }
        let success = evaluator.finish(judged, time: time, timeSource: timeSource, options: options, steps: &steps)
        var report = TrustReport(
            verdict: TrustEvaluator.verdict(steps, success: success), steps: steps, validationTime: time,
            validationTimeSource: timeSource)
        if let online = options.onlineChecks {
            await onlineCheck(online, judged, report: &report)
        }
        return report
    }

    /// OCSP about the leaf and the intermediate, once the chain passed offline: one step, and
    /// for a retryable outcome the verdict `unverifiable` with ``TrustReport/retryable``.
    private func onlineCheck(_ online: any RevocationChecking, _ judged: JudgedChain, report: inout TrustReport) async {
        report.retryable = false
        guard report.verdict != .invalid, judged.verified, judged.chain.count == 3, judged.ders.count == 3 else {
            report.steps.append(.init(.onlineCheck, outcome: .skipped, reason: "the chain failed offline: OCSP was not asked"))
            return
        }
        let certificate = { (position: OnlineCheckedCertificate) -> (Certificate, [UInt8]) in
            let index = position == .leaf ? 0 : 1
            return (judged.chain[index].1, judged.ders[index])
        }
        let result = await online.check(
            leaf: certificate(.leaf), intermediate: certificate(.intermediate), root: (judged.chain[2].1, judged.ders[2]),
            now: options.now)
        let code = result.code.rawValue
        switch result {
        case .good(let until):
            report.steps.append(
                .init(
                    .onlineCheck, outcome: .pass,
                    reason: "OCSP: the leaf and the intermediate are good (answers valid until \(AppleDate.iso8601(until)))", code: code))
        case .noResponder:
            report.steps.append(
                .init(
                    .onlineCheck, outcome: .warning,
                    reason: "neither the leaf nor the intermediate names an OCSP responder: revocation was not checked",
                    code: code))
        case .revoked(let position, let at, let reason):
            let (cert, der) = certificate(position)
            let why = reason.map(RevocationReason.name) ?? "no reason given"
            report.steps.append(
                .init(
                    .onlineCheck, outcome: .fail,
                    reason: "OCSP: the \(position.rawValue) \(cert.displayName) was revoked on \(AppleDate.iso8601(at)) (\(why))",
                    details: [
                        Field(name: "certificate", value: position.rawValue),
                        Field(name: "revoked_at", value: AppleDate.iso8601(at)),
                        Field(name: "revocation_reason", value: why),
                    ] + evaluator.details(cert, der: der), code: code))
            report.verdict = .invalid
        case .rejected(let position, _, let detail):
            report.steps.append(
                .init(
                    .onlineCheck, outcome: .fail, reason: "OCSP: " + detail,
                    details: position.map { [Field(name: "certificate", value: $0.rawValue)] } ?? [], code: code))
            report.verdict = .invalid
        case .retryable(let position, _, let detail):
            report.steps.append(
                .init(
                    .onlineCheck, outcome: .warning, reason: "OCSP: " + detail + "; ask again later",
                    details: position.map { [Field(name: "certificate", value: $0.rawValue)] } ?? [], code: code))
            report.retryable = true
            report.verdict = .unverifiable
        }
    }

    private func signatureStep(_ token: JWSToken, _ key: P256.Signing.PublicKey?) -> TrustReport.Step {
        guard let key else {
            return .init(.signature, failing: "leaf-key-not-p256", reason: "the x5c leaf's key is not a P-256 key")
        }
        // Handed over as `Data`: swift-crypto keeps the signature as one, and its generic copy
        // of an array went through a dynamic cast and a byte-at-a-time loop.
        guard token.signature.count == 64,
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: Data(token.signature))
        else {
            return .init(
                .signature, failing: "signature-wrong-length",
                reason: "the signature is \(token.signature.count) bytes; ES256 signatures are 64 (r ‖ s)")
        }
        return key.isValidSignature(signature, for: token.signedBytes.withUnsafeBytes { SHA256.hash(data: $0) })
            ? .init(
                .signature, outcome: .pass,
                reason: "ECDSA P-256 signature over header.payload verifies with the x5c leaf's key")
            : .init(
                .signature, failing: "signature-mismatch",
                reason: "the ECDSA signature does not match header.payload: the payload or the signature was changed")
    }
}

/// What a JWS's `x5c` chain says apart from any one token: the certificates read (leaf
/// first), the x5c steps, the leaf's P-256 key, whether it has the shape of Xcode's
/// self-signed StoreKit certificate, and, once judged, the Apple chain steps. Kept per chain by
/// ``TrustCache``, so a fleet's tokens, which share a few chains, pay for one signature check
/// and the time-dependent steps only.
struct JWSChain: Sendable {
    var x5cSteps: [TrustReport.Step] = []
    /// The readable certificates with their DER, in x5c order.
    var certificates: [(Certificate, [UInt8])] = []
    /// The first readable certificate's key, when it is a P-256 key.
    var leafKey: P256.Signing.PublicKey?
    /// One certificate, self-issued: Xcode's StoreKit testing certificate if the token says so.
    var singleSelfIssued = false
    /// The leaf's name mentions StoreKit.
    var storeKitNamed = false
    /// The Apple chain steps (leaf certificate, intermediate, root, chain), once judged.
    var apple: JudgedChain?

    init(_ x5c: [[UInt8]], cache: TrustCache) {
        var unreadable = false
        for (index, der) in x5c.enumerated() {
            if let cert = try? cache.certificate(der) {
                certificates.append((cert, der))
            } else {
                unreadable = true
                x5cSteps.append(.init(.x5c, failing: "x5c-unreadable", reason: "x5c[\(index)] is not a readable certificate"))
            }
        }
        if x5c.isEmpty {
            x5cSteps.append(.init(.x5c, failing: "x5c-missing", reason: "the header has no x5c certificate chain"))
        } else if !unreadable {
            x5cSteps.append(
                .init(
                    .x5c, outcome: .pass,
                    reason: "the header carries \(CountNoun.certificate.count(certificates.count))"))
        }
        guard let leaf = certificates.first?.0 else { return }
        leafKey = P256.Signing.PublicKey(leaf.publicKey)
        singleSelfIssued = certificates.count == 1 && leaf.isSelfIssued
        storeKitNamed = leaf.displayName.contains("StoreKit")
    }
}
