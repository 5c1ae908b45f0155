import Foundation

/// Turns base64 text as people paste it into bytes.
///
/// Tolerated: spaces and line breaks anywhere, the URL-safe alphabet (`-` and `_`), missing
/// `=` padding, and escaped slashes (`\/`) from JSON that was copied by hand. Anything else is
/// an error that names the character and its offset in the text. The decoding itself is
/// Foundation's; this type only normalises and validates.
public enum Base64Text {
    /// Decodes `text`, returning the bytes or throwing an error with the offending offset.
    ///
    /// - Parameter text: The base64 characters, as UTF-8 bytes.
    /// - Parameter what: What the text is, for messages ("base64", "purchase-info", …).
    public static func decode(_ text: some Collection<UInt8>, what: String = "base64") throws -> [UInt8] {
        var normalised = [UInt8]()
        normalised.reserveCapacity(text.count)
        var padding = 0
        var offset = 0
        var previous: UInt8 = 0
        for byte in text {
            defer {
                offset += 1
                previous = byte
            }
            if previous == UInt8(ascii: "\\"),
                byte == UInt8(ascii: "n") || byte == UInt8(ascii: "r") || byte == UInt8(ascii: "t")
            {
                continue  // a JSON `\n` escape that survived a copy and paste
            }
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"):
                guard padding == 0 else {
                    throw ReceiptDecodingError(
                        .invalidBase64, "\(what) has data after its '=' padding at offset \(offset)", offset: offset)
                }
                normalised.append(byte)
            case UInt8(ascii: "/"):
                guard padding == 0 else {
                    throw ReceiptDecodingError(
                        .invalidBase64, "\(what) has data after its '=' padding at offset \(offset)", offset: offset)
                }
                normalised.append(byte)
            case UInt8(ascii: "-"):
                normalised.append(UInt8(ascii: "+"))
            case UInt8(ascii: "_"):
                normalised.append(UInt8(ascii: "/"))
            case UInt8(ascii: "="):
                padding += 1
                guard padding <= 2 else {
                    throw ReceiptDecodingError(
                        .invalidBase64, "\(what) has too much '=' padding at offset \(offset)", offset: offset)
                }
            case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"):
                continue
            case UInt8(ascii: "\\"):
                // `\/` and `\n` from JSON escapes that survived a copy and paste.
                continue
            default:
                throw ReceiptDecodingError(
                    .invalidBase64,
                    "\(what) has an invalid character \(Self.describe(byte)) at offset \(offset)",
                    offset: offset)
            }
        }
        guard !normalised.isEmpty else {
            throw ReceiptDecodingError(.invalidBase64, "\(what) is empty")
        }
        switch normalised.count % 4 {
        case 1:
            throw ReceiptDecodingError(
                .invalidBase64,
                "\(what) is truncated: \(normalised.count) characters cannot be base64 (one character too many or three too few)",
                offset: offset)
        case 2: normalised.append(contentsOf: [61, 61])
        case 3: normalised.append(61)
        default: break
        }
        guard let data = Data(base64Encoded: Data(normalised)) else {
            throw ReceiptDecodingError(.invalidBase64, "\(what) could not be decoded")
        }
        return [UInt8](data)
    }

    /// True when `byte` can appear in base64 or base64url text.
    static func isAlphabet(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "/"),
            UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "="):
            return true
        default:
            return false
        }
    }

    static func describe(_ byte: UInt8) -> String {
        if byte >= 0x21 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        return String(format: "0x%02X", byte)
    }
}
