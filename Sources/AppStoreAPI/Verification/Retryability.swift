import ReceiptCore
import Foundation

/// Whether an attempt's result is worth asking again, and why: the one retryability table of
/// receiptdash (the client's retry loop, the metrics' outage signal and the audit trail all
/// read it).
public enum RetryDecision: Sendable, Hashable {
    case final
    case retry(RetryReason)
}

/// Why an attempt is retried: the result that calls for it.
public struct RetryReason: Sendable, Hashable, CustomStringConvertible {
    public let result: AttemptResult

    public init(_ result: AttemptResult) {
        self.result = result
    }

    public var description: String {
        switch result {
        case .apple(21005, _): "21005 receipt server unavailable"
        case .apple(21009, _): "21009 internal data access error"
        case .apple(21002, _): "21002 malformed or temporary; retried once"
        case .apple(let status, _) where (21100...21199).contains(status): "\(status) internal error, is-retryable 1"
        default: result.description
        }
    }
}

extension AttemptResult {
    /// The table:
    ///
    /// | result | decision |
    /// |---|---|
    /// | status 21005, 21009 | retry |
    /// | status 21100–21199 | retry when `is-retryable` is true |
    /// | status 21002 | retry once (Apple uses it for temporary problems too) |
    /// | other statuses | final |
    /// | HTTP 429, 5xx | retry |
    /// | other HTTP | final |
    /// | timeout, refused, dropped, other network errors | retry |
    /// | TLS, cancelled, not verifyReceipt JSON | final (asking again does not help) |
    public func retryDecision(alreadyRetried21002: Bool = false) -> RetryDecision {
        let retry: Bool
        switch self {
        case .apple(let status, let isRetryable):
            switch status {
            case 21005, 21009: retry = true
            case 21100...21199: retry = isRetryable == true
            case 21002: retry = !alreadyRetried21002
            default: retry = false
            }
        case .http(let code):
            retry = code == 429 || (500...599).contains(code)
        case .transport(let failure):
            switch failure.code {
            case .tls, .cancelled, .invalidResponse: retry = false
            default: retry = true
            }
        }
        return retry ? .retry(RetryReason(self)) : .final
    }

    /// Whether this result is a temporary failure on Apple's side (what the outage signal
    /// counts): retryable by the table, except the once-only 21002. A TLS failure or a
    /// cancellation is not Apple's outage.
    public var isTemporaryFailure: Bool {
        if case .retry = retryDecision(alreadyRetried21002: true) { return true }
        return false
    }
}

/// `Retry-After` (RFC 9110 §10.2.3): delay-seconds or an HTTP date.
public enum RetryAfter {
    /// The wait in seconds `value` asks for at `now` (0 for a date in the past), or nil when it
    /// is neither a number of seconds nor an HTTP date.
    public static func seconds(_ value: String, now: Date) -> Double? {
        let text = value.trimmingCharacters(in: .whitespaces)
        if !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            return Double(text)
        }
        return HTTPDate.parse(text).map { max(0, $0.timeIntervalSince(now)) }
    }
}

/// An HTTP date (RFC 9110 §5.6.7): IMF-fixdate, or the obsolete RFC 850 and asctime forms.
public enum HTTPDate {
    public static func parse(_ value: String) -> Date? {
        let text = value.trimmingCharacters(in: .whitespaces)
        for format in ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"] {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }

    /// `Wed, 26 Nov 2026 16:40:00 GMT` (IMF-fixdate), from the calendar fields: no formatter is
    /// made per call (the simulator dates every answer).
    public static func format(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var t = tm()
        gmtime_r(&seconds, &t)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(days[Int(t.tm_wday)]), \(two(t.tm_mday)) \(months[Int(t.tm_mon)]) \(t.tm_year + 1900) "
            + "\(two(t.tm_hour)):\(two(t.tm_min)):\(two(t.tm_sec)) GMT"
    }
}
