import ReceiptCore
import Foundation

/// Why an App Store Server API call ended without the answer asked for. Equality compares only
/// the ``Code``; ``reason`` is for people; ``last`` is the last attempt's result, when a
/// request was made.
public struct APIFailure: CodedError {
    public enum Code: String, CaseIterable, CodedErrorCode {
        /// The request could not be made (empty id, conflicting filters, no usable key); nothing
        /// was sent.
        case invalidRequest = "invalid-request"
        /// The endpoint does not exist in sandbox (Look Up Order ID); nothing was sent.
        case notInSandbox = "not-in-sandbox"
        /// HTTP 401: Apple refused the token.
        case unauthorized
        /// Apple answered with a permanent `errorCode` (``APIFailure/apiError`` says which).
        case apiError = "api-error"
        /// A final HTTP status without an `errorCode` (403, 404 …).
        case http
        /// The TLS handshake failed.
        case tls
        /// A 2xx answer whose body is not the API's JSON.
        case invalidResponse = "invalid-response"
        /// Cancelled before an answer.
        case cancelled
        /// Temporary failures outlasted the retries.
        case retriesExhausted = "retries-exhausted"
        /// The next wait (backoff or `Retry-After`) would pass the retry budget.
        case retryBudgetExhausted = "retry-budget-exhausted"
        /// Paging did not end (the server kept saying `hasMore`) within the page limit.
        case tooManyPages = "too-many-pages"
        /// `auto` could not find where a write goes (no look-up can tell): nothing was sent.
        case environmentUnknown = "environment-unknown"
        /// The customer's data a write was planned from is not genuine (`invalid`): nothing was
        /// sent without `--force-untrusted`.
        case untrustedData = "untrusted-data"
    }

    public let code: Code
    public let reason: String
    public let last: APIAttemptResult?

    public init(_ code: Code, _ reason: String, last: APIAttemptResult? = nil) {
        self.code = code
        self.reason = reason
        self.last = last
    }

    /// Apple's `errorCode` of the last answer, if it had one.
    public var apiError: APIErrorCode? { last?.apiError }

    /// The failure for a final (not retried) result in `environment`. `sandboxTried` says that
    /// `auto` already asked production (for the 4040010 words).
    public static func final(_ result: APIAttemptResult, environment: APIEnvironment, sandboxTried: Bool = false) -> APIFailure {
        switch result {
        case .success:
            return APIFailure(.invalidResponse, "no failure", last: result)
        case .http(401), .apiError(401, _):
            return unauthorized(environment: environment, last: result)
        case .apiError(_, .transactionIDNotFound):
            let tried = sandboxTried ? " (production answered the same, then sandbox was asked)" : ""
            return APIFailure(.apiError, "\(environment): 4040010 the transaction id was not found\(tried)", last: result)
        case .apiError(let status, let code):
            return APIFailure(.apiError, "\(environment): HTTP \(status) error \(code)", last: result)
        case .http(let status):
            return APIFailure(.http, "\(environment): HTTP \(status) without an error code", last: result)
        case .transport(let failure) where failure.code == .tls:
            return APIFailure(.tls, failure.description, last: result)
        case .transport(let failure) where failure.code == .cancelled:
            return APIFailure(.cancelled, "cancelled", last: result)
        case .transport(let failure) where failure.code == .invalidResponse:
            return APIFailure(.invalidResponse, failure.description, last: result)
        case .transport(let failure):
            return APIFailure(.retriesExhausted, failure.description, last: result)
        }
    }

    /// A 401 in words: Apple sends no body, so the usual causes, and the likely one.
    public static func unauthorized(environment: APIEnvironment, last: APIAttemptResult? = .http(status: 401)) -> APIFailure {
        var reason =
            "\(environment) answered 401 (Apple sends no reason). Usual causes: a wrong key id or issuer id; a revoked key, or an App Store Connect API key instead of an In-App Purchase key; a bundle id that is not the app's; this machine's clock off by minutes."
        if environment == .production {
            reason +=
                " If the app has no production release yet, production answers 401 for every request: ask sandbox with --environment sandbox (auto does not fall back on 401)."
        }
        return APIFailure(.unauthorized, reason, last: last)
    }

    /// Look Up Order ID asked in sandbox: Apple offers none (order ids exist only for real
    /// purchases).
    public static let orderLookUpNotInSandbox = APIFailure(
        .notInSandbox, "Look Up Order ID exists in production only: order ids come from real purchases, so Apple offers no sandbox look-up")
}
