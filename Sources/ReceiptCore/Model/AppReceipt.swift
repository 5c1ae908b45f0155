import Foundation

/// The app-level part of a receipt: the PKCS#7 payload, the `receipt` object of a
/// `verifyReceipt` response, or a StoreKit 2 `AppTransaction`.
public struct AppReceipt: Sendable, Hashable {
    /// Field 0 / `receipt_type` / `receiptType`: `Production`, `ProductionSandbox`, `Xcode`, …
    public var receiptType: String?
    /// Field 1 / `app_item_id` / `appAppleId`.
    public var appItemID: Int64?
    /// Field 2 / `bundle_id` / `bundleId`.
    public var bundleID: String?
    /// The DER bytes of field 2 (used by the device hash).
    public var bundleIDData: [UInt8]?
    /// Field 3 / `application_version`.
    public var applicationVersion: String?
    /// Field 4: opaque value (used by the device hash).
    public var opaqueValue: [UInt8]?
    /// Field 5: SHA-1 device hash.
    public var sha1Hash: [UInt8]?
    /// Field 8.
    public var transactionDate: Date?
    /// Field 9.
    public var fulfillmentToolVersion: String?
    /// Field 10.
    public var ageRating: String?
    /// Field 11.
    public var developerID: Int64?
    /// Field 12 / `receipt_creation_date`.
    public var receiptCreationDate: Date?
    /// Field 15 / `download_id`.
    public var downloadID: Int64?
    /// Field 16 / `version_external_identifier`.
    public var versionExternalIdentifier: Int64?
    /// Field 18 / `original_purchase_date`.
    public var originalPurchaseDate: Date?
    /// Field 19 / `original_application_version`.
    public var originalApplicationVersion: String?
    /// Field 21 / `expiration_date` (VPP receipts; Xcode receipts say 4001-01-01).
    public var expirationDate: Date?
    /// `request_date` (verifyReceipt responses only).
    public var requestDate: Date?
    /// `preorder_date` / `preorderDate`.
    public var preorderDate: Date?
    /// AppTransaction only.
    public var deviceVerification: String?
    public var deviceVerificationNonce: String?
    public var appTransactionID: String?
    public var originalPlatform: String?
    /// Field 17 / `in_app`.
    public var inApp: [Purchase]
    /// Fields this model has no name for (JSON sources).
    public var otherFields: [Field]
    /// ASN.1 attributes this decoder does not know, kept with type, version and raw bytes.
    public var unknownAttributes: [ASN1Attribute]

    public init() {
        inApp = []
        otherFields = []
        unknownAttributes = []
    }
}

/// What the App Store will do at the next renewal of one subscription: a
/// `pending_renewal_info` entry, the iOS 6 top-level renewal fields, a V1 notification's
/// renewal fields, or a StoreKit 2 `JWSRenewalInfo`.
public struct RenewalInfo: Sendable, Hashable {
    public var originalTransactionID: String?
    public var productID: String?
    public var autoRenewProductID: String?
    /// `auto_renew_status`: true when the subscription will renew (Apple's 1), false when it
    /// will not (0).
    public var autoRenewStatus: Bool?
    /// `auto_renew_status` as sent when it is not a value Apple defines (`7`): kept, never read
    /// as on or off.
    public var autoRenewStatusAsSent: JSONValue?
    /// `expiration_intent`: 1 cancelled, 2 billing error, 3 price increase refused,
    /// 4 product unavailable, 5 other. An integer, never a date.
    public var expirationIntent: Int?
    public var isInBillingRetryPeriod: Bool?
    public var gracePeriodExpiresDate: Date?
    public var priceConsentStatus: Int?
    public var priceIncreaseStatus: Int?
    public var offerType: Int?
    public var offerIdentifier: String?
    public var offerCodeRefName: String?
    public var promotionalOfferID: String?
    public var environment: String?
    public var signedDate: Date?
    public var recentSubscriptionStartDate: Date?
    public var renewalDate: Date?
    public var renewalPriceMilliunits: Int64?
    public var currency: String?
    /// StoreKit 2, newer: the offer's discount and length, the customer, the billing plan of
    /// the next period and, under a commitment, what follows it.
    public var offerDiscountType: String?
    public var offerPeriod: String?
    public var appTransactionID: String?
    public var eligibleWinBackOfferIDs: [String]?
    /// The app account token of the customer's subscription (`appAccountToken`).
    public var appAccountToken: String?
    /// `BILLED_UPFRONT` or `MONTHLY` (12-month commitment).
    public var renewalBillingPlanType: String?
    public var commitmentInfo: RenewalCommitmentInfo?
    public var advancedCommerceInfo: JSONValue?
    public var otherFields: [Field]

    public init() { otherFields = [] }
}

/// The envelope of an App Store Server Notification (V1 or V2).
public struct NotificationInfo: Sendable, Hashable {
    /// `notification_type` (V1) or `notificationType` (V2).
    public var notificationType: String?
    /// V2 `subtype`.
    public var subtype: String?
    /// V2 `notificationUUID`.
    public var notificationUUID: String?
    /// V2 `version` ("2.0").
    public var version: String?
    public var signedDate: Date?
    /// V2 `data.appAppleId`, V1 none.
    public var appAppleID: Int64?
    /// V2 `data.bundleId`, V1 `bid`.
    public var bundleID: String?
    /// V2 `data.bundleVersion`, V1 `bvrs`.
    public var bundleVersion: String?
    /// V2 `data.status` (1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked).
    public var subscriptionStatus: Int?
    /// Which V2 object carried the fields: `data`, `summary` (a mass extension's counts),
    /// `externalPurchaseToken` or `appData` (`RESCIND_CONSENT`).
    public var container: String?
    /// `RENEWAL_EXTENSION` / `SUMMARY`: the mass extension's request and counts.
    public var extensionSummary: RenewalExtensionSummary?
    /// `EXTERNAL_PURCHASE_TOKEN`: the token's id, kind (`ACQUISITION`, `SERVICES`) and dates.
    public var externalPurchaseID: String?
    public var tokenType: String?
    public var tokenCreationDate: Date?
    public var tokenExpirationDate: Date?
    /// V2 `data.consumptionRequestReason`.
    public var consumptionRequestReason: String?
    /// V1: whether the body carried a `password` (the shared secret). Its value is never kept.
    public var containedSharedSecret: Bool
    public var otherFields: [Field]

    public init() {
        otherFields = []
        containedSharedSecret = false
    }
}

/// A `RENEWAL_EXTENSION` / `SUMMARY` notification's `summary`: what a mass extension did.
public struct RenewalExtensionSummary: Sendable, Hashable {
    public var requestIdentifier: String?
    public var productID: String?
    /// nil: every storefront.
    public var storefrontCountryCodes: [String]?
    public var succeededCount: Int64?
    public var failedCount: Int64?

    public init() {}

    /// "1 subscription extended, 0 failed (product P, request R)".
    public var words: String {
        var text = "\(succeededCount.map(String.init) ?? "?") subscription\(succeededCount == 1 ? "" : "s") extended, \(failedCount.map(String.init) ?? "?") failed"
        var about: [String] = []
        if let productID { about.append("product \(productID)") }
        if let storefrontCountryCodes { about.append("storefronts " + storefrontCountryCodes.joined(separator: " ")) }
        if let requestIdentifier { about.append("request \(requestIdentifier)") }
        if !about.isEmpty { text += " (" + about.joined(separator: ", ") + ")" }
        return text
    }
}

/// A Retention Messaging API realtime request, as Apple signs it: which customer, app and
/// product a message is asked for, in which language, under which request id.
public struct RealtimeRequest: Sendable, Hashable {
    public var originalTransactionID: String?
    /// A number, as Apple sends it.
    public var appAppleID: Int64?
    public var productID: String?
    /// The customer's locale (`en-US`).
    public var userLocale: String?
    /// Apple's id of this request (a UUID).
    public var requestIdentifier: String?
    public var signedDate: Date?
    public var environment: String?
    /// Fields Apple adds later, as sent.
    public var otherFields: [Field] = []

    public init() {}

    /// A `RealtimeRequestBody`'s decoded payload.
    init(apple object: [String: JSONValue]) {
        var r = JSONFieldReader(object)
        originalTransactionID = r.string("originalTransactionId")
        appAppleID = r.int("appAppleId")
        productID = r.string("productId")
        userLocale = r.string("userLocale")
        requestIdentifier = r.string("requestIdentifier")
        signedDate = r.epochMillisecondsDate("signedDate")
        environment = r.string("environment")
        otherFields = r.remainingFields()
    }
}
