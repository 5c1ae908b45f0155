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

    /// Base64url without padding (RFC 7515 §2), as JWS and JWT segments are written: one pass
    /// over the bytes (Foundation's base64 then three `replacingOccurrences` went through
    /// NSString and cost more than the ECDSA signature beside it).
    public static func encodeURL(_ bytes: some Collection<UInt8>) -> String {
        if let text = bytes.withContiguousStorageIfAvailable({ encodeURL(buffer: $0) }) { return text }
        return Array(bytes).withUnsafeBufferPointer { encodeURL(buffer: $0) }
    }

    private static let urlAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    private static func encodeURL(buffer input: UnsafeBufferPointer<UInt8>) -> String {
        let count = input.count / 3 * 4 + [0, 2, 3][input.count % 3]
        return urlAlphabet.withUnsafeBufferPointer { alphabet in
            String(unsafeUninitializedCapacity: count) { out in
                var i = 0
                var o = 0
                while i + 3 <= input.count {
                    let n = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8 | UInt32(input[i + 2])
                    out[o] = alphabet[Int(n >> 18)]
                    out[o + 1] = alphabet[Int(n >> 12 & 63)]
                    out[o + 2] = alphabet[Int(n >> 6 & 63)]
                    out[o + 3] = alphabet[Int(n & 63)]
                    i += 3
                    o += 4
                }
                if input.count - i == 1 {
                    let n = UInt32(input[i]) << 16
                    out[o] = alphabet[Int(n >> 18)]
                    out[o + 1] = alphabet[Int(n >> 12 & 63)]
                } else if input.count - i == 2 {
                    let n = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8
                    out[o] = alphabet[Int(n >> 18)]
                    out[o + 1] = alphabet[Int(n >> 12 & 63)]
                    out[o + 2] = alphabet[Int(n >> 6 & 63)]
                }
                return count
            }
        }
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

    /// Each character's six bits: both alphabets (`+`/`-` are 62, `/`/`_` 63), 0xFF for the rest.
    private static let sextets: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (value, byte) in urlAlphabet.enumerated() { table[Int(byte)] = UInt8(value) }
        table[Int(UInt8(ascii: "+"))] = 62
        table[Int(UInt8(ascii: "/"))] = 63
        return table
    }()

    /// One table per place in a quartet (256 entries each): a character's six bits where they
    /// land in the quartet's three bytes, read as a little-endian word; 0x0100_0000 for a
    /// character outside both alphabets, so one comparison checks four characters. Four
    /// lookups and one store a quartet, where shifting sextets and storing bytes one by one was
    /// a third slower (measured on a 14 KB JWS payload).
    private static let placed: [UInt32] = {
        var table = [UInt32](repeating: 0x0100_0000, count: 1024)
        for c in 0..<256 where sextets[c] < 64 {
            let s = UInt32(sextets[c])
            table[c] = s << 2
            table[256 + c] = s >> 4 | (s & 0xF) << 12
            table[512 + c] = (s >> 2) << 8 | (s & 3) << 22
            table[768 + c] = s << 16
        }
        return table
    }()

    /// The clean case, decoded in one pass: characters of either alphabet, then nothing but
    /// `=` padding and white space (a file, a JWS segment). Nil for anything else (and for a
    /// last character with bits left over), which the tolerant path below then reads and
    /// judges as before: the bytes are those Foundation's decoder gave for the same text.
    ///
    /// `sawSpace` is set when white space followed the characters (the text was clean but not
    /// strict: see ``decode(_:what:strict:)``).
    private static func decodeClean(_ text: UnsafeBufferPointer<UInt8>, sawSpace: inout Bool) -> [UInt8]? {
        guard let start = text.baseAddress else { return nil }
        return sextets.withUnsafeBufferPointer { sextets -> [UInt8]? in
            placed.withUnsafeBufferPointer { placed -> [UInt8]? in
                let n = text.count
                var clean = true
                var leftover: UInt32 = 0
                // One pass: whole quartets are checked as they are decoded (a scan for the text's
                // length first went over every character twice), so the array is sized for the
                // most the text can hold, plus room for the last word stored whole.
                let bytes = [UInt8](unsafeUninitializedCapacity: n / 4 * 3 + 3) { out, written in
                    guard let target = out.baseAddress.map(UnsafeMutableRawPointer.init) else {
                        clean = false
                        return
                    }
                    let first = placed.baseAddress!, second = first + 256, third = first + 512, fourth = first + 768
                    let source = UnsafeRawPointer(start)
                    var i = 0
                    var o = 0
                    // Two quartets at a time: eight characters read as one word, each looked up in
                    // its place's table, six bytes stored as one word (the two past them are
                    // overwritten next, or lie in the room left for the end).
                    while i + 8 <= n {
                        let w = UInt64(littleEndian: source.loadUnaligned(fromByteOffset: i, as: UInt64.self))
                        let low = first[Int(w & 0xFF)] | second[Int(w >> 8 & 0xFF)] | third[Int(w >> 16 & 0xFF)] | fourth[Int(w >> 24 & 0xFF)]
                        let high = first[Int(w >> 32 & 0xFF)] | second[Int(w >> 40 & 0xFF)] | third[Int(w >> 48 & 0xFF)] | fourth[Int(w >> 56)]
                        guard (low | high) < 0x0100_0000 else { break }
                        target.storeBytes(of: (UInt64(low) | UInt64(high) << 24).littleEndian, toByteOffset: o, as: UInt64.self)
                        i += 8
                        o += 6
                    }
                    while i + 4 <= n {
                        let v = first[Int(text[i])] | second[Int(text[i + 1])] | third[Int(text[i + 2])] | fourth[Int(text[i + 3])]
                        guard v < 0x0100_0000 else { break }
                        target.storeBytes(of: v.littleEndian, toByteOffset: o, as: UInt32.self)
                        i += 4
                        o += 3
                    }
                    // The last one to three characters of the alphabet, then only padding and white space.
                    var rest = 0
                    while i + rest < n, rest < 4, sextets[Int(text[i + rest])] < 64 { rest += 1 }
                    var pad = 0
                    for j in (i + rest)..<n {
                        switch text[j] {
                        case UInt8(ascii: "="): pad += 1
                        case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"):
                            sawSpace = true
                            continue
                        default: clean = false
                        }
                        if !clean { break }
                    }
                    guard clean, pad <= 2, rest != 1, i + rest > 0 else {
                        clean = false
                        written = 0
                        return
                    }
                    if rest >= 2 {
                        var v = UInt32(sextets[Int(text[i])]) << 18 | UInt32(sextets[Int(text[i + 1])]) << 12
                        if rest == 3 { v |= UInt32(sextets[Int(text[i + 2])]) << 6 }
                        out[o] = UInt8(truncatingIfNeeded: v >> 16)
                        o += 1
                        if rest == 3 {
                            out[o] = UInt8(truncatingIfNeeded: v >> 8)
                            o += 1
                        }
                        leftover = rest == 2 ? v & 0xFFFF : v & 0xFF
                    }
                    written = o
                }
                return clean && leftover == 0 ? bytes : nil
            }
        }
    }

    /// Decodes `text` as ``decode(_:what:)`` does, and says whether it was strict: nothing but
    /// characters of either alphabet and `=` (no white space, no escapes). A JWS segment that
    /// decoded strictly needs no separate look at its characters (the JWS sniff's).
    static func decode(_ text: ArraySlice<UInt8>, what: String, strict: inout Bool) throws -> [UInt8] {
        try text.withUnsafeBufferPointer { try decode(buffer: $0, what: what, strict: &strict) }
    }

    private static func decode(buffer text: UnsafeBufferPointer<UInt8>, what: String) throws -> [UInt8] {
        var strict = true
        return try decode(buffer: text, what: what, strict: &strict)
    }

    private static func decode(buffer text: UnsafeBufferPointer<UInt8>, what: String, strict: inout Bool) throws -> [UInt8] {
        // Fast path: a clean text decoded here, in one pass (JWS segments are base64url, which
        // went through the tolerant path's copies and Foundation's decoder).
        var sawSpace = false
        if let bytes = decodeClean(text, sawSpace: &sawSpace) {
            if sawSpace { strict = false }
            return bytes
        }
        strict = false
        return try decodeTolerant(text, what: what)
    }

    /// Everything ``decode(_:what:)`` accepts, normalised and then decoded by Foundation.
    private static func decodeTolerant(_ text: UnsafeBufferPointer<UInt8>, what: String) throws -> [UInt8] {
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
    static func isAlphabet(_ byte: UInt8) -> Bool { alphabetMark(byte) == 1 }

    /// 1 when `c` can appear in base64 or base64url text (either alphabet, or `=`), else 0:
    /// written without branches, so a loop over it can be vectorised (the JWS sniff).
    @inline(__always)
    static func alphabetMark(_ c: UInt8) -> UInt8 {
        var mark: UInt8 = (c | 0x20) &- UInt8(ascii: "a") < 26 ? 1 : 0
        mark |= c &- UInt8(ascii: "0") < 10 ? 1 : 0
        mark |= c == UInt8(ascii: "+") ? 1 : 0
        mark |= c == UInt8(ascii: "/") ? 1 : 0
        mark |= c == UInt8(ascii: "-") ? 1 : 0
        mark |= c == UInt8(ascii: "_") ? 1 : 0
        mark |= c == UInt8(ascii: "=") ? 1 : 0
        return mark
    }

    static func describe(_ byte: UInt8) -> String {
        if byte >= 0x21 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        return String(format: "0x%02X", byte)
    }
}
