import Foundation

/// The time the client, its retry loop and the batch read and wait on, injected so tests run
/// without real sleeps (as swift-nio takes an event loop and swift-async-algorithms a `Clock`).
///
/// ``system`` is the wall clock and `Task.sleep`; a test passes a clock whose `sleep` records
/// the wait and moves `now` on at once.
public struct ServiceClock: Sendable {
    /// Wall time: for the retry budget and `Retry-After` dates.
    public var now: @Sendable () -> Date
    /// Waits this many seconds; throws `CancellationError` when the task is cancelled.
    public var sleep: @Sendable (_ seconds: Double) async throws -> Void

    public init(now: @escaping @Sendable () -> Date, sleep: @escaping @Sendable (_ seconds: Double) async throws -> Void) {
        self.now = now
        self.sleep = sleep
    }

    public static let system = ServiceClock(
        now: { Date() },
        sleep: { seconds in
            try await Task.sleep(nanoseconds: UInt64(max(0, seconds) * 1e9))
        })
}
