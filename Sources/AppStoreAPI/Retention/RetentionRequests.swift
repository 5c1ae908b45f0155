import Foundation

// The 14 endpoints of Apple's Retention Messaging API as `APIRequest` values. Every id is
// percent-encoded into the path (an id is untrusted: `../x` cannot change the path); the
// literal segments (`list`, `realtime/url`, `performanceTest`) are sent as Apple writes
// them. The values are not checked here beyond that: ``RetentionLimits`` checks Apple's
// limits before a command builds a request, so the simulator's own checks can be tested
// with requests Apple would refuse.

extension APIRequest {
    static let messagingPrefix = "/inApps/v1/messaging"

    /// Upload Image: PUT `/inApps/v1/messaging/image/{imageIdentifier}?imageSize=…`, the PNG
    /// bytes as the body with `Content-Type: image/png`. The size is always sent (Apple's
    /// default, `FULL_SIZE`, when none is given), as Apple's Swift library does.
    public static func uploadImage(_ imageIdentifier: String, size: RetentionImageSize = .fullSize, png: [UInt8]) throws(APIFailure)
        -> APIRequest
    {
        APIRequest(
            endpoint: .uploadImage, method: .put, path: messagingPrefix + "/image/" + (try checkedID(imageIdentifier, "image identifier")),
            query: [QueryItem("imageSize", size.rawValue)], body: png, contentType: pngContentType)
    }

    /// Delete Image: DELETE `/inApps/v1/messaging/image/{imageIdentifier}`.
    public static func deleteImage(_ imageIdentifier: String) throws(APIFailure) -> APIRequest {
        APIRequest(
            endpoint: .deleteImage, method: .delete, path: messagingPrefix + "/image/" + (try checkedID(imageIdentifier, "image identifier")))
    }

    /// Get Image List: GET `/inApps/v1/messaging/image/list`.
    public static func imageList() -> APIRequest {
        APIRequest(endpoint: .imageList, path: messagingPrefix + "/image/list")
    }

    /// Upload Message: PUT `/inApps/v1/messaging/message/{messageIdentifier}`, JSON body.
    public static func uploadMessage(_ messageIdentifier: String, _ body: UploadMessageRequestBody) throws(APIFailure) -> APIRequest {
        APIRequest(
            endpoint: .uploadMessage, method: .put,
            path: messagingPrefix + "/message/" + (try checkedID(messageIdentifier, "message identifier")), body: json(body))
    }

    /// Delete Message: DELETE `/inApps/v1/messaging/message/{messageIdentifier}`.
    public static func deleteMessage(_ messageIdentifier: String) throws(APIFailure) -> APIRequest {
        APIRequest(
            endpoint: .deleteMessage, method: .delete,
            path: messagingPrefix + "/message/" + (try checkedID(messageIdentifier, "message identifier")))
    }

    /// Get Message List: GET `/inApps/v1/messaging/message/list`.
    public static func messageList() -> APIRequest {
        APIRequest(endpoint: .messageList, path: messagingPrefix + "/message/list")
    }

    static func defaultPath(productID: String, locale: String) throws(APIFailure) -> String {
        messagingPrefix + "/default/" + (try checkedID(productID, "product id")) + "/" + (try checkedID(locale, "locale"))
    }

    /// Configure Default Message: PUT `/inApps/v1/messaging/default/{productId}/{locale}`.
    public static func configureDefaultMessage(productID: String, locale: String, _ body: DefaultConfigurationRequest) throws(APIFailure)
        -> APIRequest
    {
        APIRequest(
            endpoint: .configureDefaultMessage, method: .put, path: try defaultPath(productID: productID, locale: locale), body: json(body))
    }

    /// Delete Default Message: DELETE `/inApps/v1/messaging/default/{productId}/{locale}`.
    public static func deleteDefaultMessage(productID: String, locale: String) throws(APIFailure) -> APIRequest {
        APIRequest(endpoint: .deleteDefaultMessage, method: .delete, path: try defaultPath(productID: productID, locale: locale))
    }

    /// Get Default Message: GET `/inApps/v1/messaging/default/{productId}/{locale}`.
    public static func defaultMessage(productID: String, locale: String) throws(APIFailure) -> APIRequest {
        APIRequest(endpoint: .defaultMessage, path: try defaultPath(productID: productID, locale: locale))
    }

    /// Configure Realtime URL: PUT `/inApps/v1/messaging/realtime/url`.
    public static func configureRealtimeURL(_ body: RealtimeUrlRequest) -> APIRequest {
        APIRequest(endpoint: .configureRealtimeURL, method: .put, path: messagingPrefix + "/realtime/url", body: json(body))
    }

    /// Delete Realtime URL: DELETE `/inApps/v1/messaging/realtime/url`.
    public static func deleteRealtimeURL() -> APIRequest {
        APIRequest(endpoint: .deleteRealtimeURL, method: .delete, path: messagingPrefix + "/realtime/url")
    }

    /// Get Realtime URL: GET `/inApps/v1/messaging/realtime/url`.
    public static func realtimeURL() -> APIRequest {
        APIRequest(endpoint: .realtimeURL, path: messagingPrefix + "/realtime/url")
    }

    /// Initiate Performance Test: POST `/inApps/v1/messaging/performanceTest` (sandbox only).
    public static func initiatePerformanceTest(_ body: PerformanceTestRequest) -> APIRequest {
        APIRequest(endpoint: .performanceTest, method: .post, path: messagingPrefix + "/performanceTest", body: json(body))
    }

    /// Get Performance Test Results: GET `/inApps/v1/messaging/performanceTest/result/{requestId}`
    /// (sandbox only).
    public static func performanceTestResult(_ requestID: String) throws(APIFailure) -> APIRequest {
        APIRequest(
            endpoint: .performanceTestResult, path: messagingPrefix + "/performanceTest/result/" + (try checkedID(requestID, "request id")))
    }
}
