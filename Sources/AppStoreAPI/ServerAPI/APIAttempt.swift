import ReceiptCore
import Foundation

/// What one request to the App Store Server API came back with.
public enum APIAttemptResult: Sendable, Hashable, CustomStringConvertible {
    /// A 2xx answer whose body decoded.
    case success(httpStatus: Int)
    /// An error status with Apple's `errorCode`.
    case apiError(httpStatus: Int, code: APIErrorCode)
    /// An error status without an `errorCode` (401 never has one).
    case http(status: Int)
    /// No usable answer: the network layer failed, or a 2xx body did not decode
    /// (`invalidResponse`).
    case transport(TransportFailure)

    /// The HTTP status seen, if a response came.
    public var httpStatus: Int? {
        switch self {
        case .success(let status), .apiError(let status, _), .http(let status): status
        case .transport: nil
        }
    }

    /// Apple's `errorCode`, if the answer had one.
    public var apiError: APIErrorCode? {
        if case .apiError(_, let code) = self { return code }
        return nil
    }

    public var isSuccess: Bool {
        if case .success = self { return true }
        return false
    }

    /// `HTTP 200`, `HTTP 404 error 4040010 …`, `HTTP 401`, or the transport failure.
    public var description: String {
        switch self {
        case .success(let status): "HTTP \(status)"
        case .apiError(let status, let code): "HTTP \(status) error \(code)"
        case .http(let status): "HTTP \(status)"
        case .transport(let failure): failure.description
        }
    }

    /// The one retry table for API answers:
    ///
    /// | result | decision |
    /// |---|---|
    /// | 2xx | final |
    /// | HTTP 429 (with or without 4290000) | retry at `Retry-After` (UNIX ms), else with backoff |
    /// | 4040002, 4040004, 4040006, 5000001 | retry with backoff |
    /// | HTTP 5xx without a known permanent code | retry with backoff |
    /// | 5000000 and every other known code | final (Apple marks the retryable ones by code) |
    /// | other HTTP (401, 403, 404 …) | final |
    /// | timeout, refused, dropped, other network errors | retry with backoff |
    /// | TLS, cancelled, body not the API's JSON | final |
    public var retryDecision: APIRetryDecision {
        switch self {
        case .success: return .final
        case .apiError(let status, let code):
            if status == 429 || code == .rateLimitExceeded { return .rateLimited }
            if code.isRetryable { return .backoff }
            if (500...599).contains(status) && !code.isKnown { return .backoff }
            return .final
        case .http(let status):
            if status == 429 { return .rateLimited }
            return (500...599).contains(status) ? .backoff : .final
        case .transport(let failure):
            switch failure.code {
            case .tls, .cancelled, .invalidResponse: return .final
            default: return .backoff
            }
        }
    }
}

/// Whether an API answer is asked again, and how the wait is chosen.
public enum APIRetryDecision: Sendable, Hashable {
    /// Not retried: a success or a permanent failure.
    case final
    /// Retried after the jittered backoff.
    case backoff
    /// Rate limited: retried at the `Retry-After` instant (backoff when there is none), if
    /// that fits the budget.
    case rateLimited
}

/// `Retry-After` as the App Store Server API sends it: a UNIX time in milliseconds.
public enum APIRetryAfter {
    /// The instant `value` names. A number of at least 10¹¹ is UNIX milliseconds (Apple's form;
    /// 10¹¹ ms is 1973); a smaller number is delay-seconds and an HTTP date is a date
    /// (RFC 9110), both read relative to `now`. Nil for anything else (and for more than 18 digits).
    public static func instant(_ value: String, now: Date) -> Date? {
        let text = value.trimmingCharacters(in: .whitespaces)
        if !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            guard text.count <= 18, let number = Int64(text) else { return nil }
            if number >= 100_000_000_000 { return Date(timeIntervalSince1970: Double(number) / 1000) }
            return now.addingTimeInterval(Double(number))
        }
        return RetryAfter.seconds(text, now: now).map { now.addingTimeInterval($0) }
    }
}

/// One HTTP exchange with the App Store Server API: what the request record (`requests` in
/// `lookup --format json`, the audit store, the Status pane) shows.
public struct APIRequestRecord: Sendable, Hashable {
    public var endpoint: APIEndpointKind
    public var environment: APIEnvironment
    /// The URL asked (ids percent-encoded; no token: the JWT goes in a header and is never
    /// recorded).
    public var url: String
    public var result: APIAttemptResult
    public var latencyMilliseconds: Double
    /// The instant Apple's `Retry-After` named, when it sent one.
    public var retryAfter: Date?
    /// The wait before the next attempt, in seconds, when this one was retried.
    public var waitSeconds: Double?
    /// The server's `Date` header as sent, when it sent one: kept as text, since parsing a date
    /// costs a formatter and only `doctor` asks (``serverDate``).
    public var dateHeader: String?
    /// A 2xx answer's body that did not decode, as sent (at most ``undecodedBodyLimit``
    /// bytes): a write it answers was applied all the same, and the body is kept for the record.
    public var undecodedBody: String?
    public static let undecodedBodyLimit = 64 * 1024

    public init(
        endpoint: APIEndpointKind, environment: APIEnvironment, url: String, result: APIAttemptResult, latencyMilliseconds: Double,
        retryAfter: Date? = nil, waitSeconds: Double? = nil
    ) {
        self.endpoint = endpoint
        self.environment = environment
        self.url = url
        self.result = result
        self.latencyMilliseconds = latencyMilliseconds
        self.retryAfter = retryAfter
        self.waitSeconds = waitSeconds
    }

    public var httpStatus: Int? { result.httpStatus }
    /// The server's clock (`Date`; `doctor` compares it with this machine's: a skew of minutes
    /// makes Apple refuse every token).
    public var serverDate: Date? { dateHeader.flatMap(HTTPDate.parse) }
    public var apiError: APIErrorCode? { result.apiError }

    /// The record as `lookup --format json` writes it: `endpoint`, `url`, `http_status`,
    /// `api_error`, `latency_ms`, `retry_after` (the seconds waited before the next attempt;
    /// null when not retried).
    public var json: JSONValue {
        .object([
            "endpoint": .string(endpoint.rawValue),
            "environment": .string(environment.rawValue),
            "url": .string(url),
            "http_status": httpStatus.map { .integer(Int64($0)) } ?? .null,
            "api_error": apiError.map { .integer(Int64($0.rawValue)) } ?? .null,
            "latency_ms": .number((latencyMilliseconds * 1000).rounded() / 1000),
            "retry_after": waitSeconds.map { .number(($0 * 1000).rounded() / 1000) } ?? .null,
        ])
    }
}
