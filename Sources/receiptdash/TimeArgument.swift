import ArgumentParser
import Foundation
import ReceiptCore

/// The one reader of the times commands take (`--since`, `--start`, `--end`, `--at`): an ISO 8601
/// time (`2026-11-25T08:00:00Z`, as ``AppleDate/parse(_:)`` reads it), or a date alone
/// (`2026-11-25`), which is that day's midnight UTC.
enum TimeArgument {
    /// What a refusal says after the flag's name.
    static let expected = "must be an ISO 8601 time such as 2026-11-25T00:00:00Z, or a date such as 2026-11-25 (midnight UTC)"

    static func parse(_ text: String) -> Date? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let date = AppleDate.parse(trimmed) { return date }
        let parts = trimmed.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            parts.allSatisfy({ $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }),
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
            (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let components = DateComponents(year: year, month: month, day: day)
        // A day the month does not have (2026-02-30) is refused rather than rolled over.
        guard let date = calendar.date(from: components), calendar.component(.day, from: date) == day else { return nil }
        return date
    }

    /// A usage error naming `flag` when `value` is given and is not a time.
    static func check(_ flag: String, _ value: String?) throws {
        if let value, parse(value) == nil { throw ValidationError("\(flag) \(expected).") }
    }
}
