import ReceiptCore
import Foundation
import UntrustedText

/// A streaming JSON writer: bytes go straight into a buffer (flushed to a console in
/// large chunks when one is given), with no tree of values in between.
///
/// The layout is exactly what Foundation's `JSONEncoder` writes with `.prettyPrinted`,
/// `.sortedKeys` and `.withoutEscapingSlashes` on Linux: two-space indents, `"key" : value`,
/// `[\n\n]` for an empty array, the same string escapes, except that every scalar of
/// ``EscapedScalars`` (the text sanitiser's table: DEL, C1 controls, U+2028/U+2029, the bidi
/// controls) is written as a `\uXXXX` escape, which `JSONEncoder` leaves raw, so no field of a
/// receipt reaches a terminal as a control. Keys are written in the order the
/// caller gives them: callers write them sorted by their UTF-8 bytes (``sortedKeys(_:)``), as
/// `JSONEncoder` does.
///
/// Bytes are written through a pointer into memory the writer owns (``Allocation``), with
/// room made once per value: measured against appending to an `[UInt8]`, whose uniqueness and
/// capacity checks on every byte run took half of the writer's time.
public struct JSONOutput: Sendable {
    /// Memory for the bytes, freed with the last writer that shares it. Never written while
    /// shared: a writer copies it first (``reserve(_:)``), so copies of a writer stay apart.
    private final class Allocation: @unchecked Sendable {
        let base: UnsafeMutablePointer<UInt8>
        let capacity: Int

        init(capacity: Int) {
            self.capacity = max(capacity, 64)
            base = .allocate(capacity: self.capacity)
        }

        deinit { base.deallocate() }
    }

    private var allocation: Allocation
    /// How many bytes of ``allocation`` are written.
    private var count = 0

    /// What has been written and not yet flushed (a copy).
    public var bytes: [UInt8] { Array(UnsafeBufferPointer(start: allocation.base, count: count)) }
    private var indent = 0
    /// No member or element written yet in the innermost open container.
    private var first = true
    /// A key was just written; its value follows without a separator.
    private var afterKey = false
    private let console: Console?
    private let chunkSize: Int

    /// A writer that keeps everything in ``bytes``.
    public init(capacity: Int = 4096) {
        console = nil
        chunkSize = .max
        allocation = Allocation(capacity: capacity)
    }

    /// A writer for one value that another writer will place with ``element(_:)`` into a
    /// container `depth` levels deep, so values can be rendered apart (on other threads) and
    /// still come out indented as if written in place.
    public init(fragmentAtDepth depth: Int, capacity: Int = 4096) {
        console = nil
        chunkSize = .max
        indent = depth
        afterKey = true  // the placing writer writes the separator and indent before it
        allocation = Allocation(capacity: capacity)
    }

    /// Places a value rendered by a fragment writer (``init(fragmentAtDepth:capacity:)``, at
    /// this writer's current depth) as the next element.
    public mutating func element(_ fragment: JSONOutput) {
        prefix()
        put(UnsafeBufferPointer(start: fragment.allocation.base, count: fragment.count))
        first = false
        flushIfFull()
    }

    /// How deep the innermost open container is (0 at the top level).
    public var depth: Int { indent }

    /// A writer that hands its bytes to `console`'s standard output whenever at least
    /// `chunkSize` of them are waiting between values, and in ``flush()``.
    public init(flushingTo console: Console, chunkSize: Int = 1 << 20) {
        self.console = console
        self.chunkSize = chunkSize
        allocation = Allocation(capacity: chunkSize + chunkSize / 4)
    }

    /// The bytes as text.
    public var text: String { String(decoding: UnsafeBufferPointer(start: allocation.base, count: count), as: UTF8.self) }

    // MARK: - Writing bytes

    /// Makes room for `n` more bytes (copying the memory first if another writer shares it)
    /// and returns where they go; the caller writes them and adds `n` to ``count``.
    @inline(__always)
    private mutating func reserve(_ n: Int) -> UnsafeMutablePointer<UInt8> {
        if _slowPath(!isKnownUniquelyReferenced(&allocation) || count + n > allocation.capacity) { grow(n) }
        return allocation.base + count
    }

    @inline(never)
    private mutating func grow(_ n: Int) {
        var capacity = allocation.capacity
        while count + n > capacity { capacity *= 2 }
        let larger = Allocation(capacity: capacity)
        larger.base.update(from: allocation.base, count: count)
        allocation = larger
    }

    @inline(__always)
    private mutating func put(_ byte: UInt8) {
        reserve(1).pointee = byte
        count += 1
    }

    @inline(__always)
    private mutating func put(_ run: UnsafeBufferPointer<UInt8>) {
        guard let source = run.baseAddress, run.count > 0 else { return }
        reserve(run.count).update(from: source, count: run.count)
        count += run.count
    }

    @inline(__always)
    private mutating func put(_ run: UnsafeRawBufferPointer) {
        put(run.bindMemory(to: UInt8.self))
    }

    /// Hands the waiting bytes to the console (nothing for an in-memory writer). A closed pipe
    /// drops them: there is no one left to read them.
    public mutating func flush() {
        guard let console, count > 0 else { return }
        console.write(.output, UnsafeRawBufferPointer(start: allocation.base, count: count))
        count = 0
    }

    private mutating func flushIfFull() {
        if count >= chunkSize { flush() }
    }

    // MARK: - Structure

    /// Writes the separator and indent that come before a value or a key.
    @inline(__always)
    private mutating func prefix() {
        if afterKey {
            afterKey = false
            return
        }
        if indent == 0 { return }
        if first {
            first = false
            writeIndent()
        } else {
            // `,` and the newline, then the indent, in one copy from the constant below.
            let out = reserve(2 + 2 * indent)
            out[0] = 0x2C  // ,
            out[1] = 0x0A
            (out + 2).initialize(repeating: 0x20, count: 2 * indent)
            count += 2 + 2 * indent
        }
    }

    @inline(__always)
    private mutating func writeIndent() {
        reserve(2 * indent).initialize(repeating: 0x20, count: 2 * indent)
        count += 2 * indent
    }

    public mutating func beginObject() { open(0x7B) }
    public mutating func endObject() { close(0x7D) }
    public mutating func beginArray() { open(0x5B) }
    public mutating func endArray() { close(0x5D) }

    private mutating func open(_ bracket: UInt8) {
        prefix()
        let out = reserve(2)
        out[0] = bracket
        out[1] = 0x0A
        count += 2
        indent += 1
        first = true
    }

    private mutating func close(_ bracket: UInt8) {
        indent -= 1
        let out = reserve(2 + 2 * indent)
        out[0] = 0x0A
        (out + 1).initialize(repeating: 0x20, count: 2 * indent)
        out[1 + 2 * indent] = bracket
        count += 2 + 2 * indent
        first = false
        flushIfFull()
    }

    /// Starts a member of the open object: `"key" : `, for a key written in the source (plain
    /// ASCII with nothing to escape, which the writer relies on).
    public mutating func key(_ key: StaticString) {
        key.withUTF8Buffer { name in
            // The separator and indent ``prefix()`` would write (in an object, where keys are),
            // then `"` name `" : `, in one reservation.
            let placed = !afterKey && indent > 0
            let lead = placed ? (first ? 0 : 2) + 2 * indent : 0
            let out = reserve(lead + name.count + 5)
            if placed {
                var pad = out
                if !first {
                    out[0] = 0x2C  // ,
                    out[1] = 0x0A
                    pad += 2
                }
                pad.initialize(repeating: 0x20, count: 2 * indent)
                first = false
            }
            afterKey = false
            let quoted = out + lead
            quoted[0] = 0x22
            if let source = name.baseAddress { (quoted + 1).update(from: source, count: name.count) }
            let end = quoted + 1 + name.count
            end[0] = 0x22
            end[1] = 0x20
            end[2] = 0x3A
            end[3] = 0x20
            count += lead + name.count + 5
        }
        afterKey = true
    }

    /// Starts a member whose key comes from data (escaped as any string is).
    public mutating func key(text key: String) {
        prefix()
        string(contents: key)
        append(" : ")
        afterKey = true
    }

    @inline(__always)
    private mutating func append(_ text: StaticString) {
        text.withUTF8Buffer { put($0) }
    }

    /// A member with a key from data: `"key" : "text"`.
    public mutating func member(text name: String, _ text: String) {
        key(text: name)
        string(text)
    }

    /// Ends the document with a newline (as `print` did).
    public mutating func newline() { put(0x0A) }

    /// Text written as it is, not as JSON: the text and CSV listings that stream through the
    /// same buffered writer (already escaped by their writers).
    public mutating func raw(_ text: String) {
        var text = text
        text.withUTF8 { put($0) }
        flushIfFull()
    }

    // MARK: - Scalars

    public mutating func string(_ text: String) {
        prefix()
        string(contents: text)
    }

    public mutating func integer<I: BinaryInteger>(_ value: I) {
        prefix()
        count += Self.decimal(value, at: reserve(Self.decimalRoom))
    }

    public mutating func bool(_ value: Bool) {
        prefix()
        append(value ? "true" : "false")
    }

    public mutating func null() {
        prefix()
        append("null")
    }

    /// A date as `inspect` writes it: ISO 8601 in UTC.
    public mutating func date(_ date: Date) {
        prefix()
        put(0x22)
        AppleDate.withISO8601Bytes(date) { put($0) }  // digits and punctuation: nothing to escape
        put(0x22)
    }

    /// Bytes as a string of lower-case hexadecimal digits (as ``Hex/encode(_:separator:)``).
    public mutating func hex(_ data: [UInt8]) {
        hex(data[...])
    }

    /// Bytes as a string of lower-case hexadecimal digits.
    public mutating func hex(_ data: ArraySlice<UInt8>) {
        prefix()
        let out = reserve(2 * data.count + 2)
        out[0] = 0x22
        Self.hexDigits(data, at: out + 1)
        out[1 + 2 * data.count] = 0x22
        count += 2 * data.count + 2
    }

    /// Writes `data` as lower-case hexadecimal digits at `out` (room for two a byte).
    @inline(__always)
    private static func hexDigits(_ data: ArraySlice<UInt8>, at out: UnsafeMutablePointer<UInt8>) {
        data.withUnsafeBufferPointer { data in
            for (i, b) in data.enumerated() {
                out[2 * i] = hexDigit(b >> 4)
                out[2 * i + 1] = hexDigit(b & 0x0F)
            }
        }
    }

    /// `{"type" : T, "value_hex" : "…", "version" : V}` (an ASN.1 attribute kept raw) as the next
    /// value, laid out exactly as those three members written one by one (a test pins it), in
    /// one reservation: a real receipt has about three hundred of them, a third of its JSON, and
    /// member by member each cost a dozen calls.
    public mutating func attributeObject(type: Int, hex data: ArraySlice<UInt8>, version: Int) {
        prefix()
        let outer = 2 * indent
        let inner = outer + 2
        // `{\n`, three indented members with their `,\n`, `\n`, the indent and `}`, and room for
        // each number.
        let most = 2 + 3 * inner + 9 + Self.decimalRoom + 2 + 14 + 2 * data.count + 2 + 2 + 12 + Self.decimalRoom + 1 + outer + 1
        let start = reserve(most)
        var out = start
        @inline(__always) func bytes(_ text: StaticString) {
            text.withUTF8Buffer { out.update(from: $0.baseAddress!, count: $0.count) }
            out += text.utf8CodeUnitCount
        }
        @inline(__always) func spaces(_ n: Int) {
            out.initialize(repeating: 0x20, count: n)
            out += n
        }
        bytes("{\n")
        spaces(inner)
        bytes("\"type\" : ")
        out += Self.decimal(type, at: out)
        bytes(",\n")
        spaces(inner)
        bytes("\"value_hex\" : \"")
        Self.hexDigits(data, at: out)
        out += 2 * data.count
        bytes("\",\n")
        spaces(inner)
        bytes("\"version\" : ")
        out += Self.decimal(version, at: out)
        bytes("\n")
        spaces(outer)
        bytes("}")
        count += out - start
        first = false
        flushIfFull()
    }

    /// The most bytes ``decimal(_:at:)`` writes: a sign and the digits of up to 128 bits.
    private static var decimalRoom: Int { 40 }

    /// Writes `value` in decimal at `out` (room for ``decimalRoom`` bytes) and returns how many
    /// bytes: digits backwards from the end of a small buffer, a sign first, then one copy.
    @inline(__always)
    private static func decimal<I: BinaryInteger>(_ value: I, at out: UnsafeMutablePointer<UInt8>) -> Int {
        var digits: (UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0)
        return withUnsafeMutableBytes(of: &digits) { buffer in
            var magnitude = value.magnitude
            var start = buffer.count
            repeat {
                let (q, r) = magnitude.quotientAndRemainder(dividingBy: 10)
                start -= 1
                buffer[start] = 0x30 + UInt8(truncatingIfNeeded: r)
                magnitude = q
            } while magnitude > 0
            if value < 0 {
                start -= 1
                buffer[start] = 0x2D  // -
            }
            let n = buffer.count - start
            out.update(from: buffer.baseAddress!.advanced(by: start).assumingMemoryBound(to: UInt8.self), count: n)
            return n
        }
    }

    /// `value` as compact JSON text, keys sorted as `JSONEncoder` sorts them.
    public static func text(of value: JSONValue) -> String {
        var out = JSONOutput()
        out.value(value)
        return out.text
    }

    /// Any ``JSONValue``, keys sorted as `JSONEncoder` sorts them.
    public mutating func value(_ value: JSONValue) {
        switch value {
        case .null: null()
        case .bool(let b): bool(b)
        case .integer(let i): integer(i)
        case .number(let d):
            // Foundation's own spelling of a double, so the bytes stay as they were.
            prefix()
            let encoder = JSONEncoder()
            if let encoded = try? encoder.encode(d) { encoded.withUnsafeBytes { put($0) } } else { append("null") }
        case .string(let s): string(s)
        case .array(let items):
            beginArray()
            for item in items { self.value(item) }
            endArray()
        case .object(let members):
            beginObject()
            for name in Self.sortedKeys(members.keys) {
                key(text: name)
                self.value(members[name]!)
            }
            endObject()
        }
    }

    /// Keys in `JSONEncoder`'s `.sortedKeys` order on Linux: by their UTF-8 bytes.
    public static func sortedKeys(_ keys: some Sequence<String>) -> [String] {
        keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    // MARK: - Members that are left out when absent

    public mutating func member(_ name: StaticString, _ text: String?) {
        guard let text else { return }
        key(name)
        string(text)
    }

    public mutating func member<I: BinaryInteger>(_ name: StaticString, _ number: I?) {
        guard let number else { return }
        key(name)
        integer(number)
    }

    public mutating func member(_ name: StaticString, _ flag: Bool?) {
        guard let flag else { return }
        key(name)
        bool(flag)
    }

    public mutating func member(_ name: StaticString, _ date: Date?) {
        guard let date else { return }
        key(name)
        self.date(date)
    }

    // MARK: - Members that stay when absent (written as `null`, so rows line up)

    public mutating func nullableMember(_ name: StaticString, _ text: String?) {
        key(name)
        if let text { string(text) } else { null() }
    }

    public mutating func nullableMember(_ name: StaticString, _ date: Date?) {
        key(name)
        if let date { self.date(date) } else { null() }
    }

    public mutating func nullableMember(_ name: StaticString, _ flag: Bool?) {
        key(name)
        if let flag { bool(flag) } else { null() }
    }

    public mutating func nullableMember<I: BinaryInteger>(_ name: StaticString, _ number: I?) {
        key(name)
        if let number { integer(number) } else { null() }
    }

    /// An array of strings, left out when `nil`.
    public mutating func member(_ name: StaticString, strings: [String]?) {
        guard let strings else { return }
        key(name)
        beginArray()
        for s in strings { string(s) }
        endArray()
    }

    // MARK: - Strings

    /// For each byte of a string's UTF-8: 0 copied as it is, 1 an ASCII byte written as an
    /// escape (`"`, `\`, the C0 controls and DEL: the ASCII part of ``EscapedScalars``), 2 the
    /// first byte of a longer scalar that may be in ``EscapedScalars`` (0xC2 for C1, 0xE2 for
    /// U+2028/U+2029 and the bidi controls; the scalar is decoded to tell).
    private struct ByteTable: @unchecked Sendable {
        /// 256 entries, allocated once and never freed (immutable after the table is built).
        let base: UnsafePointer<UInt8>
    }

    private static let escapeTable: ByteTable = {
        let table = UnsafeMutablePointer<UInt8>.allocate(capacity: 256)
        table.initialize(repeating: 0, count: 256)
        for b in 0..<256 {
            if b < 0x80 {
                if b == 0x22 || b == 0x5C || EscapedScalars.contains(UInt32(b)) { table[b] = 1 }
            } else if EscapedScalars.utf8LeadBytes[b] {
                table[b] = 2
            }
        }
        return ByteTable(base: UnsafePointer(table))
    }()

    /// Writes `"text"` with `JSONEncoder`'s escapes (`\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`,
    /// other C0 controls as `\u00xx`) and every other scalar of ``EscapedScalars`` as `\uxxxx`
    /// (DEL, C1, U+2028/U+2029, the bidi controls); everything else (slashes, non-ASCII) as it is.
    /// One table lookup per byte.
    private mutating func string(contents text: String) {
        var text = text
        let table = Self.escapeTable.base
        text.withUTF8 { utf8 in
            // Room for the text and its quotes at once; an escape makes more room.
            let out = reserve(utf8.count + 2)
            out[0] = 0x22
            var i = 0
            while i < utf8.count {
                let b = utf8[i]
                guard table[Int(b)] != 0 else {
                    out[1 + i] = b
                    i += 1
                    continue
                }
                break
            }
            count += 1 + i
            guard i < utf8.count else {
                out[1 + i] = 0x22
                count += 1
                return
            }
            escaping(UnsafeBufferPointer(rebasing: utf8[i...]), table: table)
        }
    }

    /// The rest of a string from its first byte that may need an escape, and the closing quote.
    @inline(never)
    private mutating func escaping(_ utf8: UnsafeBufferPointer<UInt8>, table: UnsafePointer<UInt8>) {
        var mark = 0
        var i = 0
        while i < utf8.count {
            let b = utf8[i]
            let kind = table[Int(b)]
            if kind == 0 {
                i += 1
                continue
            }
            if kind == 2 {
                // A scalar of two to four bytes: escaped only if the table holds it.
                guard let (scalar, length) = Self.scalar(in: utf8, at: i), EscapedScalars.contains(scalar) else {
                    i += 1
                    continue
                }
                if i > mark { put(UnsafeBufferPointer(rebasing: utf8[mark..<i])) }
                unicodeEscape(scalar)
                i += length
                mark = i
                continue
            }
            if i > mark { put(UnsafeBufferPointer(rebasing: utf8[mark..<i])) }
            i += 1
            mark = i
            switch b {
            case 0x22, 0x5C: put2(0x5C, b)
            case 0x08: put2(0x5C, 0x62)  // \b
            case 0x0C: put2(0x5C, 0x66)  // \f
            case 0x0A: put2(0x5C, 0x6E)  // \n
            case 0x0D: put2(0x5C, 0x72)  // \r
            case 0x09: put2(0x5C, 0x74)  // \t
            default: unicodeEscape(UInt32(b))  // other C0 controls, DEL
            }
        }
        if utf8.count > mark { put(UnsafeBufferPointer(rebasing: utf8[mark...])) }
        put(0x22)
    }

    /// The scalar whose UTF-8 form starts at `i` and its length in bytes; nil if the bytes there
    /// are not a whole multi-byte form (a `String`'s bytes always are; checked all the same).
    @inline(__always)
    private static func scalar(in utf8: UnsafeBufferPointer<UInt8>, at i: Int) -> (UInt32, Int)? {
        let lead = utf8[i]
        let length: Int
        var value: UInt32
        switch lead {
        case 0xC0...0xDF: (length, value) = (2, UInt32(lead & 0x1F))
        case 0xE0...0xEF: (length, value) = (3, UInt32(lead & 0x0F))
        case 0xF0...0xF7: (length, value) = (4, UInt32(lead & 0x07))
        default: return nil
        }
        guard utf8.count - i >= length else { return nil }
        for k in 1..<length {
            let next = utf8[i + k]
            guard next & 0xC0 == 0x80 else { return nil }
            value = value << 6 | UInt32(next & 0x3F)
        }
        return (value, length)
    }

    /// `\uxxxx` (lower-case digits, as `JSONEncoder` writes `\u001b`); a scalar beyond U+FFFF
    /// as its UTF-16 surrogate pair.
    private mutating func unicodeEscape(_ value: UInt32) {
        if value > 0xFFFF {
            let v = value - 0x1_0000
            unicodeEscape(0xD800 + (v >> 10))
            unicodeEscape(0xDC00 + (v & 0x3FF))
            return
        }
        let out = reserve(6)
        out[0] = 0x5C
        out[1] = 0x75  // u
        out[2] = Self.hexDigit(UInt8(truncatingIfNeeded: value >> 12) & 0x0F)
        out[3] = Self.hexDigit(UInt8(truncatingIfNeeded: value >> 8) & 0x0F)
        out[4] = Self.hexDigit(UInt8(truncatingIfNeeded: value >> 4) & 0x0F)
        out[5] = Self.hexDigit(UInt8(truncatingIfNeeded: value) & 0x0F)
        count += 6
    }

    @inline(__always)
    private mutating func put2(_ a: UInt8, _ b: UInt8) {
        let out = reserve(2)
        out[0] = a
        out[1] = b
        count += 2
    }

    /// A lower-case hexadecimal digit for a value 0…15.
    @inline(__always)
    private static func hexDigit(_ nibble: UInt8) -> UInt8 { nibble < 10 ? 0x30 + nibble : 0x57 + nibble }
}
