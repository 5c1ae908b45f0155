import Foundation
import ReceiptCore
import RetryEngine

package enum ServiceFixture {
    package static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("ReceiptCoreTests/Fixtures")

    /// Base64 receipt data of a fixture (binary ones encoded).
    package static func receiptData(_ name: String) throws -> String {
        let data = try Data(contentsOf: folder.appendingPathComponent(name))
        if name.hasSuffix(".der") { return data.base64EncodedString() }
        return Data(try Base64Text.decode([UInt8](data))).base64EncodedString()
    }
}

/// Time for the retry loop that never really sleeps: each wait is recorded, exactly as asked,
/// and moves `now` on by as much (a ``TestTime`` behind a ``ServiceClock``).
package final class TestTime: Sendable {
    package static let start = Date(timeIntervalSince1970: 1_800_000_000)
    package let testClock = TestClock()

    package init() {}

    package var clock: ServiceClock { .driven(by: testClock, start: Self.start) }

    /// Every wait asked for, in seconds, in order.
    package var waits: [Double] { testClock.waits.map(\.seconds) }
}

/// Fast retries for tests on a ``TestTime``, where time passes only by the waits asked for, so
/// the 10 s budget is reached only by a `Retry-After` that asks for more.
package let quickRetry = RetryPolicy(maximumRetries: 4, baseDelay: 0.01, maximumDelay: 0.05, totalBudget: 10, jitter: 0.2)

/// Fast retries for tests on the wall clock. The budget is far beyond any test: a CI machine
/// loaded by the whole suite once took over 10 s for one loopback request, and a budget the
/// machine's load can exhaust made a test fail that had nothing to do with it.
package let wallClockRetry = RetryPolicy(maximumRetries: 4, baseDelay: 0.01, maximumDelay: 0.05, totalBudget: 600, jitter: 0.2)
