@testable import AuditTrailPostgres
import RetryEngine
import Synchronization
import Testing

/// A statement's wait for a connection is bounded on the store's injected clock: with no
/// lease, the attempt is given up after exactly the limit (one wait, no checks in between) and
/// cancelled; an attempt that answers first wins; one leased in time runs on past the limit.
/// No server is needed and no time passes.
@Suite struct PostgresLeaseLimitTests {
    @Test func anAttemptWithNoConnectionIsGivenUpAtTheLimit() async throws {
        let clock = TestClock()
        let cancelled = Seen()
        let error = await #expect(throws: PostgresAuditStore.LeaseTimeout.self) {
            _ = try await PostgresAuditStore.withLeaseLimit(.seconds(2), progress: .init(), clock: clock) { () async throws -> Int in
                let (never, _) = AsyncStream<Void>.makeStream()
                for await _ in never {}
                cancelled.value.withLock { $0 = true }
                throw CancellationError()
            }
        }
        #expect(error?.limit == .seconds(2))
        #expect(clock.waits == [.seconds(2)])
        // The group waited for the attempt: it saw its cancellation before the call returned.
        #expect(cancelled.value.withLock { $0 })
    }

    @Test func anAttemptThatAnswersFirstWins() async throws {
        let clock = SteppedClock()
        let value = try await PostgresAuditStore.withLeaseLimit(.seconds(2), progress: .init(), clock: clock) { 42 }
        #expect(value == 42)
        #expect(clock.elapsed == .zero)
    }

    @Test func anAttemptLeasedInTimeRunsPastTheLimit() async throws {
        let clock = TestClock()
        let progress = PostgresAuditStore.AttemptProgress()
        // Leased before the limit; answers only once the limit has passed.
        #expect(progress.leased())
        let value = try await PostgresAuditStore.withLeaseLimit(.seconds(2), progress: progress, clock: clock) { () async throws -> Int in
            while clock.waits.isEmpty { await Task.yield() }
            return 7
        }
        #expect(value == 7)
        #expect(clock.waits == [.seconds(2)])
    }
}

final class Seen: Sendable {
    let value = Mutex(false)
}

