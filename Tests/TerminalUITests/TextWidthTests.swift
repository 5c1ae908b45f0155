#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Testing
@testable import TerminalUI

/// `TextWidth` must agree with the C library's `wcwidth`, which ncurses uses to place
/// characters: where they differ, the rest of the row is drawn one column off.
@Suite struct TextWidthTests {
    /// `wcwidth` of every code point in `ranges`, under a UTF-8 locale set for this thread only.
    private func libcWidths(_ ranges: [ClosedRange<UInt32>]) throws -> [(UInt32, Int32)] {
        let mask: Int32
        #if canImport(Darwin)
        mask = LC_CTYPE_MASK
        #else
        mask = 1 << LC_CTYPE
        #endif
        let locale = try #require(newlocale(mask, "C.UTF-8", nil), "no C.UTF-8 locale on this machine")
        defer { freelocale(locale) }
        let previous = uselocale(locale)
        defer { uselocale(previous) }
        // The Glibc module hides wcwidth behind _XOPEN_SOURCE: take it from the C library itself.
        let symbol = try #require(dlsym(nil, "wcwidth"))
        let wcwidth = unsafeBitCast(symbol, to: (@convention(c) (wchar_t) -> Int32).self)
        var out: [(UInt32, Int32)] = []
        for range in ranges {
            for value in range where !(0xD800...0xDFFF).contains(value) {
                out.append((value, wcwidth(wchar_t(bitPattern: value))))
            }
        }
        return out
    }

    /// What ncurses gives a scalar: `wcwidth`; a non-printable one (-1) takes one cell, except
    /// controls, which never reach a cell.
    private func expected(_ value: UInt32, _ w: Int32) -> Int {
        if w >= 0 { return Int(w) }
        return value < 0x20 || (0x7F..<0xA0).contains(value) ? 0 : 1
    }

    @Test func everyScalarOfTheBMPAndTheEmojiPlanesMatchesWcwidth() throws {
        let ranges: [ClosedRange<UInt32>] = [0x0...0xFFFF, 0x1F000...0x1FAFF, 0x10000...0x10FFFF]
        var mismatches: [String] = []
        var checked = 0
        for (value, w) in try libcWidths(ranges) {
            checked += 1
            let ours = TextWidth.of(Unicode.Scalar(value)!)
            if ours != expected(value, w) {
                mismatches.append("U+\(String(value, radix: 16, uppercase: true)): ours \(ours), wcwidth \(w)")
            }
        }
        #expect(checked == 0x10F800 + (0x1FAFF - 0x1F000 + 1))
        #expect(mismatches.isEmpty, "\(mismatches.count) differ, e.g. \(mismatches.prefix(12).joined(separator: "; "))")
        #expect(WidthTable.isFromCLibrary)
    }

    @Test func theCharactersThatMisalignedRows() {
        #expect(TextWidth.of("\u{1F321}") == 1)  // 🌡 thermometer: text presentation
        #expect(TextWidth.of("\u{1F336}") == 1)  // 🌶 hot pepper
        #expect(TextWidth.of("\u{2764}\u{FE0F}") == 1)  // ❤️: ncurses advances by the base's width
        #expect(TextWidth.of("\u{1F336}\u{FE0F}") == 1)
        #expect(TextWidth.of("\u{1F600}") == 2)  // 😀 wide
        #expect(TextWidth.of("\u{1F44D}\u{1F3FD}") == 2)  // 👍🏽 base and modifier: one cell, two columns
        #expect(TextWidth.of("\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}") == 2)  // family ZWJ sequence
        #expect(TextWidth.of("\u{1F1FA}\u{1F1F8}") == 1)  // 🇺🇸 regional indicators: wcwidth 1
        #expect(TextWidth.of("\u{1100}\u{1161}") == 2)  // Hangul jamo L + V
        #expect(TextWidth.of("e\u{301}") == 1)
        #expect(TextWidth.of("\u{AD}") == 1)  // soft hyphen: glibc gives it a column
        #expect(TextWidth.of("pro.\u{2764}\u{FE0F}.\u{1F321}.weekly") == 14)
        #expect(TextWidth.of("plain ascii") == 11)
    }

    @Test func aRowWithThoseCharactersFillsExactlyItsColumns() {
        var buffer = ScreenBuffer(width: 12, height: 1)
        let used = buffer.write(TextWidth.pad("a\u{2764}\u{FE0F}\u{1F321}\u{1F600}b", to: 10) + "|", x: 0, y: 0)
        #expect(used == 11)
        #expect(buffer[0, 0].character == "a")
        #expect(buffer[1, 0].width == 1)  // ❤️ one column
        #expect(buffer[2, 0].width == 1)  // 🌡 one column
        #expect(buffer[3, 0].width == 2)  // 😀 two columns, continuation at 4
        #expect(buffer[4, 0].width == 0)
        #expect(buffer[5, 0].character == "b")
        #expect(buffer[10, 0].character == "|")
    }
}
