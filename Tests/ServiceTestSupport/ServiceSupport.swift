import AppStoreAPI
import Synchronization

/// Collects events from concurrent callbacks.
package final class EventLog: Sendable {
    private let storage = Mutex<[BatchEvent]>([])

    package init() {}

    package func add(_ event: BatchEvent) {
        storage.withLock { $0.append(event) }
    }

    package var events: [BatchEvent] { storage.withLock { $0 } }
}
