import Foundation

/// ``JSONValue/parse(_:maximumDepth:)`` for JWS payloads, with the same result and the same
/// errors, faster:
///
/// - the nesting check reads the bytes through a buffer (not `Data`'s iterator);
/// - Foundation's `JSONDecoder` still decodes (never by hand), but each value tries `String`
///   before `Bool`, `Int64` and `Double`. Payloads are mostly strings, and each failed attempt
///   costs a thrown `DecodingError`. The outcomes are the same: for any JSON value at most
///   one of `nil`, `String`, `Bool` and the numbers decodes, and `Int64` is still tried before
///   `Double`.
///
/// Any failure is left to `JSONValue.parse`, which throws its usual error.
enum JWSPayloadJSON {
    static func parse(_ bytes: [UInt8], maximumDepth: Int) throws -> JSONValue {
        if !tooDeep(bytes, maximumDepth: maximumDepth),
            let value = try? JSONDecoder().decode(Value.self, from: Data(bytes)).value
        {
            return value
        }
        return try JSONValue.parse(bytes, maximumDepth: maximumDepth)
    }

    /// ``JSONValue/nestingProblem(_:maximumDepth:)`` != nil, over a buffer.
    static func tooDeep(_ bytes: [UInt8], maximumDepth: Int) -> Bool {
        bytes.withUnsafeBufferPointer { buffer in
            var depth = 0
            var inString = false
            var escaped = false
            for b in buffer {
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
                    if depth > maximumDepth { return true }
                case 0x5D, 0x7D: depth -= 1
                default: break
                }
            }
            return false
        }
    }

    private struct Value: Decodable {
        var value: JSONValue

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() {
                value = .null
            } else if let s = try? container.decode(String.self) {
                value = .string(s)
            } else if let i = try? container.decode(Int64.self) {
                value = .integer(i)
            } else if let d = try? container.decode(Double.self) {
                value = .number(d)
            } else if let b = try? container.decode(Bool.self) {
                value = .bool(b)
            } else if let a = try? container.decode([Value].self) {
                value = .array(a.map(\.value))
            } else {
                value = .object(try container.decode([String: Value].self).mapValues(\.value))
            }
        }
    }
}
