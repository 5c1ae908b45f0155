import Foundation
import SwiftASN1
import X509

/// A certificate with the DER it was read from (for report details and cache keys).
struct CertificateLink: Sendable {
    var certificate: Certificate
    var der: [UInt8]
}

/// What swift-certificates' `Verifier` concluded about one chain question, apart from time:
/// whether a chain meets every policy, the intermediate and root of the chain built (or the
/// best one attempted), and the typed problems the policies found. Cached per chain by
/// ``TrustCache``; the trust steps are worded from it.
struct ChainAnalysis: Sendable {
    /// A chain to a trusted root met every policy (validity at signing time aside).
    var verified: Bool
    var intermediate: CertificateLink?
    var root: CertificateLink?
    /// Why no intermediate was found, when chain building stopped before any policy ran.
    var missingIntermediate: String?
    /// Why no root was found.
    var missingRoot: String?
    var problems: [ChainProblem]
}

extension TrustEvaluator {
    private static let appleChainPurpose: UInt8 = 0
    private static let storeKitPurpose: UInt8 = 1
    private static let maximumCandidates = 8

    /// The verifier's verdict on leaf → one of `candidates` → a bundled root; cached.
    func analyseAppleChain(leaf: (Certificate, [UInt8]), candidates: [(Certificate, [UInt8])]) async -> ChainAnalysis {
        let leaf = CertificateLink(certificate: leaf.0, der: leaf.1)
        // Only certificates that could be the leaf's issuer, and not self-issued, are offered:
        // Apple's chains have one intermediate, and this keeps the verifier's search to
        // leaf → candidate → root, so hostile input with many cross-signed certificates cannot
        // make it explore an exponential number of paths. Beyond `maximumCandidates` the rest
        // are ignored (a genuine receipt carries one).
        let intermediates = Array(
            candidates.lazy
                .filter { $0.1 != leaf.der && $0.0.subject == leaf.certificate.issuer && !$0.0.isSelfIssued }
                .prefix(Self.maximumCandidates)
                .map { CertificateLink(certificate: $0.0, der: $0.1) })
        let key = TrustCache.ChainKey(
            purpose: Self.appleChainPurpose, anchors: anchors.fingerprint, leaf: Data(leaf.der),
            intermediates: intermediates.map { Data($0.der) })
        return await cache.chain(key) { await computeAppleChain(leaf: leaf, intermediates: intermediates) }
    }

    private func computeAppleChain(leaf: CertificateLink, intermediates: [CertificateLink]) async -> ChainAnalysis {
        let store = CertificateStore(intermediates.map(\.certificate))
        var verifier = Verifier(rootCertificates: anchors.store) {
            StructuralRFC5280Policy()
            AppleMarkerPolicy()
            KeyUsagePolicy()
        }
        let handled = verifier.policy.verifyingCriticalExtensions
        let result = await verifier.validate(leaf: leaf.certificate, intermediates: store)
        if case .validCertificate(let validated) = result {
            let chain = Array(validated)
            return ChainAnalysis(
                verified: true, intermediate: link(chain[1], in: intermediates),
                root: rootLink(chain[chain.count - 1]), problems: [])
        }

        // Rejected: ask again with every critical extension of the inputs declared handled (and
        // reported as a problem when the real policies do not handle it), so chain building
        // gets as far as it can and the policies say what is wrong where.
        var explainer = Verifier(rootCertificates: anchors.store) {
            StructuralRFC5280Policy()
            AppleMarkerPolicy()
            KeyUsagePolicy()
            UnknownCriticalExtensionPolicy(
                handled: handled,
                certificates: [leaf.certificate] + intermediates.map(\.certificate) + anchors.roots)
        }
        let explained = await explainer.validate(leaf: leaf.certificate, intermediates: store)
        if case .couldNotValidate(let failures) = explained {
            let complete = failures.map { failure in
                (chain: failure.chain, problems: Self.problems(in: failure.chain, handled: handled))
            }.filter { $0.chain.count >= 3 }
            if let best = complete.min(by: { $0.problems.count < $1.problems.count }) {
                let chain = Array(best.chain)
                return ChainAnalysis(
                    verified: false, intermediate: link(chain[1], in: intermediates),
                    root: rootLink(chain[chain.count - 1]), problems: best.problems)
            }
        }
        return partialChain(leaf: leaf, intermediates: intermediates, handled: handled, explainerAgreed: explained)
    }

    /// Every policy's problems with a chain the verifier built.
    private static func problems(in chain: UnverifiedCertificateChain, handled: [ASN1ObjectIdentifier])
        -> [ChainProblem]
    {
        let certificates = Array(chain)
        return AppleMarkerPolicy.problems(in: certificates, complete: true)
            + StructuralRFC5280Policy.problems(in: chain)
            + KeyUsagePolicy.problems(in: certificates)
            + UnknownCriticalExtensionPolicy.problems(in: certificates, handled: handled)
    }

    /// No chain reached a root. The verifier's chain building stops before any policy when no
    /// input certificate is the leaf's issuer, when the issuer's signature does not verify, or
    /// when no bundled root signed the intermediate; those are the checks it makes, in its
    /// order, and the policies judge the part that could be built.
    private func partialChain(
        leaf: CertificateLink, intermediates: [CertificateLink], handled: [ASN1ObjectIdentifier],
        explainerAgreed: CertificateValidationResult
    ) -> ChainAnalysis {
        func problems(_ chain: [Certificate]) -> [ChainProblem] {
            AppleMarkerPolicy.problems(in: chain, complete: false)
                + StructuralRFC5280Policy.issuerProblems(in: chain)
                + KeyUsagePolicy.problems(in: chain)
                + UnknownCriticalExtensionPolicy.problems(in: chain, handled: handled)
        }
        let issuers = intermediates.filter { $0.certificate.subject == leaf.certificate.issuer }
        guard
            let intermediate = issuers.first(where: {
                cache.issuerSigned(leaf.certificate, subjectDER: leaf.der, by: $0.certificate, issuerDER: $0.der)
            })
        else {
            return ChainAnalysis(
                verified: false, intermediate: nil, root: nil,
                missingIntermediate: issuers.isEmpty
                    ? "no certificate in the input is the leaf's issuer (\(leaf.certificate.issuer))"
                    : "the leaf's issuer is present but its signature on the leaf does not verify",
                problems: problems([leaf.certificate]))
        }
        var found = problems([leaf.certificate, intermediate.certificate])
        let cert = intermediate.certificate
        if let root = bundledRoot(issuing: cert, der: intermediate.der) {
            // A root signed it, yet the explaining verifier built no chain through it.
            if case .validCertificate = explainerAgreed {
                found.append(.init(position: nil, kind: .rfc5280("was rejected by the verifier")))
            }
            return ChainAnalysis(
                verified: false, intermediate: intermediate,
                root: CertificateLink(certificate: root.0, der: root.1), problems: found)
        }
        return ChainAnalysis(
            verified: false, intermediate: intermediate, root: nil,
            missingRoot: !anchors.roots.contains(where: { $0.subject == cert.issuer })
                ? "the intermediate's issuer \(cert.issuer) is not a trusted root"
                : "the intermediate claims \(cert.issuer) as issuer but that root's signature on it does not verify",
            problems: found)
    }

    private func link(_ cert: Certificate, in intermediates: [CertificateLink]) -> CertificateLink {
        intermediates.first { $0.certificate == cert } ?? CertificateLink(certificate: cert, der: Self.der(cert))
    }

    private func rootLink(_ cert: Certificate) -> CertificateLink {
        zip(anchors.roots, anchors.rootDERs).first { $0.0 == cert }.map { CertificateLink(certificate: $0.0, der: $0.1) }
            ?? CertificateLink(certificate: cert, der: Self.der(cert))
    }

    private static func der(_ cert: Certificate) -> [UInt8] {
        var serializer = DER.Serializer()
        return (try? serializer.serialize(cert)).map { serializer.serializedBytes } ?? []
    }

    // MARK: - Xcode StoreKit testing

    /// The verifier's verdict on Xcode's self-signed StoreKit certificate as its own, only,
    /// root (RFC 5280, key usage, and its critical code-signing extendedKeyUsage accepted for
    /// that root alone); cached. `nil` when it passes, else the problems in words.
    func storeKitCertificateProblems(_ cert: Certificate, der: [UInt8]) async -> [String]? {
        let key = TrustCache.ChainKey(
            purpose: Self.storeKitPurpose, anchors: Data(), leaf: Data(der), intermediates: [])
        let analysis = await cache.chain(key) {
            var verifier = Verifier(rootCertificates: CertificateStore([cert])) {
                StructuralRFC5280Policy()
                KeyUsagePolicy()
                StoreKitTestRootPolicy(root: cert)
            }
            let handled = verifier.policy.verifyingCriticalExtensions
            if case .validCertificate = await verifier.validate(leaf: cert, intermediates: CertificateStore()) {
                return ChainAnalysis(verified: true, problems: [])
            }
            var explainer = Verifier(rootCertificates: CertificateStore([cert])) {
                StructuralRFC5280Policy()
                KeyUsagePolicy()
                StoreKitTestRootPolicy(root: cert)
                UnknownCriticalExtensionPolicy(handled: handled, certificates: [cert])
            }
            var problems: [ChainProblem] = []
            if case .couldNotValidate(let failures) = await explainer.validate(leaf: cert, intermediates: CertificateStore()),
                let chain = failures.first?.chain
            {
                let certificates = Array(chain)
                problems = StructuralRFC5280Policy.problems(in: chain) + KeyUsagePolicy.problems(in: certificates)
                    + StoreKitTestRootPolicy.problems(in: certificates, root: cert)
                    + UnknownCriticalExtensionPolicy.problems(in: certificates, handled: handled)
            }
            if problems.isEmpty { problems = [.init(position: nil, kind: .rfc5280("was rejected by the verifier"))] }
            return ChainAnalysis(verified: false, problems: problems)
        }
        return analysis.verified ? nil : analysis.problems.map(\.text)
    }
}
