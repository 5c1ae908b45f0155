import Testing
import UntrustedText

/// Escaping costs time linear in the text, whatever share of it is escaped: anyone can send a
/// notification whose claims are a megabyte of U+202E, and the receiver escapes them before it
/// answers.
@Suite struct LinearEscapingTests {
    static let size = 1 << 20

    /// `size` bytes of `unit` repeated (its UTF-8 form; a unit that does not divide it leaves
    /// the rest short).
    static func text(repeating unit: String, bytes: Int = size) -> String {
        String(repeating: unit, count: bytes / unit.utf8.count)
    }

    /// The least of five runs' durations: the machine's other work only ever adds time, so the
    /// least is the steadiest figure of what the code costs.
    static func least(_ work: () -> Int) -> (Duration, Int) {
        let clock = ContinuousClock()
        var best = Duration.seconds(1_000)
        var result = 0
        for _ in 0..<5 {
            let elapsed = clock.measure { result = work() }
            best = min(best, elapsed)
        }
        return (best, result)
    }

    /// A megabyte of each escaped class (C0, C1, bidi controls, separators) and of invalid
    /// UTF-8 (read as U+FFFD, not escaped) takes at most three times as long as a megabyte of
    /// ASCII that carries one escape (so the ASCII goes through the same two passes). The
    /// bound is a ratio measured in the same run, not a time: the old escaper took 16 s for a
    /// quarter of a million U+202E.
    @Test(arguments: [
        ("C0", "\u{01}"), ("DEL", "\u{7F}"), ("C1", "\u{85}"), ("bidi", "\u{202E}"), ("isolate", "\u{2066}"), ("separator", "\u{2028}"),
        ("mixed", "a\u{1B}b\u{9B}c\u{202E}"),
    ])
    func escapingAClassCostsLinearTime(_ name: String, _ unit: String) {
        let ascii = Self.text(repeating: "a") + "\u{01}"
        let hostile = Self.text(repeating: unit)
        let (asciiTime, asciiCount) = Self.least { SafeText.escaped(ascii).utf8.count }
        let (hostileTime, hostileCount) = Self.least { SafeText.escaped(hostile).utf8.count }
        #expect(asciiCount == Self.size + 4)
        #expect(hostileCount > hostile.utf8.count, "\(name): every scalar is escaped")
        let ratio = Double(hostileTime.components.attoseconds) / 1e18 + Double(hostileTime.components.seconds)
        let base = Double(asciiTime.components.attoseconds) / 1e18 + Double(asciiTime.components.seconds)
        #expect(ratio / base <= 3, "\(name): \(hostileTime) against \(asciiTime) for ASCII")
    }

    @Test func invalidUTF8IsReadAsReplacementCharactersAndNotEscaped() {
        let bytes = [UInt8](repeating: 0xFF, count: Self.size)
        let text = String(decoding: bytes, as: UTF8.self)
        let escaped = SafeText.escaped(text)
        #expect(escaped.unicodeScalars.count == Self.size)
        #expect(escaped.unicodeScalars.allSatisfy { $0 == "\u{FFFD}" })
    }

    /// Exact escapes: `\xNN` below U+0100, `\u{nnnn}` above, everything else as it is.
    @Test func escapesAreExact() {
        #expect(SafeText.escaped("a\u{1B}[2Jb\u{07}\u{9B}\u{202E}c") == #"a\x1b[2Jb\x07\x9b\u{202e}c"#)
        #expect(SafeText.escaped("\u{7F}\u{85}\u{2028}\u{2029}\u{202A}\u{2069}") == #"\x7f\x85\u{2028}\u{2029}\u{202a}\u{2069}"#)
        #expect(SafeText.escaped("é€…👍\u{A0}\u{2027}\u{202F}\u{2065}\u{206A}") == "é€…👍\u{A0}\u{2027}\u{202F}\u{2065}\u{206A}")
        #expect(SafeText.escaped("") == "")
        #expect(SafeText.escaped("\u{0}") == #"\x00"#)
    }

    @Test func csvCellsEscapeDefuseFormulasAndQuote() {
        #expect(SafeText.csvCell("plain") == "plain")
        #expect(SafeText.csvCell("=1+1") == "'=1+1")
        #expect(SafeText.csvCell("-2") == "'-2")
        #expect(SafeText.csvCell("a,b") == "\"a,b\"")
        #expect(SafeText.csvCell("say \"hi\"") == "\"say \"\"hi\"\"\"")
        #expect(SafeText.csvCell("@x,\u{202E}\"") == "\"'@x,\\u{202e}\"\"\"")
    }

    /// A megabyte of quotes and commas is quoted in one pass too.
    @Test func quotingAMegabyteOfQuotesIsLinear() {
        let quotes = String(repeating: "\"", count: Self.size)
        let cell = SafeText.csvCell(quotes)
        #expect(cell.utf8.count == 2 * Self.size + 2)
    }
}
