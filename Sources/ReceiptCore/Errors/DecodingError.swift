/// An error raised while sniffing or decoding an input.
///
/// Every error names *what* is wrong and, where it can, *where*: a byte offset into the bytes
/// that were being read, and the layer that was reading them (`base64`, `ASN.1`, `plist`, …).
/// Equality compares only the ``Code``, so tests can match on the kind of failure while the
/// message stays free to improve.
public struct ReceiptDecodingError: CodedError {
    /// The kind of failure.
    public enum Code: String, CaseIterable, CodedErrorCode {
        case emptyInput = "empty input"
        case inputTooLarge = "input too large"
        case unrecognisedFormat = "unrecognised format"
        case invalidBase64 = "invalid base64"
        case invalidASN1 = "invalid ASN.1"
        case invalidPKCS7 = "invalid PKCS#7"
        case invalidReceiptPayload = "invalid receipt payload"
        case invalidPlist = "invalid plist"
        case invalidLegacyReceipt = "invalid transaction receipt"
        case invalidJSON = "invalid JSON"
        case invalidJWS = "invalid JWS"
        case limitExceeded = "limit exceeded"
    }

    /// The kind of failure.
    public let code: Code
    /// A sentence in plain words saying what is wrong and where.
    public let reason: String
    /// The byte (or character) offset of the problem in the bytes being read, when known.
    public let offset: Int?

    public init(_ code: Code, _ reason: String, offset: Int? = nil) {
        self.code = code
        self.reason = reason
        self.offset = offset
    }

    public var description: String { "\(code): \(reason)" }

    /// Returns a copy whose reason starts with `context`, e.g. "in purchase-info: ".
    func prefixed(_ context: String) -> Self {
        Self(code, "\(context): \(reason)", offset: offset)
    }
}

/// Limits that keep hostile input from using unbounded time or memory.
public struct DecodingLimits: Sendable, Hashable {
    /// Largest input accepted, in bytes (after reading, before base64 decoding).
    public var maximumInputBytes: Int
    /// Most purchases accepted in one receipt or response.
    public var maximumPurchases: Int
    /// Deepest nesting accepted in plists and JSON.
    public var maximumNestingDepth: Int
    /// Most nested tokens followed (a JWS inside a notification inside …).
    public var maximumEmbeddingDepth: Int

    public init(
        maximumInputBytes: Int = 8 * 1024 * 1024,
        maximumPurchases: Int = 200_000,
        maximumNestingDepth: Int = 64,
        maximumEmbeddingDepth: Int = 3
    ) {
        self.maximumInputBytes = maximumInputBytes
        self.maximumPurchases = maximumPurchases
        self.maximumNestingDepth = maximumNestingDepth
        self.maximumEmbeddingDepth = maximumEmbeddingDepth
    }

    public static let `default` = DecodingLimits()
}
