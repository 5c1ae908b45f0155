import Foundation

/// When and how often to retry: exponential backoff with jitter, bounded by attempts and by
/// total time. Which results are retried at all is `AttemptResult.retryDecision` (ReceiptCore).
///
/// `Retry-After` from Apple (seconds or an HTTP date) replaces the computed delay and is not
/// capped by ``maximumDelay``: it is honoured as long as it fits in ``totalBudget``. A wait that
/// would pass the budget ends the retries (failure code `retryBudgetExhausted`).
public struct RetryPolicy: Sendable, Hashable {
    /// Most retries after the first try (sandbox/production hops do not count).
    public var maximumRetries: Int
    public var baseDelay: Double
    /// Cap of the computed (backoff) delay; `Retry-After` is not capped by it.
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

    /// The wait before retry number `retry` (1-based): `retryAfter` when the server sent one,
    /// else the jittered backoff.
    public func delay(forRetry retry: Int, retryAfter: Double?, random: Double) -> Double {
        if let retryAfter { return max(0, retryAfter) }
        let raw = min(maximumDelay, baseDelay * pow(2, Double(retry - 1)))
        return max(0, raw * (1 + jitter * (2 * random - 1)))
    }
}
