import Foundation
import PlainWords
import SwiftASN1
@_spi(FixedExpiryValidationTime) import X509

// The policies swift-certificates' `Verifier` judges our chains with. Each policy finds typed
// ``ChainProblem``s through a static `problems(in:)`; `chainMeetsPolicyRequirements` fails when
// there is any, and the trust steps are worded from the same problems, so the prose and the
// verdict cannot drift apart.

/// One thing wrong with one certificate of a candidate chain.
struct ChainProblem: Hashable, Sendable {
    /// 0 is the leaf, 1 the intermediate, 2 the root; `nil` for the chain as a whole.
    var position: Int?
    var kind: Kind

    enum Kind: Hashable, Sendable {
        /// An Apple marker extension (dotted OID) is missing.
        case missingMarker(String)
        /// An issuing certificate without basicConstraints, or with CA:FALSE.
        case notCertificateAuthority(constraintsPresent: Bool)
        /// The CA's pathLenConstraint allows fewer sub-CAs than the chain has.
        case pathLength(allowed: Int)
        /// keyUsage is present but lacks the bit this position needs.
        case keyUsage(missing: String)
        /// A critical extension (dotted OID) that no policy enforces.
        case unknownCriticalExtension(String)
        /// Apple's chains are exactly leaf → intermediate → root.
        case chainLength(Int)
        /// The validity windows never overlap: the chain was valid at no instant.
        case disjointValidity
        /// Any other RFC 5280 failure, as swift-certificates words it.
        case rfc5280(String)
    }

    /// The problem in words, after the certificate's name ("… issued the leaf but <text>").
    var text: String {
        switch kind {
        case .missingMarker(let oid):
            oid == AppleOID.receiptSigningLeaf
                ? "lacks Apple's receipt-signing marker \(oid)" : "lacks Apple's WWDR marker \(oid)"
        case .notCertificateAuthority(let present):
            present
                ? "is not a CA certificate (basic constraints CA:FALSE)"
                : "is not a CA certificate (no basic constraints extension)"
        case .pathLength(let allowed):
            "is a CA limited to \(CountNoun.subCA.count(allowed)) below it (basic constraints pathLenConstraint), and the chain has more"
        case .keyUsage(let missing):
            "has a key usage without \(missing)"
        case .unknownCriticalExtension(let oid):
            "carries an unknown critical extension \(oid)"
        case .chainLength(let count):
            "is not part of a leaf → intermediate → root chain (the chain built has \(CountNoun.certificate.count(count)))"
        case .disjointValidity:
            "has validity windows that never overlap"
        case .rfc5280(let reason):
            "fails RFC 5280: \(reason)"
        }
    }
}

extension ChainProblem {
    fileprivate static func result(_ problems: [ChainProblem]) -> PolicyEvaluationResult {
        if problems.isEmpty { return .meetsPolicy }
        let text = problems.map { "certificate \($0.position.map(String.init) ?? "chain"): \($0.text)" }
            .joined(separator: "; ")
        return .failsToMeetPolicy(reason: text)
    }
}

/// swift-certificates' `RFC5280Policy` (version, basic constraints, path length, name
/// constraints, expiry), judged at an instant when every certificate of the candidate chain
/// was within its validity window: the latest `notValidBefore` of the chain.
///
/// The RFC 5280 result depends on time only through expiry, so for one chain
/// `RFC5280Policy(at: signing time)` passes exactly when this policy passes and every
/// certificate was valid at signing time. The second half is the separate "validity" step;
/// this half does not depend on time, so its result can be cached per chain (``TrustCache``).
struct StructuralRFC5280Policy: VerifierPolicy {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = RFC5280Policy().verifyingCriticalExtensions

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) -> PolicyEvaluationResult {
        ChainProblem.result(Self.problems(in: chain))
    }

    /// The RFC 5280 problems of a chain the verifier built (leaf first), attributed to a
    /// certificate where the policy's rules make that possible.
    static func problems(in chain: UnverifiedCertificateChain) -> [ChainProblem] {
        guard let instant = chain.map(\.notValidBefore).max(), let firstExpiry = chain.map(\.notValidAfter).min()
        else { return [] }
        if instant > firstExpiry { return [ChainProblem(position: nil, kind: .disjointValidity)] }
        let policy = RFC5280Policy(fixedExpiryValidationTime: instant)
        guard case .failsToMeetPolicy(let reason) = policy.chainMeetsPolicyRequirements(chain: chain) else {
            return []
        }
        var attributed = issuerProblems(in: Array(chain))
        // A certificate trusted on its own (a root presented as the leaf) must be a CA too.
        if chain.count == 1, chain[0].version != .v1 {
            switch try? chain[0].extensions.basicConstraints {
            case .some(.isCertificateAuthority): break
            case .some(.notCertificateAuthority):
                attributed.append(.init(position: 0, kind: .notCertificateAuthority(constraintsPresent: true)))
            case .none:
                attributed.append(.init(position: 0, kind: .notCertificateAuthority(constraintsPresent: false)))
            }
        }
        return attributed.isEmpty ? [ChainProblem(position: nil, kind: .rfc5280(reason.description))] : attributed
    }

    /// The basic-constraints rules RFC5280Policy applies (RFC 5280 §4.2.1.9), per certificate:
    /// every issuing certificate of a v3 chain is a CA within its path length. Also used on
    /// the part of a chain that could be built when no root was reached.
    static func issuerProblems(in chain: [Certificate]) -> [ChainProblem] {
        var problems: [ChainProblem] = []
        var subCAs = 0
        for (position, cert) in chain.enumerated().dropFirst() where cert.version != .v1 {
            switch try? cert.extensions.basicConstraints {
            case .some(.isCertificateAuthority(let maxPathLength)):
                if let maxPathLength, maxPathLength < subCAs {
                    problems.append(.init(position: position, kind: .pathLength(allowed: maxPathLength)))
                }
            case .some(.notCertificateAuthority):
                problems.append(.init(position: position, kind: .notCertificateAuthority(constraintsPresent: true)))
            case .none:
                problems.append(.init(position: position, kind: .notCertificateAuthority(constraintsPresent: false)))
            }
            if cert.issuer != cert.subject { subCAs += 1 }
        }
        return problems
    }
}

/// Apple's marker extensions: the receipt/JWS-signing leaf carries 1.2.840.113635.100.6.11.1,
/// the WWDR intermediate 1.2.840.113635.100.6.2.1; and the chain is exactly leaf →
/// intermediate → root. Intermediates are not pinned: any that carries the marker and that a
/// bundled root signed is accepted.
struct AppleMarkerPolicy: VerifierPolicy {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = [AppleOID.leafMarker, AppleOID.intermediateMarker]

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) -> PolicyEvaluationResult {
        ChainProblem.result(Self.problems(in: Array(chain), complete: true))
    }

    /// With `complete` false, `chain` is the part that could be built (no root yet): its length
    /// is not judged.
    static func problems(in chain: [Certificate], complete: Bool) -> [ChainProblem] {
        var problems: [ChainProblem] = []
        if let leaf = chain.first, !leaf.hasExtension(AppleOID.receiptSigningLeaf) {
            problems.append(.init(position: 0, kind: .missingMarker(AppleOID.receiptSigningLeaf)))
        }
        if chain.count >= 2, !chain[1].hasExtension(AppleOID.wwdrIntermediate) {
            problems.append(.init(position: 1, kind: .missingMarker(AppleOID.wwdrIntermediate)))
        }
        if complete, chain.count != 3 {
            problems.append(.init(position: 1, kind: .chainLength(chain.count)))
        }
        return problems
    }
}

/// Key usage, which `RFC5280Policy` lists as handled but deliberately does not police: where a
/// certificate has a keyUsage extension, the leaf's must allow digitalSignature and every
/// issuer's keyCertSign (RFC 5280 §4.2.1.3).
struct KeyUsagePolicy: VerifierPolicy {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = [.X509ExtensionID.keyUsage]

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) -> PolicyEvaluationResult {
        ChainProblem.result(Self.problems(in: Array(chain)))
    }

    static func problems(in chain: [Certificate]) -> [ChainProblem] {
        var problems: [ChainProblem] = []
        for (position, cert) in chain.enumerated() {
            let usage: KeyUsage?
            do {
                usage = try cert.extensions.keyUsage
            } catch {
                problems.append(.init(position: position, kind: .rfc5280("its key usage extension cannot be read")))
                continue
            }
            guard let usage else { continue }
            if position == 0, !usage.digitalSignature {
                problems.append(.init(position: position, kind: .keyUsage(missing: "digitalSignature")))
            } else if position > 0, !usage.keyCertSign {
                problems.append(.init(position: position, kind: .keyUsage(missing: "keyCertSign")))
            }
        }
        return problems
    }
}

/// Xcode's self-signed StoreKit testing certificate marks extendedKeyUsage (code signing)
/// critical. This policy handles that extension for the test root alone: a chain passes only
/// if every certificate with a critical extendedKeyUsage is `root` itself, trusted on its own.
/// It is composed into the StoreKit-testing verifier only, never into Apple's.
struct StoreKitTestRootPolicy: VerifierPolicy {
    let root: Certificate
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = [.X509ExtensionID.extendedKeyUsage]

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) -> PolicyEvaluationResult {
        ChainProblem.result(Self.problems(in: Array(chain), root: root))
    }

    static func problems(in chain: [Certificate], root: Certificate) -> [ChainProblem] {
        var problems: [ChainProblem] = []
        for (position, cert) in chain.enumerated() {
            guard cert.extensions.contains(where: { $0.oid == .X509ExtensionID.extendedKeyUsage && $0.critical })
            else { continue }
            let codeSigning = (try? cert.extensions.extendedKeyUsage)?.contains(.codeSigning) ?? false
            if chain.count != 1 || cert != root || !codeSigning {
                problems.append(
                    .init(position: position, kind: .unknownCriticalExtension(ASN1ObjectIdentifier.X509ExtensionID.extendedKeyUsage.description)))
            }
        }
        return problems
    }
}

/// Used only to explain a chain the real verifier rejected: it declares every critical
/// extension of the inputs handled, so chain building gets past them, and reports those that
/// the real policies do not handle as problems at their position.
struct UnknownCriticalExtensionPolicy: VerifierPolicy {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier]
    let handled: [ASN1ObjectIdentifier]

    init(handled: [ASN1ObjectIdentifier], certificates: [Certificate]) {
        self.handled = handled
        var all = handled
        for cert in certificates {
            for ext in cert.extensions where ext.critical && !all.contains(ext.oid) { all.append(ext.oid) }
        }
        verifyingCriticalExtensions = all
    }

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) -> PolicyEvaluationResult {
        ChainProblem.result(Self.problems(in: Array(chain), handled: handled))
    }

    static func problems(in chain: [Certificate], handled: [ASN1ObjectIdentifier]) -> [ChainProblem] {
        var problems: [ChainProblem] = []
        for (position, cert) in chain.enumerated() {
            for ext in cert.extensions where ext.critical && !handled.contains(ext.oid) {
                problems.append(.init(position: position, kind: .unknownCriticalExtension(ext.oid.description)))
            }
        }
        return problems
    }
}
