import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A JSON value, decoded with Foundation's `JSONDecoder`, or, for the plain subset Apple signs,
/// by ``PlainJSONReader``, which gives the same value.
///
/// Numbers keep their integer form when they have one, so epoch milliseconds and ids survive
/// exactly. Objects keep keys sorted for stable output.
///
/// Not `indirect`: arrays and objects already hold their elements on the heap, and an
/// `indirect` enum boxed every value, so each number, flag and string of a payload cost an
/// allocation and a release of its own.
public enum JSONValue: Sendable, Hashable, Decodable {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// Tries each kind in turn, `String` first: a failed attempt costs a thrown `DecodingError`,
    /// and most values Apple sends are strings. The outcome does not depend on the order: for
    /// any JSON value at most one of `nil`, `String`, the numbers and `Bool` decodes (`Int64` is
    /// still tried before `Double`, so integers keep their integer form), and a value none of
    /// them takes gets the same last error (from the dictionary attempt) as before.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let s = try? container.decode(String.self) {
            self = .string(s)
        } else if let i = try? container.decode(Int64.self) {
            self = .integer(i)
        } else if let d = try? container.decode(Double.self) {
            self = .number(d)
        } else if let b = try? container.decode(Bool.self) {
            self = .bool(b)
        } else if let a = try? container.decode([JSONValue].self) {
            self = .array(a)
        } else if let members = try? decoder.container(keyedBy: MemberKey.self) {
            self = .object(try Self.members(members))
        } else {
            // Not an object either: the error the dictionary attempt has always given.
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    /// An object's members, as `[String: JSONValue]` decodes them (the same keys, in the same
    /// order, each through `decode(_:forKey:)`), but a scalar member is decoded by its concrete
    /// type at its key, without the generic `JSONValue` path and its single-value container; a
    /// member no scalar type takes goes through ``init(from:)`` at its key, so its value and
    /// any error (with its coding path) are the ones it always had.
    private static func members(_ container: KeyedDecodingContainer<MemberKey>) throws -> [String: JSONValue] {
        let keys = container.allKeys
        var object = [String: JSONValue](minimumCapacity: keys.count)
        for key in keys {
            let value: JSONValue
            if let s = try? container.decode(String.self, forKey: key) {
                value = .string(s)
            } else if let i = try? container.decode(Int64.self, forKey: key) {
                value = .integer(i)
            } else if let d = try? container.decode(Double.self, forKey: key) {
                value = .number(d)
            } else if let b = try? container.decode(Bool.self, forKey: key) {
                value = .bool(b)
            } else {
                value = try container.decode(JSONValue.self, forKey: key)
            }
            object[key.stringValue] = value
        }
        return object
    }

    /// Any member name.
    private struct MemberKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// Parses JSON text.
    ///
    /// - Throws: ``ReceiptDecodingError`` (`invalidJSON`) with Foundation's description of where
    ///   the text stops being JSON, or `limitExceeded` when nesting is deeper than `maximumDepth`.
    ///
    /// Text in the plain subset Apple's payloads are written in is read by
    /// ``PlainJSONReader`` (measured: it is most of what JWS verification spends outside ECDSA);
    /// everything else, errors included, is decided by `JSONDecoder`.
    public static func parse(_ bytes: some Collection<UInt8>, maximumDepth: Int = 64) throws -> JSONValue {
        var plainly = false
        return try parse(bytes, maximumDepth: maximumDepth, readPlainly: &plainly)
    }

    /// ``parse(_:maximumDepth:)``, saying whether ``PlainJSONReader`` read it: it declines any
    /// object that names a key twice, so a value it read has none, and a caller that must
    /// refuse repeated keys (the receiver) looks again only when `readPlainly` is false.
    public static func parse(_ bytes: some Collection<UInt8>, maximumDepth: Int = 64, readPlainly: inout Bool) throws -> JSONValue {
        let plain = bytes.withContiguousStorageIfAvailable { PlainJSONReader.read(UnsafeRawBufferPointer($0), maximumDepth: maximumDepth) }
        if let plain = plain ?? Array(bytes).withUnsafeBytes({ PlainJSONReader.read($0, maximumDepth: maximumDepth) }) {
            readPlainly = true
            return plain
        }
        readPlainly = false
        return try parseWithFoundation(bytes, maximumDepth: maximumDepth)
    }

    /// ``parse(_:maximumDepth:)`` by `JSONDecoder` alone (the reference ``PlainJSONReader`` is
    /// tested against).
    static func parseWithFoundation(_ bytes: some Collection<UInt8>, maximumDepth: Int = 64) throws -> JSONValue {
        let data = Data(bytes)
        if let deep = nestingProblem(data, maximumDepth: maximumDepth) {
            throw ReceiptDecodingError(
                .limitExceeded, "JSON nesting at byte \(deep) is deeper than \(maximumDepth) levels", offset: deep)
        }
        do {
            return try JSONDecoder().decode(JSONValue.self, from: data)
        } catch let DecodingError.dataCorrupted(context) {
            let detail = (context.underlyingError as NSError?)?.userInfo[NSDebugDescriptionErrorKey] as? String
            throw ReceiptDecodingError(.invalidJSON, "not valid JSON: \(detail ?? context.debugDescription)")
        } catch {
            throw ReceiptDecodingError(.invalidJSON, "not valid JSON: \(error)")
        }
    }

    /// Finds the first byte where brackets nest deeper than allowed (strings skipped), so
    /// hostile input is refused before any recursive decoding. Reads the bytes through a
    /// buffer (`Data`'s iterator costs a call per byte), strings skipped with `memchr`.
    static func nestingProblem(_ data: Data, maximumDepth: Int) -> Int? {
        data.withUnsafeBytes { nestingProblem(UnsafeRawBufferPointer($0), maximumDepth: maximumDepth) }
    }

    static func nestingProblem(_ bytes: UnsafeRawBufferPointer, maximumDepth: Int) -> Int? {
        guard let base = bytes.baseAddress else { return nil }
        let count = bytes.count
        var depth = 0
        var offset = 0
        while offset < count {
            switch bytes[offset] {
            case 0x22:
                // Skip the string in bulk (a notification's nested tokens are ~10 KB strings):
                // it ends at the next quote preceded by an even run of backslashes (`\\` is an
                // escaped backslash, `\"` an escaped quote). No closing quote: nothing else nests.
                var from = offset + 1
                var end = -1
                while from < count, let found = memchr(base + from, 0x22, count - from) {
                    let quote = base.distance(to: UnsafeRawPointer(found))
                    var backslashes = 0
                    while quote - backslashes - 1 > offset, bytes[quote - backslashes - 1] == 0x5C { backslashes += 1 }
                    if backslashes % 2 == 0 {
                        end = quote
                        break
                    }
                    from = quote + 1
                }
                guard end >= 0 else { return nil }
                offset = end
            case 0x5B, 0x7B:
                depth += 1
                if depth > maximumDepth { return offset }
            case 0x5D, 0x7D: depth -= 1
            default: break
            }
            offset += 1
        }
        return nil
    }

    public subscript(key: String) -> JSONValue? {
        guard case .object(let o) = self else { return nil }
        return o[key]
    }

    public var object: [String: JSONValue]? {
        if case .object(let o) = self { return o }
        return nil
    }

    public var array: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    /// The value as text when it is a scalar: strings as they are, numbers in decimal,
    /// booleans as `true`/`false`.
    public var text: String? {
        switch self {
        case .string(let s): s
        case .integer(let i): String(i)
        case .number(let d): d.rounded() == d && abs(d) < 1e15 ? String(Int64(d)) : String(d)
        case .bool(let b): b ? "true" : "false"
        default: nil
        }
    }

    /// The value as an integer: JSON integers, or strings of digits (Apple sends both).
    public var int64: Int64? {
        switch self {
        case .integer(let i): i
        case .number(let d): d.rounded() == d && abs(d) < 9.2e18 ? Int64(d) : nil
        case .string(let s): Int64(s.trimmingCharacters(in: .whitespaces))
        case .bool(let b): b ? 1 : 0
        default: nil
        }
    }

    /// The value as a boolean: `true`/`false`, `"true"`/`"false"`, `1`/`0`, `"1"`/`"0"`.
    public var bool: Bool? {
        switch self {
        case .bool(let b): b
        case .integer(let i): i != 0
        case .string(let s):
            switch s.lowercased() {
            case "true", "1", "yes": true
            case "false", "0", "no": false
            default: nil
            }
        default: nil
        }
    }
}
