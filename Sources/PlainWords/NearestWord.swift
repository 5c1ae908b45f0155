/// The known word a mistyped one was meant to be ("did you mean …?"): a command, a setting,
/// a value.
public enum NearestWord {
    /// The word of `known` at the fewest edits from `word` (case ignored), if within `most`
    /// edits and fewer than half of `word`'s letters.
    public static func closest(to word: String, in known: [String], most: Int = 2) -> String? {
        let lowered = Array(word.lowercased())
        let scored = known.map { ($0, distance(lowered, Array($0.lowercased()))) }
        guard let best = scored.min(by: { $0.1 < $1.1 }), best.1 <= most, best.1 * 2 < word.count else { return nil }
        return best.0
    }

    /// Edits from `a` to `b` (Levenshtein), a transposition of neighbours counted as one.
    public static func distance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var rows = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { rows[i][0] = i }
        for j in 0...b.count { rows[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                rows[i][j] = min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { rows[i][j] = min(rows[i][j], rows[i - 2][j - 2] + 1) }
            }
        }
        return rows[a.count][b.count]
    }
}
