/// A clock on which no time passes: a sleep on it ends only when its task is cancelled. Online
/// checks on it never time out, so an answer is never late because the machine is busy.
package struct StillClock: Clock {
    package init() {}

    package var now: ContinuousClock.Instant { ContinuousClock().now }
    package var minimumResolution: Duration { .zero }

    package func sleep(until deadline: ContinuousClock.Instant, tolerance: Duration?) async throws {
        let (never, continuation) = AsyncStream<Never>.makeStream()
        await withTaskCancellationHandler {
            for await _ in never {}
        } onCancel: {
            continuation.finish()
        }
        throw CancellationError()
    }
}
