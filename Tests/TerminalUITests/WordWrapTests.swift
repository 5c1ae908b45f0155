import Testing
import TerminalUI

/// How long text breaks into screen lines (the Customer view's trust warning, the help page,
/// the detail panes): at a space where one keeps a useful amount, by columns, never lost.
@Suite struct WordWrapTests {
    @Test func breaksAtTheLastUsefulSpaceAndIndentsWhatFollows() {
        #expect(
            WordWrap.lines("⚠ NOT GENUINE: 7 of 7 signed items this story uses are not Apple's", width: 30, indent: 2)
                == ["⚠ NOT GENUINE: 7 of 7 signed", "  items this story uses are", "  not Apple's"])
    }

    @Test func aWordLongerThanTheLineIsCutNotLost() {
        #expect(WordWrap.lines("com.example.receiptdash.pro.monthly", width: 12) == ["com.example.", "receiptdash.", "pro.monthly"])
    }

    @Test func wideCharactersCountTwoColumns() {
        #expect(WordWrap.lines("購入購入購入", width: 5) == ["購入", "購入", "購入"])
    }

    @Test func emptyTextIsOneEmptyLineAndAFloodStopsAtTheLimit() {
        #expect(WordWrap.lines("", width: 10) == [""])
        let lines = WordWrap.lines(String(repeating: "x", count: 100_000), width: 80, limit: 500)
        #expect(lines.count == 500)
        #expect(lines.allSatisfy { $0.count == 80 })
    }
}
