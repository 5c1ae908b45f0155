import Foundation
import ReceiptCore
@testable import ReceiptService
import Synchronization

enum ServiceFixture {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("ReceiptCoreTests/Fixtures")

    /// Base64 receipt data of a fixture (binary ones encoded).
    static func receiptData(_ name: String) throws -> String {
        let data = try Data(contentsOf: folder.appendingPathComponent(name))
        if name.hasSuffix(".der") { return data.base64EncodedString() }
        return Data(try Base64Text.decode([UInt8](data))).base64EncodedString()
    }
}

/// Collects events from concurrent callbacks.
final class EventLog: Sendable {
    private let storage = Mutex<[BatchEvent]>([])

    func add(_ event: BatchEvent) {
        storage.withLock { $0.append(event) }
    }

    var events: [BatchEvent] { storage.withLock { $0 } }
}

/// A clock for the retry loop that never really sleeps: each wait is recorded, exactly as
/// asked, and moves `now` on by as much.
final class TestClock: Sendable {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)
    private let state = Mutex<(now: Date, waits: [Double])>((TestClock.start, []))

    var clock: ServiceClock {
        ServiceClock(
            now: { self.state.withLock { $0.now } },
            sleep: { seconds in
                try Task.checkCancellation()
                self.state.withLock { s in
                    s.now += seconds
                    s.waits.append(seconds)
                }
            })
    }

    /// Every wait asked for, in order.
    var waits: [Double] { state.withLock { $0.waits } }
}

/// Fast retries for tests on a ``TestClock``, where time passes only by the waits asked for, so
/// the 10 s budget is reached only by a `Retry-After` that asks for more.
let quickRetry = RetryPolicy(maximumRetries: 4, baseDelay: 0.01, maximumDelay: 0.05, totalBudget: 10, jitter: 0.2)

/// Fast retries for tests on the wall clock. The budget is far beyond any test: a CI machine
/// loaded by the whole suite once took over 10 s for one loopback request, and a budget the
/// machine's load can exhaust made a test fail that had nothing to do with it.
let wallClockRetry = RetryPolicy(maximumRetries: 4, baseDelay: 0.01, maximumDelay: 0.05, totalBudget: 600, jitter: 0.2)
