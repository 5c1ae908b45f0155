/// Where things are written in a rules file's text (TOML): the headers of array tables
/// (`[[rule]]`, `[[policy]]`), and keys within a table, the lines errors name. Plain
/// `key = …` lines only. The text is scanned once, so naming lines costs time linear in the
/// file whatever the number of tables.
public struct RuleLines: Sendable {
    private var lines: [Substring]
    /// Each header's line number (1-based) and its text without spaces or comment.
    private var headers: [(line: Int, name: String)] = []
    /// The lines of each header, by its text (`[[policy]]`): the n-th table's in one step.
    private var byName: [String: [Int]] = [:]

    public init(_ text: String) {
        lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        for (number, line) in lines.enumerated() {
            if let name = Self.header(line) {
                headers.append((number + 1, name))
                byName[name, default: []].append(number + 1)
            }
        }
    }

    private static func header(_ line: Substring) -> String? {
        let trimmed = line.drop { $0 == " " || $0 == "\t" }
        guard trimmed.hasPrefix("[") else { return nil }
        return String(trimmed.prefix { $0 != "#" }.filter { $0 != " " && $0 != "\t" })
    }

    private func isKey(_ key: String, _ line: Substring) -> Bool {
        let trimmed = line.drop { $0 == " " || $0 == "\t" }
        guard trimmed.hasPrefix(key) else { return false }
        return trimmed.dropFirst(key.count).drop { $0 == " " || $0 == "\t" }.hasPrefix("=")
    }

    /// The line of the `index`-th `[[table]]` header.
    public func header(of table: String, _ index: Int) -> Int? {
        guard let lines = byName["[[\(table)]]"], lines.indices.contains(index) else { return nil }
        return lines[index]
    }

    /// The line of `key` in the `index`-th `[[table]]`.
    public func key(_ key: String, in table: String, _ index: Int) -> Int? {
        guard let start = header(of: table, index) else { return nil }
        return self.key(key, after: start)
    }

    private func key(_ key: String, after start: Int) -> Int? {
        for number in start..<lines.count {
            if Self.header(lines[number]) != nil { return nil }
            if isKey(key, lines[number]) { return number + 1 }
        }
        return nil
    }

    /// The line of `key` in the `[table]` table.
    public func key(_ key: String, inTable table: String) -> Int? {
        guard let start = headers.first(where: { $0.name == "[\(table)]" })?.line else { return nil }
        return self.key(key, after: start)
    }

    /// A key before any header, or the first header naming it.
    public func topLevel(_ key: String) -> Int? {
        if let named = headers.first(where: { $0.name == "[\(key)]" || $0.name == "[[\(key)]]" }) { return named.line }
        let end = headers.first?.line ?? (lines.count + 1)
        for number in 0..<(end - 1) where isKey(key, lines[number]) { return number + 1 }
        return nil
    }
}
