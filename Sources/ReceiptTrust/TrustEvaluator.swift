import Crypto
import Foundation
import PlainWords
import ReceiptCore
import SwiftASN1
import X509
import _CryptoExtras

/// Verifies signatures offline and explains each step: PKCS#7 app receipts, Xcode StoreKit
/// test receipts, iOS 6 transaction receipts and StoreKit 2 JWS (with a notification's nested
/// tokens).
///
/// Chains are checked by swift-certificates' `Verifier` with RFC 5280 and our own policies
/// (``AppleMarkerPolicy``, ``KeyUsagePolicy``, ``StoreKitTestRootPolicy``); its time-independent
/// answer is cached per chain (see ``TrustCache``).
///
/// Certificates are judged at the time the receipt was signed (receipt creation date, JWS
/// `signedDate`), not at "now": every Apple intermediate in old receipts has expired since, and
/// that does not make those receipts forged.
///
/// ```swift
/// let report = await TrustEvaluator().evaluate(decoded)
/// print(report.verdict, report.headline)
/// ```
public struct TrustEvaluator: Sendable {
    public var anchors: TrustAnchors
    public var cache: TrustCache

    public init(anchors: TrustAnchors = .apple, cache: TrustCache = TrustCache()) {
        self.anchors = anchors
        self.cache = cache
    }

    /// Evaluates one decoded input.
    public func evaluate(_ input: DecodedInput, options: TrustOptions = TrustOptions()) async -> TrustReport {
        switch input.signature {
        case .pkcs7(let signed):
            return await PKCS7TrustCheck(evaluator: self, options: options).run(signed, receipt: input.receipt)
        case .jws(let token):
            // One bound for the online checks of the token and of its nested tokens.
            var options = options
            options.onlineChecks = options.onlineChecks?.bounded()
            var report = await JWSTrustCheck(evaluator: self, options: options).run(token, environment: input.rawEnvironment)
            await addNested(input.nested, to: &report, options: options)
            return report
        case .legacy(let blob, let purchaseInfo):
            return LegacyTrustCheck(evaluator: self, options: options).run(
                blob: blob, purchaseInfo: purchaseInfo, purchaseDate: input.transactions.first?.purchaseDate)
        case nil:
            return unsigned(input)
        }
    }

    private func unsigned(_ input: DecodedInput) -> TrustReport {
        let reason: String
        switch input.format {
        case .verifyResponse:
            reason = "a verifyReceipt response is not signed: inspect the receipt itself, or ask Apple"
        case .notificationV1:
            reason = "a V1 notification is not signed: Apple sends it over TLS; check its password matches your shared secret"
        case .legacy:
            reason = "the transaction receipt has no signature"
            return TrustReport(verdict: .invalid, steps: [.init(.signature, failing: "unsigned", reason: reason)])
        default:
            reason = "the input carries no signature (a decoded payload was pasted, not the signed token)"
        }
        return TrustReport(verdict: .unverifiable, steps: [.init(.signature, outcome: .skipped, reason: reason)])
    }

    private func addNested(_ nested: [NestedInput], to report: inout TrustReport, options: TrustOptions) async {
        for item in nested {
            let inner = await evaluate(item.input, options: options)
            let outcome: TrustReport.Outcome
            switch inner.verdict {
            case .valid: outcome = .pass
            case .test: outcome = report.verdict == .test ? .pass : .fail
            case .invalid: outcome = .fail
            case .unverifiable: outcome = .warning
            }
            report.steps.append(
                .init(
                    .nested, subject: item.field, outcome: outcome, reason: inner.headline,
                    details: inner.steps.filter { $0.outcome != .pass }.map {
                        Field(name: $0.name, value: "\($0.outcome.rawValue): \($0.reason)")
                    },
                    // A test-signed token inside a genuine one fails with nothing of its own failing.
                    code: outcome == .fail ? "nested-" + (inner.firstFailure?.code ?? "test-signed") : nil))
            if outcome == .fail { report.verdict = .invalid }
            // A nested token that may verify later keeps the whole answer open.
            if inner.retryable == true {
                report.retryable = true
                if report.verdict == .valid || report.verdict == .test { report.verdict = .unverifiable }
            }
        }
    }

    // MARK: - Shared checks

    /// Checks leaf → intermediate (from the input) → bundled root with swift-certificates'
    /// `Verifier` (RFC 5280, Apple's marker OIDs, key usage, unknown critical extensions), and
    /// validity at `time`. Appends one step per check: leaf certificate, intermediate, root,
    /// validity, and an expiry warning when one is due.
    ///
    /// The time-independent part is kept per chain (the leaf, then every candidate, by their
    /// exact DER, and the anchors): a folder of receipts signed by one certificate words its
    /// chain steps once. It is remembered only when `signed` (the receipt's signature verified
    /// with the leaf's key), so unsigned input only reads the table.
    /// - Returns: the verdict a clean chain earns: `valid` for Apple's roots, `test` for a root
    ///   added for test data.
    @discardableResult
    func appleChain(
        leaf: (Certificate, [UInt8]), candidates: [(Certificate, [UInt8])], time: Date?, timeSource: String,
        options: TrustOptions, signed: Bool, steps: inout [TrustReport.Step]
    ) async -> TrustReport.Verdict {
        var ders = [leaf.1]
        ders.reserveCapacity(candidates.count + 1)
        for candidate in candidates { ders.append(candidate.1) }
        let key = TrustCache.CertificateChainKey(anchors: anchors.fingerprint, certificates: ders)
        let judged: JudgedChain
        if let cached = cache.receiptChain(key) {
            judged = cached
        } else {
            judged = await appleChainSteps(leaf: leaf, candidates: candidates)
            if signed { cache.update(key, judged) }
        }
        return finish(judged, time: time, timeSource: timeSource, options: options, steps: &steps)
    }

    /// The part of ``appleChain(leaf:candidates:time:timeSource:options:steps:)`` that does not
    /// depend on time: the verifier's analysis worded as the leaf certificate, intermediate,
    /// root (and chain) steps. A pure function of the certificates and the anchors, so
    /// ``TrustCache`` may keep it per chain.
    func appleChainSteps(leaf: (Certificate, [UInt8]), candidates: [(Certificate, [UInt8])]) async -> JudgedChain {
        var steps: [TrustReport.Step] = []
        var success = TrustReport.Verdict.valid
        let (leafCert, leafDER) = leaf
        let analysis = await analyseAppleChain(leaf: leaf, candidates: candidates)
        let at = { (position: Int) in analysis.problems.filter { $0.position == position }.map(\.text) }

        let leafProblems = at(0)
        steps.append(
            leafProblems.isEmpty
                ? .init(
                    .leafCertificate, outcome: .pass,
                    reason: "\(leafCert.displayName) carries Apple's receipt-signing marker \(AppleOID.receiptSigningLeaf)",
                    details: details(leafCert, der: leafDER))
                : .init(
                    .leafCertificate, failing: "leaf-certificate-invalid",
                    reason: "\(leafCert.displayName) " + leafProblems.joined(separator: " and "),
                    details: details(leafCert, der: leafDER)))

        var chain: [(ChainPosition, Certificate)] = [(.leaf, leafCert)]
        if let intermediate = analysis.intermediate {
            let (cert, der) = (intermediate.certificate, intermediate.der)
            chain.append((.intermediate, cert))
            let problems = at(1)
            steps.append(
                problems.isEmpty
                    ? .init(
                        .intermediate, outcome: .pass,
                        reason: "\(cert.displayName)\(ou(cert)) issued the leaf and carries \(AppleOID.wwdrIntermediate)",
                        details: details(cert, der: der))
                    : .init(
                        .intermediate, failing: "intermediate-invalid",
                        reason: "\(cert.displayName)\(ou(cert)) issued the leaf but " + problems.joined(separator: " and "),
                        details: details(cert, der: der)))
            if let root = analysis.root {
                chain.append((.root, root.certificate))
                let problems = at(2)
                let isTestRoot = anchors.isTestRoot(root.der)
                if isTestRoot { success = .test }
                steps.append(
                    problems.isEmpty
                        ? .init(
                            .root, outcome: isTestRoot ? .warning : .pass,
                            reason: isTestRoot
                                ? "the intermediate is signed by \(root.certificate.displayName), a root given for test data (--root-ca), not Apple's: test data, never from the App Store"
                                : "the intermediate is signed by \(root.certificate.displayName), a bundled Apple root",
                            details: details(root.certificate, der: root.der))
                        : .init(
                            .root, failing: "root-invalid",
                            reason: "the intermediate is signed by \(root.certificate.displayName), a bundled root, but the root "
                                + problems.joined(separator: " and "),
                            details: details(root.certificate, der: root.der)))
            } else {
                steps.append(
                    .init(.root, failing: "no-trusted-root", reason: analysis.missingRoot ?? "no bundled root issued the intermediate"))
            }
        } else {
            steps.append(
                .init(
                    .intermediate, failing: "intermediate-missing",
                    reason: analysis.missingIntermediate ?? "no certificate in the input issued the leaf"))
            steps.append(.init(.root, outcome: .skipped, reason: "no intermediate to chain from"))
        }
        let unplaced = analysis.problems.filter { $0.position == nil && $0.kind != .disjointValidity }
        if !unplaced.isEmpty {
            steps.append(
                .init(.chain, failing: "chain-invalid", reason: "the chain " + unplaced.map(\.text).joined(separator: " and ")))
        }
        var judged = JudgedChain(steps: steps, chain: chain, verified: analysis.verified, success: success)
        judged.ders = [leafDER] + [analysis.intermediate?.der, analysis.root?.der].compactMap { $0 }
        return judged
    }

    /// Appends a judged chain's steps, then the time-dependent ones: validity at `time`, the
    /// verifier's last word, and the expiry warning.
    func finish(
        _ judged: JudgedChain, time: Date?, timeSource: String, options: TrustOptions, steps: inout [TrustReport.Step]
    ) -> TrustReport.Verdict {
        let stepsBefore = steps.count
        steps += judged.steps
        validity(judged.chain, dates: judged.dates, time: time, timeSource: timeSource, now: options.now, steps: &steps)
        // The verifier has the last word: a chain it rejected never reads as all-pass.
        if !judged.verified && !steps[stepsBefore...].contains(where: { $0.outcome == .fail }) {
            steps.append(
                .init(.chain, failing: "chain-rejected", reason: "swift-certificates' verifier rejected the chain"))
        }
        expiryWarning(judged.chain, dates: judged.dates, options: options, steps: &steps)
        return judged.success
    }

    /// One step: were all certificates valid at `time`? `dates` are the chain's own
    /// (``JudgedChain/dates``), read from the certificates when not given.
    func validity(
        _ chain: [(ChainPosition, Certificate)], dates: [ValidityDates]? = nil, time: Date?, timeSource: String, now: Date,
        steps: inout [TrustReport.Step]
    ) {
        guard let time else {
            steps.append(.init(.validity, failing: "validation-time-missing", reason: "no \(timeSource) to judge the certificates at"))
            return
        }
        let dates = dates ?? chain.map { ValidityDates($0.1) }
        let day = AppleDate.calendarDay(time)
        if chain.indices.allSatisfy({ dates[$0].contains(time) }) {
            // Written into one string made at its size: every token's report has this step,
            // and interpolating then appending made three or four strings of it.
            let expired = chain.indices.first(where: { dates[$0].notAfter < now })
            var reason = ""
            reason.reserveCapacity(expired == nil ? 48 : 140)
            reason += "chain valid on "
            reason += day
            reason += " ("
            reason += timeSource
            reason += ")"
            if let first = expired {
                reason += "; the "
                reason += chain[first].0.rawValue
                reason += " expired "
                reason += AppleDate.calendarDay(dates[first].notAfter)
                reason += ", which does not matter for a receipt signed before"
            }
            steps.append(.init(.validity, outcome: .pass, reason: reason))
        } else {
            let invalid = chain.indices.filter { !dates[$0].contains(time) }
            let text = invalid.map { "the \(chain[$0].0.rawValue) was valid \(dates[$0].text)" }.joined(separator: "; ")
            steps.append(.init(.validity, failing: "not-valid-at-time", reason: "not valid on \(day) (\(timeSource)): \(text)"))
        }
    }

    /// A warning step listing the certificates but the root that expire within the warning
    /// window of "now". `dates` as for ``validity(_:dates:time:timeSource:now:steps:)``.
    func expiryWarning(
        _ chain: [(ChainPosition, Certificate)], dates: [ValidityDates]? = nil, options: TrustOptions,
        steps: inout [TrustReport.Step]
    ) {
        let dates = dates ?? chain.map { ValidityDates($0.1) }
        let horizon = options.now.addingTimeInterval(Double(options.expiryWarningDays) * 86_400)
        let soon = chain.indices.filter {
            chain[$0].0 != .root && dates[$0].notAfter > options.now && dates[$0].notAfter <= horizon
        }
        guard !soon.isEmpty else { return }
        let text = soon.map { index in
            let (name, cert) = chain[index]
            let days = Int((dates[index].notAfter.timeIntervalSince(options.now) / 86_400).rounded(.down))
            return "the \(name.rawValue) \(cert.displayName)\(ou(cert)) expires \(AppleDate.calendarDay(dates[index].notAfter)) (in \(CountNoun.day.count(days)))"
        }.joined(separator: "; ")
        steps.append(.init(.expiryWarning, outcome: .warning, reason: text))
    }

    /// The bundled root, with its DER, that issued and signed `cert`, if any.
    func bundledRoot(issuing cert: Certificate, der: [UInt8]) -> (Certificate, [UInt8])? {
        zip(anchors.roots, anchors.rootDERs).first {
            $0.0.subject == cert.issuer && cache.issuerSigned(cert, subjectDER: der, by: $0.0, issuerDER: $0.1)
        }
    }

    func details(_ cert: Certificate, der: [UInt8]) -> [Field] {
        cache.details(cert, der: der)
    }

    private func ou(_ cert: Certificate) -> String {
        for rdn in cert.subject {
            for attribute in rdn where attribute.type == .RDNAttributeType.organizationalUnitName {
                let value = attribute.value.escapedText
                if value.count <= 3 { return " (\(value))" }  // WWDR generations: G3, G5, G6, …
            }
        }
        return ""
    }

    static func verdict(_ steps: [TrustReport.Step], success: TrustReport.Verdict) -> TrustReport.Verdict {
        steps.contains { $0.outcome == .fail } ? .invalid : success
    }
}

/// A chain judged apart from time: the leaf certificate, intermediate, root (and chain) steps,
/// the certificates validity is judged on, whether the verifier accepted the chain, and the
/// verdict a clean chain earns.
struct JudgedChain: Sendable {
    var steps: [TrustReport.Step]
    var chain: [(ChainPosition, Certificate)]
    var verified: Bool
    var success: TrustReport.Verdict
    /// Each certificate's validity dates, in ``chain``'s order: read once per chain (a read
    /// converts the certificate's ASN.1 time), then compared for every token it signs.
    let dates: [ValidityDates]
    /// The DER of ``chain``'s certificates, in its order (for online checks).
    var ders: [[UInt8]] = []

    init(steps: [TrustReport.Step], chain: [(ChainPosition, Certificate)], verified: Bool, success: TrustReport.Verdict) {
        self.steps = steps
        self.chain = chain
        self.verified = verified
        self.success = success
        dates = chain.map { ValidityDates($0.1) }
    }
}

/// When a certificate is valid: `notBefore` to `notAfter`, both included.
struct ValidityDates: Sendable {
    let notBefore: Date
    let notAfter: Date

    init(notBefore: Date, notAfter: Date) {
        self.notBefore = notBefore
        self.notAfter = notAfter
    }

    init(_ certificate: Certificate) {
        self.init(notBefore: certificate.notValidBefore, notAfter: certificate.notValidAfter)
    }

    func contains(_ time: Date) -> Bool { notBefore <= time && time <= notAfter }

    /// `2019-08-15 to 2027-08-15`, as the trust steps and their details write it.
    var text: String { "\(AppleDate.calendarDay(notBefore)) to \(AppleDate.calendarDay(notAfter))" }
}

/// Where a certificate sits in a chain; the raw values are the words the validity and expiry
/// steps use for it (`certificate`: Xcode's lone self-signed one).
enum ChainPosition: String, Sendable {
    case leaf, intermediate, root, certificate
}
