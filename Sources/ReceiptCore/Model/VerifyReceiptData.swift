import Foundation

/// The `receipt-data` Apple's verifyReceipt wants for an input: standard base64 of the receipt
/// (a PKCS#7 app receipt or an iOS 6 transaction receipt), whatever wrapping it came in.
public enum VerifyReceiptData {
    /// - Returns: nil for inputs verifyReceipt does not take (responses, JWS, notifications).
    public static func base64(bytes: [UInt8], decoded: DecodedInput) -> String? {
        guard decoded.format == .pkcs7 || decoded.format == .legacy else { return nil }
        if decoded.wrapping.first == "binary" { return Data(bytes).base64EncodedString() }
        if let raw = try? Base64Text.decode(bytes.filter { $0 != 0x22 && $0 != 0x27 }) {
            return Data(raw).base64EncodedString()
        }
        // Wrapped in JSON or a log line: the receipt-data field's own text.
        if let json = try? JSONValue.parse(bytes), case .string(let inner)? = json["receipt-data"],
            let raw = try? Base64Text.decode(Array(inner.utf8))
        {
            return Data(raw).base64EncodedString()
        }
        if decoded.wrapping.contains("plist"), decoded.format == .legacy {
            return Data(bytes).base64EncodedString()  // an OpenStep plist pasted as text
        }
        return nil
    }
}
