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
    /// For an object of ``indexedMembers`` members whose keys are all ASCII: each key summed
    /// up in one word (``summary(_:)``) beside where it stands, found through a small open
    /// hash table on that word before the key's text is compared. A dictionary look-up
    /// (SipHash of the key, a probe, a compare) per field read was two thirds of reading a
    /// StoreKit 2 transaction's fields. Empty otherwise: the dictionary is asked.
    private let members: [(summary: UInt64, position: Dictionary<String, JSONValue>.Index)]
    /// ``tableSize`` slots, each 0 (free) or a member's offset in `members` plus one, placed
    /// by the top bits of its summary, the next free slot on a collision.
    private let slots: [UInt8]
    private static let tableSize = 128

    /// The object sizes indexed: below, a look-up in the dictionary costs about what making
    /// the index does; above, the table would be too full (a hostile object may have
    /// thousands of members, and the dictionary's hash is seeded).
    static let indexedMembers = 8...64

    init(_ object: [String: JSONValue]) {
        self.object = object
        // Most keys are read: room for all of them at once.
        used.reserveCapacity(object.count)
        (members, slots) = Self.indexedMembers.contains(object.count) ? Self.index(object) : ([], [])
    }

    /// Every key's summary with its position and the table over them, or nothing when a key
    /// is not ASCII: then only the dictionary's comparison (canonical equivalence, under which
    /// a non-ASCII key such as `U+212A` can equal an ASCII one) is sure to answer as it always
    /// did.
    private static func index(
        _ object: [String: JSONValue]
    ) -> ([(summary: UInt64, position: Dictionary<String, JSONValue>.Index)], [UInt8]) {
        var found: [(summary: UInt64, position: Dictionary<String, JSONValue>.Index)] = []
        found.reserveCapacity(object.count)
        var slots = [UInt8](repeating: 0, count: tableSize)
        var position = object.startIndex
        while position != object.endIndex {
            guard let summary = summary(object.keys[position]) else { return ([], []) }
            var slot = slotOf(summary)
            while slots[slot] != 0 { slot = (slot + 1) & (tableSize - 1) }
            found.append((summary, position))
            slots[slot] = UInt8(truncatingIfNeeded: found.count)
            object.formIndex(after: &position)
        }
        return (found, slots)
    }

    /// The slot a summary starts from: its bits mixed once more, the top seven taken.
    @inline(__always)
    private static func slotOf(_ summary: UInt64) -> Int {
        Int(truncatingIfNeeded: (summary &* 0xD6E8_FEB8_6659_FD93) >> 57)
    }

    /// A key's length and its first and last eight bytes in one word; nil for a key that is
    /// not ASCII. Equal keys have equal summaries; different keys may too, and are then told
    /// apart by their text.
    @inline(__always)
    private static func summary(_ key: String) -> UInt64? {
        key.utf8.withContiguousStorageIfAvailable { bytes -> UInt64? in
            guard let base = bytes.baseAddress.map(UnsafeRawPointer.init) else { return 0 }
            let n = bytes.count
            var high: UInt64 = 0
            var first: UInt64 = 0
            var last: UInt64 = 0
            if n >= 8 {
                var i = 0
                while i + 8 <= n {
                    high |= base.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                    i += 8
                }
                first = base.loadUnaligned(as: UInt64.self)
                last = base.loadUnaligned(fromByteOffset: n - 8, as: UInt64.self)
                high |= last
            } else {
                for i in 0..<n { first |= UInt64(bytes[i]) << (8 * UInt64(i)) }
                last = first
                high = first
            }
            guard high & 0x8080_8080_8080_8080 == 0 else { return nil }
            return (first &* 0x9E37_79B9_7F4A_7C15) ^ (last &+ UInt64(n))
        } ?? nil
    }

    /// Where `key` stands in the object, if it has it: the same answer as the dictionary's.
    private func position(_ key: String) -> Dictionary<String, JSONValue>.Index? {
        guard !members.isEmpty, let wanted = Self.summary(key) else { return object.index(forKey: key) }
        var slot = Self.slotOf(wanted)
        while slots[slot] != 0 {
            let member = members[Int(slots[slot]) - 1]
            // Both keys ASCII: equal as strings exactly when equal byte for byte.
            if member.summary == wanted && object.keys[member.position] == key { return member.position }
            slot = (slot + 1) & (Self.tableSize - 1)
        }
        return nil
    }

    func has(_ key: String) -> Bool { position(key) != nil }

    /// The value at `key` and where it stands, when the object has it.
    private func find(_ key: String) -> (Dictionary<String, JSONValue>.Index, JSONValue)? {
        guard let position = position(key) else { return nil }
        return (position, object.values[position])
    }

    /// Marks `key` read, when the object has it.
    private mutating func markUsed(_ key: String) {
        if let position = position(key) { used.append(position) }
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

    /// A number Apple defines as 0 or 1 (`autoRenewStatus`; verifyReceipt's "0" and "1"; a
    /// JSON boolean says the same): the flag for those, else the value as sent (`7`), never
    /// coerced to a flag.
    mutating func definedFlag(_ key: String) -> (flag: Bool?, asSent: JSONValue?) {
        guard let (position, v) = find(key) else { return (nil, nil) }
        used.append(position)
        switch v {
        case .integer(0), .string("0"): return (false, nil)
        case .integer(1), .string("1"): return (true, nil)
        case .bool(let flag): return (flag, nil)
        default: return (nil, v)
        }
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

    /// A StoreKit 2 date: epoch milliseconds as a JSON number (a fraction truncated).
    mutating func epochMillisecondsDate(_ key: String) -> Date? {
        guard let (position, v) = find(key) else { return nil }
        if let ms = v.int64 {
            used.append(position)
            return Date(timeIntervalSince1970: Double(ms) / 1000)
        }
        if case .number(let d) = v {
            used.append(position)
            return AppleDate.fromEpochMilliseconds(d)
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
