import Foundation

/// Everything decoded from one input, whatever its format.
///
/// Produced by ``ReceiptDecoder/decode(_:)``. The fields a format does not carry are empty or
/// `nil`; ``signature`` holds what a signature check needs (the next step of the pipeline).
public struct DecodedInput: Sendable, Hashable {
    /// What the input was recognised as.
    public var format: ReceiptFormat
    /// How the bytes were wrapped before decoding (e.g. `base64`, `json:receipt-data`).
    public var wrapping: [String]
    /// The environment, normalised (`Production`, `Sandbox`, `Xcode`, `LocalTesting`).
    public var environment: StoreEnvironment?
    /// The environment string exactly as the source wrote it.
    public var rawEnvironment: String?
    /// The app-level receipt (PKCS#7 payload, response `receipt`, AppTransaction).
    public var receipt: AppReceipt?
    /// Purchases that stand on their own: an iOS 6 purchase-info, a JWS transaction, a
    /// notification's transaction, the `receipt` of an iOS 6 response.
    public var transactions: [Purchase]
    /// `latest_receipt_info` (and iOS 6 `latest_expired_receipt_info`) rows.
    public var latestReceiptInfo: [Purchase]
    /// `pending_renewal_info` entries, the iOS 6 top-level renewal fields, JWS renewal info.
    public var pendingRenewalInfo: [RenewalInfo]
    /// `status` of a verifyReceipt response (or a V1 notification's `unified_receipt`).
    public var status: Int?
    /// `is-retryable` / `is_retryable` of a verifyReceipt response.
    public var isRetryable: Bool?
    /// `latest_receipt` (base64), when the response carried one.
    public var latestReceipt: String?
    /// Notification envelope (V1 and V2).
    public var notification: NotificationInfo?
    /// iOS 6 transaction receipt envelope fields (`environment`, `pod`, `signing-status`).
    public var legacyEnvelope: [Field]
    /// What a signature check needs.
    public var signature: SignatureMaterial?
    /// The receipt itself as Apple issued it, whatever it was wrapped in: the PKCS#7 DER of an
    /// app receipt, or the plist text of an iOS 6 transaction receipt (what verifyReceipt takes,
    /// base64-encoded). Nil for other formats.
    public var receiptBytes: [UInt8]?
    /// Tokens carried inside this one and decoded too (a V2 notification's
    /// `signedTransactionInfo` and `signedRenewalInfo`).
    public var nested: [NestedInput]
    /// Things that decoded but look wrong (not errors: the input is still shown).
    public var warnings: [String]
    /// A Retention Messaging realtime request (format `realtime-request`).
    public var realtimeRequest: RealtimeRequest?
    /// Every field of a signed payload of no known kind (format `unknown`), as sent.
    public var payloadFields: [Field] = []

    public init(format: ReceiptFormat) {
        self.format = format
        wrapping = []
        transactions = []
        latestReceiptInfo = []
        pendingRenewalInfo = []
        legacyEnvelope = []
        nested = []
        warnings = []
    }

    /// Every purchase this input carries, in source order: receipt `in_app`, standalone
    /// transactions, then `latest_receipt_info`.
    public var allPurchases: [Purchase] {
        (receipt?.inApp ?? []) + transactions + latestReceiptInfo
    }

    /// The bundle id from whichever part of the input carries one.
    public var bundleID: String? {
        receipt?.bundleID ?? notification?.bundleID ?? transactions.lazy.compactMap(\.bundleID).first
            ?? latestReceiptInfo.lazy.compactMap(\.bundleID).first
    }
}

/// The parts of an input that its signature covers, kept for offline verification.
public enum SignatureMaterial: Sendable, Hashable {
    /// PKCS#7 SignedData.
    case pkcs7(PKCS7SignedData)
    /// iOS 6 transaction receipt: the `signature` blob and the bytes it signs.
    case legacy(signatureBlob: [UInt8], purchaseInfo: [UInt8])
    /// JWS compact serialization.
    case jws(JWSToken)
}

/// An input carried inside another, with the field it came from.
public struct NestedInput: Sendable, Hashable {
    /// The field that held it, e.g. `data.signedTransactionInfo`.
    public var field: String
    public var input: DecodedInput

    public init(field: String, input: DecodedInput) {
        self.field = field
        self.input = input
    }
}
