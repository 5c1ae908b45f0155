/// Makes untrusted text (anything read from a receipt or a notification) safe to print on a
/// terminal, in a text or CSV file, or in a log line. The one sanitiser: every path that prints
/// input-derived text (the core's renderings, the commands, standard error, the dashboard's
/// cells) goes through it.
///
/// What is escaped is ``EscapedScalars``, the table the JSON writer uses too. Control characters
/// (C0, DEL, C1) are shown as `\xNN` escapes, so an escape sequence hidden in a product id can
/// neither move the cursor nor change the terminal's state. The line and paragraph separators
/// and the bidirectional overrides and isolates are escaped too (`\u{202e}`), since they break
/// lines or reorder what the reader sees.
public enum SafeText {
    /// One CSV cell (RFC 4180): escaped as ``escaped(_:)``, a leading `=`, `+`, `-` or `@`
    /// prefixed with `'` (spreadsheets would read a formula), quoted when it holds a comma or
    /// a quote.
    public static func csvCell(_ text: String) -> String {
        var safe = escaped(text)
        if let first = safe.first, "=+-@".contains(first) { safe = "'" + safe }
        guard safe.contains(where: { $0 == "," || $0 == "\"" }) else { return safe }
        var quoted = "\""
        for character in safe {
            if character == "\"" { quoted.append("\"") }
            quoted.append(character)
        }
        return quoted + "\""
    }

    public static func escaped(_ text: String) -> String {
        // No byte that starts an escaped scalar (most text): nothing to do.
        let leads = EscapedScalars.utf8LeadBytes
        guard text.utf8.contains(where: { leads[Int($0)] }) else { return text }
        guard text.unicodeScalars.contains(where: isUnsafe) else { return text }
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if isUnsafe(scalar) {
                let escape =
                    scalar.value < 0x100
                    ? "\\x" + hex(scalar.value, width: 2) : "\\u{" + hex(scalar.value, width: 4) + "}"
                out.append(contentsOf: escape.unicodeScalars)
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }

    static func isUnsafe(_ s: Unicode.Scalar) -> Bool { EscapedScalars.contains(s) }

    private static func hex(_ v: UInt32, width: Int) -> String {
        let s = String(v, radix: 16, uppercase: false)
        return String(repeating: "0", count: max(0, width - s.count)) + s
    }
}
