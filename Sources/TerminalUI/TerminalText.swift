/// Makes text that came from a receipt safe for a terminal cell: control characters, DEL, C1
/// controls and bidirectional overrides become visible `\xNN` / `\u{NNNN}` escapes, so nothing
/// from the input can move the cursor or change the terminal.
public enum TerminalText {
    public static func sanitize(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            guard isControl(scalar) else {
                out.append(scalar)
                continue
            }
            let hex = String(scalar.value, radix: 16)
            let escape = scalar.value < 0x100
                ? "\\x" + (hex.count < 2 ? "0" + hex : hex)
                : "\\u{" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex + "}"
            out.append(contentsOf: escape.unicodeScalars)
        }
        return String(out)
    }

    static func isControl(_ s: Unicode.Scalar) -> Bool {
        let v = s.value
        return v < 0x20 || v == 0x7F || (0x80...0x9F).contains(v) || (0x202A...0x202E).contains(v)
            || (0x2066...0x2069).contains(v)
    }
}
