import ReceiptCore
import Foundation

/// Why a request got no usable answer from the network layer, by kind. Equality compares only
/// the ``Code``; ``detail`` is the underlying error in words, for people.
public struct TransportFailure: CodedError {
    public enum Code: String, CaseIterable, CodedErrorCode {
        /// The TLS handshake failed (certificate not trusted, wrong host, protocol).
        case tls
        /// Connecting or reading took longer than allowed.
        case timeout
        /// Nobody listens there.
        case refused
        /// The connection closed before an answer.
        case dropped
        /// The task was cancelled before an answer.
        case cancelled
        /// HTTP 200, but the body is not verifyReceipt JSON.
        case invalidResponse = "invalid-response"
        /// Any other network error.
        case other
        /// Refused before a byte was sent (a header or URL the client will not send): the
        /// far end never saw it, so trying again cannot help.
        case notSent = "not-sent"
    }

    public let code: Code
    /// The underlying error in words (may be empty).
    public let detail: String

    /// The words as recorded (an audit row read back), which win over the composed ones.
    let recorded: String?

    public init(_ code: Code, detail: String = "") {
        self.code = code
        self.detail = detail
        recorded = nil
    }

    /// A failure read back from a record: `code` as stored, `description` its words as stored.
    public init(_ code: Code, recordedDescription: String) {
        self.code = code
        detail = ""
        recorded = recordedDescription
    }

    /// The words for people (``CodedError``'s reason): the description.
    public var reason: String { description }

    /// The failure of a request to `url`, said with it: a refused connection names where
    /// nothing listened and what to check.
    public func said(at url: String) -> String {
        if recorded == nil, code == .refused {
            return "connection refused by \(url): nothing listens there (is the server running, and is the URL right?)"
        }
        return "\(description) (\(url))"
    }

    /// For people: "TLS failed: …", "timed out (…)", "connection refused", ….
    public var description: String {
        if let recorded { return recorded }
        return switch code {
        case .tls: "TLS failed" + (detail.isEmpty ? "" : ": \(detail)")
        case .timeout: "timed out" + (detail.isEmpty ? "" : " (\(detail))")
        case .refused: "connection refused"
        case .dropped: "the connection was closed without an answer"
        case .cancelled: "cancelled"
        case .invalidResponse: "the answer is not verifyReceipt JSON"
        case .other: detail.isEmpty ? "network error" : detail
        case .notSent: "not sent" + (detail.isEmpty ? "" : ": \(detail)")
        }
    }
}

/// What one request to verifyReceipt came back with.
public enum AttemptResult: Sendable, Hashable, CustomStringConvertible {
    /// Apple answered with a status (and, for 21100–21199, its `is-retryable` flag).
    case apple(status: Int, isRetryable: Bool? = nil)
    /// An HTTP error status without a verifyReceipt body.
    case http(status: Int)
    /// No answer: the network layer failed.
    case transport(TransportFailure)

    /// Apple's status, if Apple answered.
    public var appleStatus: Int? {
        if case .apple(let status, _) = self { return status }
        return nil
    }

    /// In a few words: `status N`, `HTTP N`, or the transport failure.
    public var description: String {
        switch self {
        case .apple(let status, _): "status \(status)"
        case .http(let status): "HTTP \(status)"
        case .transport(let failure): failure.description
        }
    }
}

/// One HTTP exchange with verifyReceipt.
public struct VerificationAttempt: Sendable, Hashable {
    /// The URL asked.
    public var url: String
    /// Which service was asked.
    public var endpoint: VerifyEndpoint.Kind
    public var result: AttemptResult
    /// The HTTP status seen, when a response came (200 for Apple's answers).
    public var httpStatus: Int?
    public var latencyMilliseconds: Double
    /// The wait before the next attempt, when this one was retried.
    public var retryAfterSeconds: Double?

    public init(
        url: String, endpoint: VerifyEndpoint.Kind = .production, result: AttemptResult, httpStatus: Int? = nil, latencyMilliseconds: Double,
        retryAfterSeconds: Double? = nil
    ) {
        self.url = url
        self.endpoint = endpoint
        self.result = result
        self.httpStatus = httpStatus
        self.latencyMilliseconds = latencyMilliseconds
        self.retryAfterSeconds = retryAfterSeconds
    }

    /// Apple's status, if Apple answered.
    public var status: Int? { result.appleStatus }

    /// Apple's `is-retryable`, if Apple answered with it.
    public var isRetryable: Bool? {
        if case .apple(_, let flag) = result { return flag }
        return nil
    }

    /// The transport failure, if there was no answer.
    public var transportFailure: TransportFailure? {
        if case .transport(let failure) = result { return failure }
        return nil
    }

    /// A 21007 (to sandbox) or 21008 (to production) answer: a hop, not a retry.
    public var isEnvironmentHop: Bool {
        status == 21007 || status == 21008
    }
}
