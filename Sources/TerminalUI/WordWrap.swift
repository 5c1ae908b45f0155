/// Breaks text into screen lines: at the last space past a third of the line when there is one
/// (after some text), else mid-word; lines after the first start with `indent` spaces. Width
/// is measured in terminal columns (``TextWidth``). Linear in the text; at most `limit` lines.
public enum WordWrap {
    public static func lines(_ text: String, width: Int, indent: Int = 0, limit: Int = 500) -> [String] {
        let width = max(1, width)
        let lead = String(repeating: " ", count: min(indent, width - 1))
        var lines: [String] = []
        var rest = Substring(text)
        var prefix = ""
        repeat {
            let room = width - prefix.count
            var end = rest.startIndex
            var used = 0
            var lastSpace: String.Index?
            var sawText = false
            while end < rest.endIndex, used + TextWidth.of(rest[end]) <= room {
                if rest[end] == " " {
                    // Break at a space only if it keeps a useful amount on this line.
                    if sawText, used >= room / 3 { lastSpace = end }
                } else {
                    sawText = true
                }
                used += TextWidth.of(rest[end])
                end = rest.index(after: end)
            }
            if end < rest.endIndex, let space = lastSpace, space > rest.startIndex { end = space }
            if end == rest.startIndex, end < rest.endIndex { end = rest.index(after: end) }
            lines.append(prefix + rest[..<end])
            rest = rest[end...].drop { $0 == " " }
            prefix = lead
        } while !rest.isEmpty && lines.count < limit
        return lines
    }
}
