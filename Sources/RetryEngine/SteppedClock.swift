import Synchronization

/// A clock whose time moves only when a test says so (``advance(by:)``): a sleep waits until
/// then, so a test can see what a timer did at each step, where ``TestClock``'s sleeps return at
/// once. Cancelling a sleeper ends its sleep with `CancellationError`.
public final class SteppedClock: Clock, Sendable {
    public typealias Instant = TestClock.Instant

    private struct Sleeper {
        let id: Int
        let deadline: Duration
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: Duration = .zero
        var nextID = 0
        var sleepers: [Sleeper] = []
        /// Sleeps begun so far (a test waits for a timer to be asleep again).
        var sleeps = 0
        var watchers: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
        /// Sleeps cancelled before they were registered.
        var cancelled: Set<Int> = []
    }

    private let state = Mutex(State())

    public init() {}

    public var now: Instant { Instant(offset: state.withLock { $0.now }) }
    public var minimumResolution: Duration { .zero }
    public var elapsed: Duration { state.withLock { $0.now } }

    public func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        let id = state.withLock { s -> Int in
            s.nextID += 1
            return s.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (due, cancelled, woken) = state.withLock { s -> (Bool, Bool, [CheckedContinuation<Void, Never>]) in
                    if s.cancelled.remove(id) != nil { return (false, true, []) }
                    s.sleeps += 1
                    let woken = Self.takeWatchers(&s)
                    if deadline.offset <= s.now { return (true, false, woken) }
                    s.sleepers.append(Sleeper(id: id, deadline: deadline.offset, continuation: continuation))
                    return (false, false, woken)
                }
                for watcher in woken { watcher.resume() }
                if cancelled { continuation.resume(throwing: CancellationError()) } else if due { continuation.resume() }
            }
        } onCancel: {
            let sleeper = state.withLock { s -> Sleeper? in
                guard let index = s.sleepers.firstIndex(where: { $0.id == id }) else {
                    s.cancelled.insert(id)  // not registered yet: its registration ends it
                    return nil
                }
                return s.sleepers.remove(at: index)
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time on and wakes every sleep now due.
    public func advance(by duration: Duration) {
        let due = state.withLock { s -> [Sleeper] in
            s.now += duration
            let due = s.sleepers.filter { $0.deadline <= s.now }
            s.sleepers.removeAll { $0.deadline <= s.now }
            return due
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// Returns once `count` sleeps in all have begun (counted from the clock's making).
    public func sleepsBegun(_ count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { s -> Bool in
                if s.sleeps >= count { return true }
                s.watchers.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    private static func takeWatchers(_ s: inout State) -> [CheckedContinuation<Void, Never>] {
        let ready = s.watchers.filter { $0.count <= s.sleeps }.map(\.continuation)
        s.watchers.removeAll { $0.count <= s.sleeps }
        return ready
    }
}
