import Foundation

/// Reads typed fields out of a JSON object and remembers which keys were used, so that the
/// rest can be kept verbatim (``remainingFields()``) for the "every field" view.
struct JSONFieldReader {
    let object: [String: JSONValue]
    /// The keys read: only ever keys `object` has (each is marked after it was found).
    private(set) var used: Set<String> = []
    /// Keys that must never be kept or shown (e.g. a V1 notification's `password`).
    var secretKeys: Set<String> = []

    init(_ object: [String: JSONValue]) {
        self.object = object
        // Most keys are read: room for all of them at once, not grown and rehashed five times.
        used.reserveCapacity(object.count)
    }

    func has(_ key: String) -> Bool { object[key] != nil }

    mutating func value(_ key: String) -> JSONValue? {
        guard let v = object[key] else { return nil }
        used.insert(key)
        if case .null = v { return nil }
        return v
    }

    mutating func string(_ key: String) -> String? { value(key)?.text }

    /// `key` read by `parse`; marked used only when it parses, so a value of another shape
    /// stays in ``remainingFields()``.
    mutating func parsed<T>(_ key: String, _ parse: (JSONValue) -> T?) -> T? {
        guard let v = object[key], let result = parse(v) else { return nil }
        used.insert(key)
        return result
    }

    mutating func int(_ key: String) -> Int64? {
        guard let v = object[key], let i = v.int64 else { return nil }
        used.insert(key)
        return i
    }

    mutating func bool(_ key: String) -> Bool? {
        guard let v = object[key], let b = v.bool else { return nil }
        used.insert(key)
        return b
    }

    /// A verifyReceipt-style date: `key_ms` (epoch milliseconds) first, then `key` (a date
    /// string, or epoch milliseconds as iOS 6 wrote `expires_date`), then `key_formatted`.
    /// The `_pst` and `_formatted_pst` twins are consumed with it. An empty string is no date.
    mutating func appleDate(_ key: String) -> Date? {
        var result: Date?
        if let ms = object[key + "_ms"]?.text, let d = AppleDate.fromMilliseconds(ms) {
            used.insert(key + "_ms")
            result = d
        }
        if let text = object[key]?.text {
            if text.isEmpty {
                used.insert(key)
            } else if let d = AppleDate.fromMilliseconds(text) ?? AppleDate.parse(text) {
                used.insert(key)
                result = result ?? d
            }
        }
        if let text = object[key + "_formatted"]?.text, let d = AppleDate.parse(text) {
            used.insert(key + "_formatted")
            result = result ?? d
        }
        if result != nil || object[key]?.text == "" {
            for twin in [key + "_pst", key + "_formatted_pst"] where object[twin] != nil {
                used.insert(twin)
            }
        }
        return result
    }

    /// A StoreKit 2 date: epoch milliseconds as a JSON number.
    mutating func epochMillisecondsDate(_ key: String) -> Date? {
        guard let v = object[key] else { return nil }
        if let ms = v.int64 {
            used.insert(key)
            return Date(timeIntervalSince1970: Double(ms) / 1000)
        }
        if case .number(let d) = v {
            used.insert(key)
            return Date(timeIntervalSince1970: d / 1000)
        }
        return nil
    }

    /// The keys nobody read, sorted, with scalar values as text and objects or arrays as
    /// compact JSON. Secret keys are left out.
    func remainingFields() -> [Field] {
        // Only keys the object has are marked used: as many used as the object has keys is
        // every key read, found without hashing each key once more.
        guard used.count < object.count else { return [] }
        // The few left sorted, not every key.
        return object.keys.filter { !used.contains($0) && !secretKeys.contains($0) }.sorted().compactMap { key in
            object[key].map { Field(name: key, keeping: $0) }
        }
    }
}

extension JSONValue: Encodable {
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let b): try container.encode(b)
        case .integer(let i): try container.encode(i)
        case .number(let d): try container.encode(d)
        case .string(let s): try container.encode(s)
        case .array(let a): try container.encode(a)
        case .object(let o): try container.encode(o)
        }
    }

    /// The value as compact JSON text with sorted keys.
    public var compactJSON: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(self) else { return "null" }
        return String(decoding: data, as: UTF8.self)
    }
}
