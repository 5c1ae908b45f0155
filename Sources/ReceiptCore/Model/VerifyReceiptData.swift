import Foundation

/// The `receipt-data` Apple's verifyReceipt wants for an input: standard base64 of the receipt
/// itself (a PKCS#7 app receipt or an iOS 6 transaction receipt), whatever it was wrapped in
/// when pasted (quotes, JSON, a log line, URL-safe base64, line breaks).
public enum VerifyReceiptData {
    /// - Returns: nil for inputs verifyReceipt does not take (responses, JWS, notifications).
    public static func base64(_ decoded: DecodedInput) -> String? {
        guard takes(decoded) else { return nil }
        return decoded.receiptBytes.map { Data($0).base64EncodedString() }
    }

    /// Whether verifyReceipt takes the input (``base64(_:)`` gives its data), without making it.
    public static func takes(_ decoded: DecodedInput) -> Bool {
        (decoded.format == .pkcs7 || decoded.format == .legacy) && decoded.receiptBytes != nil
    }
}
