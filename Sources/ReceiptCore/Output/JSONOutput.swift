import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A streaming JSON writer: bytes go straight into a buffer (flushed to a file descriptor in
/// large chunks when one is given), with no tree of values in between.
///
/// The layout is exactly what Foundation's `JSONEncoder` writes with `.prettyPrinted`,
/// `.sortedKeys` and `.withoutEscapingSlashes` on Linux: two-space indents, `"key" : value`,
/// `[\n\n]` for an empty array, the same string escapes. Keys are written in the order the
/// caller gives them: callers write them sorted by their UTF-8 bytes (``sortedKeys(_:)``), as
/// `JSONEncoder` does.
public struct JSONOutput: Sendable {
    /// What has been written and not yet flushed.
    public private(set) var bytes: [UInt8] = []
    private var indent = 0
    /// No member or element written yet in the innermost open container.
    private var first = true
    /// A key was just written; its value follows without a separator.
    private var afterKey = false
    private let descriptor: Int32?
    private let chunkSize: Int

    /// A writer that keeps everything in ``bytes``.
    public init(capacity: Int = 4096) {
        descriptor = nil
        chunkSize = .max
        bytes.reserveCapacity(capacity)
    }

    /// A writer for one value that another writer will place with ``element(_:)`` into a
    /// container `depth` levels deep, so values can be rendered apart (on other threads) and
    /// still come out indented as if written in place.
    public init(fragmentAtDepth depth: Int, capacity: Int = 4096) {
        descriptor = nil
        chunkSize = .max
        indent = depth
        afterKey = true  // the placing writer writes the separator and indent before it
        bytes.reserveCapacity(capacity)
    }

    /// Places a value rendered by a fragment writer (``init(fragmentAtDepth:capacity:)``, at
    /// this writer's current depth) as the next element.
    public mutating func element(_ fragment: JSONOutput) {
        prefix()
        bytes.append(contentsOf: fragment.bytes)
        first = false
        flushIfFull()
    }

    /// How deep the innermost open container is (0 at the top level).
    public var depth: Int { indent }

    /// A writer that hands its bytes to `descriptor` (e.g. `STDOUT_FILENO`) whenever at least
    /// `chunkSize` of them are waiting between values, and in ``flush()``.
    public init(flushingTo descriptor: Int32, chunkSize: Int = 1 << 20) {
        self.descriptor = descriptor
        self.chunkSize = chunkSize
        bytes.reserveCapacity(chunkSize + chunkSize / 4)
    }

    /// The bytes as text.
    public var text: String { String(decoding: bytes, as: UTF8.self) }

    /// Writes the waiting bytes to the descriptor (nothing for an in-memory writer).
    ///
    /// A failed write (a closed pipe) drops the output: there is no one left to read it.
    public mutating func flush() {
        guard let descriptor, !bytes.isEmpty else { return }
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if n > 0 {
                    offset += n
                } else if n < 0 && errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
        bytes.removeAll(keepingCapacity: true)
    }

    private mutating func flushIfFull() {
        if bytes.count >= chunkSize { flush() }
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
        } else {
            bytes.append(0x2C)  // ,
            bytes.append(0x0A)
        }
        writeIndent()
    }

    @inline(__always)
    private mutating func writeIndent() {
        var width = 2 * indent
        while width > 0 {
            let run = min(width, Self.spaces.count)
            bytes.append(contentsOf: Self.spaces[..<run])
            width -= run
        }
    }

    private static let spaces = [UInt8](repeating: 0x20, count: 64)

    public mutating func beginObject() { open(0x7B) }
    public mutating func endObject() { close(0x7D) }
    public mutating func beginArray() { open(0x5B) }
    public mutating func endArray() { close(0x5D) }

    private mutating func open(_ bracket: UInt8) {
        prefix()
        bytes.append(bracket)
        bytes.append(0x0A)
        indent += 1
        first = true
    }

    private mutating func close(_ bracket: UInt8) {
        bytes.append(0x0A)
        indent -= 1
        writeIndent()
        bytes.append(bracket)
        first = false
        flushIfFull()
    }

    /// Starts a member of the open object: `"key" : `.
    public mutating func key(_ key: String) {
        prefix()
        string(contents: key)
        bytes.append(0x20)
        bytes.append(0x3A)
        bytes.append(0x20)
        afterKey = true
    }

    /// Ends the document with a newline (as `print` did).
    public mutating func newline() { bytes.append(0x0A) }

    // MARK: - Scalars

    public mutating func string(_ text: String) {
        prefix()
        string(contents: text)
    }

    public mutating func integer<I: BinaryInteger>(_ value: I) {
        prefix()
        if value == 0 {
            bytes.append(0x30)
            return
        }
        // Digits backwards into a small buffer, then forwards into the output.
        var magnitude = value.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            while magnitude > 0 {
                let (q, r) = magnitude.quotientAndRemainder(dividingBy: 10)
                buffer[count] = 0x30 + UInt8(truncatingIfNeeded: r)
                count += 1
                magnitude = q
            }
        }
        if value < 0 { bytes.append(0x2D) }
        withUnsafeBytes(of: &digits) { buffer in
            for i in stride(from: count - 1, through: 0, by: -1) { bytes.append(buffer[i]) }
        }
    }

    public mutating func bool(_ value: Bool) {
        prefix()
        bytes.append(contentsOf: value ? Self.trueBytes : Self.falseBytes)
    }

    public mutating func null() {
        prefix()
        bytes.append(contentsOf: Self.nullBytes)
    }

    private static let trueBytes = Array("true".utf8)
    private static let falseBytes = Array("false".utf8)
    private static let nullBytes = Array("null".utf8)

    /// A date as `inspect` writes it: ISO 8601 in UTC.
    public mutating func date(_ date: Date) {
        prefix()
        bytes.append(0x22)
        AppleDate.iso8601(date, into: &bytes)  // digits and punctuation: nothing to escape
        bytes.append(0x22)
    }

    /// Bytes as a string of lower-case hexadecimal digits (as ``Hex/encode(_:separator:)``).
    public mutating func hex(_ data: [UInt8]) {
        prefix()
        bytes.append(0x22)
        for b in data {
            bytes.append(Self.hex[Int(b >> 4)])
            bytes.append(Self.hex[Int(b & 0x0F)])
        }
        bytes.append(0x22)
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
            bytes.append(contentsOf: (try? encoder.encode(d)).map(Array.init) ?? Self.nullBytes)
        case .string(let s): string(s)
        case .array(let items):
            beginArray()
            for item in items { self.value(item) }
            endArray()
        case .object(let members):
            beginObject()
            for name in Self.sortedKeys(members.keys) {
                key(name)
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

    public mutating func member(_ name: String, _ text: String?) {
        guard let text else { return }
        key(name)
        string(text)
    }

    public mutating func member<I: BinaryInteger>(_ name: String, _ number: I?) {
        guard let number else { return }
        key(name)
        integer(number)
    }

    public mutating func member(_ name: String, _ flag: Bool?) {
        guard let flag else { return }
        key(name)
        bool(flag)
    }

    public mutating func member(_ name: String, _ date: Date?) {
        guard let date else { return }
        key(name)
        self.date(date)
    }

    /// An array of strings, left out when `nil`.
    public mutating func member(_ name: String, strings: [String]?) {
        guard let strings else { return }
        key(name)
        beginArray()
        for s in strings { string(s) }
        endArray()
    }

    // MARK: - Strings

    /// Writes `"text"` with `JSONEncoder`'s escapes: `\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`,
    /// other C0 controls as `\u00xx`; everything else (slashes, DEL, non-ASCII) as it is.
    private mutating func string(contents text: String) {
        bytes.append(0x22)
        var text = text
        text.withUTF8 { utf8 in
            var mark = 0
            for i in 0..<utf8.count {
                let b = utf8[i]
                guard b < 0x20 || b == 0x22 || b == 0x5C else { continue }
                if i > mark { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[mark..<i])) }
                mark = i + 1
                bytes.append(0x5C)
                switch b {
                case 0x22, 0x5C: bytes.append(b)
                case 0x08: bytes.append(0x62)  // b
                case 0x0C: bytes.append(0x66)  // f
                case 0x0A: bytes.append(0x6E)  // n
                case 0x0D: bytes.append(0x72)  // r
                case 0x09: bytes.append(0x74)  // t
                default:
                    bytes.append(contentsOf: [0x75, 0x30, 0x30, Self.hex[Int(b >> 4)], Self.hex[Int(b & 0x0F)]])
                }
            }
            if utf8.count > mark { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[mark...])) }
        }
        bytes.append(0x22)
    }

    private static let hex = Array("0123456789abcdef".utf8)
}
