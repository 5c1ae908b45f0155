import Foundation

/// A JSON value, decoded with Foundation's `JSONDecoder` (never by hand).
///
/// Numbers keep their integer form when they have one, so epoch milliseconds and ids survive
/// exactly. Objects keep keys sorted for stable output.
public indirect enum JSONValue: Sendable, Hashable, Decodable {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let b = try? container.decode(Bool.self) {
            self = .bool(b)
        } else if let i = try? container.decode(Int64.self) {
            self = .integer(i)
        } else if let d = try? container.decode(Double.self) {
            self = .number(d)
        } else if let s = try? container.decode(String.self) {
            self = .string(s)
        } else if let a = try? container.decode([JSONValue].self) {
            self = .array(a)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    /// Parses JSON text.
    ///
    /// - Throws: ``ReceiptDecodingError`` (`invalidJSON`) with Foundation's description of where
    ///   the text stops being JSON, or `limitExceeded` when nesting is deeper than `maximumDepth`.
    public static func parse(_ bytes: some Collection<UInt8>, maximumDepth: Int = 64) throws -> JSONValue {
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
    /// hostile input is refused before any recursive decoding.
    static func nestingProblem(_ data: Data, maximumDepth: Int) -> Int? {
        var depth = 0
        var inString = false
        var escaped = false
        for (offset, b) in data.enumerated() {
            if inString {
                if escaped {
                    escaped = false
                } else if b == 0x5C {
                    escaped = true
                } else if b == 0x22 {
                    inString = false
                }
                continue
            }
            switch b {
            case 0x22: inString = true
            case 0x5B, 0x7B:
                depth += 1
                if depth > maximumDepth { return offset }
            case 0x5D, 0x7D: depth -= 1
            default: break
            }
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
