import Foundation

// The JSON bodies and answers of Apple's Retention Messaging API (API 1.0–1.5), named as
// Apple's Swift library names them. Answers keep every field optional and every enumerated
// value as the text Apple sent (a value this version does not know is kept, and its typed
// accessor says nil = unknown); request bodies are typed.

/// `imageSize` of Upload Image and of an image list item. Apple's default is `FULL_SIZE`.
public enum RetentionImageSize: String, Sendable, Hashable, CaseIterable, Codable {
    /// 3840 px wide, 160–2160 px tall.
    case fullSize = "FULL_SIZE"
    /// 1024 × 1024 px, for bullet points.
    case bulletPoint = "BULLET_POINT"
}

/// `imageState` / `messageState`: `PENDING` after upload (Apple reviews it), then `APPROVED`
/// or `REJECTED`. Sandbox approves at once.
public enum RetentionContentState: String, Sendable, Hashable, CaseIterable, Codable {
    case pending = "PENDING"
    case approved = "APPROVED"
    case rejected = "REJECTED"
}

/// `headerPosition` of a message: `ABOVE_BODY` (Apple's default) or `ABOVE_IMAGE` (needs an image).
public enum RetentionHeaderPosition: String, Sendable, Hashable, CaseIterable, Codable {
    case aboveBody = "ABOVE_BODY"
    case aboveImage = "ABOVE_IMAGE"
}

/// `UploadMessageImage`: the image a message shows and its alternative text (≤ 150).
public struct UploadMessageImage: Codable, Sendable, Hashable {
    public var imageIdentifier: String
    public var altText: String

    public init(imageIdentifier: String, altText: String) {
        self.imageIdentifier = imageIdentifier
        self.altText = altText
    }
}

/// `BulletPoint` (API 1.4): text (≤ 66), an image uploaded with `BULLET_POINT` size, its
/// alternative text (≤ 150).
public struct RetentionBulletPoint: Codable, Sendable, Hashable {
    public var text: String
    public var imageIdentifier: String
    public var altText: String

    public init(text: String, imageIdentifier: String, altText: String) {
        self.text = text
        self.imageIdentifier = imageIdentifier
        self.altText = altText
    }
}

/// `UploadMessageRequestBody`: header (≤ 66), body (≤ 144), an optional image, header
/// position and at most 5 bullet points. ``RetentionLimits`` checks the limits.
public struct UploadMessageRequestBody: Codable, Sendable, Hashable {
    public var header: String
    public var body: String
    public var image: UploadMessageImage?
    public var headerPosition: RetentionHeaderPosition?
    public var bulletPoints: [RetentionBulletPoint]?

    public init(
        header: String, body: String, image: UploadMessageImage? = nil, headerPosition: RetentionHeaderPosition? = nil,
        bulletPoints: [RetentionBulletPoint]? = nil
    ) {
        self.header = header
        self.body = body
        self.image = image
        self.headerPosition = headerPosition
        self.bulletPoints = bulletPoints
    }
}

/// `DefaultConfigurationRequest`: the message shown for a product and locale when no realtime
/// answer comes.
public struct DefaultConfigurationRequest: Codable, Sendable, Hashable {
    public var messageIdentifier: String

    public init(messageIdentifier: String) { self.messageIdentifier = messageIdentifier }
}

/// `DefaultConfigurationResponse` of Get Default Message.
public struct DefaultConfigurationResponse: Codable, Sendable, Hashable {
    public var messageIdentifier: String?

    public init(messageIdentifier: String?) { self.messageIdentifier = messageIdentifier }
}

/// `RealtimeUrlRequest`: an `https://` URL of at most 256 characters.
public struct RealtimeUrlRequest: Codable, Sendable, Hashable {
    public var realtimeURL: String

    public init(realtimeURL: String) { self.realtimeURL = realtimeURL }
}

/// `RealtimeUrlResponse` of Get Realtime URL.
public struct RealtimeUrlResponse: Codable, Sendable, Hashable {
    public var realtimeURL: String?

    public init(realtimeURL: String?) { self.realtimeURL = realtimeURL }
}

/// One item of Get Image List.
public struct GetImageListResponseItem: Codable, Sendable, Hashable {
    public var imageIdentifier: String?
    /// As Apple sent it (``state`` is nil for a value this version does not know).
    public var imageState: String?
    /// As Apple sent it; absent before API 1.4, where Apple's documented default is `FULL_SIZE`.
    public var imageSize: String?

    public init(imageIdentifier: String?, imageState: String?, imageSize: String?) {
        self.imageIdentifier = imageIdentifier
        self.imageState = imageState
        self.imageSize = imageSize
    }

    public var state: RetentionContentState? { imageState.flatMap(RetentionContentState.init(rawValue:)) }
    public var size: RetentionImageSize? { imageSize.flatMap(RetentionImageSize.init(rawValue:)) }
}

/// Get Image List: `{"imageIdentifiers": [...]}`.
public struct GetImageListResponse: Codable, Sendable, Hashable {
    public var imageIdentifiers: [GetImageListResponseItem]?

    public init(imageIdentifiers: [GetImageListResponseItem]?) { self.imageIdentifiers = imageIdentifiers }
}

/// One item of Get Message List.
public struct GetMessageListResponseItem: Codable, Sendable, Hashable {
    public var messageIdentifier: String?
    /// As Apple sent it (``state`` is nil for a value this version does not know).
    public var messageState: String?

    public init(messageIdentifier: String?, messageState: String?) {
        self.messageIdentifier = messageIdentifier
        self.messageState = messageState
    }

    public var state: RetentionContentState? { messageState.flatMap(RetentionContentState.init(rawValue:)) }
}

/// Get Message List: `{"messageIdentifiers": [...]}`.
public struct GetMessageListResponse: Codable, Sendable, Hashable {
    public var messageIdentifiers: [GetMessageListResponseItem]?

    public init(messageIdentifiers: [GetMessageListResponseItem]?) { self.messageIdentifiers = messageIdentifiers }
}

// MARK: Performance test (sandbox only, API 1.3)

/// `PerformanceTestRequest`: the original transaction id of an active sandbox subscription.
public struct PerformanceTestRequest: Codable, Sendable, Hashable {
    public var originalTransactionId: String

    public init(originalTransactionId: String) { self.originalTransactionId = originalTransactionId }
}

/// `PerformanceTestConfig`: how Apple runs the test. Durations and thresholds in milliseconds
/// (the unit of `responseTimeThreshold` is inferred: Apple's docs say "about 700 ms").
public struct PerformanceTestConfig: Codable, Sendable, Hashable {
    public var maxConcurrentRequests: Int64?
    public var totalRequests: Int64?
    public var totalDuration: Int64?
    public var responseTimeThreshold: Int64?
    /// Percent (0–100) of successes needed to pass.
    public var successRateThreshold: Int32?

    public init(
        maxConcurrentRequests: Int64? = nil, totalRequests: Int64? = nil, totalDuration: Int64? = nil, responseTimeThreshold: Int64? = nil,
        successRateThreshold: Int32? = nil
    ) {
        self.maxConcurrentRequests = maxConcurrentRequests
        self.totalRequests = totalRequests
        self.totalDuration = totalDuration
        self.responseTimeThreshold = responseTimeThreshold
        self.successRateThreshold = successRateThreshold
    }
}

/// `PerformanceTestResponse` of Initiate Performance Test.
public struct PerformanceTestResponse: Codable, Sendable, Hashable {
    public var config: PerformanceTestConfig?
    public var requestId: String?

    public init(config: PerformanceTestConfig?, requestId: String?) {
        self.config = config
        self.requestId = requestId
    }
}

/// `PerformanceTestResponseTimes`, milliseconds.
public struct PerformanceTestResponseTimes: Codable, Sendable, Hashable {
    public var average: Int64?
    public var p50: Int64?
    public var p90: Int64?
    public var p95: Int64?
    public var p99: Int64?

    public init(average: Int64? = nil, p50: Int64? = nil, p90: Int64? = nil, p95: Int64? = nil, p99: Int64? = nil) {
        self.average = average
        self.p50 = p50
        self.p90 = p90
        self.p95 = p95
        self.p99 = p99
    }
}

/// `result` of a performance test.
public enum PerformanceTestStatus: String, Sendable, Hashable, CaseIterable, Codable {
    case pending = "PENDING"
    case pass = "PASS"
    case fail = "FAIL"
}

/// Apple's `sendAttemptResult` values, the keys of a performance test's `failures`.
public enum RealtimeSendAttemptResult: String, Sendable, Hashable, CaseIterable, Codable {
    case success = "SUCCESS"
    case timedOut = "TIMED_OUT"
    case tlsIssue = "TLS_ISSUE"
    case circularRedirect = "CIRCULAR_REDIRECT"
    case noResponse = "NO_RESPONSE"
    case socketIssue = "SOCKET_ISSUE"
    case unsupportedCharset = "UNSUPPORTED_CHARSET"
    case invalidResponse = "INVALID_RESPONSE"
    case prematureClose = "PREMATURE_CLOSE"
    /// Any HTTP status other than 200.
    case unsuccessfulHTTPResponseCode = "UNSUCCESSFUL_HTTP_RESPONSE_CODE"
    case other = "OTHER"
}

/// `PerformanceTestResultResponse` of Get Performance Test Results. Apple's docs mark every
/// field required; Apple's Swift library makes `result` and `failures` optional, and this
/// type keeps all optional (a missing field is shown as unknown, never filled in).
public struct PerformanceTestResultResponse: Codable, Sendable, Hashable {
    public var config: PerformanceTestConfig?
    /// The URL tested.
    public var target: String?
    /// `PENDING`, `PASS` or `FAIL`, as sent (``status`` is nil for another value).
    public var result: String?
    /// Percent of successful answers.
    public var successRate: Int32?
    /// Requests still outstanding.
    public var numPending: Int32?
    public var responseTimes: PerformanceTestResponseTimes?
    /// `sendAttemptResult` → count (`{"TIMED_OUT": 1}`), keys kept as sent.
    public var failures: [String: Int32]?

    public init(
        config: PerformanceTestConfig? = nil, target: String? = nil, result: String? = nil, successRate: Int32? = nil, numPending: Int32? = nil,
        responseTimes: PerformanceTestResponseTimes? = nil, failures: [String: Int32]? = nil
    ) {
        self.config = config
        self.target = target
        self.result = result
        self.successRate = successRate
        self.numPending = numPending
        self.responseTimes = responseTimes
        self.failures = failures
    }

    public var status: PerformanceTestStatus? { result.flatMap(PerformanceTestStatus.init(rawValue:)) }
}
