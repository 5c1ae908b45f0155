import Synchronization

/// A count a test waits on without polling: ``wait(atLeast:)`` returns once ``add(_:)`` has
/// brought it that far.
package final class AwaitedCount: Sendable {
    private let state = Mutex<(count: Int, waiters: [(Int, CheckedContinuation<Void, Never>)])>((0, []))

    package init() {}

    package var value: Int { state.withLock { $0.count } }

    package func add(_ n: Int = 1) {
        let ready = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.count += n
            let count = s.count
            let ready = s.waiters.filter { $0.0 <= count }.map(\.1)
            s.waiters.removeAll { $0.0 <= count }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }

    package func wait(atLeast n: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.count >= n { return true }
                s.waiters.append((n, continuation))
                return false
            }
            if now { continuation.resume() }
        }
    }
}
