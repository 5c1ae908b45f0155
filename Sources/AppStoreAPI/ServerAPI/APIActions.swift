import PlainWords
import ReceiptCore
import Foundation

/// The writes receiptdash makes to the App Store Server API. The raw value is the action's name
/// in JSON (`action`) and in the audit trail: a contract.
public enum APIAction: String, Sendable, Hashable, CaseIterable {
    case extend
    case massExtend = "mass-extend"
    case massExtendStatus = "mass-extend-status"
    case consumption
    case appAccountToken = "app-account-token"
    case finish
    case testNotification = "test-notification"
    // Retention Messaging: they name no customer, so the environment is always said.
    case uploadImage = "upload-image"
    case deleteImage = "delete-image"
    case uploadMessage = "upload-message"
    case deleteMessage = "delete-message"
    case configureDefaultMessage = "configure-default-message"
    case deleteDefaultMessage = "delete-default-message"
    case configureRealtimeURL = "configure-realtime-url"
    case deleteRealtimeURL = "delete-realtime-url"

    /// Whether the action is one of Retention Messaging's.
    public var isRetentionMessaging: Bool {
        switch self {
        case .uploadImage, .deleteImage, .uploadMessage, .deleteMessage, .configureDefaultMessage, .deleteDefaultMessage, .configureRealtimeURL,
            .deleteRealtimeURL:
            true
        default: false
        }
    }

    /// Whether the action changes something at Apple (a status read does not).
    public var writes: Bool { self != .massExtendStatus }
}

/// A value Apple would refuse, found before anything is sent: which rule (``code``) and the
/// value that broke it. The reason names the value as a form does ("days"); the command line
/// words it with its flags (`--days`), from the code.
public struct ActionRuleError: CodedError {
    public enum Code: String, CodedErrorCode, CaseIterable {
        /// Days to extend by outside 1...90.
        case daysOutOfRange = "days-out-of-range"
        /// A request id that is empty or longer than 128 characters.
        case requestIDLength = "request-id-length"
        /// A mass extension's request id that is not a UUID.
        case requestIDNotUUID = "request-id-not-uuid"
        /// A mass extension without a product id.
        case productIDEmpty = "product-id-empty"
        /// A storefront that is not a three-letter code.
        case storefrontInvalid = "storefront-invalid"
        /// Consumption information without the customer's consent.
        case consentMissing = "consent-missing"
        /// A consumed share outside 0...100.
        case consumedPercentOutOfRange = "consumed-percent-out-of-range"
        /// A consumed share above 0 for an item not delivered.
        case consumedWhileUndelivered = "consumed-while-undelivered"
        /// A prorated refund preference without a partial consumption.
        case proratedNeedsPartialConsumption = "prorated-needs-partial-consumption"
        /// A consumed share for an auto-renewable subscription (Apple derives it).
        case consumedPercentForAutoRenewable = "consumed-percent-for-auto-renewable"
        /// An app account token that is not a UUID.
        case tokenNotUUID = "token-not-uuid"
    }

    public let code: Code
    /// The value that broke the rule, as given (nil where there is none: a missing consent).
    public let value: String?

    public init(_ code: Code, value: String? = nil) {
        self.code = code
        self.value = value
    }

    /// The rule in words, naming values as a form does.
    public var reason: String {
        let given = value.map { " (not \($0))" } ?? ""
        return switch code {
        case .daysOutOfRange: "days must be 1 to 90: Apple extends a subscription by at most 90 days at a time\(given)"
        case .requestIDLength: "the request id must be 1 to 128 characters"
        case .requestIDNotUUID: "the request id must be a UUID for a mass extension (e.g. \(UUID().uuidString))"
        case .productIDEmpty: "the product id is empty"
        case .storefrontInvalid: "a storefront is a three-letter code such as USA or FRA\(given)"
        case .consentMissing: "the customer's consent is required: Apple takes consumption information only with it (without it, do not answer)"
        case .consumedPercentOutOfRange: "the consumed share must be 0 to 100 %\(given)"
        case .consumedWhileUndelivered: "the consumed share must be 0 when the item was not delivered\(value.map { " (delivery status \($0))" } ?? "")"
        case .proratedNeedsPartialConsumption: "a grant-prorated refund preference needs a consumed share above 0 and below 100 %"
        case .consumedPercentForAutoRenewable: "leave the consumed share out for an auto-renewable subscription: Apple works it out from the period and refuses one sent\(given)"
        case .tokenNotUUID: "the token must be a UUID such as 7e3fb20b-4cdb-47cc-936d-99d65f608138 (an app account token is one)"
        }
    }
}

/// A value a command names in lower-case words (`service-issue`, `undelivered-other`).
public protocol ArgumentNamed: CaseIterable {
    var name: String { get }
}

extension ArgumentNamed {
    /// The value `text` names (any case, spaces around ignored).
    public static func named(_ text: String) -> Self? {
        let wanted = text.trimmingCharacters(in: .whitespaces).lowercased()
        return allCases.first { $0.name == wanted }
    }
}

/// Why a subscription is extended (`extendReasonCode`).
public enum ExtendReason: Int, Sendable, Hashable, ArgumentNamed {
    case undeclared = 0
    case customerSatisfaction = 1
    case other = 2
    case serviceIssue = 3

    /// The name on the command line.
    public var name: String {
        switch self {
        case .undeclared: "undeclared"
        case .customerSatisfaction: "customer-satisfaction"
        case .other: "other"
        case .serviceIssue: "service-issue"
        }
    }

    /// A name (`service-issue`) or Apple's number (0–3).
    public init?(argument: String) {
        guard let reason = Int(argument.trimmingCharacters(in: .whitespaces)).flatMap(Self.init(rawValue:)) ?? Self.named(argument) else { return nil }
        self = reason
    }
}

/// Whether the purchase was delivered (`deliveryStatus` of Send Consumption Information v2).
public enum DeliveryStatus: String, Sendable, Hashable, ArgumentNamed {
    case delivered = "DELIVERED"
    case undeliveredQualityIssue = "UNDELIVERED_QUALITY_ISSUE"
    case undeliveredWrongItem = "UNDELIVERED_WRONG_ITEM"
    case undeliveredServerOutage = "UNDELIVERED_SERVER_OUTAGE"
    case undeliveredOther = "UNDELIVERED_OTHER"

    /// The name on the command line (`undelivered-quality-issue`).
    public var name: String { rawValue.lowercased().replacingOccurrences(of: "_", with: "-") }

    /// A name (`undelivered-other`) or Apple's value (`UNDELIVERED_OTHER`).
    public init?(argument: String) {
        guard let status = Self.named(argument.replacingOccurrences(of: "_", with: "-")) else { return nil }
        self = status
    }
}

/// What the developer would like Apple to decide on a refund request (`refundPreference`).
public enum RefundPreference: String, Sendable, Hashable, ArgumentNamed {
    case decline = "DECLINE"
    case grantFull = "GRANT_FULL"
    case grantProrated = "GRANT_PRORATED"

    public var name: String { rawValue.lowercased().replacingOccurrences(of: "_", with: "-") }

    /// A name (`grant-prorated`) or Apple's value (`GRANT_PRORATED`).
    public init?(argument: String) {
        guard let preference = Self.named(argument.replacingOccurrences(of: "_", with: "-")) else { return nil }
        self = preference
    }
}

/// The body of Extend a Subscription Renewal Date.
public struct ExtendRenewalDateBody: Codable, Sendable, Hashable {
    public var extendByDays: Int
    public var extendReasonCode: Int
    public var requestIdentifier: String

    /// 1–90 days; a request identifier of at most 128 characters.
    public init(days: Int, reason: ExtendReason, requestIdentifier: String) throws(ActionRuleError) {
        try Self.check(days: days)
        try Self.check(requestIdentifier: requestIdentifier)
        extendByDays = days
        extendReasonCode = reason.rawValue
        self.requestIdentifier = requestIdentifier
    }

    /// What an extension by `days` does to a period ending at `expires`, as plans show it:
    /// `expires 2026-12-10T… → 2026-12-17T… (+7 days)`.
    public static func planLine(expires: Date, days: Int) -> String {
        "expires \(AppleDate.iso8601(expires)) → \(AppleDate.iso8601(expires.addingTimeInterval(Double(days) * 86_400))) (+\(CountNoun.day.count(days)))"
    }

    static func check(days: Int) throws(ActionRuleError) {
        guard (1...90).contains(days) else {
            throw ActionRuleError(.daysOutOfRange, value: String(days))
        }
    }

    static func check(requestIdentifier: String) throws(ActionRuleError) {
        guard !requestIdentifier.isEmpty, requestIdentifier.utf8.count <= 128 else {
            throw ActionRuleError(.requestIDLength)
        }
    }
}

/// The body of Extend Subscription Renewal Dates for All Active Subscribers.
public struct MassExtendBody: Codable, Sendable, Hashable {
    public var extendByDays: Int
    public var extendReasonCode: Int
    public var productId: String
    public var requestIdentifier: String
    /// Left out to cover every storefront.
    public var storefrontCountryCodes: [String]?

    /// 1–90 days, a product id, a UUID request identifier, storefronts as three-letter codes.
    public init(days: Int, reason: ExtendReason, productID: String, requestIdentifier: String, storefronts: [String]) throws(ActionRuleError) {
        try ExtendRenewalDateBody.check(days: days)
        guard !productID.trimmingCharacters(in: .whitespaces).isEmpty else { throw ActionRuleError(.productIDEmpty) }
        guard UUID(uuidString: requestIdentifier) != nil else {
            throw ActionRuleError(.requestIDNotUUID, value: requestIdentifier)
        }
        for code in storefronts where !(code.count == 3 && code.allSatisfy { $0.isASCII && $0.isLetter }) {
            throw ActionRuleError(.storefrontInvalid, value: code)
        }
        extendByDays = days
        extendReasonCode = reason.rawValue
        productId = productID
        self.requestIdentifier = requestIdentifier
        storefrontCountryCodes = storefronts.isEmpty ? nil : storefronts.map { $0.uppercased() }
    }
}

/// The body of Send Consumption Information (v2).
public struct ConsumptionBody: Codable, Sendable, Hashable {
    public var customerConsented: Bool
    public var deliveryStatus: String
    public var sampleContentProvided: Bool
    /// Milliunits: 40 % is 40000.
    public var consumptionPercentage: Int?
    public var refundPreference: String?

    /// Apple's rules, checked before sending: the customer consented; a percentage 0–100, and
    /// above 0 only for a delivered item; a prorated grant needs a percentage strictly between
    /// 0 and 100.
    ///
    /// For an auto-renewable subscription (`autoRenewable`) Apple works the share out itself and
    /// refuses one sent: a percentage is refused here, and a prorated grant needs none.
    public init(
        customerConsented: Bool, deliveryStatus: DeliveryStatus, sampleContentProvided: Bool, consumedPercent: Double?,
        refundPreference: RefundPreference?, autoRenewable: Bool = false
    ) throws(ActionRuleError) {
        guard customerConsented else {
            throw ActionRuleError(.consentMissing)
        }
        if autoRenewable, let percent = consumedPercent {
            throw ActionRuleError(.consumedPercentForAutoRenewable, value: "\(percent)")
        }
        var milliunits: Int?
        if let percent = consumedPercent {
            guard percent.isFinite, (0...100).contains(percent) else {
                throw ActionRuleError(.consumedPercentOutOfRange, value: "\(percent)")
            }
            milliunits = Int((percent * 1000).rounded())
            if deliveryStatus != .delivered, milliunits != 0 {
                throw ActionRuleError(.consumedWhileUndelivered, value: deliveryStatus.name)
            }
        }
        if refundPreference == .grantProrated, !autoRenewable {
            guard let milliunits, milliunits > 0, milliunits < 100_000 else {
                throw ActionRuleError(.proratedNeedsPartialConsumption)
            }
        }
        self.customerConsented = true
        self.deliveryStatus = deliveryStatus.rawValue
        self.sampleContentProvided = sampleContentProvided
        consumptionPercentage = milliunits
        self.refundPreference = refundPreference?.rawValue
    }
}

/// The body of Set App Account Token.
public struct AppAccountTokenBody: Codable, Sendable, Hashable {
    public var appAccountToken: String

    public init(token: String) throws(ActionRuleError) {
        guard let uuid = UUID(uuidString: token.trimmingCharacters(in: .whitespaces)) else {
            throw ActionRuleError(.tokenNotUUID, value: token)
        }
        appAccountToken = uuid.uuidString.lowercased()
    }
}

/// Extend a Subscription Renewal Date's answer.
public struct ExtendRenewalDateResponse: Codable, Sendable, Hashable {
    public var originalTransactionId: String?
    public var webOrderLineItemId: String?
    public var success: Bool?
    /// The new expiry, UNIX milliseconds.
    public var effectiveDate: Int64?

    public init(originalTransactionId: String?, webOrderLineItemId: String?, success: Bool?, effectiveDate: Int64?) {
        self.originalTransactionId = originalTransactionId
        self.webOrderLineItemId = webOrderLineItemId
        self.success = success
        self.effectiveDate = effectiveDate
    }
}

/// A mass extension's answer: its request identifier.
public struct MassExtendResponse: Codable, Sendable, Hashable {
    public var requestIdentifier: String?

    public init(requestIdentifier: String?) { self.requestIdentifier = requestIdentifier }
}

/// Get Status of Subscription Renewal Date Extensions.
public struct MassExtendStatusResponse: Codable, Sendable, Hashable {
    public var requestIdentifier: String?
    public var complete: Bool?
    public var completeDate: Int64?
    public var succeededCount: Int64?
    public var failedCount: Int64?

    public init(requestIdentifier: String?, complete: Bool?, completeDate: Int64?, succeededCount: Int64?, failedCount: Int64?) {
        self.requestIdentifier = requestIdentifier
        self.complete = complete
        self.completeDate = completeDate
        self.succeededCount = succeededCount
        self.failedCount = failedCount
    }
}

/// An answer without a body (200 or 202).
public struct APINoContent: Decodable, Sendable, Hashable {
    public init() {}
    public init(from decoder: any Decoder) throws {}
}

extension APIRequest {
    /// Extend a Subscription Renewal Date: PUT `/inApps/v1/subscriptions/extend/{originalTransactionId}`.
    public static func extendRenewalDate(_ originalTransactionID: String, _ body: ExtendRenewalDateBody) throws(APIFailure) -> APIRequest {
        APIRequest(
            endpoint: .extendRenewalDate, method: .put,
            path: "/inApps/v1/subscriptions/extend/" + (try checkedID(originalTransactionID, "original transaction id")), body: json(body))
    }

    /// Extend Subscription Renewal Dates for All Active Subscribers: POST `/inApps/v1/subscriptions/extend/mass`.
    public static func massExtend(_ body: MassExtendBody) -> APIRequest {
        APIRequest(endpoint: .massExtend, method: .post, path: "/inApps/v1/subscriptions/extend/mass", body: json(body))
    }

    /// Get Status of Subscription Renewal Date Extensions: GET
    /// `/inApps/v1/subscriptions/extend/mass/{productId}/{requestIdentifier}`.
    public static func massExtendStatus(productID: String, requestIdentifier: String) throws(APIFailure) -> APIRequest {
        APIRequest(
            endpoint: .massExtendStatus,
            path: "/inApps/v1/subscriptions/extend/mass/" + (try checkedID(productID, "product id")) + "/"
                + (try checkedID(requestIdentifier, "request identifier")))
    }

    /// Send Consumption Information v2: PUT `/inApps/v2/transactions/consumption/{transactionId}`.
    public static func consumption(_ transactionID: String, _ body: ConsumptionBody) throws(APIFailure) -> APIRequest {
        APIRequest(
            endpoint: .consumption, method: .put,
            path: "/inApps/v2/transactions/consumption/" + (try checkedID(transactionID, "transaction id")), body: json(body))
    }

    /// Set App Account Token: PUT `/inApps/v1/transactions/{originalTransactionId}/appAccountToken`.
    public static func setAppAccountToken(_ originalTransactionID: String, _ body: AppAccountTokenBody) throws(APIFailure) -> APIRequest {
        APIRequest(
            endpoint: .appAccountToken, method: .put,
            path: "/inApps/v1/transactions/" + (try checkedID(originalTransactionID, "original transaction id")) + "/appAccountToken",
            body: json(body))
    }

    /// Finish Transaction: POST `/inApps/v1/transactions/{transactionId}/finish`.
    public static func finishTransaction(_ transactionID: String) throws(APIFailure) -> APIRequest {
        APIRequest(
            endpoint: .finishTransaction, method: .post, path: "/inApps/v1/transactions/" + (try checkedID(transactionID, "transaction id")) + "/finish")
    }

    /// A body as Apple reads it: JSON with sorted keys (the same bytes on every retry).
    static func json(_ body: some Encodable) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? Array(encoder.encode(body))) ?? []
    }

    /// The body as text, for plans, dry runs and the audit trail (no secret is ever in a body);
    /// a body that is not JSON (an image) is said by its size and type.
    public var bodyText: String? {
        guard let body else { return nil }
        guard contentType == nil || contentType == Self.jsonContentType else { return "(\(body.count) bytes of \(contentType ?? "data"))" }
        return String(decoding: body, as: UTF8.self)
    }
}

extension APIErrorCode {
    // The actions' codes (fact sheet: app-store-server-api-actions.md).
    public static let invalidOriginalTransactionID = APIErrorCode(4_000_008)
    public static let invalidExtendByDays = APIErrorCode(4_000_009)
    public static let invalidExtendReasonCode = APIErrorCode(4_000_010)
    public static let invalidRequestIdentifier = APIErrorCode(4_000_011)
    public static let invalidTestNotificationToken = APIErrorCode(4_000_020)
    public static let invalidProductID = APIErrorCode(4_000_023)
    public static let invalidEmptyStorefrontCountryCodeList = APIErrorCode(4_000_027)
    public static let invalidStorefrontCountryCode = APIErrorCode(4_000_028)
    public static let invalidCustomerConsented = APIErrorCode(4_000_035)
    public static let invalidDeliveryStatus = APIErrorCode(4_000_036)
    public static let invalidSampleContentProvided = APIErrorCode(4_000_041)
    public static let appTransactionIDNotSupported = APIErrorCode(4_000_048)
    public static let invalidAppAccountTokenUUID = APIErrorCode(4_000_183)
    public static let familyTransactionNotSupported = APIErrorCode(4_000_185)
    public static let subscriptionExtensionIneligible = APIErrorCode(4_030_004)
    public static let subscriptionMaxExtension = APIErrorCode(4_030_005)
    public static let familySharedSubscriptionExtensionIneligible = APIErrorCode(4_030_007)
    public static let serverNotificationURLNotFound = APIErrorCode(4_040_007)
    public static let statusRequestNotFound = APIErrorCode(4_040_009)

    /// The actions' codes, each with what it means and what to do next.
    public static let actionCodes: [APIErrorCode] = [
        .invalidOriginalTransactionID, .invalidExtendByDays, .invalidExtendReasonCode, .invalidRequestIdentifier,
        .invalidTestNotificationToken, .invalidProductID, .invalidEmptyStorefrontCountryCodeList, .invalidStorefrontCountryCode,
        .invalidCustomerConsented, .invalidDeliveryStatus, .invalidSampleContentProvided, .appTransactionIDNotSupported,
        .invalidAppAccountTokenUUID, .familyTransactionNotSupported, .subscriptionExtensionIneligible, .subscriptionMaxExtension,
        .familySharedSubscriptionExtensionIneligible, .serverNotificationURLNotFound, .statusRequestNotFound,
    ]

    /// `4030005 already extended twice …`: the code and what it means and what to do.
    public var actionDescription: String { "\(rawValue) \(actionExplanation)" }

    /// A write's refusal in words: what it means and what to do (`4030005 already extended
    /// twice in the last 365 days: …`). Codes the actions do not add keep ``explanation``.
    public var actionExplanation: String {
        switch self {
        case .invalidOriginalTransactionID: "the original transaction id is invalid: copy it from `lookup` (original_transaction_id)"
        case .invalidExtendByDays: "the number of days is invalid: give --days 1 to 90"
        case .invalidExtendReasonCode: "the reason is invalid: give --reason undeclared, customer-satisfaction, other or service-issue"
        case .invalidRequestIdentifier: "the request id is invalid: leave --request-id out for a new one, or give a UUID"
        case .invalidTestNotificationToken: "the test notification token is invalid: use the one test-notification printed"
        case .invalidProductID: "the product id is invalid: copy it from `lookup` (product_id)"
        case .invalidEmptyStorefrontCountryCodeList: "the storefront list is empty: leave --storefront out to cover every storefront"
        case .invalidStorefrontCountryCode: "a storefront code is invalid: give three-letter codes such as USA"
        case .invalidCustomerConsented: "the customer's consent is missing: without it, do not answer the request"
        case .invalidDeliveryStatus: "the delivery status is invalid: give one of delivered, undelivered-quality-issue, undelivered-wrong-item, undelivered-server-outage, undelivered-other"
        case .invalidSampleContentProvided: "whether a sample was provided is missing: give --sample-content-provided true or false"
        case .appTransactionIDNotSupported: "an app transaction id cannot be used here: give the purchase's transaction id"
        case .invalidAppAccountTokenUUID: "the app account token is not a UUID: give --token as one (e.g. 7e3fb20b-4cdb-47cc-936d-99d65f608138)"
        case .familyTransactionNotSupported: "a family member's transaction: act on the purchaser's transaction instead"
        case .subscriptionExtensionIneligible:
            "not eligible: only an active subscription with a paid period can be extended (not a free trial, billing retry, grace period or expired one)"
        case .subscriptionMaxExtension: "already extended twice in the last 365 days: Apple allows two extensions per customer per year"
        case .familySharedSubscriptionExtensionIneligible: "a family member's copy: extend the purchaser's subscription, which extends the family's"
        case .serverNotificationURLNotFound: "no App Store Server Notifications URL is set for this environment: set one in App Store Connect (App Information), then ask again"
        case .statusRequestNotFound: "no mass extension with this product id and request id: check both"
        case .originalTransactionIDNotFound: "the original transaction id was not found: check it and the environment (--environment)"
        case .transactionIDNotFound: "the transaction id was not found in this environment: try --environment sandbox or auto"
        case .testNotificationNotFound: "the test notification was not sent yet or is unknown: wait and ask again"
        default: explanation
        }
    }
}
