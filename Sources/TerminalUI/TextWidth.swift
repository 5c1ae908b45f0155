#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Display width of text in terminal columns, as the screen library lays it out.
///
/// ncurses places every character by the C library's `wcwidth`, so that is the authority: the
/// widths come from `wcwidth` itself, read once (at first use) into a compact table under a
/// UTF-8 locale that is set for the reading thread only (`uselocale`), never for the process.
///
/// A grapheme cluster takes the width of its first scalar: that is what ncurses does with a
/// multi-scalar cell (`setcchar` keeps the base character and the non-spacing marks after it,
/// `add_wch` advances by the base's width). So U+2764 U+FE0F (❤️) is one column, as in tmux and
/// ncurses, though some terminals draw the emoji presentation two columns wide; the ncurses
/// backend therefore sends such a cell without the U+FE0F. A non-printable scalar other than a
/// control character counts one column (ncurses gives it one cell); controls count none and
/// never reach a cell (`SafeText.escaped` escapes them first).
public enum TextWidth {
    @inlinable
    public static func of(_ character: Character) -> Int {
        if let ascii = character.asciiValue { return ascii >= 0x20 && ascii != 0x7F ? 1 : 0 }
        guard let first = character.unicodeScalars.first else { return 0 }
        return of(first)
    }

    @inlinable
    public static func of(_ scalar: Unicode.Scalar) -> Int {
        let v = scalar.value
        if v < 0x7F { return v >= 0x20 ? 1 : 0 }
        return WidthTable.width(of: v)
    }

    public static func of(_ text: String) -> Int {
        // Most text on screen is plain ASCII: count bytes, without grapheme breaking.
        var ascii = true
        for byte in text.utf8 where byte < 0x20 || byte >= 0x7F {
            ascii = false
            break
        }
        if ascii { return text.utf8.count }
        var columns = 0
        for character in text { columns += of(character) }
        return columns
    }

    /// `text` cut to at most `columns` columns, with `…` when it was cut.
    public static func truncate(_ text: String, to columns: Int) -> String {
        guard columns > 0 else { return "" }
        guard of(text) > columns else { return text }
        var out = ""
        var used = 0
        for character in text {
            let w = of(character)
            if used + w > columns - 1 { break }
            out.append(character)
            used += w
        }
        return out + "…"
    }

    /// `text` cut to at most `columns` columns in the middle, keeping both ends (`com.example.….monthly`
    /// tells products apart by their ends), with `…` where it was cut. The tail keeps the larger half.
    public static func truncateMiddle(_ text: String, to columns: Int) -> String {
        guard columns > 0 else { return "" }
        guard of(text) > columns else { return text }
        guard columns >= 5 else { return truncate(text, to: columns) }
        let characters = Array(text)
        let headBudget = (columns - 1) / 2
        let tailBudget = columns - 1 - headBudget
        var head = ""
        var used = 0
        for character in characters {
            let w = of(character)
            if used + w > headBudget { break }
            head.append(character)
            used += w
        }
        var tail: [Character] = []
        used = 0
        for character in characters.reversed() {
            let w = of(character)
            if used + w > tailBudget { break }
            tail.append(character)
            used += w
        }
        return head + "…" + String(tail.reversed())
    }

    /// `text` cut to at most `columns` columns at its start, keeping the end (`…-intro.b64`:
    /// names in a folder differ at their ends), with `…` where it was cut.
    public static func truncateHead(_ text: String, to columns: Int) -> String {
        guard columns > 0 else { return "" }
        guard of(text) > columns else { return text }
        var tail: [Character] = []
        var used = 0
        for character in text.reversed() {
            let w = of(character)
            if used + w > columns - 1 { break }
            tail.append(character)
            used += w
        }
        return "…" + String(tail.reversed())
    }

    /// `text` without its first `columns` columns (a wide character cut in two drops whole).
    public static func dropLeading(_ text: String, columns: Int) -> String {
        guard columns > 0 else { return text }
        var used = 0
        var index = text.startIndex
        while index < text.endIndex, used < columns {
            used += of(text[index])
            index = text.index(after: index)
        }
        return String(text[index...])
    }

    /// `text` padded with spaces (or cut) to exactly `columns` columns.
    public static func pad(_ text: String, to columns: Int, alignRight: Bool = false) -> String {
        let cut = truncate(text, to: columns)
        let gap = String(repeating: " ", count: max(0, columns - of(cut)))
        return alignRight ? gap + cut : cut + gap
    }
}
