import ReceiptCore
import Testing

/// Durations as typed for `--expect-every` and `--retry-schedule`.
@Suite struct DurationTextTests {
    @Test func unitsAndSums() {
        #expect(DurationText.parse("90s") == 90)
        #expect(DurationText.parse("10m") == 600)
        #expect(DurationText.parse("1h") == 3600)
        #expect(DurationText.parse("500ms") == 0.5)
        #expect(DurationText.parse("1m30s") == 90)
        #expect(DurationText.parse("2d") == 172_800)
        #expect(DurationText.parse("1.5s") == 1.5)
        #expect(DurationText.parse(" 45 ") == 45)
        #expect(DurationText.parse("1H") == 3600)
    }

    @Test func refusesWhatIsNotADuration() {
        for text in ["", "s", "5 m", "-5s", "5x", "m5", "1e400", "inf", "nan", "1..2s", String(repeating: "1", count: 40) + "s", "５s"] {
            #expect(DurationText.parse(text) == nil, "\(text)")
        }
    }
}
