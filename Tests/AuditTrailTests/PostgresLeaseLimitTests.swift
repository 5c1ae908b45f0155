@testable import AuditTrailPostgres
import RetryEngine
import Testing

/// A statement's wait for a connection is bounded on the store's injected clock: with no
/// lease, the attempt is given up after exactly the limit (checked every 250 ms), and it is
/// cancelled; an attempt that answers first wins. No server is needed and no time passes.
@Suite struct PostgresLeaseLimitTests {
    @Test func anAttemptWithNoConnectionIsGivenUpAtTheLimit() async throws {
        let clock = TestClock()
        let (never, _) = AsyncStream<Void>.makeStream()
        let attempt = Task<Int, any Error> {
            for await _ in never {}
            throw CancellationError()
        }
        let outcome = await PostgresAuditStore.race(attempt, leaseLimit: .seconds(2), progress: .init(), clock: clock)
        guard case .failure(let error) = outcome else {
            Issue.record("the attempt was not given up")
            return
        }
        #expect((error as? PostgresAuditStore.LeaseTimeout)?.limit == .seconds(2))
        #expect(clock.waits == Array(repeating: .milliseconds(250), count: 8))
        #expect(attempt.isCancelled)
    }

    @Test func anAttemptThatAnswersFirstWins() async throws {
        let clock = SteppedClock()
        let attempt = Task<Int, any Error> { 42 }
        let outcome = await PostgresAuditStore.race(attempt, leaseLimit: .seconds(2), progress: .init(), clock: clock)
        #expect(try outcome.get() == 42)
        #expect(clock.elapsed == .zero)
    }
}
