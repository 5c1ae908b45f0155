import Foundation
import PlainWords

/// What one attempt came to, as its caller judges it.
public enum AttemptStep<Value> {
    /// The end: this is the answer (a success, or a failure no retry would mend).
    case done(Value)
    /// Worth another try: after `retryAfter` seconds when the server asked for a wait (Apple's
    /// `Retry-After`), else after the policy's jittered backoff.
    case retry(retryAfter: Double? = nil)
    /// Try again at once, not counted as a retry (verifyReceipt's hop between environments).
    case again
}

/// Why the retries stopped short of an answer.
public struct RetryGiveUp: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        /// ``RetryPolicy/maximumRetries`` were made.
        case retries
        /// The next wait would pass ``RetryPolicy/totalBudget``.
        case budget
    }

    public let kind: Kind
    /// Attempts made, the first try included.
    public let attempts: Int
    /// The wait that would have come next, in seconds.
    public let nextWait: Double
    /// Seconds since the first try.
    public let used: Double
    /// The policy's total budget, in seconds.
    public let budget: Double

    /// The give-up in words, with the last attempt's `reason`: "gave up after 5 attempts:
    /// REASON", or for the budget "gave up after 3 attempts: REASON (ASKED), which would pass the
    /// 60 s retry budget (12.0 s used)", where `asked` says what the wait was (by default "the
    /// next wait is 8.0 s").
    public func sentence(_ reason: String, asked: String? = nil) -> String {
        switch kind {
        case .retries:
            return "gave up after \(CountNoun.attempt.count(attempts)): \(reason)"
        case .budget:
            let asked = asked ?? "the next wait is \(Self.tenths(nextWait)) s"
            return "gave up after \(CountNoun.attempt.count(attempts)): \(reason) (\(asked)), which would pass the \(Self.whole(budget)) s retry budget (\(Self.tenths(used)) s used)"
        }
    }

    static func tenths(_ value: Double) -> String { String(format: "%.1f", value) }
    static func whole(_ value: Double) -> String { String(format: "%.0f", value) }
}

/// How retries ended.
public enum RetryEnd<Value> {
    case done(Value)
    case gaveUp(RetryGiveUp)
    /// The task was cancelled, before an attempt or during a wait.
    case cancelled
}

/// The one retry engine: the verifyReceipt client, the App Store Server API client and the
/// PostgreSQL store all retry through it. The attempt judges its own result (each has its own
/// table of what is worth retrying); the engine owns the rest: counting retries, the backoff
/// with jitter, a server's `Retry-After`, the total budget and the words of a give-up. Time is
/// the injected clock's, so a test drives it with a ``TestClock`` and never sleeps.
public struct Retrier: Sendable {
    public var policy: RetryPolicy
    public var clock: any Clock<Duration>
    /// A number in 0...1 for the jitter.
    public var random: @Sendable () -> Double

    public init(policy: RetryPolicy, clock: any Clock<Duration> = ContinuousClock(), random: @escaping @Sendable () -> Double = { Double.random(in: 0...1) }) {
        self.policy = policy
        self.clock = clock
        self.random = random
    }

    /// Where a run stands when an attempt starts.
    public struct Attempt: Sendable {
        /// 1 for the first try.
        public let number: Int
        /// Seconds of the budget left.
        public let remaining: Double
    }

    /// Runs `attempt` until it is done, the policy gives up or the task is cancelled.
    /// `willWait` hears each wait (in seconds) before it starts, with the retry's number (1-based).
    public func run<Value, Failure: Error>(
        willWait: (_ seconds: Double, _ retry: Int) -> Void = { _, _ in },
        _ attempt: (Attempt) async throws(Failure) -> AttemptStep<Value>
    ) async throws(Failure) -> RetryEnd<Value> {
        let timing = ClockTiming(clock)
        let elapsed = timing.stopwatch()
        var retries = 0
        var attempts = 0
        while true {
            if Task.isCancelled { return .cancelled }
            attempts += 1
            let used = elapsed().seconds
            let step = try await attempt(Attempt(number: attempts, remaining: policy.totalBudget - used))
            switch step {
            case .done(let value):
                return .done(value)
            case .again:
                continue
            case .retry(let retryAfter):
                retries += 1
                // The wait as the clock will wait it (a `Duration`), so what is reported is what happens.
                let pause = Duration.seconds(policy.delay(forRetry: retries, retryAfter: retryAfter, random: random()))
                let wait = pause.seconds
                let used = elapsed().seconds
                if retries > policy.maximumRetries {
                    return .gaveUp(RetryGiveUp(kind: .retries, attempts: attempts, nextWait: wait, used: used, budget: policy.totalBudget))
                }
                if used + wait > policy.totalBudget {
                    return .gaveUp(RetryGiveUp(kind: .budget, attempts: attempts, nextWait: wait, used: used, budget: policy.totalBudget))
                }
                willWait(wait, retries)
                do { try await timing.sleep(pause) } catch { return .cancelled }
            }
        }
    }
}

/// A clock's two operations the engine uses, taken from an existential `Clock` once (Swift
/// 6.3 cannot open one for a call whose error type is generic).
struct ClockTiming: Sendable {
    /// Starts a stopwatch; the closure it returns reads the time since.
    let stopwatch: @Sendable () -> @Sendable () -> Duration
    let sleep: @Sendable (Duration) async throws -> Void

    init(_ clock: any Clock<Duration>) {
        self = Self.make(clock)
    }

    private init<C: Clock<Duration>>(opened clock: C) {
        stopwatch = {
            let start = clock.now
            return { start.duration(to: clock.now) }
        }
        sleep = { try await clock.sleep(for: $0) }
    }

    private static func make<C: Clock<Duration>>(_ clock: C) -> ClockTiming { ClockTiming(opened: clock) }
}
