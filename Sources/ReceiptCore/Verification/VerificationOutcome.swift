import Foundation

/// Why a verification ended without Apple's status. Equality compares only the ``Code``;
/// ``reason`` is for people; ``last`` is the result of the last attempt, when one was made.
public struct VerificationFailure: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        enum Kind: String, CaseIterable {
            case tls
            case http
            case invalidResponse = "invalid-response"
            case retriesExhausted = "retries-exhausted"
            case retryBudgetExhausted = "retry-budget-exhausted"
            case cancelled
            case invalidRequest = "invalid-request"
            case notVerified = "not-verified"
        }

        let kind: Kind

        /// The TLS handshake failed (not retried).
        public static let tls = Code(kind: .tls)
        /// A final HTTP error (4xx other than 429).
        public static let http = Code(kind: .http)
        /// HTTP 200 with a body that is not verifyReceipt JSON.
        public static let invalidResponse = Code(kind: .invalidResponse)
        /// Temporary failures outlasted the retries.
        public static let retriesExhausted = Code(kind: .retriesExhausted)
        /// The next wait (computed or Apple's `Retry-After`) would pass the total retry budget.
        public static let retryBudgetExhausted = Code(kind: .retryBudgetExhausted)
        /// Cancelled before an answer.
        public static let cancelled = Code(kind: .cancelled)
        /// The request could not be built.
        public static let invalidRequest = Code(kind: .invalidRequest)
        /// No result was recorded for the receipt.
        public static let notVerified = Code(kind: .notVerified)

        /// The stable name stored in the audit database and printed in JSON.
        public var description: String { kind.rawValue }

        /// The code of a stored name; nil for names this version does not know.
        public init?(storedName: String) {
            guard let kind = Kind(rawValue: storedName) else { return nil }
            self.kind = kind
        }

        init(kind: Kind) { self.kind = kind }
    }

    public let code: Code
    public let reason: String
    /// The last attempt's result, if any attempt was made.
    public let last: AttemptResult?

    public init(_ code: Code, _ reason: String, last: AttemptResult? = nil) {
        self.code = code
        self.reason = reason
        self.last = last
    }

    public var description: String { reason }

    /// Whether this failure is a temporary failure on Apple's side (for the outage signal):
    /// retries ran out on a temporary result. TLS failures and cancellations are not.
    public var isTemporaryFailure: Bool {
        (code == .retriesExhausted || code == .retryBudgetExhausted) && last?.isTemporaryFailure == true
    }

    /// The failure for a final result without Apple's status (TLS, HTTP 4xx, bad body).
    public static func final(_ result: AttemptResult) -> VerificationFailure {
        switch result {
        case .transport(let failure) where failure.code == .tls: VerificationFailure(.tls, failure.description, last: result)
        case .transport(let failure) where failure.code == .cancelled: VerificationFailure(.cancelled, "cancelled", last: result)
        case .transport(let failure) where failure.code == .invalidResponse:
            VerificationFailure(.invalidResponse, failure.description, last: result)
        case .http(let status): VerificationFailure(.http, "HTTP \(status)", last: result)
        default: VerificationFailure(.retriesExhausted, result.description, last: result)
        }
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}

/// The end of one receipt's verification: Apple's answer, or why there was none.
public struct VerificationOutcome: Sendable {
    public var status: Int?
    public var environment: String?
    public var attempts: [VerificationAttempt]
    /// The decoded response body (the same model `inspect` prints).
    public var response: DecodedInput?
    /// Why no status could be had, after retries.
    public var failure: VerificationFailure?

    public var explanation: AppleStatus? { status.map { AppleStatus.explain($0, isRetryable: attempts.last?.isRetryable) } }

    public init(
        status: Int? = nil, environment: String? = nil, attempts: [VerificationAttempt] = [], response: DecodedInput? = nil,
        failure: VerificationFailure? = nil
    ) {
        self.status = status
        self.environment = environment
        self.attempts = attempts
        self.response = response
        self.failure = failure
    }
}

/// What happens to each receipt of a batch, in order. Every queued receipt ends in exactly one
/// final event, `done` or `failed`: none is lost or counted twice.
public enum BatchEvent: Sendable {
    case queued(id: Int, source: String)
    case sending(id: Int, attempt: Int, endpoint: VerifyEndpoint)
    case retrying(id: Int, inSeconds: Double, reason: RetryReason)
    /// Apple answered (any status); `duplicateOf` names the receipt whose answer was reused.
    case done(id: Int, outcome: VerificationOutcome, duplicateOf: Int?)
    /// No answer could be had (after retries), or the batch was cancelled first; with the
    /// attempts that were made.
    case failed(id: Int, failure: VerificationFailure, attempts: [VerificationAttempt])

    /// A final event's receipt id and outcome (a failure as an outcome with `failure` set);
    /// nil for progress events.
    public var result: (id: Int, outcome: VerificationOutcome)? {
        switch self {
        case .done(let id, let outcome, _): (id, outcome)
        case .failed(let id, let failure, let attempts): (id, VerificationOutcome(attempts: attempts, failure: failure))
        default: nil
        }
    }
}
