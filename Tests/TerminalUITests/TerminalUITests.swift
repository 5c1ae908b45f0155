import Foundation
import Testing
@testable import TerminalUI

@Suite struct TerminalUITests {
    @Test func widths() {
        #expect(TextWidth.of("abc") == 3)
        #expect(TextWidth.of("订阅") == 4)
        #expect(TextWidth.of("e\u{301}") == 1)
        #expect(TextWidth.of("🎁") == 2)
        #expect(TextWidth.of("✓") == 1)
        #expect(TextWidth.truncate("订阅高级版", to: 5) == "订阅…")
        #expect(TextWidth.pad("ab", to: 4) == "ab  ")
    }

    @Test func bufferClipsAndHandlesWideCharacters() {
        var b = ScreenBuffer(width: 6, height: 2)
        #expect(b.write("订阅x", x: 0, y: 0) == 5)
        #expect(b.row(at: 0) == "订阅x")
        // A wide character that would straddle the edge becomes a space.
        var c = ScreenBuffer(width: 3, height: 1)
        c.write("a订阅", x: 0, y: 0)
        #expect(c.row(at: 0) == "a订")
        // Off-screen writes are clipped, not crashes.
        b.write("hello", x: -2, y: 1)
        b.write("x", x: 10, y: 5)
        #expect(b.row(at: 1) == "llo")
    }

    @Test func controlCharactersNeverReachACell() {
        var b = ScreenBuffer(width: 40, height: 1)
        b.write("a\u{1B}[2Jb\u{07}\u{9B}\u{202E}c", x: 0, y: 0)
        #expect(b.row(at: 0) == #"a\x1b[2Jb\x07\x9b\u{202e}c"#)
    }

    func events(_ text: String, maximumPaste: Int = 1 << 20) -> (KeyEvent, [UInt32]) {
        var queue = Array(text.unicodeScalars.map(\.value))
        var pushed: [UInt32] = []
        let event = EscapeSequenceParser.parse(
            next: { _ in queue.isEmpty ? nil : queue.removeFirst() }, pushBack: { pushed += $0 }, maximumPaste: maximumPaste)
        return (event, pushed + queue)
    }

    @Test func bracketedPaste() {
        let (event, rest) = events("[200~MIIT\r\nline two\rthree\u{1B}[201~q")
        #expect(event == .paste("MIIT\nline two\nthree"))
        #expect(rest == [UInt32(("q" as Unicode.Scalar).value)])
        #expect(events("[200~abc\u{1B}[201~", maximumPaste: 2).0 == .paste("ab"))
    }

    @Test func escapeAndSequences() {
        #expect(events("").0 == .escape)
        #expect(events("[Z").0 == .backTab)
        #expect(events("[A").0 == .up)
        let (event, rest) = events("x")
        #expect(event == .escape)
        #expect(rest == [UInt32(("x" as Unicode.Scalar).value)])
    }

    @Test func tableLayoutHidesLowPriorityColumnsWhenNarrow() {
        let columns = [
            TableColumn("A", width: 0, priority: 9, minimumWidth: 10), TableColumn("B", width: 10, priority: 1),
            TableColumn("C", width: 10, priority: 5),
        ]
        #expect(Widgets.layout(columns, width: 60) == [38, 10, 10])
        #expect(Widgets.layout(columns, width: 25) == [14, 0, 10])
    }
}
