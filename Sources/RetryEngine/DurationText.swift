import Foundation

/// Durations as people type them on a command line: `90s`, `5m`, `1h`, `500ms`, `1m30s`, or a
/// bare number of seconds. Used by `--expect-every` and `--retry-schedule`; and a measured
/// `Duration` in seconds or milliseconds, for the figures the benchmarks, the simulator and
/// the receiver's log print.
public enum DurationText {
    /// The duration in seconds, or nil when `text` is not one (empty, negative, an unknown
    /// unit, or too long to be meant).
    public static func parse(_ text: String) -> TimeInterval? {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        guard !trimmed.isEmpty, trimmed.utf8.count <= 32 else { return nil }
        if let plain = Double(trimmed) { return plain.isFinite && plain >= 0 ? plain : nil }
        var total: TimeInterval = 0
        var rest = Substring(trimmed)
        while !rest.isEmpty {
            let number = rest.prefix { $0.isASCII && ($0.isNumber || $0 == ".") }
            guard !number.isEmpty, let value = Double(number) else { return nil }
            rest = rest.dropFirst(number.count)
            let unit = rest.prefix { $0.isASCII && $0.isLetter }
            rest = rest.dropFirst(unit.count)
            switch unit {
            case "ms": total += value / 1000
            case "s": total += value
            case "m": total += value * 60
            case "h": total += value * 3600
            case "d": total += value * 86_400
            default: return nil
            }
        }
        return total.isFinite ? total : nil
    }

    /// `duration` in seconds, as the measured figures print it.
    public static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// `duration` in milliseconds with two decimals (`12.34`), rounded half up from its exact
    /// parts, as the receiver's log line writes `latency_ms`: `String(format:)` went through
    /// Foundation's formatter for every notification (a hundredth of the receiver's time at
    /// 2,000/s). A negative or enormous duration is left to `String(format:)`.
    public static func milliseconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0, attoseconds >= 0, seconds < 1_000_000_000 else {
            return String(format: "%.2f", self.seconds(duration) * 1000)
        }
        // Hundredths of a millisecond are 10^13 attoseconds.
        let hundredths = seconds * 100_000 + (attoseconds + 5_000_000_000_000) / 10_000_000_000_000
        let fraction = hundredths % 100
        return "\(hundredths / 100)." + (fraction < 10 ? "0" : "") + String(fraction)
    }
}
