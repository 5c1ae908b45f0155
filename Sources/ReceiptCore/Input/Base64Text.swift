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
        if let result = try text.withContiguousStorageIfAvailable({ try decode(buffer: $0, what: what) }) {
            return result
        }
        return try Array(text).withUnsafeBufferPointer { try decode(buffer: $0, what: what) }
    }

    /// Byte classes: 0 invalid, 1 standard alphabet, 2 `-`, 3 `_`, 4 `=`, 5 white space, 6 `\\`.
    private static let classes: [UInt8] = {
        var table = [UInt8](repeating: 0, count: 256)
        for b in UInt8(ascii: "A")...UInt8(ascii: "Z") { table[Int(b)] = 1 }
        for b in UInt8(ascii: "a")...UInt8(ascii: "z") { table[Int(b)] = 1 }
        for b in UInt8(ascii: "0")...UInt8(ascii: "9") { table[Int(b)] = 1 }
        table[Int(UInt8(ascii: "+"))] = 1
        table[Int(UInt8(ascii: "/"))] = 1
        table[Int(UInt8(ascii: "-"))] = 2
        table[Int(UInt8(ascii: "_"))] = 3
        table[Int(UInt8(ascii: "="))] = 4
        for b in [UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t")] { table[Int(b)] = 5 }
        table[Int(UInt8(ascii: "\\"))] = 6
        return table
    }()

    private static func decode(buffer text: UnsafeBufferPointer<UInt8>, what: String) throws -> [UInt8] {
        // Fast path: standard alphabet, then only padding and white space (a clean file).
        let clean = classes.withUnsafeBufferPointer { classes -> Int? in
            var i = 0
            while i < text.count, classes[Int(text[i])] == 1 { i += 1 }
            var pad = 0
            for j in i..<text.count {
                switch classes[Int(text[j])] {
                case 4: pad += 1
                case 5: continue
                default: return nil
                }
            }
            return pad <= 2 && i % 4 != 1 && i > 0 ? i : nil
        }
        if let length = clean {
            var data = Data(UnsafeBufferPointer(rebasing: text[0..<length]))
            data.append(contentsOf: [UInt8](repeating: 61, count: (4 - length % 4) % 4))
            if let decoded = Data(base64Encoded: data) { return [UInt8](decoded) }
        }
        var padding = 0
        var failure: ReceiptDecodingError?
        // Written through a raw buffer: a byte-at-a-time append was the hot spot of decoding.
        var normalised = try [UInt8](unsafeUninitializedCapacity: text.count + 2) { out, count in
            var n = 0
            var previous: UInt8 = 0
            classes.withUnsafeBufferPointer { classes in
                for offset in 0..<text.count {
                    let byte = text[offset]
                    let escapedLetter =
                        previous == 0x5C && (byte == UInt8(ascii: "n") || byte == UInt8(ascii: "r") || byte == UInt8(ascii: "t"))
                    previous = byte
                    if escapedLetter { continue }  // a JSON `\n` escape that survived a copy and paste
                    switch classes[Int(byte)] {
                    case 1:
                        guard padding == 0 else {
                            failure = ReceiptDecodingError(
                                .invalidBase64, "\(what) has data after its '=' padding at offset \(offset)", offset: offset)
                            return
                        }
                        out[n] = byte
                        n += 1
                    case 2:
                        out[n] = UInt8(ascii: "+")
                        n += 1
                    case 3:
                        out[n] = UInt8(ascii: "/")
                        n += 1
                    case 4:
                        padding += 1
                        guard padding <= 2 else {
                            failure = ReceiptDecodingError(
                                .invalidBase64, "\(what) has too much '=' padding at offset \(offset)", offset: offset)
                            return
                        }
                    case 5, 6:
                        continue  // white space; `\` of `\/` and `\n` escapes from JSON
                    default:
                        failure = ReceiptDecodingError(
                            .invalidBase64, "\(what) has an invalid character \(Self.describe(byte)) at offset \(offset)",
                            offset: offset)
                        return
                    }
                }
            }
            count = n
            if let failure { throw failure }
        }
        guard !normalised.isEmpty else {
            throw ReceiptDecodingError(.invalidBase64, "\(what) is empty")
        }
        switch normalised.count % 4 {
        case 1:
            throw ReceiptDecodingError(
                .invalidBase64,
                "\(what) is truncated: \(normalised.count) characters cannot be base64 (one character too many or three too few)",
                offset: text.count)
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
