import Foundation

/// One `[[rule]]` of a retention rules file: what it matches, and what it answers.
public struct RetentionRule: Sendable, Hashable {
    /// What Apple is answered with (the realtime response's one key).
    public enum Answer: Sendable, Hashable {
        /// `{"message": {"messageIdentifier"}}`.
        case message(messageID: String)
        /// `{"alternateProduct": {"messageIdentifier", "productId", "billingPlanType"?}}`.
        case alternateProduct(messageID: String, productID: String, billingPlanType: String?)
        /// `{"promotionalOffer": {"messageIdentifier", "promotionalOfferSignatureV2" | "…V1"}}`,
        /// signed for the request's product and original transaction.
        case promotionalOffer(messageID: String, offerID: String, signature: SignatureVersion)

        /// `message`, `alternate-product`, `promotional-offer`: the rules file's and the trail's name.
        public var kind: String {
            switch self {
            case .message: "message"
            case .alternateProduct: "alternate-product"
            case .promotionalOffer: "promotional-offer"
            }
        }

        public var messageID: String {
            switch self {
            case .message(let id), .alternateProduct(let id, _, _), .promotionalOffer(let id, _, _): id
            }
        }
    }

    public enum SignatureVersion: String, Sendable, Hashable { case v1, v2 }

    public var name: String
    /// The 1-based line of its `[[rule]]` header.
    public var line: Int
    /// Product id globs (`*`, `?`); empty matches any.
    public var products: [String] = []
    /// Locales: `fr` matches `fr`, `fr-CA`, `fr-FR`; `fr-CA` matches `fr-CA` only. Empty matches any.
    public var locales: [String] = []
    /// `Production`, `Sandbox`; empty matches any.
    public var environments: [String] = []
    public var monthsSubscribed: CountRange?
    public var offersRedeemed: CountRange?
    public var refunds: CountRange?
    public var answer: Answer

    public init(name: String, line: Int, answer: Answer) {
        self.name = name
        self.line = line
        self.answer = answer
    }
}

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

/// `*` (any run) and `?` (one character) over a product id: greedy with one remembered star,
/// so the cost is at most the product of the two lengths (both short and bounded).
public enum ProductGlob {
    public static func matches(_ pattern: String, _ text: String) -> Bool {
        let p = Array(pattern.unicodeScalars)
        let s = Array(text.unicodeScalars)
        var (i, j) = (0, 0)
        var star: (p: Int, s: Int)?
        while j < s.count {
            if i < p.count, p[i] == "?" || p[i] == s[j] {
                i += 1
                j += 1
            } else if i < p.count, p[i] == "*" {
                star = (i, j)
                i += 1
            } else if let last = star {
                i = last.p + 1
                j = last.s + 1
                star = (last.p, last.s + 1)
            } else {
                return false
            }
        }
        while i < p.count, p[i] == "*" { i += 1 }
        return i == p.count
    }
}
