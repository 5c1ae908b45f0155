/// Makes untrusted text (anything read from a receipt or a notification) safe to print on a
/// terminal, in a text or CSV file, or in a log line. The one sanitiser: every path that prints
/// input-derived text (the core's renderings, the commands, standard error, the dashboard's
/// cells) goes through it.
///
/// What is escaped is ``EscapedScalars``, the table the JSON writer uses too. Control characters
/// (C0, DEL, C1) are shown as `\xNN` escapes, so an escape sequence hidden in a product id can
/// neither move the cursor nor change the terminal's state. The line and paragraph separators
/// and the bidirectional overrides and isolates are escaped too (`\u{202e}`), since they break
/// lines or reorder what the reader sees.
///
/// Every function here is one pass over the text's UTF-8 bytes into an output reserved once:
/// its cost is linear in the input, whatever share of it is escaped (anyone can send a
/// notification whose claims are a megabyte of U+202E).
public enum SafeText {
    /// One CSV cell (RFC 4180): escaped as ``escaped(_:)``, a leading `=`, `+`, `-` or `@`
    /// prefixed with `'` (spreadsheets would read a formula), quoted when it holds a comma or
    /// a quote.
    public static func csvCell(_ text: String) -> String {
        var safe = escaped(text)
        if let first = safe.utf8.first, first == 0x3D || first == 0x2B || first == 0x2D || first == 0x40 { safe = "'" + safe }
        var quotes = 0
        var needsQuoting = false
        for byte in safe.utf8 {
            if byte == 0x22 {
                quotes += 1
                needsQuoting = true
            } else if byte == 0x2C {
                needsQuoting = true
            }
        }
        guard needsQuoting else { return safe }
        let size = safe.utf8.count + quotes + 2
        return String(unsafeUninitializedCapacity: size) { out in
            var n = 0
            out[n] = 0x22
            n += 1
            for byte in safe.utf8 {
                out[n] = byte
                n += 1
                if byte == 0x22 {
                    out[n] = 0x22
                    n += 1
                }
            }
            out[n] = 0x22
            return n + 1
        }
    }

    /// `text` with every scalar of ``EscapedScalars`` written as `\xNN` (below U+0100) or
    /// `\u{NNNN}`; the same string when there is none (most text: no copy).
    public static func escaped(_ text: String) -> String {
        // No byte that starts an escaped scalar (most text): nothing to do.
        let leads = EscapedScalars.utf8LeadBytes
        guard text.utf8.contains(where: { leads[Int($0)] }) else { return text }
        var text = text
        return text.withUTF8 { utf8 in
            byteKinds.withUnsafeBufferPointer { kinds in
                escapedBMP.withUnsafeBufferPointer { bitmap in
                // Pass 1: the size of the output (each escape replaces its scalar's bytes).
                var size = utf8.count
                var i = 0
                while i < utf8.count {
                    switch kinds[Int(utf8[i])] {
                    case 0:
                        i += 1
                    case 1:
                        size += 3  // one byte becomes `\xNN`
                        i += 1
                    default:
                        let (value, length) = escapedScalar(in: utf8, at: i, bitmap: bitmap)
                        if length > 0 {
                            size += escapeLength(value) - length
                            i += length
                        } else {
                            i += 1
                        }
                    }
                }
                guard size != utf8.count else { return String(decoding: utf8, as: UTF8.self) }
                // Pass 2: the output, written once into storage of exactly that size.
                return String(unsafeUninitializedCapacity: size) { out in
                    var n = 0
                    var i = 0
                    while i < utf8.count {
                        let byte = utf8[i]
                        switch kinds[Int(byte)] {
                        case 0:
                            out[n] = byte
                            n += 1
                            i += 1
                        case 1:
                            n = writeEscape(UInt32(byte), into: out, at: n)
                            i += 1
                        default:
                            let (value, length) = escapedScalar(in: utf8, at: i, bitmap: bitmap)
                            if length > 0 {
                                n = writeEscape(value, into: out, at: n)
                                i += length
                            } else {
                                out[n] = byte
                                n += 1
                                i += 1
                            }
                        }
                    }
                    return n
                }
                }
            }
        }
    }

    /// One bit per scalar below U+10000, set for the escaped ones (every one of
    /// ``EscapedScalars`` is below it): a lookup instead of a walk over the ranges.
    static let escapedBMP: [UInt64] = {
        var words = [UInt64](repeating: 0, count: 0x10000 / 64)
        for range in EscapedScalars.ranges {
            for value in range where value < 0x10000 { words[Int(value >> 6)] |= 1 << UInt64(value & 63) }
        }
        return words
    }()

    /// The escaped scalar whose UTF-8 form starts at `i` (a lead byte of kind 2) and its
    /// length; length 0 when the scalar there is not escaped or its form is cut short.
    @inline(__always)
    static func escapedScalar(in utf8: UnsafeBufferPointer<UInt8>, at i: Int, bitmap: UnsafeBufferPointer<UInt64>) -> (UInt32, Int) {
        let lead = utf8[i]
        let value: UInt32
        let length: Int
        if lead & 0xE0 == 0xC0 {
            guard i + 1 < utf8.count, utf8[i + 1] & 0xC0 == 0x80 else { return (0, 0) }
            value = UInt32(lead & 0x1F) << 6 | UInt32(utf8[i + 1] & 0x3F)
            length = 2
        } else if lead & 0xF0 == 0xE0 {
            guard i + 2 < utf8.count, utf8[i + 1] & 0xC0 == 0x80, utf8[i + 2] & 0xC0 == 0x80 else { return (0, 0) }
            value = UInt32(lead & 0x0F) << 12 | UInt32(utf8[i + 1] & 0x3F) << 6 | UInt32(utf8[i + 2] & 0x3F)
            length = 3
        } else {
            return (0, 0)
        }
        return bitmap[Int(value >> 6)] & (1 << UInt64(value & 63)) != 0 ? (value, length) : (0, 0)
    }

    /// Per byte: 0 copied as it is; 1 a whole escaped scalar (C0, DEL); 2 the first byte of a
    /// longer form that may be escaped (0xC2, 0xE2): decoded and looked up. Made from
    /// ``EscapedScalars``.
    static let byteKinds: [UInt8] = {
        var kinds = [UInt8](repeating: 0, count: 256)
        for (byte, lead) in EscapedScalars.utf8LeadBytes.enumerated() where lead {
            kinds[byte] = byte < 0x80 ? 1 : 2
        }
        return kinds
    }()

    /// `\xNN` is 4 bytes; `\u{NNNN}` 8 (every escaped scalar is below U+10000).
    @inline(__always)
    static func escapeLength(_ value: UInt32) -> Int { value < 0x100 ? 4 : 8 }

    /// Writes the escape of `value` at `start`; returns the index after it.
    @inline(__always)
    static func writeEscape(_ value: UInt32, into out: UnsafeMutableBufferPointer<UInt8>, at start: Int) -> Int {
        out[start] = 0x5C  // backslash
        if value < 0x100 {
            out[start + 1] = 0x78  // x
            out[start + 2] = hexDigit(value >> 4)
            out[start + 3] = hexDigit(value)
            return start + 4
        }
        out[start + 1] = 0x75  // u
        out[start + 2] = 0x7B  // {
        out[start + 3] = hexDigit(value >> 12)
        out[start + 4] = hexDigit(value >> 8)
        out[start + 5] = hexDigit(value >> 4)
        out[start + 6] = hexDigit(value)
        out[start + 7] = 0x7D  // }
        return start + 8
    }

    /// A lower-case hexadecimal digit for the low four bits of `value`.
    @inline(__always)
    static func hexDigit(_ value: UInt32) -> UInt8 {
        let nibble = UInt8(truncatingIfNeeded: value & 0x0F)
        return nibble < 10 ? 0x30 + nibble : 0x57 + nibble
    }
}
