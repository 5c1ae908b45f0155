import Foundation

/// Parses the date spellings Apple uses, without `DateFormatter` (which is slow and
/// locale-sensitive):
///
/// - RFC 3339 as in receipts: `2017-09-11T09:38:34Z`, with fractional seconds
///   (`2023-02-22T14:30:15.123Z`) or an offset (`2020-07-22T18:33:15+0100`, `+01:00`);
/// - verifyReceipt's `2012-04-30 15:05:55 Etc/GMT` (and `America/Los_Angeles`, shifted by the
///   Pacific offset in force that day);
/// - epoch milliseconds as a string or number (`"1335798355868"`).
public enum AppleDate {
    /// Parses an RFC 3339 / ISO 8601 timestamp or a verifyReceipt date string.
    public static func parse<S: StringProtocol>(_ text: S) -> Date? {
        let bytes = Array(text.utf8)
        return parse(bytes: bytes[...])
    }

    /// A JSON number of epoch milliseconds as Apple's libraries read it: an integer number of
    /// milliseconds, any fraction truncated (Xcode signs `1697679936049.7`, which Apple's
    /// libraries read as …36.049Z, not …36.050Z).
    public static func fromEpochMilliseconds(_ value: Double) -> Date {
        Date(timeIntervalSince1970: value.rounded(.towardZero) / 1000)
    }

    /// Parses epoch milliseconds (`"1335798355868"`).
    public static func fromMilliseconds<S: StringProtocol>(_ text: S) -> Date? {
        guard let ms = Int64(text.trimmingCharacters(in: .whitespaces)) else { return nil }
        return Date(timeIntervalSince1970: Double(ms) / 1000)
    }

    static func parse(bytes: ArraySlice<UInt8>) -> Date? {
        var s = bytes
        while let f = s.first, f == 0x20 { s = s.dropFirst() }
        while let l = s.last, l == 0x20 { s = s.dropLast() }
        guard s.count >= 19 else { return nil }
        var i = s.startIndex
        func digits(_ n: Int) -> Int? {
            var v = 0
            for _ in 0..<n {
                guard i < s.endIndex, s[i] >= 0x30, s[i] <= 0x39 else { return nil }
                v = v * 10 + Int(s[i] - 0x30)
                i += 1
            }
            return v
        }
        func expect(_ c: UInt8) -> Bool {
            guard i < s.endIndex, s[i] == c else { return false }
            i += 1
            return true
        }
        guard let year = digits(4), expect(0x2D), let month = digits(2), expect(0x2D), let day = digits(2)
        else { return nil }
        guard i < s.endIndex, s[i] == 0x54 || s[i] == 0x20 || s[i] == 0x74 else { return nil }
        i += 1
        guard let hour = digits(2), expect(0x3A), let minute = digits(2), expect(0x3A), let second = digits(2)
        else { return nil }
        guard (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second <= 60 else {
            return nil
        }
        var fraction = 0.0
        if i < s.endIndex, s[i] == 0x2E || s[i] == 0x2C {
            i += 1
            var scale = 0.1
            var any = false
            while i < s.endIndex, s[i] >= 0x30, s[i] <= 0x39 {
                fraction += Double(s[i] - 0x30) * scale
                scale /= 10
                i += 1
                any = true
            }
            guard any else { return nil }
        }
        var offsetSeconds = 0
        let local = daysFromCivil(year: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60 + second
        if i == s.endIndex {
            offsetSeconds = 0  // no zone: read as UTC, the way Apple's receipts are written
        } else if s[i] == 0x5A || s[i] == 0x7A {  // Z
            i += 1
        } else if s[i] == 0x2B || s[i] == 0x2D {  // +hh[:]mm
            let sign = s[i] == 0x2D ? -1 : 1
            i += 1
            guard let oh = digits(2) else { return nil }
            _ = expect(0x3A)
            let om = digits(2) ?? 0
            offsetSeconds = sign * (oh * 3600 + om * 60)
        } else if s[i] == 0x20 {
            i += 1
            let zone = String(decoding: s[i...], as: UTF8.self)
            i = s.endIndex
            switch zone {
            case "Etc/GMT", "GMT", "UTC", "Etc/UTC": offsetSeconds = 0
            case "America/Los_Angeles":
                offsetSeconds = pacificOffset(utcGuess: local + 8 * 3600)
            default:
                guard let tz = TimeZone(identifier: zone) else { return nil }
                offsetSeconds = tz.secondsFromGMT(for: Date(timeIntervalSince1970: Double(local)))
            }
        } else {
            return nil
        }
        guard i == s.endIndex else { return nil }
        return Date(timeIntervalSince1970: Double(local - offsetSeconds) + fraction)
    }

    /// Days since 1970-01-01 for a proleptic Gregorian date (Howard Hinnant's algorithm).
    package static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    private static func pacificOffset(utcGuess: Int) -> Int {
        let tz = TimeZone(identifier: "America/Los_Angeles")
        return tz?.secondsFromGMT(for: Date(timeIntervalSince1970: Double(utcGuess))) ?? -8 * 3600
    }

    /// The calendar day in UTC (`2027-08-01`): the first ten characters of ``iso8601(_:)``,
    /// made without the whole text (trust reasons write one or two per token).
    public static func calendarDay(_ date: Date) -> String {
        var day = ""
        withISO8601Bytes(date) { day = String(decoding: UnsafeRawBufferPointer(rebasing: $0.prefix(10)), as: UTF8.self) }
        return day
    }

    /// The date alone (`2027-08-01`) when it is exactly midnight UTC, else the whole ISO 8601 text.
    public static func day(_ date: Date) -> String {
        let text = iso8601(date)
        return text.hasSuffix(":00Z") && text.contains("T00:00:00") ? String(text.prefix(10)) : text
    }

    /// Formats a date as ISO 8601 in UTC: `2019-08-15T12:00:00Z`, with milliseconds when the
    /// date has them (`2019-08-15T12:00:00.123Z`).

    public static func iso8601(_ date: Date) -> String {
        var out = [UInt8]()
        out.reserveCapacity(24)
        iso8601(date, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends ``iso8601(_:)``'s text as UTF-8 to `out` (for writers that stream bytes).
    public static func iso8601(_ date: Date, into out: inout [UInt8]) {
        withISO8601Bytes(date) { out.append(contentsOf: $0) }
    }

    /// Calls `body` with ``iso8601(_:)``'s text as UTF-8 bytes (on the stack for years
    /// 0…9999), for writers that copy them into a buffer of their own.
    public static func withISO8601Bytes(_ date: Date, _ body: (UnsafeRawBufferPointer) -> Void) {
        // Dates from hostile input can lie far outside Int64 milliseconds (`"purchaseDate":
        // 1e300` in JSON): clamp, as Int64(_:) traps there (found by fuzz-decode).
        var totalMs = (date.timeIntervalSince1970 * 1000).rounded()
        if !(totalMs > -9.2e18) { totalMs = -9.2e18 } else if !(totalMs < 9.2e18) { totalMs = 9.2e18 }
        let ms = Int64(totalMs)
        var secs = ms / 1000
        var rem = Int(ms % 1000)
        if rem < 0 {
            rem += 1000
            secs -= 1
        }
        var days = Int(secs / 86_400)
        var sod = Int(secs % 86_400)
        if sod < 0 {
            sod += 86_400
            days -= 1
        }
        let (y, m, d) = civilFromDays(days)
        if (0...9999).contains(y) {
            // The common case: fixed width, digits into a buffer on the stack, one append.
            var buffer: (UInt64, UInt64, UInt64) = (0, 0, 0)
            let length = withUnsafeMutableBytes(of: &buffer) { raw -> Int in
                @inline(__always) func digits(_ value: Int, _ width: Int, at end: Int) {
                    var v = value
                    for i in stride(from: end - 1, through: end - width, by: -1) {
                        raw[i] = UInt8(truncatingIfNeeded: 0x30 + v % 10)
                        v /= 10
                    }
                }
                digits(y, 4, at: 4)
                raw[4] = UInt8(ascii: "-")
                digits(m, 2, at: 7)
                raw[7] = UInt8(ascii: "-")
                digits(d, 2, at: 10)
                raw[10] = UInt8(ascii: "T")
                digits(sod / 3600, 2, at: 13)
                raw[13] = UInt8(ascii: ":")
                digits((sod / 60) % 60, 2, at: 16)
                raw[16] = UInt8(ascii: ":")
                digits(sod % 60, 2, at: 19)
                guard rem != 0 else {
                    raw[19] = UInt8(ascii: "Z")
                    return 20
                }
                raw[19] = UInt8(ascii: ".")
                digits(rem, 3, at: 23)
                raw[23] = UInt8(ascii: "Z")
                return 24
            }
            withUnsafeBytes(of: &buffer) { body(UnsafeRawBufferPointer(rebasing: $0[..<length])) }
            return
        }
        var out: [UInt8] = []
        defer { out.withUnsafeBytes(body) }
        // Years outside 0…9999 (hostile input): variable width, a sign when negative.
        // Built by hand: String(format:) goes through Foundation's formatter and is slow.
        func put(_ value: Int, _ width: Int) {
            if value < 0 { out.append(UInt8(ascii: "-")) }
            // Room for `width` digits, or more (years past 9999), filled from the right, in place.
            var v = value.magnitude
            var count = 1
            var rest = v / 10
            while rest > 0 {
                count += 1
                rest /= 10
            }
            count = max(count, width)
            let start = out.count
            out.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: count))
            for i in stride(from: start + count - 1, through: start, by: -1) {
                out[i] = UInt8(ascii: "0") + UInt8(v % 10)
                v /= 10
            }
        }
        put(y, 4)
        out.append(UInt8(ascii: "-"))
        put(m, 2)
        out.append(UInt8(ascii: "-"))
        put(d, 2)
        out.append(UInt8(ascii: "T"))
        put(sod / 3600, 2)
        out.append(UInt8(ascii: ":"))
        put((sod / 60) % 60, 2)
        out.append(UInt8(ascii: ":"))
        put(sod % 60, 2)
        if rem != 0 {
            out.append(UInt8(ascii: "."))
            put(rem, 3)
        }
        out.append(UInt8(ascii: "Z"))
    }

    static func civilFromDays(_ z0: Int) -> (Int, Int, Int) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let y = yoe + era * 400
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (m <= 2 ? y + 1 : y, m, d)
    }
}

extension AppleDate {
    /// What a refusal of a command's time says after the flag's name.
    public static let argumentExpected =
        "must be an ISO 8601 time such as 2026-11-25T00:00:00Z, or a date such as 2026-11-25 (midnight UTC)"

    /// The one reader of the times commands take (`--since`, `--start`, `--end`, `--at`): an
    /// ISO 8601 time (`2026-11-25T08:00:00Z`, as ``parse(_:)`` reads it), or a date alone
    /// (`2026-11-25`), which is that day's midnight UTC. A day the month does not have
    /// (2026-02-30) is refused rather than rolled over.
    public static func parseArgument(_ text: String) -> Date? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let date = parse(trimmed) { return date }
        let parts = trimmed.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            parts.allSatisfy({ $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }),
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
            (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        guard let date = calendar.date(from: DateComponents(year: year, month: month, day: day)), calendar.component(.day, from: date) == day
        else { return nil }
        return date
    }
}
