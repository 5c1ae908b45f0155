import Testing
@testable import TerminalUI

/// A table wider than its room keeps its frozen column and the columns its priorities keep,
/// and scrolls the others into view one column a step (`Widgets.window`).
@Suite struct ColumnWindowTests {
    let columns = [
        TableColumn("Name", width: 0, priority: 10, minimumWidth: 10, frozen: true), TableColumn("Bee", width: 8, priority: 2),
        TableColumn("Sea", width: 8, priority: 9), TableColumn("Dee", width: 8, priority: 5),
    ]

    @Test func everyColumnFitsAndNothingScrolls() {
        let window = Widgets.window(columns, width: 40, offset: 3)
        #expect(window.order == [0, 1, 2, 3])
        #expect(window.widths == [13, 8, 8, 8])
        #expect(!window.scrolls)
        #expect(window.indicator == "")
    }

    @Test func theFactsFirstThenTheHiddenColumnsToTheRight() {
        let first = Widgets.window(columns, width: 30, offset: 0)
        #expect(first.order == [0, 2, 3])
        #expect(first.widths == [12, 0, 8, 8])
        #expect(first.maxOffset == 1)
        #expect(first.indicator == "1▶")
        #expect(first.x(of: 3) == 22)
        let right = Widgets.window(columns, width: 30, offset: 5)
        #expect(right.offset == 1)
        #expect(right.order == [0, 3, 1])
        #expect(right.indicator == "◀1")
        // A column asked for is scrolled into view.
        #expect(Widgets.window(columns, width: 30, offset: 0, reveal: 1).order == [0, 3, 1])
        #expect(Widgets.window(columns, width: 30, offset: 1, reveal: 2).order == [0, 2, 3])
    }

    @Test func theMarkSitsInTheFrozenHeaderWhenItFits() {
        var buffer = ScreenBuffer(width: 30, height: 2)
        let window = Widgets.table(
            into: &buffer, rect: Rect(x: 0, y: 0, width: 30, height: 2), columns: columns, rowCount: 1, scroll: ScrollState(), sortColumn: nil,
            ascending: true, focused: true, sideways: 1
        ) { _, column in (["a-long-name-here", "b", "c", "d"][column], nil) }
        #expect(window.offset == 1)
        #expect(buffer.text.split(separator: "\n").map(String.init) == ["Name      ◀1 Dee      Bee", "a-long-name… d        b"])
    }

    @Test func truncateHeadKeepsTheEnd() {
        #expect(TextWidth.truncateHead("sandbox-weekly-intro", to: 10) == "…kly-intro")
        #expect(TextWidth.truncateHead("short", to: 10) == "short")
        #expect(TextWidth.dropLeading("abcdef", columns: 2) == "cdef")
    }
}
