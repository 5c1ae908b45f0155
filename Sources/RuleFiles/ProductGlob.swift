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
