/// Path arithmetic on strings, without Foundation's `NSString.deletingLastPathComponent`: on
/// Linux that traps on a one-character path (`--pki p`, `--db a`), an illegal instruction instead
/// of an answer.
public enum PathNames {
    /// The folder part of `path`, as `deletingLastPathComponent` gives it: `a/b` → `a`, `/a` →
    /// `/`, `a` → `` (the current folder), trailing slashes ignored.
    public static func parent(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return "" }
        if slash == trimmed.startIndex { return "/" }
        var parent = trimmed[..<slash]
        while parent.count > 1, parent.hasSuffix("/") { parent = parent.dropLast() }
        return String(parent)
    }
}
