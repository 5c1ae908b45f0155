import Foundation
import RetryEngine
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

    /// The log line's `latency_ms`: two decimals, rounded half up from the duration's exact
    /// parts, as `String(format: "%.2f")` wrote it for all but exact ties.
    @Test func logLatencyHasTwoDecimals() {
        #expect(DurationText.milliseconds(.zero) == "0.00")
        #expect(DurationText.milliseconds(.microseconds(1_104)) == "1.10")
        #expect(DurationText.milliseconds(.microseconds(1_105)) == "1.11")
        #expect(DurationText.milliseconds(.nanoseconds(9_994_999)) == "9.99")
        #expect(DurationText.milliseconds(.nanoseconds(9_995_000)) == "10.00")
        #expect(DurationText.milliseconds(.microseconds(50)) == "0.05")
        #expect(DurationText.milliseconds(.nanoseconds(999_995_000)) == "1000.00")
        #expect(DurationText.milliseconds(.seconds(12) + .microseconds(345_670)) == "12345.67")
        #expect(DurationText.milliseconds(.milliseconds(-3)) == "-3.00")
        for micro in stride(from: 0, to: 3_000_000, by: 7_919) {
            let duration = Duration.microseconds(micro) + .nanoseconds(1_234)
            #expect(DurationText.milliseconds(duration) == String(format: "%.2f", Double(micro) / 1000 + 0.001234))
        }
    }
}
