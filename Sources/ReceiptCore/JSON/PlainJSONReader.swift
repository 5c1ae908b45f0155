/// Reads the plain subset of JSON that Apple's signed payloads are written in, and hands
/// everything else back to Foundation.
///
/// Why by hand: in `bench --verify --suffix .jws`, Foundation's `JSONDecoder` took about 38 µs
/// of the 153 µs spent per signature (the nested tokens are ~3 KB strings it copies through
/// `Decodable`), and the issue asks JWS verification to reach half the bare ECDSA rate.
///
/// What it reads: a top-level object; objects without a repeated key; arrays; strings whose
/// escapes are the one-character ones (`\"` `\\` `\/` `\b` `\f` `\n` `\r` `\t`) and whose bytes
/// are valid UTF-8 without control characters; integers of at most 18 digits; `true`, `false`,
/// `null`; the four JSON spaces; nesting up to the caller's limit. Anything else (a `\u`
/// escape, a fraction or an exponent, a repeated key, invalid text of any kind) returns `nil`,
/// and ``JSONValue/parse(_:maximumDepth:)`` asks `JSONDecoder`, whose value or error is then
/// the answer. So the reader only ever has to agree with Foundation on text both accept,
/// which `PlainJSONReaderTests` checks over the corpus and its mutations.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

struct PlainJSONReader {
    private let base: UnsafePointer<UInt8>
    private let end: Int
    private let maximumDepth: Int
    private var at = 0
    /// The members read so far of the objects open, innermost last.
    private var pending: [(String, JSONValue)] = []

    /// The value of `bytes`, or `nil` when the text leaves the plain subset.
    static func read(_ bytes: UnsafeRawBufferPointer, maximumDepth: Int) -> JSONValue? {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return nil }
        var reader = PlainJSONReader(base: base.assumingMemoryBound(to: UInt8.self), end: bytes.count, maximumDepth: maximumDepth)
        reader.skipSpace()
        guard reader.at < reader.end, reader.base[reader.at] == UInt8(ascii: "{"), let value = reader.value(depth: 0) else { return nil }
        reader.skipSpace()
        return reader.at == reader.end ? value : nil
    }

    private init(base: UnsafePointer<UInt8>, end: Int, maximumDepth: Int) {
        self.base = base
        self.end = end
        self.maximumDepth = maximumDepth
        pending.reserveCapacity(32)
    }

    private mutating func skipSpace() {
        while at < end {
            switch base[at] {
            case 0x20, 0x09, 0x0A, 0x0D: at += 1
            default: return
            }
        }
    }

    private mutating func value(depth: Int) -> JSONValue? {
        guard at < end else { return nil }
        switch base[at] {
        case UInt8(ascii: "\""): return string().map(JSONValue.string)
        case UInt8(ascii: "{"): return depth < maximumDepth ? object(depth: depth + 1) : nil
        case UInt8(ascii: "["): return depth < maximumDepth ? array(depth: depth + 1) : nil
        case UInt8(ascii: "t"): return literal("true") ? .bool(true) : nil
        case UInt8(ascii: "f"): return literal("false") ? .bool(false) : nil
        case UInt8(ascii: "n"): return literal("null") ? .null : nil
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return integer()
        default: return nil
        }
    }

    private mutating func object(depth: Int) -> JSONValue? {
        at += 1
        skipSpace()
        if at < end, base[at] == UInt8(ascii: "}") {
            at += 1
            return .object([:])
        }
        // The members are gathered first (on a stack shared by the nested objects) and the
        // dictionary is made at its size once: grown member by member, a transaction's rehashed
        // every key five times over.
        let first = pending.count
        defer { pending.removeSubrange(first...) }
        while true {
            guard at < end, base[at] == UInt8(ascii: "\""), let key = string() else { return nil }
            skipSpace()
            guard at < end, base[at] == UInt8(ascii: ":") else { return nil }
            at += 1
            skipSpace()
            guard let member = value(depth: depth) else { return nil }
            pending.append((key, member))
            guard let more = separator(closing: UInt8(ascii: "}")) else { return nil }
            if !more { break }
        }
        var members: [String: JSONValue] = Dictionary(minimumCapacity: pending.count - first)
        for (key, member) in pending[first...] {
            // A repeated key: which one wins is Foundation's to say.
            if members.updateValue(member, forKey: key) != nil { return nil }
        }
        return .object(members)
    }

    /// After a member or an element: `,` (true: another follows) or `close` (false: the
    /// container ends); nil for anything else.
    private mutating func separator(closing close: UInt8) -> Bool? {
        skipSpace()
        guard at < end else { return nil }
        switch base[at] {
        case UInt8(ascii: ","):
            at += 1
            skipSpace()
            return true
        case close:
            at += 1
            return false
        default:
            return nil
        }
    }

    private mutating func array(depth: Int) -> JSONValue? {
        at += 1
        var elements: [JSONValue] = []
        skipSpace()
        if at < end, base[at] == UInt8(ascii: "]") {
            at += 1
            return .array(elements)
        }
        while true {
            guard let element = value(depth: depth) else { return nil }
            elements.append(element)
            guard let more = separator(closing: UInt8(ascii: "]")) else { return nil }
            if !more { return .array(elements) }
        }
    }

    private mutating func literal(_ word: StaticString) -> Bool {
        let count = word.utf8CodeUnitCount
        guard end - at >= count, memcmp(base + at, word.utf8Start, count) == 0 else { return false }
        at += count
        // `truex`, `null1`: whatever follows must end the value, which the caller checks.
        return true
    }

    /// `-?(0|[1-9][0-9]*)`, at most 18 digits (always an `Int64`), not followed by a fraction or
    /// an exponent.
    private mutating func integer() -> JSONValue? {
        var index = at
        let negative = base[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        let first = index
        var magnitude: Int64 = 0
        while index < end, base[index] &- UInt8(ascii: "0") < 10 {
            magnitude = magnitude &* 10 &+ Int64(base[index] &- UInt8(ascii: "0"))
            index += 1
        }
        let digits = index - first
        guard digits > 0, digits <= 18, !(digits > 1 && base[first] == UInt8(ascii: "0")) else { return nil }
        if index < end {
            switch base[index] {
            case UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"): return nil
            default: break
            }
        }
        at = index
        return .integer(negative ? -magnitude : magnitude)
    }

    /// A string at `"`. Runs of plain bytes are skipped eight at a time.
    private mutating func string() -> String? {
        at += 1
        let start = at
        var ascii = true
        var escaped = false
        var unescaped: [UInt8] = []
        var runStart = start
        while true {
            // 64 bytes at once, then eight, while none is a quote, a backslash, a control or a
            // non-ASCII byte: the blocks have no branch inside and are vectorised (a nested
            // token is a 3-5 KB string).
            while end - at >= 64 {
                let block = base + at
                var special: UInt8 = 0
                for k in 0..<64 {
                    let c = block[k]
                    special |= (c == 0x22 ? 1 : 0) | (c == 0x5C ? 1 : 0) | (c < 0x20 ? 1 : 0) | (c >= 0x80 ? 1 : 0)
                }
                if special != 0 { break }
                at &+= 64
            }
            while end - at >= 8 {
                let word = UInt64(littleEndian: UnsafeRawPointer(base + at).loadUnaligned(as: UInt64.self))
                if Self.hasSpecialByte(word) { break }
                at += 8
            }
            guard at < end else { return nil }
            let byte = base[at]
            switch byte {
            case UInt8(ascii: "\""):
                let text: String?
                if escaped {
                    unescaped.append(contentsOf: UnsafeBufferPointer(start: base + runStart, count: at - runStart))
                    text = ascii ? String(decoding: unescaped, as: UTF8.self) : String(validating: unescaped, as: UTF8.self)
                } else {
                    let run = UnsafeBufferPointer(start: base + start, count: at - start)
                    text = ascii ? String(decoding: run, as: UTF8.self) : String(validating: run, as: UTF8.self)
                }
                at += 1
                return text
            case UInt8(ascii: "\\"):
                guard end - at >= 2 else { return nil }
                let replacement: UInt8
                switch base[at + 1] {
                case UInt8(ascii: "\""): replacement = 0x22
                case UInt8(ascii: "\\"): replacement = 0x5C
                case UInt8(ascii: "/"): replacement = 0x2F
                case UInt8(ascii: "b"): replacement = 0x08
                case UInt8(ascii: "f"): replacement = 0x0C
                case UInt8(ascii: "n"): replacement = 0x0A
                case UInt8(ascii: "r"): replacement = 0x0D
                case UInt8(ascii: "t"): replacement = 0x09
                default: return nil  // `\u` and anything else: Foundation's
                }
                escaped = true
                unescaped.append(contentsOf: UnsafeBufferPointer(start: base + runStart, count: at - runStart))
                unescaped.append(replacement)
                at += 2
                runStart = at
            case 0..<0x20:
                return nil
            case 0x80...:
                ascii = false
                at += 1
            default:
                at += 1
            }
        }
    }

    /// True when a byte of `word` is `"`, `\`, below 0x20 or at least 0x80 (may also be true
    /// for a plain byte after such a one; the byte loop then reads the word one byte at a time).
    @inline(__always)
    private static func hasSpecialByte(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        func hasZero(_ v: UInt64) -> UInt64 { (v &- ones) & ~v & highs }
        let quote = hasZero(word ^ (ones &* 0x22))
        let backslash = hasZero(word ^ (ones &* 0x5C))
        let control = (word &- ones &* 0x20) & ~word & highs
        return (quote | backslash | control | (word & highs)) != 0
    }
}
