import Foundation

/// When and how often to retry: exponential backoff with jitter, bounded by attempts and by
/// total time. `Retry-After` from Apple wins over the computed delay.
public struct RetryPolicy: Sendable, Hashable {
    /// Most retries after the first try (sandbox/production hops do not count).
    public var maximumRetries: Int
    public var baseDelay: Double
    public var maximumDelay: Double
    /// Give up when the next wait would pass this many seconds since the first try.
    public var totalBudget: Double
    /// ± fraction of each delay, so a fleet does not retry in step.
    public var jitter: Double

    public init(maximumRetries: Int = 4, baseDelay: Double = 0.5, maximumDelay: Double = 8, totalBudget: Double = 60, jitter: Double = 0.2) {
        self.maximumRetries = maximumRetries
        self.baseDelay = baseDelay
        self.maximumDelay = maximumDelay
        self.totalBudget = totalBudget
        self.jitter = jitter
    }

    /// The wait before retry number `retry` (1-based).
    public func delay(forRetry retry: Int, retryAfter: Double?, random: Double) -> Double {
        if let retryAfter { return min(max(0, retryAfter), maximumDelay) }
        let raw = min(maximumDelay, baseDelay * pow(2, Double(retry - 1)))
        return max(0, raw * (1 + jitter * (2 * random - 1)))
    }
}

/// Whether an answer from Apple is worth retrying, and why.
public enum RetryDecision: Sendable, Hashable {
    case final
    case retry(reason: String)

    /// The decision for a verifyReceipt status. 21002 is retried once at most (Apple uses it for
    /// temporary problems too); 21100–21199 only when `is-retryable` says so.
    public static func forStatus(_ status: Int, isRetryable: Bool?, alreadyRetried21002: Bool) -> RetryDecision {
        switch status {
        case 21005: return .retry(reason: "21005 receipt server unavailable")
        case 21009: return .retry(reason: "21009 internal data access error")
        case 21100...21199:
            return isRetryable == true ? .retry(reason: "\(status) internal error, is-retryable 1") : .final
        case 21002: return alreadyRetried21002 ? .final : .retry(reason: "21002 malformed or temporary; retried once")
        default: return .final
        }
    }

    /// The decision for an HTTP status without a usable body.
    public static func forHTTP(_ code: Int) -> RetryDecision {
        code == 429 || (500...599).contains(code) ? .retry(reason: "HTTP \(code)") : .final
    }
}
