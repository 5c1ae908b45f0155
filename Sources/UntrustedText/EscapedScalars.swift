/// The one table of the scalars that untrusted text never carries raw into any output: the
/// text sanitiser (``SafeText``) and every JSON writer (`JSONOutput` in ReceiptCore) decide what
/// to escape from it, so a character added here is escaped everywhere at once.
///
/// - C0 controls (U+0000–U+001F) and DEL (U+007F): a terminal acts on them.
/// - C1 controls (U+0080–U+009F): a terminal that honours 8-bit controls acts on them too
///   (U+009B is CSI).
/// - U+2028 and U+2029, the line and paragraph separators: they break lines in some viewers
///   and end a JavaScript string that embeds the JSON.
/// - The bidirectional embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069): they
///   reorder what the reader sees.
public enum EscapedScalars {
    /// The table: closed ranges of scalar values, ascending and disjoint. Every value is below
    /// U+10000 (the JSON writer relies on it for `\uXXXX`; ``utf8LeadBytes`` is built from it).
    public static let ranges: [ClosedRange<UInt32>] = [
        0x0000...0x001F,  // C0
        0x007F...0x009F,  // DEL and C1
        0x2028...0x202E,  // line and paragraph separators; LRE, RLE, PDF, LRO, RLO
        0x2066...0x2069,  // LRI, RLI, FSI, PDI
    ]

    /// Whether the scalar `value` is escaped.
    public static func contains(_ value: UInt32) -> Bool {
        for range in ranges where range.contains(value) { return true }
        return false
    }

    /// Whether the scalar is escaped.
    public static func contains(_ scalar: Unicode.Scalar) -> Bool { contains(scalar.value) }

    /// 256 flags: `true` for each byte that is the whole UTF-8 form of an escaped scalar (C0,
    /// DEL) or the first byte of the form of one (0xC2 for C1, 0xE2 for the others). A byte
    /// scanner looks each byte up and decodes the scalar only where this says so.
    public static let utf8LeadBytes: [Bool] = {
        var table = [Bool](repeating: false, count: 256)
        for range in ranges {
            for value in range {
                guard let scalar = Unicode.Scalar(value), let lead = UTF8.encode(scalar)?.first else { continue }
                table[Int(lead)] = true
            }
        }
        return table
    }()
}
