import Foundation

/// A range of whole numbers as a rules file writes it: `"3"`, `"< 3"`, `"<= 3"`, `"> 3"`,
/// `">= 3"`, `"3..30"` (both ends included), or a bare integer.
public struct CountRange: Sendable, Hashable, CustomStringConvertible {
    public var lower: Int?
    public var upper: Int?
    public let description: String

    public init(lower: Int?, upper: Int?, text: String) {
        self.lower = lower
        self.upper = upper
        description = text
    }

    public func contains(_ value: Int) -> Bool {
        (lower.map { value >= $0 } ?? true) && (upper.map { value <= $0 } ?? true)
    }

    /// Nil when `text` is not one of the forms above.
    public static func parse(_ text: String) -> CountRange? {
        let t = text.trimmingCharacters(in: .whitespaces)
        func number(_ s: Substring) -> Int? {
            let digits = s.trimmingCharacters(in: .whitespaces)
            guard !digits.isEmpty, digits.utf8.count <= 9, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            return Int(digits)
        }
        for (prefix, make) in [
            ("<=", { (n: Int) in (nil as Int?, n as Int?) }), (">=", { (n: Int) in (n, nil) }), ("<", { (n: Int) in (nil, n - 1) }),
            (">", { (n: Int) in (n + 1, nil) }),
        ] as [(String, (Int) -> (Int?, Int?))] where t.hasPrefix(prefix) {
            guard let n = number(t.dropFirst(prefix.count)) else { return nil }
            let (lower, upper) = make(n)
            return CountRange(lower: lower, upper: upper, text: t)
        }
        if let dots = t.range(of: "..") {
            guard let a = number(t[..<dots.lowerBound]), let b = number(t[dots.upperBound...]), a <= b else { return nil }
            return CountRange(lower: a, upper: b, text: t)
        }
        guard let n = number(t[...]) else { return nil }
        return CountRange(lower: n, upper: n, text: t)
    }
}
