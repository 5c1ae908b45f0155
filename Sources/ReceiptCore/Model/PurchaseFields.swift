import Foundation

/// One named field of a ``Purchase``: the single table that decoding, the JSON output, the
/// dashboard's detail overlay and the audit history's JSON and CSV all read.
///
/// A field has one name (the verifyReceipt-style key that `inspect --format json` writes and the
/// detail overlay shows), the receipt ASN.1 attribute type it is decoded from (when a receipt
/// carries it), the verifyReceipt/iOS 6 JSON key and the StoreKit 2 JWS key it is read from, and
/// a typed accessor on ``Purchase``. Add a field here and every view of a purchase gains it.
/// A class: a row of a constant table, passed around by reference rather than copied.
public final class PurchaseField: Sendable {
    /// Where a field lives in ``Purchase``, with its type.
    public enum Accessor: Sendable {
        /// ``Purchase/source`` (never read from a source field).
        case source
        case text(WritableKeyPath<Purchase, String?> & Sendable)
        case integer(WritableKeyPath<Purchase, Int?> & Sendable)
        case integer64(WritableKeyPath<Purchase, Int64?> & Sendable)
        case flag(WritableKeyPath<Purchase, Bool?> & Sendable)
        case date(WritableKeyPath<Purchase, Date?> & Sendable)
        /// ``Purchase/productType``: receipt attribute 1707's number, or the JWS `type` text.
        case productType
        /// A JSON object kept as Apple sent it (``Purchase/advancedCommerceInfo``).
        case json(WritableKeyPath<Purchase, JSONValue?> & Sendable)
        /// ``Purchase/commitmentInfo``: Apple's object, read into its fields.
        case commitment
    }

    /// How the value of a receipt's ASN.1 attribute becomes the field.
    public enum ASN1Shape: Sendable, Hashable {
        /// The natural shape of the accessor: a string type for text, INTEGER for numbers, flags
        /// and the product type, an IA5String date for dates.
        case natural
        /// Text read from a string type or from an INTEGER.
        case stringOrInteger
        /// Text read from an INTEGER only.
        case integerText
    }

    /// A field's value, typed.
    public enum Value: Sendable, Hashable {
        case text(String)
        case integer(Int64)
        case flag(Bool)
        case date(Date)
        /// An object (``Accessor/json``, ``Accessor/commitment``), snake_case where we name its keys.
        case object(JSONValue)

        /// The value as text: integers in decimal, flags as `true`/`false`, dates in ISO 8601,
        /// objects as compact JSON. Not escaped: whoever prints it sanitises it.
        public var text: String {
            switch self {
            case .text(let text): text
            case .integer(let number): String(number)
            case .flag(let flag): flag ? "true" : "false"
            case .date(let date): AppleDate.iso8601(date)
            case .object(let value): value.compactJSON
            }
        }
    }

    /// The verifyReceipt-style key: `inspect`'s JSON key and the detail overlay's label.
    public let name: String
    /// ``name`` as a constant, for writers that copy its bytes without reference counting.
    public let key: StaticString
    /// The detail overlay's label when it differs from ``name`` (e.g. to give the unit).
    public let label: String
    public let accessor: Accessor
    /// The receipt payload's in-app attribute type, when receipts carry the field.
    public let asn1Type: Int?
    public let asn1Shape: ASN1Shape
    /// The key in verifyReceipt `in_app` / `latest_receipt_info` rows and iOS 6 dictionaries.
    public let receiptKey: String?
    /// The key in a StoreKit 2 `JWSTransactionDecodedPayload`.
    public let jwsKey: String?
    /// Words after a number in the detail overlay (the cancellation reason's meaning).
    let explain: (@Sendable (Int) -> String)?
    /// Words after a text in the detail overlay (an offer period's length, a plan's meaning).
    let explainText: (@Sendable (String) -> String?)?
    /// The stored property's byte offset in ``Purchase``: reading through it costs one copy of
    /// the field, where a key path read copies the whole purchase (measured: a third of
    /// `inspect --format json`).
    package let offset: Int?

    init(
        _ key: StaticString, _ accessor: Accessor, asn1: Int? = nil, shape: ASN1Shape = .natural, receipt: String? = nil,
        jws: String? = nil, label: String? = nil, explain: (@Sendable (Int) -> String)? = nil,
        explainText: (@Sendable (String) -> String?)? = nil
    ) {
        let name = key.description
        self.key = key
        self.name = name
        self.label = label ?? name
        self.accessor = accessor
        self.asn1Type = asn1
        self.asn1Shape = shape
        self.receiptKey = receipt
        self.jwsKey = jws
        self.explain = explain
        self.explainText = explainText
        self.offset =
            switch accessor {
            case .source, .productType, .commitment: nil
            case .json(let path): MemoryLayout<Purchase>.offset(of: path)
            case .text(let path): MemoryLayout<Purchase>.offset(of: path)
            case .integer(let path): MemoryLayout<Purchase>.offset(of: path)
            case .integer64(let path): MemoryLayout<Purchase>.offset(of: path)
            case .flag(let path): MemoryLayout<Purchase>.offset(of: path)
            case .date(let path): MemoryLayout<Purchase>.offset(of: path)
            }
    }

    // MARK: - The table

    public static let source = PurchaseField("source", .source)
    public static let productID = PurchaseField(
        "product_id", .text(\.productID), asn1: 1702, receipt: "product_id", jws: "productId")
    public static let productType = PurchaseField("product_type", .productType, asn1: 1707, jws: "type")
    public static let transactionID = PurchaseField(
        "transaction_id", .text(\.transactionID), asn1: 1703, shape: .stringOrInteger, receipt: "transaction_id",
        jws: "transactionId")
    public static let originalTransactionID = PurchaseField(
        "original_transaction_id", .text(\.originalTransactionID), asn1: 1705, shape: .stringOrInteger,
        receipt: "original_transaction_id", jws: "originalTransactionId")
    public static let webOrderLineItemID = PurchaseField(
        "web_order_line_item_id", .text(\.webOrderLineItemID), asn1: 1711, shape: .integerText,
        receipt: "web_order_line_item_id", jws: "webOrderLineItemId")
    public static let quantity = PurchaseField(
        "quantity", .integer(\.quantity), asn1: 1701, receipt: "quantity", jws: "quantity")
    public static let purchaseDate = PurchaseField(
        "purchase_date", .date(\.purchaseDate), asn1: 1704, receipt: "purchase_date", jws: "purchaseDate")
    public static let originalPurchaseDate = PurchaseField(
        "original_purchase_date", .date(\.originalPurchaseDate), asn1: 1706, receipt: "original_purchase_date",
        jws: "originalPurchaseDate")
    public static let expiresDate = PurchaseField(
        "expires_date", .date(\.expiresDate), asn1: 1708, receipt: "expires_date", jws: "expiresDate")
    public static let cancellationDate = PurchaseField(
        "cancellation_date", .date(\.cancellationDate), asn1: 1712, receipt: "cancellation_date",
        jws: "revocationDate")
    public static let cancellationReason = PurchaseField(
        "cancellation_reason", .integer(\.cancellationReason), receipt: "cancellation_reason", jws: "revocationReason",
        explain: { CancellationReason.meaning($0) })
    public static let isTrialPeriod = PurchaseField(
        "is_trial_period", .flag(\.isTrialPeriod), asn1: 1713, receipt: "is_trial_period")
    public static let isInIntroOfferPeriod = PurchaseField(
        "is_in_intro_offer_period", .flag(\.isInIntroOfferPeriod), asn1: 1719, receipt: "is_in_intro_offer_period")
    public static let isUpgraded = PurchaseField(
        "is_upgraded", .flag(\.isUpgraded), receipt: "is_upgraded", jws: "isUpgraded")
    public static let promotionalOfferID = PurchaseField(
        "promotional_offer_id", .text(\.promotionalOfferID), asn1: 1721, receipt: "promotional_offer_id")
    public static let offerCodeRefName = PurchaseField(
        "offer_code_ref_name", .text(\.offerCodeRefName), receipt: "offer_code_ref_name")
    public static let subscriptionGroupIdentifier = PurchaseField(
        "subscription_group_identifier", .text(\.subscriptionGroupIdentifier), receipt: "subscription_group_identifier",
        jws: "subscriptionGroupIdentifier")
    public static let inAppOwnershipType = PurchaseField(
        "in_app_ownership_type", .text(\.inAppOwnershipType), receipt: "in_app_ownership_type",
        jws: "inAppOwnershipType", explainText: { DefinedValues.meaning($0, in: DefinedValues.ownership) })
    public static let appAccountToken = PurchaseField(
        "app_account_token", .text(\.appAccountToken), receipt: "app_account_token", jws: "appAccountToken")
    public static let bundleID = PurchaseField("bid", .text(\.bundleID), receipt: "bid", jws: "bundleId")
    public static let bundleVersion = PurchaseField("bvrs", .text(\.bundleVersion), receipt: "bvrs")
    public static let environment = PurchaseField(
        "environment", .text(\.environment), jws: "environment", explainText: { DefinedValues.meaning($0, in: DefinedValues.environment) })
    public static let offerType = PurchaseField(
        "offer_type", .integer(\.offerType), jws: "offerType", explain: { OfferWords.type($0) })
    public static let offerIdentifier = PurchaseField(
        "offer_identifier", .text(\.offerIdentifier), jws: "offerIdentifier")
    public static let offerDiscountType = PurchaseField(
        "offer_discount_type", .text(\.offerDiscountType), jws: "offerDiscountType", explainText: { OfferWords.discount($0) })
    public static let offerPeriod = PurchaseField(
        "offer_period", .text(\.offerPeriod), jws: "offerPeriod", explainText: { OfferWords.period($0) })
    public static let revocationType = PurchaseField(
        "revocation_type", .text(\.revocationType), jws: "revocationType", explainText: { OfferWords.revocation($0) })
    public static let revocationPercentage = PurchaseField(
        "revocation_percentage", .integer64(\.revocationPercentage), jws: "revocationPercentage", label: "revocation_percentage (milliunits)",
        explain: { OfferWords.percentage(Int64($0)) })
    public static let appTransactionID = PurchaseField(
        "app_transaction_id", .text(\.appTransactionID), jws: "appTransactionId")
    public static let previousOriginalTransactionID = PurchaseField(
        "previous_original_transaction_id", .text(\.previousOriginalTransactionID), jws: "previousOriginalTransactionId")
    public static let billingPlanType = PurchaseField(
        "billing_plan_type", .text(\.billingPlanType), jws: "billingPlanType", explainText: { OfferWords.billingPlan($0) })
    public static let commitmentInfo = PurchaseField("commitment_info", .commitment, jws: "commitmentInfo")
    public static let advancedCommerceInfo = PurchaseField(
        "advanced_commerce_info", .json(\.advancedCommerceInfo), jws: "advancedCommerceInfo")
    public static let transactionReason = PurchaseField(
        "transaction_reason", .text(\.transactionReason), jws: "transactionReason",
        explainText: { DefinedValues.meaning($0, in: DefinedValues.transactionReason) })
    public static let storefront = PurchaseField("storefront", .text(\.storefront), jws: "storefront")
    public static let storefrontID = PurchaseField("storefront_id", .text(\.storefrontID), jws: "storefrontId")
    public static let currency = PurchaseField("currency", .text(\.currency), jws: "currency")
    public static let price = PurchaseField(
        "price", .integer64(\.priceMilliunits), jws: "price", label: "price (milliunits)")
    public static let signedDate = PurchaseField("signed_date", .date(\.signedDate), jws: "signedDate")

    /// Every field, in the order the detail overlay lists them.
    public static let all: [PurchaseField] = [
        source, productID, productType, transactionID, originalTransactionID, webOrderLineItemID, quantity,
        purchaseDate, originalPurchaseDate, expiresDate, cancellationDate, cancellationReason, isTrialPeriod,
        isInIntroOfferPeriod, isUpgraded, promotionalOfferID, offerCodeRefName, subscriptionGroupIdentifier,
        inAppOwnershipType, appAccountToken, bundleID, bundleVersion, environment, offerType, offerIdentifier,
        offerDiscountType, offerPeriod, revocationType, revocationPercentage, transactionReason, storefront, storefrontID, currency, price,
        signedDate, appTransactionID, previousOriginalTransactionID, billingPlanType, commitmentInfo, advancedCommerceInfo,
    ]

    /// The fields the audit store keeps for each purchase (its `purchase` table's columns).
    public static let audited: [PurchaseField] = [
        productID, transactionID, originalTransactionID, quantity, purchaseDate, expiresDate, cancellationDate,
        // v8: today's payloads.
        revocationType, revocationPercentage, offerType, offerDiscountType, offerPeriod, appTransactionID, billingPlanType, commitmentInfo,
        // v10: the customer's app account token, and what the customer's story reads a
        // transaction by (an upgrade is no refund; a renewal is no purchase).
        appAccountToken, isUpgraded, transactionReason,
    ]

    /// The purchase columns of `history --format csv`, in order.
    public static let historyCSV: [PurchaseField] = [
        productID, transactionID, originalTransactionID, purchaseDate, expiresDate, cancellationDate,
    ]

    /// Receipt in-app attribute types 1700…1799 → field, for the payload decoder.
    static let byASN1Type: [PurchaseField?] = {
        var table = [PurchaseField?](repeating: nil, count: 100)
        for field in all { if let type = field.asn1Type { table[type - 1700] = field } }
        return table
    }()

    static func forASN1Type(_ type: Int) -> PurchaseField? {
        (1700..<1800).contains(type) ? byASN1Type[type - 1700] : nil
    }

    // MARK: - Reading and writing a purchase

    /// The field's value in `purchase`, or `nil` when absent.
    public func value(in purchase: Purchase) -> Value? {
        withUnsafePointer(to: purchase) { value(at: $0) }
    }

    /// The field's value in the purchase at `purchase` (callers reading many fields of one
    /// purchase borrow it once).
    public func value(at purchase: UnsafePointer<Purchase>) -> Value? {
        func stored<T>(_ path: KeyPath<Purchase, T?>) -> T? {
            guard let offset else { return purchase.pointee[keyPath: path] }
            return UnsafeRawPointer(purchase).advanced(by: offset).assumingMemoryBound(to: T?.self).pointee
        }
        switch accessor {
        case .source: return .text(purchase.pointee.source.rawValue)
        case .text(let path): return stored(path).map(Value.text)
        case .integer(let path): return stored(path).map { .integer(Int64($0)) }
        case .integer64(let path): return stored(path).map(Value.integer)
        case .flag(let path): return stored(path).map(Value.flag)
        case .date(let path): return stored(path).map(Value.date)
        case .productType:
            switch purchase.pointee.productTypeAsSent {
            case .integer(let number)?: return .integer(number)
            case .string(let text)?: return .text(text)
            default: return purchase.pointee.productType.map { .text($0.rawValue) }
            }
        case .json(let path): return stored(path).map(Value.object)
        case .commitment: return purchase.pointee.commitmentInfo.map { .object($0.json) }
        }
    }

    /// Sets the field from a typed value (a value of another type leaves it unset).
    public func set(_ value: Value?, in purchase: inout Purchase) {
        switch (accessor, value) {
        case (.text(let path), .text(let text)?): purchase[keyPath: path] = text
        case (.integer(let path), .integer(let number)?): purchase[keyPath: path] = Int(clamping: number)
        case (.integer64(let path), .integer(let number)?): purchase[keyPath: path] = number
        case (.flag(let path), .flag(let flag)?): purchase[keyPath: path] = flag
        case (.date(let path), .date(let date)?): purchase[keyPath: path] = date
        case (.productType, .text(let text)?): purchase.setProductType(jws: text)
        case (.productType, .integer(let number)?): purchase.setProductType(receiptField: number)
        case (.source, .text(let text)?): purchase.source = Purchase.Source(rawValue: text) ?? purchase.source
        case (.json(let path), .object(let value)?): purchase[keyPath: path] = value
        case (.commitment, .object(let value)?): purchase.commitmentInfo = CommitmentInfo(snakeCase: value)
        default: break
        }
    }

    /// The value as the detail overlay shows it: dates in ISO 8601, flags as `true`/`false`,
    /// the cancellation reason with its meaning. Not escaped: the overlay sanitises what it draws.
    public func displayText(in purchase: Purchase) -> String? {
        guard let value = value(in: purchase) else { return nil }
        if case .productType = accessor, let asSent = purchase.productTypeAsSent { return AppleValue.undefined(asSent) }
        if case .integer(let number) = value, let explain { return "\(number) (\(explain(Int(clamping: number))))" }
        if case .text(let text) = value, let words = explainText?(text) { return "\(text) (\(words))" }
        if case .commitment = accessor, let info = purchase.commitmentInfo {
            var text = info.summary
            if let price = info.commitmentPrice { text += (text.isEmpty ? "" : ", ") + "commitment price \(price) milliunits" }
            return text.isEmpty ? value.text : text
        }
        return value.text
    }
}

extension PurchaseField {
    /// The fields verifyReceipt JSON names, each with its key.
    static let withReceiptKeys: [(field: PurchaseField, key: String)] = all.compactMap { f in f.receiptKey.map { (f, $0) } }
    /// The fields a StoreKit 2 transaction payload names, each with its key.
    static let withJWSKeys: [(field: PurchaseField, key: String)] = all.compactMap { f in f.jwsKey.map { (f, $0) } }
}

extension Purchase {
    /// Reads every field of `fields` (``PurchaseField/withReceiptKeys`` or
    /// ``PurchaseField/withJWSKeys``, listed once: a key path read per field per row went
    /// through the runtime) from `reader`, typed as the field says; dates are verifyReceipt
    /// dates (`key`, `key_ms`, …) or StoreKit 2 epoch milliseconds.
    mutating func readFields(
        _ reader: inout JSONFieldReader, _ fields: [(field: PurchaseField, key: String)], epochDates: Bool
    ) {
        for (field, key) in fields {
            /// Stores through the stored property's offset where it has one: a key path write
            /// goes through the runtime (a tenth of reading a StoreKit 2 transaction).
            func store<T>(_ value: T?, _ path: WritableKeyPath<Purchase, T?>) {
                guard let offset = field.offset else {
                    self[keyPath: path] = value
                    return
                }
                withUnsafeMutablePointer(to: &self) {
                    UnsafeMutableRawPointer($0).advanced(by: offset).assumingMemoryBound(to: T?.self).pointee = value
                }
            }
            switch field.accessor {
            case .source: break
            case .text(let path): store(reader.string(key), path)
            case .integer(let path): store(reader.int(key).map { Int(clamping: $0) }, path)
            case .integer64(let path): store(reader.int(key), path)
            case .flag(let path): store(reader.bool(key), path)
            case .date(let path): store(epochDates ? reader.epochMillisecondsDate(key) : reader.appleDate(key), path)
            case .productType:
                if let type = reader.string(key) { setProductType(jws: type) }
            case .json(let path): store(reader.value(key), path)
            case .commitment: commitmentInfo = reader.parsed(key) { CommitmentInfo(apple: $0) }
            }
        }
    }
}

extension Purchase {
    /// A JWS `type`: one of Apple's four, or kept as sent (`.unknown`, nothing inferred).
    mutating func setProductType(jws text: String) {
        if let type = ProductType(rawValue: text), type != .unknown {
            productType = type
            productTypeAsSent = nil
        } else {
            productType = .unknown
            productTypeAsSent = .string(text)
        }
    }

    /// Receipt field 1707: −1 (Apple's "unknown") to 3, else kept as sent.
    mutating func setProductType(receiptField value: Int64) {
        productType = ProductType(receiptField: Int(clamping: value))
        productTypeAsSent = (-1...3).contains(value) ? nil : .integer(value)
    }
}
