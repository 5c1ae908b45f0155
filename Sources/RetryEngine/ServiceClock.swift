import Foundation

/// The time a client, its retries and the batch read and wait on, injected so tests run without
/// real sleeps (as swift-nio takes an event loop and swift-async-algorithms a `Clock`).
///
/// Waits and elapsed time come from ``clock``, a Swift `Clock`; ``now`` is the wall time that
/// dates need (a token's `iat`, a `Retry-After` HTTP date). ``system`` is the wall clock and a
/// `ContinuousClock`; a test passes ``driven(by:)`` a ``TestClock``, whose sleeps return at once
/// and move both on by exactly the wait.
public struct ServiceClock: Sendable {
    /// Wall time: for the dates the protocol carries.
    public var now: @Sendable () -> Date
    /// What waits and what measures the retry budget.
    public var clock: any Clock<Duration>

    public init(now: @escaping @Sendable () -> Date, clock: any Clock<Duration>) {
        self.now = now
        self.clock = clock
    }

    /// Waits this many seconds; throws `CancellationError` when the task is cancelled.
    public func sleep(_ seconds: Double) async throws {
        try await clock.sleep(for: .seconds(max(0, seconds)))
    }

    public static let system = ServiceClock(now: { Date() }, clock: ContinuousClock())

    /// Time that passes only when `testClock` is slept on: `now` starts at `start`.
    public static func driven(by testClock: TestClock, start: Date) -> ServiceClock {
        ServiceClock(now: { start + testClock.elapsed.seconds }, clock: testClock)
    }
}

extension Duration {
    /// This duration in seconds, as a `Double`.
    public var seconds: Double {
        let (whole, fraction) = components
        return Double(whole) + Double(fraction) / 1e18
    }
}
