@testable import AuditTrail
import AppStoreAPI
import Foundation
import NotificationForwarder
import RetryEngine
import ServiceTestSupport
import Synchronization
import Testing
import TestSupport

/// Two receivers' forwarders on one store and one downstream: each delivery is made once, by
/// one of them (on PostgreSQL: `FOR UPDATE SKIP LOCKED` and the lease).
@Suite(.timeLimit(.minutes(5))) struct SharedOutboxTests {
    /// Counts what it receives, by webhook-id, answering 200 after letting other tasks run.
    final class CountingDownstream: ForwardTransport {
        let counts = Mutex<[String: Int]>([:])
        func post(url: String, headers: [(String, String)], body: [UInt8], timeout: Duration) async -> ForwardAnswer {
            await Task.yield()
            let id = headers.first { $0.0 == "webhook-id" }?.1 ?? ""
            counts.withLock { $0[id, default: 0] += 1 }
            return .status(200, retryAfter: nil)
        }
    }

    @Test(arguments: BackendKind.allCases) func twoForwardersDeliverEachNotificationOnce(_ kind: BackendKind) async throws {
        try await TestAuditDatabase.with(kind) { db in
            let first = try await db.open()
            let second = try await db.open()
            let hook = "https://hooks.example.com/apple"
            try await second.registerForwardTargets([hook], types: [], at: Date(timeIntervalSince1970: 900))
            var writes: [NotificationWrite] = []
            for i in 0..<200 {
                let record = NotificationRecord(
                    notificationUUID: "n-\(i)", version: .v2, notificationType: "DID_RENEW", receivedAt: Date(timeIntervalSince1970: 1_000 + Double(i)),
                    verdict: .test, originalTransactionID: "7\(i % 40)")
                writes.append(.notification(record))
            }
            _ = try await first.writeNotifications(writes)
            let downstream = CountingDownstream()
            let clock = ServiceClock(now: { Date(timeIntervalSince1970: 5_000) }, clock: TestClock())
            func forwarder(_ backend: any AuditBackend) throws -> Forwarder {
                Forwarder(
                    outbox: backend, configuration: .init(targets: [try ForwardTarget(hook)], secrets: [], maximumPending: 16),
                    transport: downstream, clock: clock)
            }
            let (a, b) = (try forwarder(first), try forwarder(second))
            func drain(_ f: Forwarder) async throws -> Int {
                var delivered = 0
                var idle = 0
                // Until this one has found nothing three times running.
                while idle < 3 {
                    let round = try await f.round()
                    delivered += round.delivered
                    idle = round.claimed == 0 ? idle + 1 : 0
                }
                return delivered
            }
            async let fromA = drain(a)
            async let fromB = drain(b)
            let (byA, byB) = try await (fromA, fromB)
            #expect(byA + byB == 200)
            let counts = downstream.counts.withLock { $0 }
            #expect(counts.count == 200)
            #expect(counts.values.allSatisfy { $0 == 1 })
            #expect(try await first.outboxSummary() == ForwardOutboxSummary(pending: 0, oldestPendingQueuedAt: nil, delivered: 200, dead: 0))
            await second.close()
            await first.close()
        }
    }

    /// A downstream whose answers come when the test says: each POST waits until the test moves
    /// the shared wall clock on by the downstream's 9 s and lets the waiting answers go. Counts
    /// every POST by webhook-id.
    final class SlowDownstream: ForwardTransport, Sendable {
        let clock = Mutex(Date(timeIntervalSince1970: 5_000))
        let posts = Mutex<[String: Int]>([:])
        /// POSTs made so far.
        let sent = AwaitedCount()
        private let waiting = Mutex<[CheckedContinuation<Void, Never>]>([])

        func post(url: String, headers: [(String, String)], body: [UInt8], timeout: Duration) async -> ForwardAnswer {
            let id = headers.first { $0.0 == "webhook-id" }?.1 ?? ""
            posts.withLock { $0[id, default: 0] += 1 }
            await withCheckedContinuation { continuation in
                waiting.withLock { $0.append(continuation) }
                sent.add()
            }
            return .status(200, retryAfter: nil)
        }

        /// 9 s pass: every waiting POST is answered.
        func answer() -> Int {
            clock.withLock { $0 = $0.addingTimeInterval(9) }
            let answered = waiting.withLock { list in
                defer { list = [] }
                return list
            }
            for continuation in answered { continuation.resume() }
            return answered.count
        }
    }

    /// The fault: two receivers on one trail, a downstream that answers after 9 s, 300
    /// deliveries due. Each receiver has at most its connections' worth in flight, a lease that
    /// outlasts the deadline, and records each result as it comes: 300 POSTs, one each.
    @Test(arguments: BackendKind.allCases) func aSlowDownstreamGetsEachDeliveryOnceFromTwoReceivers(_ kind: BackendKind) async throws {
        try await TestAuditDatabase.with(kind) { db in
            let first = try await db.open()
            let second = try await db.open()
            let hook = "https://hooks.example.com/apple"
            try await first.registerForwardTargets([hook], types: [], at: Date(timeIntervalSince1970: 900))
            _ = try await first.writeNotifications(
                (0..<300).map { i in
                    .notification(
                        NotificationRecord(
                            notificationUUID: "n-\(i)", version: .v2, notificationType: "DID_RENEW",
                            receivedAt: Date(timeIntervalSince1970: 1_000 + Double(i) / 10), verdict: .test, originalTransactionID: "7\(i)"))
                })
            let downstream = SlowDownstream()
            // The wall time is the downstream's; the forwarders' idle waits are real (100 ms).
            let clock = ServiceClock(now: { downstream.clock.withLock { $0 } }, clock: ContinuousClock())
            let delivered = AwaitedCount()
            let outboxes = [WatchedOutbox(first, delivered: delivered), WatchedOutbox(second, delivered: delivered)]
            let runs = try outboxes.map { outbox in
                let forwarder = Forwarder(
                    outbox: outbox, configuration: .init(targets: [try ForwardTarget(hook)], secrets: []), transport: downstream, clock: clock)
                return Task { try await forwarder.run() }
            }
            // Waves: both receivers fill their 32 connections, 9 s pass, the answers are recorded.
            var answered = 0
            let perWave = 2 * Forwarder.Configuration.defaultConnectionsPerTarget
            while answered < 300 {
                await downstream.sent.wait(atLeast: answered + min(perWave, 300 - answered))
                answered += downstream.answer()
                await delivered.wait(atLeast: answered)
            }
            for run in runs { run.cancel() }
            for run in runs { _ = try? await run.value }
            let counts = downstream.posts.withLock { $0 }
            #expect(counts.count == 300)
            #expect(counts.values.reduce(0, +) == 300)
            #expect(answered == 300)
            #expect(try await first.outboxSummary() == ForwardOutboxSummary(pending: 0, oldestPendingQueuedAt: nil, delivered: 300, dead: 0))
            #expect(try await first.outbox(state: .delivered, limit: 300).allSatisfy { $0.attempts == 1 })
            await second.close()
            await first.close()
        }
    }
}
