@testable import AppStoreClients
import Foundation
import ReceiptCore
import ReceiptSimulator
import RetryEngine
import ServiceTestSupport
import Synchronization
import Testing
import TestSupport

@Suite struct BatchVerifierTests {
    /// Under a 30% fault rate every receipt ends in exactly one final state, and counts balance.
    @Test func countsBalanceUnderFaults() async throws {
        let simulator = try await VerifyReceiptSimulator.start(SimulatorConfiguration(faultRate: 0.3, seed: 42))
        let clock = TestTime()
        let client = VerifyReceiptClient(
            endpoints: try simulator.endpoints, retry: RetryPolicy(maximumRetries: 2, baseDelay: 0.005, maximumDelay: 0.02, totalBudget: 600),
            requestTimeout: .seconds(2), clock: clock.clock)
        let items = (0..<120).map { BatchItem(id: $0, source: "r\($0)", receiptData: SyntheticReceipt.base64($0, environment: "ProductionSandbox")) }
        let log = EventLog()
        let summary = await BatchVerifier(client: client, concurrency: 16).run(BatchItems(items)) { log.add($0) }
        try await client.shutdown()
        try await simulator.stop()

        #expect(summary.queued == 120)
        #expect(summary.done + summary.failed == 120)
        var finals: [Int: Int] = [:]
        var queued: Set<Int> = []
        var retries = 0
        for event in log.events {
            switch event {
            case .queued(let id, _): queued.insert(id)
            case .done(let id, _, _), .failed(let id, _, _): finals[id, default: 0] += 1
            case .retrying: retries += 1
            case .sending: break
            }
        }
        #expect(queued.count == 120)
        #expect(finals.count == 120)
        #expect(finals.values.allSatisfy { $0 == 1 }, "every receipt ends exactly once")
        #expect(retries > 0, "a 30% fault rate makes retries")
        #expect(clock.waits.count == retries, "every retry waited on the injected clock, none for real")
        // Synthetic sandbox receipts: 21007 then 0 unless a fault outlasted the retries.
        #expect(summary.byStatus[0, default: 0] + summary.failed + summary.byStatus.filter { $0.key != 0 }.values.reduce(0, +) == 120)
        #expect(summary.valid >= 90)
    }

    @Test func identicalReceiptsAreVerifiedOnce() async throws {
        let simulator = try await VerifyReceiptSimulator.start(SimulatorConfiguration(latency: 0.05))
        let client = VerifyReceiptClient(endpoints: try simulator.endpoints, retry: wallClockRetry)
        let data = try ServiceFixture.receiptData("production.b64")
        let items = (0..<5).map { BatchItem(id: $0, source: "copy \($0)", receiptData: data) }
        let log = EventLog()
        let summary = await BatchVerifier(client: client, concurrency: 5).run(BatchItems(items)) { log.add($0) }
        #expect(summary.done == 5)
        #expect(summary.duplicates == 4)
        #expect(simulator.requestCount == 1)
        let duplicates = log.events.compactMap { event -> Int? in
            if case .done(_, _, let first) = event { return first }
            return nil
        }
        #expect(duplicates.count == 4)
        try await client.shutdown()
        try await simulator.stop()
    }

    @Test func concurrencyIsBounded() async throws {
        let simulator = try await VerifyReceiptSimulator.start(SimulatorConfiguration(latency: 0.05))
        let client = VerifyReceiptClient(endpoints: try simulator.endpoints, retry: wallClockRetry)
        let items = (0..<40).map { BatchItem(id: $0, source: "r\($0)", receiptData: SyntheticReceipt.base64($0)) }
        let tracker = InFlight()
        _ = await BatchVerifier(client: client, concurrency: 4).run(BatchItems(items)) { event in
            switch event {
            case .queued: tracker.change(1)
            case .done, .failed: tracker.change(-1)
            default: break
            }
        }
        #expect(tracker.peak <= 4)
        #expect(tracker.peak >= 2)
        try await client.shutdown()
        try await simulator.stop()
    }

    /// Cancelling a batch: whatever was queued still ends in one final state.
    @Test func cancellationKeepsCountsBalanced() async throws {
        let simulator = try await VerifyReceiptSimulator.start(SimulatorConfiguration(latency: 0.2))
        let client = VerifyReceiptClient(endpoints: try simulator.endpoints, retry: wallClockRetry)
        let items = (0..<100).map { BatchItem(id: $0, source: "r\($0)", receiptData: SyntheticReceipt.base64($0)) }
        let log = EventLog()
        // Cancelled once the first answer is in: 8 at a time at 200 ms each, most are still queued.
        let (answered, signal) = AsyncStream<Void>.makeStream()
        let task = Task {
            await BatchVerifier(client: client, concurrency: 8).run(BatchItems(items)) { event in
                log.add(event)
                if case .done = event { signal.yield() }
            }
        }
        for await _ in answered { break }
        task.cancel()
        let summary = await task.value
        #expect(summary.queued < 100)
        #expect(summary.queued == summary.done + summary.failed)
        try await client.shutdown()
        try await simulator.stop()
    }
}

final class InFlight: Sendable {
    private let state = Mutex<(current: Int, peak: Int)>((0, 0))

    var peak: Int { state.withLock { $0.peak } }

    func change(_ delta: Int) {
        state.withLock { s in
            s.current += delta
            s.peak = max(s.peak, s.current)
        }
    }
}
