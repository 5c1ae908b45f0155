import ReceiptCore
import Foundation

/// Which endpoint of the App Store Server API a request is for. The raw value is the name in
/// records and JSON.
public enum APIEndpointKind: String, Sendable, Hashable, CaseIterable {
    case lookUpOrderID = "look-up-order-id"
    case transactionInfo = "transaction-info"
    case appTransactionInfo = "app-transaction-info"
    case transactionHistory = "transaction-history"
    case subscriptionStatuses = "subscription-statuses"
    case refundHistory = "refund-history"
    case notificationHistory = "notification-history"
    case testNotification = "test-notification"
    case testNotificationStatus = "test-notification-status"
    case extendRenewalDate = "extend"
    case massExtend = "mass-extend"
    case massExtendStatus = "mass-extend-status"
    case consumption = "consumption"
    case appAccountToken = "app-account-token"
    case finishTransaction = "finish"
    // Retention Messaging (RetentionRequests.swift).
    case uploadImage = "upload-image"
    case deleteImage = "delete-image"
    case imageList = "image-list"
    case uploadMessage = "upload-message"
    case deleteMessage = "delete-message"
    case messageList = "message-list"
    case configureDefaultMessage = "configure-default-message"
    case deleteDefaultMessage = "delete-default-message"
    case defaultMessage = "default-message"
    case configureRealtimeURL = "configure-realtime-url"
    case deleteRealtimeURL = "delete-realtime-url"
    case realtimeURL = "realtime-url"
    case performanceTest = "performance-test"
    case performanceTestResult = "performance-test-result"

    /// Whether Apple offers the endpoint in sandbox (Look Up Order ID is production only).
    public var isAvailableInSandbox: Bool { self != .lookUpOrderID }

    /// Whether Apple offers the endpoint in production (the performance test is sandbox only).
    public var isAvailableInProduction: Bool { self != .performanceTest && self != .performanceTestResult }
}

/// One request to the App Store Server API as a value: method, path, query and body. Made
/// only through the static factories, which percent-encode every id (an id is untrusted
/// input: `../x` or `a?b` cannot change the path or the query).
public struct APIRequest: Sendable, Hashable {
    public enum Method: String, Sendable, Hashable {
        case get = "GET"
        case post = "POST"
        case put = "PUT"
        case delete = "DELETE"
    }

    public struct QueryItem: Sendable, Hashable {
        public var name: String
        public var value: String

        public init(_ name: String, _ value: String) {
            self.name = name
            self.value = value
        }
    }

    public let endpoint: APIEndpointKind
    public let method: Method
    /// The path, already percent-encoded (`/inApps/v1/transactions/2000000123`).
    public let path: String
    /// The query, in order (not yet encoded).
    public let query: [QueryItem]
    /// The body, for POST and PUT (JSON, or PNG bytes for Upload Image).
    public let body: [UInt8]?
    /// The body's `Content-Type`: `application/json`, or `image/png` for Upload Image; nil
    /// without a body.
    public let contentType: String?

    init(
        endpoint: APIEndpointKind, method: Method = .get, path: String, query: [QueryItem] = [], body: [UInt8]? = nil,
        contentType: String? = nil
    ) {
        self.endpoint = endpoint
        self.method = method
        self.path = path
        self.query = query
        self.body = body
        self.contentType = body == nil ? nil : (contentType ?? Self.jsonContentType)
    }

    public static let jsonContentType = "application/json"
    public static let pngContentType = "image/png"

    /// The path and the encoded query (`/inApps/v2/history/1?revision=abc&sort=ASCENDING`).
    public var pathAndQuery: String {
        guard !query.isEmpty else { return path }
        return path + "?" + query.map { "\(Self.encode($0.name, keepingDots: true))=\(Self.encode($0.value, keepingDots: true))" }.joined(separator: "&")
    }

    /// Percent-encodes everything but ASCII letters, digits, `-`, `_`, `~` and (in a query) `.`:
    /// in a path, dots are encoded too, so an id cannot be `..`.
    static func encode(_ text: String, keepingDots: Bool = false) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: ".") where keepingDots:
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return out
    }

    static func checkedID(_ id: String, _ what: String) throws(APIFailure) -> String {
        let trimmed = id.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { throw APIFailure(.invalidRequest, "the \(what) is empty") }
        guard trimmed.utf8.count <= 128 else { throw APIFailure(.invalidRequest, "the \(what) is longer than 128 bytes") }
        return encode(trimmed)
    }

    // MARK: The endpoints

    /// Look Up Order ID: GET `/inApps/v1/lookup/{orderId}` (production only).
    public static func lookUpOrderID(_ orderID: String) throws(APIFailure) -> APIRequest {
        APIRequest(endpoint: .lookUpOrderID, path: "/inApps/v1/lookup/" + (try checkedID(orderID, "order ID")))
    }

    /// Get Transaction Info: GET `/inApps/v1/transactions/{transactionId}`.
    public static func transactionInfo(_ transactionID: String) throws(APIFailure) -> APIRequest {
        APIRequest(endpoint: .transactionInfo, path: "/inApps/v1/transactions/" + (try checkedID(transactionID, "transaction id")))
    }

    /// Get App Transaction Info: GET `/inApps/v1/transactions/appTransactions/{anyTransactionId}`
    /// (any transaction id, original transaction id or `appTransactionId` of the customer).
    public static func appTransactionInfo(_ id: String) throws(APIFailure) -> APIRequest {
        APIRequest(endpoint: .appTransactionInfo, path: "/inApps/v1/transactions/appTransactions/" + (try checkedID(id, "transaction id")))
    }

    /// Get Transaction History v2: GET `/inApps/v2/history/{transactionId}`, the same filters on
    /// every page, `revision` from the previous page.
    public static func transactionHistory(
        _ transactionID: String, filter: TransactionHistoryFilter = TransactionHistoryFilter(), revision: String? = nil
    ) throws(APIFailure) -> APIRequest {
        var query = filter.queryItems
        if let revision { query.append(QueryItem("revision", revision)) }
        return APIRequest(
            endpoint: .transactionHistory, path: "/inApps/v2/history/" + (try checkedID(transactionID, "transaction id")), query: query)
    }

    /// Get All Subscription Statuses: GET `/inApps/v1/subscriptions/{transactionId}`, optionally
    /// only the given statuses.
    public static func subscriptionStatuses(_ transactionID: String, status: [SubscriptionAPIStatus] = []) throws(APIFailure)
        -> APIRequest
    {
        APIRequest(
            endpoint: .subscriptionStatuses, path: "/inApps/v1/subscriptions/" + (try checkedID(transactionID, "transaction id")),
            query: status.map { QueryItem("status", String($0.rawValue)) })
    }

    /// Get Refund History v2: GET `/inApps/v2/refund/lookup/{transactionId}`.
    public static func refundHistory(_ transactionID: String, revision: String? = nil) throws(APIFailure) -> APIRequest {
        APIRequest(
            endpoint: .refundHistory, path: "/inApps/v2/refund/lookup/" + (try checkedID(transactionID, "transaction id")),
            query: revision.map { [QueryItem("revision", $0)] } ?? [])
    }

    /// Get Notification History: POST `/inApps/v1/notifications/history`, `paginationToken`
    /// from the previous page.
    public static func notificationHistory(_ filter: NotificationHistoryFilter, paginationToken: String? = nil) throws(APIFailure)
        -> APIRequest
    {
        APIRequest(
            endpoint: .notificationHistory, method: .post, path: "/inApps/v1/notifications/history",
            query: paginationToken.map { [QueryItem("paginationToken", $0)] } ?? [], body: try filter.body())
    }

    /// Request a Test Notification: POST `/inApps/v1/notifications/test`.
    public static func requestTestNotification() -> APIRequest {
        APIRequest(endpoint: .testNotification, method: .post, path: "/inApps/v1/notifications/test")
    }

    /// Get Test Notification Status: GET `/inApps/v1/notifications/test/{token}`.
    public static func testNotificationStatus(_ token: String) throws(APIFailure) -> APIRequest {
        APIRequest(
            endpoint: .testNotificationStatus, path: "/inApps/v1/notifications/test/" + (try checkedID(token, "test notification token")))
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

/// The filters of Get Transaction History (sent again with every `revision`).
public struct TransactionHistoryFilter: Sendable, Hashable {
    public enum ProductType: String, Sendable, Hashable, CaseIterable {
        case autoRenewable = "AUTO_RENEWABLE"
        case nonRenewable = "NON_RENEWABLE"
        case consumable = "CONSUMABLE"
        case nonConsumable = "NON_CONSUMABLE"
    }

    public enum Sort: String, Sendable, Hashable {
        case ascending = "ASCENDING"
        case descending = "DESCENDING"
    }

    public enum Ownership: String, Sendable, Hashable {
        case familyShared = "FAMILY_SHARED"
        case purchased = "PURCHASED"
    }

    public var startDate: Date?
    public var endDate: Date?
    public var productIDs: [String]
    public var productTypes: [ProductType]
    public var sort: Sort?
    public var subscriptionGroupIdentifiers: [String]
    public var ownership: Ownership?
    public var revoked: Bool?

    public init(
        startDate: Date? = nil, endDate: Date? = nil, productIDs: [String] = [], productTypes: [ProductType] = [], sort: Sort? = nil,
        subscriptionGroupIdentifiers: [String] = [], ownership: Ownership? = nil, revoked: Bool? = nil
    ) {
        self.startDate = startDate
        self.endDate = endDate
        self.productIDs = productIDs
        self.productTypes = productTypes
        self.sort = sort
        self.subscriptionGroupIdentifiers = subscriptionGroupIdentifiers
        self.ownership = ownership
        self.revoked = revoked
    }

    /// The query items, in a fixed order; dates as UNIX milliseconds.
    public var queryItems: [APIRequest.QueryItem] {
        var items: [APIRequest.QueryItem] = []
        if let startDate { items.append(.init("startDate", String(Self.milliseconds(startDate)))) }
        if let endDate { items.append(.init("endDate", String(Self.milliseconds(endDate)))) }
        items += productIDs.map { .init("productId", $0) }
        items += productTypes.map { .init("productType", $0.rawValue) }
        if let sort { items.append(.init("sort", sort.rawValue)) }
        items += subscriptionGroupIdentifiers.map { .init("subscriptionGroupIdentifier", $0) }
        if let ownership { items.append(.init("inAppOwnershipType", ownership.rawValue)) }
        if let revoked { items.append(.init("revoked", revoked ? "true" : "false")) }
        return items
    }

    static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
}

/// The body of Get Notification History: a time range and either a notification type (with
/// an optional subtype) or a transaction id, never both.
public struct NotificationHistoryFilter: Sendable, Hashable {
    public var startDate: Date
    public var endDate: Date
    public var notificationType: String?
    public var notificationSubtype: String?
    public var transactionID: String?
    public var onlyFailures: Bool

    public init(
        startDate: Date, endDate: Date, notificationType: String? = nil, notificationSubtype: String? = nil, transactionID: String? = nil,
        onlyFailures: Bool = false
    ) {
        self.startDate = startDate
        self.endDate = endDate
        self.notificationType = notificationType
        self.notificationSubtype = notificationSubtype
        self.transactionID = transactionID
        self.onlyFailures = onlyFailures
    }

    struct Body: Encodable {
        var startDate: Int64
        var endDate: Int64
        var notificationType: String?
        var notificationSubtype: String?
        var transactionId: String?
        var onlyFailures: Bool?
    }

    /// The JSON body (keys sorted); refuses what Apple would answer 4000019 to.
    func body() throws(APIFailure) -> [UInt8] {
        if transactionID != nil, notificationType != nil || notificationSubtype != nil {
            throw APIFailure(.invalidRequest, "notification history takes a notification type or a transaction id, not both")
        }
        guard endDate >= startDate else { throw APIFailure(.invalidRequest, "the notification history end date is before its start date") }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let body = Body(
            startDate: TransactionHistoryFilter.milliseconds(startDate), endDate: TransactionHistoryFilter.milliseconds(endDate),
            notificationType: notificationType, notificationSubtype: notificationSubtype, transactionId: transactionID,
            onlyFailures: onlyFailures ? true : nil)
        guard let data = try? encoder.encode(body) else { throw APIFailure(.invalidRequest, "could not encode the request body") }
        return [UInt8](data)
    }
}
