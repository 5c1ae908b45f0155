import Foundation

/// One purchase, whatever it was decoded from: a receipt's `in_app` entry, a
/// `latest_receipt_info` row, an iOS 6 `purchase-info`, or a StoreKit 2 transaction.
///
/// Panes and the subscription logic see this one shape. Fields that a source does not carry
/// are `nil`; fields that a source carries but this model does not name are kept in
/// ``otherFields`` (JSON and plist sources) or ``unknownAttributes`` (ASN.1 sources).
public struct Purchase: Sendable, Hashable {
    /// Where a purchase row came from.
    public enum Source: String, Sendable, Hashable, Codable {
        case receiptInApp = "in_app"
        case latestReceiptInfo = "latest_receipt_info"
        case latestExpiredReceiptInfo = "latest_expired_receipt_info"
        case purchaseInfo = "purchase-info"
        case legacyResponse = "receipt"
        case jwsTransaction = "jws"
    }

    public var source: Source
    public var productID: String?
    public var transactionID: String?
    public var originalTransactionID: String?
    public var webOrderLineItemID: String?
    public var quantity: Int?
    public var productType: ProductType?
    /// The product type as sent when it is not one Apple defines (JWS `type` text, or receipt
    /// field 1707's number outside −1…3): ``productType`` is then `.unknown`, and nothing is
    /// inferred from it.
    public var productTypeAsSent: JSONValue?
    public var purchaseDate: Date?
    public var originalPurchaseDate: Date?
    public var expiresDate: Date?
    public var cancellationDate: Date?
    /// `cancellation_reason` / JWS `revocationReason`: 0 other, 1 an issue in the app.
    public var cancellationReason: Int?
    public var isTrialPeriod: Bool?
    public var isInIntroOfferPeriod: Bool?
    public var isUpgraded: Bool?
    public var promotionalOfferID: String?
    public var offerCodeRefName: String?
    public var subscriptionGroupIdentifier: String?
    public var inAppOwnershipType: String?
    public var appAccountToken: String?
    /// iOS 6 receipts and responses: the app's bundle id (`bid`) and version (`bvrs`).
    public var bundleID: String?
    public var bundleVersion: String?
    /// StoreKit 2 only.
    public var environment: String?
    public var offerType: Int?
    public var offerIdentifier: String?
    public var offerDiscountType: String?
    /// `REFUND_FULL`, `REFUND_PRORATED`, `FAMILY_REVOKE`.
    public var revocationType: String?
    /// The share refunded, in milliunits (40000 = 40%).
    public var revocationPercentage: Int64?
    /// ISO 8601 duration of the offer (`P1M`).
    public var offerPeriod: String?
    /// Ties one Apple Account's purchases in one app together.
    public var appTransactionID: String?
    /// The original transaction id before a migration.
    public var previousOriginalTransactionID: String?
    /// `BILLED_UPFRONT`, or `MONTHLY` (monthly billing under a 12-month commitment).
    public var billingPlanType: String?
    public var commitmentInfo: CommitmentInfo?
    /// Advanced Commerce SKUs only: kept as Apple sent it.
    public var advancedCommerceInfo: JSONValue?
    public var transactionReason: String?
    public var storefront: String?
    public var storefrontID: String?
    public var currency: String?
    /// Price in milliunits of ``currency`` (StoreKit 2).
    public var priceMilliunits: Int64?
    public var signedDate: Date?
    /// Source fields this model has no name for, as text, in source order.
    public var otherFields: [Field]
    /// ASN.1 attributes this decoder does not know (receipts only).
    public var unknownAttributes: [ASN1Attribute]

    public init(source: Source) {
        self.source = source
        self.otherFields = []
        self.unknownAttributes = []
    }

    /// The subscription expiry when present, else the purchase date (for sorting).
    public var effectiveDate: Date? { expiresDate ?? purchaseDate }
}

/// A named value kept verbatim from a source (for the "every field" view).
public struct Field: Sendable, Hashable {
    public var name: String
    /// The value as text (an object or array as compact JSON).
    public var value: String
    /// The value itself when it is an object or an array: JSON outputs write it as such.
    public var json: JSONValue?

    public init(name: String, value: String, json: JSONValue? = nil) {
        self.name = name
        self.value = value
        self.json = json
    }

    /// `value` kept under `name`: an object or array as itself (and compact JSON as text),
    /// anything else as its text.
    public init(name: String, keeping value: JSONValue) {
        switch value {
        case .object, .array: self.init(name: name, value: value.compactJSON, json: value)
        default: self.init(name: name, value: value.text ?? value.compactJSON)
        }
    }

    /// `list` as one JSON object (objects and arrays as themselves, the rest as text); for a
    /// name given twice, the last value.
    public static func object(_ list: [Field]) -> JSONValue {
        var out: [String: JSONValue] = [:]
        for field in list { out[field.name] = field.json ?? .string(field.value) }
        return .object(out)
    }
}

/// One attribute of a receipt payload: `SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }`.
public struct ASN1Attribute: Sendable, Hashable {
    public var type: Int
    public var version: Int
    /// The raw bytes of the value's OCTET STRING content (usually DER of the real value), as a
    /// view into the decoded payload: a real receipt has about seven such attributes per
    /// purchase, and copying each into an array of its own was a tenth of decoding it.
    public var bytes: ArraySlice<UInt8>

    /// ``bytes`` as an array of its own.
    public var value: [UInt8] {
        get { Array(bytes) }
        set { bytes = newValue[...] }
    }

    public init(type: Int, version: Int, value: [UInt8]) {
        self.init(type: type, version: version, bytes: value[...])
    }

    public init(type: Int, version: Int, bytes: ArraySlice<UInt8>) {
        self.type = type
        self.version = version
        self.bytes = bytes
    }
}
