import Foundation
import ReceiptCore
@testable import ReceiptService

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
final class EventLog: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [BatchEvent] = []

    func add(_ event: BatchEvent) {
        lock.lock()
        storage.append(event)
        lock.unlock()
    }

    var events: [BatchEvent] {
        lock.lock()
        defer { lock.unlock() }
        return storage
    }
}

/// Fast retries for tests.
let quickRetry = RetryPolicy(maximumRetries: 4, baseDelay: 0.01, maximumDelay: 0.05, totalBudget: 10, jitter: 0.2)
