import Foundation
import TOMLKit

/// A value of a rules file's table that cannot be used: its key, and what it must be.
public struct RuleValueFault: Error, Sendable {
    public let key: String
    public let words: String
}

/// Reads the values of one table of a rules file (`[[rule]]`, `[[policy]]`) by the forms they
/// share: a string, a string or a list of them, a count or range, a boolean. Each file words its
/// faults with its own error and line from the ``RuleValueFault``.
public struct RuleTable {
    public let table: TOMLTable

    public init(_ table: TOMLTable) { self.table = table }

    /// A string that is not blank; nil when the key is absent.
    public func string(_ key: String) throws(RuleValueFault) -> String? {
        guard let value = table[key] else { return nil }
        guard let text = value.string, !text.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw RuleValueFault(key: key, words: "\(key) must be a string that is not empty")
        }
        return text
    }

    /// A string or a list of strings, none empty; empty when the key is absent.
    public func strings(_ key: String) throws(RuleValueFault) -> [String] {
        guard let value = table[key] else { return [] }
        if let text = value.string, !text.isEmpty { return [text] }
        if let array = value.array, !array.isEmpty {
            var out: [String] = []
            for element in array {
                guard let text = element.string, !text.isEmpty else { throw RuleValueFault(key: key, words: "\(key) must be a string or a list of strings") }
                out.append(text)
            }
            return out
        }
        throw RuleValueFault(key: key, words: "\(key) must be a string or a list of strings that is not empty")
    }

    /// A count (`3`) or a range (`"< 3"`, `"3..30"`); nil when the key is absent.
    public func range(_ key: String) throws(RuleValueFault) -> CountRange? {
        guard let value = table[key] else { return nil }
        if let number = value.int, number >= 0 { return CountRange(lower: number, upper: number, text: String(number)) }
        guard let text = value.string, let range = CountRange.parse(text) else {
            throw RuleValueFault(key: key, words: "\(key) must be a count or a range such as \"< 3\", \">= 12\" or \"3..30\"")
        }
        return range
    }

    /// `true` or `false`; nil when the key is absent.
    public func bool(_ key: String) throws(RuleValueFault) -> Bool? {
        guard let value = table[key] else { return nil }
        guard let flag = value.bool else { throw RuleValueFault(key: key, words: "\(key) must be true or false") }
        return flag
    }
}
