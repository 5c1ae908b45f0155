import ReceiptCore
import Foundation

/// Why a verification ended without Apple's status. Equality compares only the ``Code``;
/// ``reason`` is for people; ``last`` is the result of the last attempt, when one was made.
public struct VerificationFailure: CodedError {
    public enum Code: String, CaseIterable, CodedErrorCode {
        /// The TLS handshake failed (not retried).
        case tls
        /// A final HTTP error (4xx other than 429).
        case http
        /// HTTP 200 with a body that is not verifyReceipt JSON.
        case invalidResponse = "invalid-response"
        /// Temporary failures outlasted the retries.
        case retriesExhausted = "retries-exhausted"
        /// The next wait (computed or Apple's `Retry-After`) would pass the total retry budget.
        case retryBudgetExhausted = "retry-budget-exhausted"
        /// Cancelled before an answer.
        case cancelled
        /// The request could not be built.
        case invalidRequest = "invalid-request"
        /// No result was recorded for the receipt.
        case notVerified = "not-verified"
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
