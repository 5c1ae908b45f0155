import Foundation
import ReceiptCore

/// The filter language QA asks a folder with (`inspect --summary --where …`): terms separated
/// by spaces, every one of which must hold.
///
/// - `state:S`: a subscription in state S (`active`, `expired`, `refunded`, `in-grace-period`,
///   … as `inspect --format json` names them); `state:refunded` also holds for a refunded
///   one-time purchase.
/// - `verdict:V`: `valid`, `test`, `invalid`, `unverifiable`, `unchecked` (`--no-verify`) or
///   `undecodable`.
/// - `env:E`: the environment (`production`, `sandbox`, `xcode`, …), any case.
/// - `product:ID`, `bundle:ID`, `file:GLOB`: a product of the receipt, its bundle id, its file
///   name or path (`*` and `?` as in a shell).
/// - Any other word: found, in any case, in the receipt's line (file, bundle, products, why).
public struct ReceiptFilter: Sendable, Hashable {
    public enum Term: Sendable, Hashable {
        case state(String)
        case verdict(String)
        case environment(String)
        case product(String)
        case bundle(String)
        case file(String)
        /// `type:T` (the notifications' filter: ``NotificationRowFilter``).
        case type(String)
        case text(String)
    }

    public var terms: [Term]

    /// The filter that lets every receipt through.
    public static let everything = ReceiptFilter(terms: [])

    public init(terms: [Term]) {
        self.terms = terms
    }

    public static let keys = ["state", "verdict", "env", "product", "bundle", "file"]

    /// Every state `state:` takes.
    public static var states: [String] { SubscriptionState.allCases.map(\.rawValue) }
    public static let verdicts = ["valid", "test", "invalid", "unverifiable", "unchecked", "undecodable"]

    /// Parses `texts` (each a `--where`); a key this language does not have, or a state or
    /// verdict that does not exist, is an error that names what it takes. `keys` are the keys
    /// the caller's rows have (the receipts' by default; the notifications' filter takes
    /// `type:` and `product:` through this same parser).
    public init(_ texts: [String], keys: [String] = keys) throws(FilterError) {
        var terms: [Term] = []
        for text in texts {
            for word in text.split(whereSeparator: \.isWhitespace).map(String.init) {
                guard let colon = word.firstIndex(of: ":"), word.startIndex != colon else {
                    terms.append(.text(word.lowercased()))
                    continue
                }
                let key = word[..<colon].lowercased()
                let value = String(word[word.index(after: colon)...])
                guard !value.isEmpty else { throw FilterError("\(word) needs a value after the colon") }
                guard keys.contains(String(key)) else {
                    // A word with a colon that is no key (a time, a URL) is text.
                    if key.allSatisfy({ $0.isLetter }) {
                        throw FilterError("\(key): is not a filter; filters: \(keys.map { "\($0):" }.joined(separator: " ")), or plain words")
                    }
                    terms.append(.text(word.lowercased()))
                    continue
                }
                switch key {
                case "state":
                    guard Self.states.contains(value.lowercased()) else {
                        throw FilterError("state:\(value) is not a state; states: \(Self.states.joined(separator: ", "))")
                    }
                    terms.append(.state(value.lowercased()))
                case "verdict":
                    guard Self.verdicts.contains(value.lowercased()) else {
                        throw FilterError("verdict:\(value) is not a verdict; verdicts: \(Self.verdicts.joined(separator: ", "))")
                    }
                    terms.append(.verdict(value.lowercased()))
                case "env": terms.append(.environment(value.lowercased()))
                case "product": terms.append(.product(value))
                case "bundle": terms.append(.bundle(value))
                case "file": terms.append(.file(value))
                case "type": terms.append(.type(value))
                default: terms.append(.text(word.lowercased()))
                }
            }
        }
        self.terms = terms
    }

    /// Whether every term holds for `s`; `searchText` is its ``ReceiptSummary/searchText`` when
    /// the caller keeps it.
    public func matches(_ s: ReceiptSummary, searchText kept: String? = nil) -> Bool {
        // Made once per receipt, and only when a plain word asks for it.
        lazy var searchText = kept ?? s.searchText
        return terms.allSatisfy { term in
            switch term {
            case .state(let state):
                s.states.contains(state) || (state == SubscriptionState.refunded.rawValue && s.refunds > 0)
            case .verdict(let verdict): s.verdict == verdict
            case .environment(let environment): s.environment?.lowercased() == environment
            case .product(let product): s.products.contains { Glob.matches(product, $0) }
            case .bundle(let bundle): s.bundleID.map { Glob.matches(bundle, $0) } ?? false
            case .file(let pattern): Glob.matches(pattern, s.file) || Glob.matches(pattern, (s.file as NSString).lastPathComponent)
            // A receipt has no notification type (the receipts' keys have no `type:`).
            case .type: false
            case .text(let word): Self.contains(searchText, word)
            }
        }
    }
}

extension ReceiptFilter {
    /// Whether `word` occurs in `text`, byte for byte in UTF-8 (both already lowercased): a
    /// word typed into the dashboard's filter is looked for in 50,000 lines per keystroke, and
    /// `String.contains` there cost ten times more.
    static func contains(_ text: String, _ word: String) -> Bool {
        var text = text
        var word = word
        return text.withUTF8 { t in
            word.withUTF8 { w in
                guard let first = w.first else { return true }
                guard w.count <= t.count else { return false }
                var i = 0
                let last = t.count - w.count
                while i <= last {
                    if t[i] == first, memcmp(t.baseAddress! + i, w.baseAddress!, w.count) == 0 { return true }
                    i += 1
                }
                return false
            }
        }
    }
}

/// A filter that could not be read: what and why.
public struct FilterError: Error, Sendable, Hashable {
    public let reason: String
    public init(_ reason: String) { self.reason = reason }
}

/// Shell-style `*` and `?` matching, in linear time for patterns without `*` and at most
/// pattern × text otherwise (no backtracking blow-up).
enum Glob {
    static func matches(_ pattern: String, _ text: String) -> Bool {
        let p = Array(pattern.unicodeScalars), t = Array(text.unicodeScalars)
        var (pi, ti) = (0, 0)
        var star = -1, mark = 0
        while ti < t.count {
            if pi < p.count && (p[pi] == "?" || p[pi] == t[ti]) {
                pi += 1
                ti += 1
            } else if pi < p.count && p[pi] == "*" {
                star = pi
                mark = ti
                pi += 1
            } else if star >= 0 {
                pi = star + 1
                mark += 1
                ti = mark
            } else {
                return false
            }
        }
        while pi < p.count && p[pi] == "*" { pi += 1 }
        return pi == p.count
    }
}
