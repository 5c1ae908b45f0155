import Synchronization

/// A `Clock` for tests on which no one really waits: a sleep records the duration asked for,
/// moves ``now`` on by exactly that much and returns at once (cancellation still throws). Time
/// otherwise stands still, so what a test asserts cannot depend on how fast the machine is.
/// Like swift-clocks' `ImmediateClock`.
public final class TestClock: Clock, Sendable {
    public struct Instant: InstantProtocol, Sendable {
        public let offset: Duration
        public init(offset: Duration) { self.offset = offset }
        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private let state = Mutex<(now: Duration, waits: [Duration])>((.zero, []))

    public init() {}

    public var now: Instant { Instant(offset: state.withLock { $0.now }) }
    public var minimumResolution: Duration { .zero }
    /// How far time has moved since the clock was made.
    public var elapsed: Duration { state.withLock { $0.now } }
    /// Every wait asked for, in order.
    public var waits: [Duration] { state.withLock { $0.waits } }

    public func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        try Task.checkCancellation()
        state.withLock { s in
            let wait = max(.zero, deadline.offset - s.now)
            s.waits.append(wait)
            s.now += wait
        }
        await Task.yield()
    }

    /// Moves time on without a sleep (time spent working between waits).
    public func advance(by duration: Duration) {
        state.withLock { $0.now += duration }
    }
}
