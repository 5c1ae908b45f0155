/// Where a key of a profile table is written in the TOML text: the line errors name.
enum ProfileLines {
    /// The 1-based line of `key` in the table `[table]`, nil when the text does not say it
    /// plainly (a dotted or inline table).
    static func line(of key: String, inTable table: String, text: String) -> Int? {
        var inside = false
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("[") {
                let header = line.prefix { $0 != "#" }.filter { $0 != " " && $0 != "\t" }
                inside = header == "[\(table)]" || header == "[\"\(table)\"]"
                continue
            }
            guard inside, line.hasPrefix(key) else { continue }
            let rest = line.dropFirst(key.count).drop { $0 == " " || $0 == "\t" }
            if rest.hasPrefix("=") { return index + 1 }
        }
        return nil
    }
}
