import Foundation

/// Reads typed fields out of a JSON object and remembers which keys were used, so that the
/// rest can be kept verbatim (``remainingFields()``) for the "every field" view.
struct JSONFieldReader {
    let object: [String: JSONValue]
    /// Where the keys read stand in `object`, in the order read (a key read twice is here
    /// twice). Positions, not keys: marking one costs an append, where a set of keys hashed
    /// each key once more (a tenth of a JWS payload's reading).
    private var used: [Dictionary<String, JSONValue>.Index] = []
    /// Keys that must never be kept or shown (e.g. a V1 notification's `password`).
    var secretKeys: Set<String> = []

    init(_ object: [String: JSONValue]) {
        self.object = object
        // Most keys are read: room for all of them at once.
        used.reserveCapacity(object.count)
    }

    func has(_ key: String) -> Bool { object[key] != nil }

    /// The value at `key` and where it stands, when the object has it.
    private func find(_ key: String) -> (Dictionary<String, JSONValue>.Index, JSONValue)? {
        guard let position = object.index(forKey: key) else { return nil }
        return (position, object.values[position])
    }

    /// Marks `key` read, when the object has it.
    private mutating func markUsed(_ key: String) {
        if let position = object.index(forKey: key) { used.append(position) }
    }

    mutating func value(_ key: String) -> JSONValue? {
        guard let (position, v) = find(key) else { return nil }
        used.append(position)
        if case .null = v { return nil }
        return v
    }

    mutating func string(_ key: String) -> String? { value(key)?.text }

    /// `key` read by `parse`; marked used only when it parses, so a value of another shape
    /// stays in ``remainingFields()``.
    mutating func parsed<T>(_ key: String, _ parse: (JSONValue) -> T?) -> T? {
        guard let (position, v) = find(key), let result = parse(v) else { return nil }
        used.append(position)
        return result
    }

    mutating func int(_ key: String) -> Int64? {
        guard let (position, v) = find(key), let i = v.int64 else { return nil }
        used.append(position)
        return i
    }

    mutating func bool(_ key: String) -> Bool? {
        guard let (position, v) = find(key), let b = v.bool else { return nil }
        used.append(position)
        return b
    }

    /// A verifyReceipt-style date: `key_ms` (epoch milliseconds) first, then `key` (a date
    /// string, or epoch milliseconds as iOS 6 wrote `expires_date`), then `key_formatted`.
    /// The `_pst` and `_formatted_pst` twins are consumed with it. An empty string is no date.
    mutating func appleDate(_ key: String) -> Date? {
        var result: Date?
        if let (position, v) = find(key + "_ms"), let ms = v.text, let d = AppleDate.fromMilliseconds(ms) {
            used.append(position)
            result = d
        }
        if let (position, v) = find(key), let text = v.text {
            if text.isEmpty {
                used.append(position)
            } else if let d = AppleDate.fromMilliseconds(text) ?? AppleDate.parse(text) {
                used.append(position)
                result = result ?? d
            }
        }
        if let (position, v) = find(key + "_formatted"), let text = v.text, let d = AppleDate.parse(text) {
            used.append(position)
            result = result ?? d
        }
        if result != nil || object[key]?.text == "" {
            markUsed(key + "_pst")
            markUsed(key + "_formatted_pst")
        }
        return result
    }

    /// A StoreKit 2 date: epoch milliseconds as a JSON number.
    mutating func epochMillisecondsDate(_ key: String) -> Date? {
        guard let (position, v) = find(key) else { return nil }
        if let ms = v.int64 {
            used.append(position)
            return Date(timeIntervalSince1970: Double(ms) / 1000)
        }
        if case .number(let d) = v {
            used.append(position)
            return Date(timeIntervalSince1970: d / 1000)
        }
        return nil
    }

    /// The keys nobody read, sorted, with scalar values as text and objects or arrays as
    /// compact JSON. Secret keys are left out.
    /// Mutating only to sort the positions in place (a copy to sort was an allocation per
    /// object read).
    mutating func remainingFields() -> [Field] {
        // Fewer positions marked than the object has keys: some key was not read. As many or
        // more: every key was read unless one was read twice, which sorting the positions tells.
        if used.count >= object.count {
            used.sort()
            var distinct = 0
            for (offset, position) in used.enumerated() where offset == 0 || used[offset - 1] != position { distinct += 1 }
            if distinct == object.count { return [] }
        }
        let readKeys = Set(used.map { object.keys[$0] })
        // The few left sorted, not every key.
        return object.keys.filter { !readKeys.contains($0) && !secretKeys.contains($0) }.sorted().compactMap { key in
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
