import Foundation
import X509

/// Which certificate of the chain an online check is about.
public enum OnlineCheckedCertificate: String, Sendable, Hashable {
    case leaf, intermediate
}

/// How an online check of one chain ended.
public enum OnlineCheckResult: Sendable, Hashable {
    /// Both certificates are good; the answers hold until `until` (the earliest `nextUpdate`).
    case good(until: Date)
    /// A verified answer says `certificate` was revoked at `at`, for CRLReason `reason`.
    case revoked(OnlineCheckedCertificate, at: Date, reason: Int?)
    /// An answer came but is not a verified answer about that certificate: signed by another
    /// key, about another certificate, status unknown, refused…
    case rejected(OnlineCheckedCertificate?, Code, detail: String)
    /// No usable answer for now: unreachable, late, too large, `tryLater`. Never valid, never
    /// invalid: ask again later.
    case retryable(OnlineCheckedCertificate?, Code, detail: String)
    /// Neither certificate names an OCSP responder (Authority Information Access): nothing
    /// was asked, so revocation is not known.
    case noResponder

    /// Why, as a code: stable, for programs and tests (``TrustReport/Step/code``).
    public enum Code: String, Sendable, Hashable {
        case good = "ocsp-good"
        case revoked = "ocsp-revoked"
        case otherCertificate = "ocsp-other-certificate"
        case unknownStatus = "ocsp-unknown-status"
        case refused = "ocsp-refused"
        case responseRejected = "ocsp-response-rejected"
        case unreachable = "ocsp-unreachable"
        case timeout = "ocsp-timeout"
        case tooLarge = "ocsp-too-large"
        case tryLater = "ocsp-try-later"
        case responderError = "ocsp-responder-error"
        case unreadable = "ocsp-unreadable"
        case noResponder = "ocsp-no-responder"
    }

    public var code: Code {
        switch self {
        case .good: .good
        case .revoked: .revoked
        case .noResponder: .noResponder
        case .rejected(_, let code, _), .retryable(_, let code, _): code
        }
    }

    public var isRetryable: Bool {
        if case .retryable = self { return true }
        return false
    }
}

/// Asks, online, whether a chain's leaf or intermediate was revoked. ReceiptTrust defines the
/// question and its answers and opens no sockets: `OnlineRevocation`'s `OnlineChecks` asks OCSP
/// responders over an injected transport, and tests answer as they like.
public protocol RevocationChecking: Sendable {
    /// Asks about `leaf` and `intermediate` of a chain to `root` (each parsed and as DER),
    /// judged at `now`.
    func check(
        leaf: (Certificate, [UInt8]), intermediate: (Certificate, [UInt8]), root: (Certificate, [UInt8]), now: Date
    ) async -> OnlineCheckResult

    /// The checks for one input: every check made while judging it (its chain and each nested
    /// token's) shares one time bound, so an input's answer comes within that bound however
    /// many chains it carries. ``TrustEvaluator`` asks for it once per token it is given.
    func bounded() -> any RevocationChecking
}

extension RevocationChecking {
    /// No bound of its own: itself.
    public func bounded() -> any RevocationChecking { self }
}

/// RFC 5280 §5.3.1's names for a revocation's CRLReason.
public enum RevocationReason {
    public static func name(_ code: Int) -> String {
        switch code {
        case 0: "unspecified"
        case 1: "keyCompromise"
        case 2: "cACompromise"
        case 3: "affiliationChanged"
        case 4: "superseded"
        case 5: "cessationOfOperation"
        case 6: "certificateHold"
        case 8: "removeFromCRL"
        case 9: "privilegeWithdrawn"
        case 10: "aACompromise"
        default: "reason \(code)"
        }
    }
}
