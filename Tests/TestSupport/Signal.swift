import Synchronization

/// A value a test waits on instead of sleeping: ``wait(until:)`` returns as soon as a condition
/// holds of it, checked at each ``update(_:)`` (never polled, no timer). A wait also returns when
/// its task is cancelled, so a test's time limit ends it.
package final class Signal<Value: Sendable>: Sendable {
    private struct Waiter {
        let condition: @Sendable (Value) -> Bool
        let continuation: CheckedContinuation<Void, Never>
    }

    private let state: Mutex<(value: Value, waiters: [Int: Waiter], nextID: Int)>

    package init(_ value: Value) {
        state = Mutex((value, [:], 0))
    }

    package var value: Value { state.withLock { $0.value } }

    /// Changes the value and wakes every wait whose condition now holds.
    package func update(_ change: (inout Value) -> Void) {
        let ready = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            change(&s.value)
            let value = s.value
            let met = s.waiters.filter { $0.value.condition(value) }
            for id in met.keys { s.waiters[id] = nil }
            return met.values.map(\.continuation)
        }
        for continuation in ready { continuation.resume() }
    }

    /// Returns the value once `condition` holds of it, or the value as it is when the task is
    /// cancelled.
    @discardableResult
    package func wait(until condition: @escaping @Sendable (Value) -> Bool) async -> Value {
        let id = state.withLock { s in
            defer { s.nextID += 1 }
            return s.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                // Under the lock: a cancellation handler that ran before this finds nothing to
                // resume, but has already marked the task cancelled.
                let now = state.withLock { s -> Bool in
                    if condition(s.value) || Task.isCancelled { return true }
                    s.waiters[id] = Waiter(condition: condition, continuation: continuation)
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.continuation.resume()
        }
        return value
    }
}

/// Never returns on its own: throws `CancellationError` once the task is cancelled. What a fake
/// that hangs (a statement never answered, a handler that never ends) waits on; no timer.
package func untilCancelled() async throws {
    await Signal(false).wait { $0 }
    throw CancellationError()
}
