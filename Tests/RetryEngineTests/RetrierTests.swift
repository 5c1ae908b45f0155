import RetryEngine
import Synchronization
import Testing

/// The one retry engine on the test clock: the waits it takes, when it gives up and why, a
/// server's Retry-After, the hop that is not a retry, cancellation.
@Suite struct RetrierTests {
    /// A policy with no jitter (random 0.5 is the middle of the jitter band).
    static func retrier(_ policy: RetryPolicy, clock: TestClock) -> Retrier {
        Retrier(policy: policy, clock: clock, random: { 0.5 })
    }

    @Test func backoffDoublesToItsCeilingThenGivesUpAfterTheRetries() async {
        let clock = TestClock()
        let heard = Mutex<[Double]>([])
        let end = await Self.retrier(RetryPolicy(maximumRetries: 4, baseDelay: 0.5, maximumDelay: 2, totalBudget: 60), clock: clock)
            .run(willWait: { seconds, _ in heard.withLock { $0.append(seconds) } }) { (_: Retrier.Attempt) async -> AttemptStep<Int> in
                .retry()
            }
        #expect(clock.waits == [.milliseconds(500), .seconds(1), .seconds(2), .seconds(2)])
        #expect(heard.withLock { $0 } == [0.5, 1, 2, 2])
        guard case .gaveUp(let giveUp) = end else {
            Issue.record("expected a give-up, got \(end)")
            return
        }
        #expect(giveUp.kind == .retries)
        #expect(giveUp.attempts == 5)
        #expect(giveUp.used == 5.5)
        #expect(giveUp.sentence("HTTP 503") == "gave up after 5 attempts: HTTP 503")
    }

    @Test func theBudgetStopsAWaitThatWouldPassIt() async {
        let clock = TestClock()
        let end = await Self.retrier(RetryPolicy(maximumRetries: 10, baseDelay: 4, maximumDelay: 8, totalBudget: 10), clock: clock)
            .run { (_: Retrier.Attempt) async -> AttemptStep<Int> in .retry() }
        // 4 s, then 8 s would make 12 s of a 10 s budget.
        #expect(clock.waits == [.seconds(4)])
        guard case .gaveUp(let giveUp) = end else {
            Issue.record("expected a give-up, got \(end)")
            return
        }
        #expect(giveUp.kind == .budget)
        #expect(giveUp.attempts == 2)
        #expect(giveUp.nextWait == 8)
        #expect(
            giveUp.sentence("HTTP 429")
                == "gave up after 2 attempts: HTTP 429 (the next wait is 8.0 s), which would pass the 10 s retry budget (4.0 s used)")
    }

    @Test func aServersRetryAfterIsWaitedAsAsked() async {
        let clock = TestClock()
        let end = await Self.retrier(RetryPolicy(maximumRetries: 4, baseDelay: 0.5, totalBudget: 60), clock: clock)
            .run { (attempt: Retrier.Attempt) async -> AttemptStep<String> in
                attempt.number == 1 ? .retry(retryAfter: 7) : .done("answer after \(attempt.number) attempts, \(Int(attempt.remaining)) s left")
            }
        #expect(clock.waits == [.seconds(7)])
        guard case .done(let value) = end else {
            Issue.record("expected an answer, got \(end)")
            return
        }
        #expect(value == "answer after 2 attempts, 53 s left")
    }

    @Test func againIsAnotherTryThatIsNotARetry() async {
        let clock = TestClock()
        let tries = Mutex(0)
        let end = await Self.retrier(RetryPolicy(maximumRetries: 0), clock: clock).run { (_: Retrier.Attempt) async -> AttemptStep<Int> in
            let n = tries.withLock { $0 += 1; return $0 }
            return n < 3 ? .again : .done(n)
        }
        #expect(clock.waits.isEmpty)
        guard case .done(3) = end else {
            Issue.record("expected the third try's answer, got \(end)")
            return
        }
    }

    @Test func jitterStaysInItsBand() {
        let policy = RetryPolicy(baseDelay: 1, maximumDelay: 8, jitter: 0.5)
        #expect(policy.delay(forRetry: 3, retryAfter: nil, random: 0) == 2)
        #expect(policy.delay(forRetry: 3, retryAfter: nil, random: 1) == 6)
        #expect(policy.delay(forRetry: 9, retryAfter: nil, random: 0.5) == 8)
        #expect(policy.delay(forRetry: 1, retryAfter: -3, random: 0.5) == 0)
    }

    @Test func aCancelledRunEndsBeforeItsNextAttempt() async {
        let clock = TestClock()
        let attempts = Mutex(0)
        let task = Task { () -> Bool in
            let end = await Self.retrier(RetryPolicy(), clock: clock).run { (_: Retrier.Attempt) async -> AttemptStep<Int> in
                attempts.withLock { $0 += 1 }
                withUnsafeCurrentTask { $0?.cancel() }
                return .retry()
            }
            if case .cancelled = end { return true }
            return false
        }
        #expect(await task.value)
        #expect(attempts.withLock { $0 } == 1)
    }
}
