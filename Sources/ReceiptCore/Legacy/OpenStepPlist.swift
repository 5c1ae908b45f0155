/// A value of an OpenStep (NeXTSTEP) property list, the text format of iOS 6 transaction
/// receipts: `{ "key" = "value"; }`, arrays `( a, b )` and data `<0fbd 7766>`.
///
/// Not `indirect`, as ``JSONValue``: arrays and dictionaries already hold their values on the
/// heap, so no value needs a box of its own.
public enum OpenStepPlist: Sendable, Hashable {
    case string(String)
    case data([UInt8])
    case array([OpenStepPlist])
    /// Entries in the order they were written (keys may repeat; the last one wins on lookup).
    case dictionary([(key: String, value: OpenStepPlist)])

    public static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case (.string(let a), .string(let b)): a == b
        case (.data(let a), .data(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.dictionary(let a), .dictionary(let b)):
            a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .string(let s): hasher.combine(s)
        case .data(let d): hasher.combine(d)
        case .array(let a): hasher.combine(a)
        case .dictionary(let d):
            for (k, v) in d {
                hasher.combine(k)
                hasher.combine(v)
            }
        }
    }

    /// The value for `key` when this is a dictionary.
    public subscript(key: String) -> OpenStepPlist? {
        guard case .dictionary(let entries) = self else { return nil }
        return entries.last(where: { $0.key == key })?.value
    }

    /// The string value, if this is a string.
    public var string: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// Parses OpenStep plist text.
    ///
    /// - Parameter maximumDepth: deepest nesting of dictionaries and arrays accepted.
    /// - Throws: ``ReceiptDecodingError`` with code `invalidPlist`, naming the line, column and
    ///   byte offset of the problem.
    public static func parse(_ bytes: some Collection<UInt8>, maximumDepth: Int = 64) throws -> OpenStepPlist {
        var parser = Parser(bytes: Array(bytes), maximumDepth: maximumDepth)
        if parser.bytes.starts(with: [0xEF, 0xBB, 0xBF]) { parser.position = 3 }
        let value = try parser.value(depth: 1)
        try parser.skipTriviaStrict()
        guard parser.position == parser.bytes.count else {
            throw parser.error("unexpected \(parser.describeCurrent()) after the end of the property list")
        }
        return value
    }

    private struct Parser {
        let bytes: [UInt8]
        let maximumDepth: Int
        var position = 0

        init(bytes: [UInt8], maximumDepth: Int) {
            self.bytes = bytes
            self.maximumDepth = maximumDepth
        }

        func error(_ message: String, at offset: Int? = nil) -> ReceiptDecodingError {
            let at = min(offset ?? position, bytes.count)
            var line = 1
            var column = 1
            for b in bytes[..<at] {
                if b == 0x0A {
                    line += 1
                    column = 1
                } else {
                    column += 1
                }
            }
            return ReceiptDecodingError(.invalidPlist, "plist line \(line), column \(column): \(message)", offset: at)
        }

        func describeCurrent() -> String {
            guard position < bytes.count else { return "end of input" }
            return "character \(Base64Text.describe(bytes[position]))"
        }

        /// Skips white space and `//` / `/* */` comments.
        mutating func skipTriviaStrict() throws {
            while position < bytes.count {
                let b = bytes[position]
                if b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D {
                    position += 1
                } else if b == 0x2F, position + 1 < bytes.count, bytes[position + 1] == 0x2F {
                    while position < bytes.count, bytes[position] != 0x0A { position += 1 }
                } else if b == 0x2F, position + 1 < bytes.count, bytes[position + 1] == 0x2A {
                    let start = position
                    position += 2
                    while true {
                        guard position + 1 < bytes.count else { throw error("comment is never closed", at: start) }
                        if bytes[position] == 0x2A, bytes[position + 1] == 0x2F {
                            position += 2
                            break
                        }
                        position += 1
                    }
                } else {
                    return
                }
            }
        }

        mutating func value(depth: Int) throws -> OpenStepPlist {
            guard depth <= maximumDepth else { throw error("nesting is deeper than \(maximumDepth) levels") }
            try skipTriviaStrict()
            guard position < bytes.count else { throw error("input ends where a value was expected") }
            switch bytes[position] {
            case 0x7B: return try dictionary(depth: depth)
            case 0x28: return try array(depth: depth)
            case 0x3C: return try data()
            case 0x22, 0x27: return .string(try quoted())
            default:
                guard let word = unquoted() else { throw error("unexpected \(describeCurrent()) where a value was expected") }
                return .string(word)
            }
        }

        mutating func dictionary(depth: Int) throws -> OpenStepPlist {
            let start = position
            position += 1
            var entries: [(key: String, value: OpenStepPlist)] = []
            while true {
                try skipTriviaStrict()
                guard position < bytes.count else { throw error("dictionary opened at byte \(start) is never closed", at: start) }
                if bytes[position] == 0x7D {
                    position += 1
                    return .dictionary(entries)
                }
                let keyOffset = position
                guard case .string(let key) = try value(depth: depth + 1) else {
                    throw error("dictionary key must be a string", at: keyOffset)
                }
                try skipTriviaStrict()
                guard position < bytes.count, bytes[position] == 0x3D else {
                    throw error("expected '=' after key \(key.debugDescription) but found \(describeCurrent())")
                }
                position += 1
                let entry = try value(depth: depth + 1)
                try skipTriviaStrict()
                guard position < bytes.count, bytes[position] == 0x3B else {
                    throw error("expected ';' after the value of \(key.debugDescription) but found \(describeCurrent())")
                }
                position += 1
                entries.append((key, entry))
            }
        }

        mutating func array(depth: Int) throws -> OpenStepPlist {
            let start = position
            position += 1
            var items: [OpenStepPlist] = []
            while true {
                try skipTriviaStrict()
                guard position < bytes.count else { throw error("array opened at byte \(start) is never closed", at: start) }
                if bytes[position] == 0x29 {
                    position += 1
                    return .array(items)
                }
                items.append(try value(depth: depth + 1))
                try skipTriviaStrict()
                guard position < bytes.count else { throw error("array opened at byte \(start) is never closed", at: start) }
                if bytes[position] == 0x2C {
                    position += 1
                } else if bytes[position] != 0x29 {
                    throw error("expected ',' or ')' in array but found \(describeCurrent())")
                }
            }
        }

        mutating func data() throws -> OpenStepPlist {
            let start = position
            position += 1
            var out: [UInt8] = []
            var high: UInt8?
            while true {
                guard position < bytes.count else { throw error("data opened at byte \(start) is never closed", at: start) }
                let b = bytes[position]
                position += 1
                if b == 0x3E { break }
                if b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 { continue }
                guard let nibble = Self.hex(b) else {
                    throw error("invalid character \(Base64Text.describe(b)) in data", at: position - 1)
                }
                if let h = high {
                    out.append(h << 4 | nibble)
                    high = nil
                } else {
                    high = nibble
                }
            }
            guard high == nil else { throw error("data opened at byte \(start) has an odd number of hex digits") }
            return .data(out)
        }

        static func hex(_ b: UInt8) -> UInt8? {
            switch b {
            case 0x30...0x39: b - 0x30
            case 0x41...0x46: b - 0x41 + 10
            case 0x61...0x66: b - 0x61 + 10
            default: nil
            }
        }

        /// A quoted string with C-style escapes: `\\ \" \n \t \r \b \f \a \v`, octal `\123`,
        /// and `\U00e9` Unicode escapes.
        mutating func quoted() throws -> String {
            let start = position
            let quote = bytes[position]
            position += 1
            var out: [UInt8] = []
            while true {
                guard position < bytes.count else { throw error("string opened at byte \(start) is never closed", at: start) }
                let b = bytes[position]
                position += 1
                if b == quote { break }
                guard b == 0x5C else {
                    out.append(b)
                    continue
                }
                guard position < bytes.count else { throw error("string opened at byte \(start) is never closed", at: start) }
                let e = bytes[position]
                position += 1
                switch e {
                case 0x6E: out.append(0x0A)
                case 0x74: out.append(0x09)
                case 0x72: out.append(0x0D)
                case 0x62: out.append(0x08)
                case 0x66: out.append(0x0C)
                case 0x61: out.append(0x07)
                case 0x76: out.append(0x0B)
                case 0x30...0x37:
                    var v = Int(e - 0x30)
                    var n = 1
                    while n < 3, position < bytes.count, (0x30...0x37).contains(bytes[position]) {
                        v = v * 8 + Int(bytes[position] - 0x30)
                        position += 1
                        n += 1
                    }
                    out.append(UInt8(truncatingIfNeeded: v))
                case 0x55, 0x75:
                    var v: UInt32 = 0
                    var n = 0
                    while n < 4, position < bytes.count, let h = Self.hex(bytes[position]) {
                        v = v << 4 | UInt32(h)
                        position += 1
                        n += 1
                    }
                    guard n > 0 else { throw error("\\U escape without hex digits", at: position - 2) }
                    let scalar = Unicode.Scalar(v) ?? "\u{FFFD}"
                    out.append(contentsOf: Array(String(Character(scalar)).utf8))
                default:
                    out.append(e)  // \\, \", \' and any other escaped character stand for themselves
                }
            }
            return String(decoding: out, as: UTF8.self)
        }

        /// An unquoted word: letters, digits and `_$+/:.-`.
        mutating func unquoted() -> String? {
            let start = position
            while position < bytes.count {
                let b = bytes[position]
                let ok =
                    (0x30...0x39).contains(b) || (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b)
                    || b == 0x5F || b == 0x24 || b == 0x2B || b == 0x2F || b == 0x3A || b == 0x2E || b == 0x2D
                guard ok else { break }
                position += 1
            }
            guard position > start else { return nil }
            return String(decoding: bytes[start..<position], as: UTF8.self)
        }
    }
}
