@testable import AuditTrail
import Foundation
import NotificationForwarder
import RetryEngine
import Synchronization
import Testing

/// Two receivers' forwarders on one store and one downstream: each delivery is made once, by
/// one of them (on PostgreSQL: `FOR UPDATE SKIP LOCKED` and the lease).
@Suite(.timeLimit(.minutes(2))) struct SharedOutboxTests {
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
            var writes: [NotificationWrite] = []
            for i in 0..<200 {
                var record = NotificationRecord(
                    notificationUUID: "n-\(i)", version: .v2, notificationType: "DID_RENEW", receivedAt: Date(timeIntervalSince1970: 1_000 + Double(i)),
                    verdict: .test, originalTransactionID: "7\(i % 40)")
                record.forwardTargets = [hook]
                writes.append(.notification(record))
            }
            _ = try await first.writeNotifications(writes)
            let downstream = CountingDownstream()
            let clock = ServiceClock(now: { Date(timeIntervalSince1970: 5_000) }, clock: TestClock())
            func forwarder(_ backend: any AuditBackend) throws -> Forwarder {
                Forwarder(
                    outbox: backend, configuration: .init(targets: [try ForwardTarget(hook)], secret: nil, maximumPending: 16),
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
}
