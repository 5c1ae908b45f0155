@testable import AppStoreClients
@testable import AuditTrail
import Foundation
import Logging
@testable import NotificationReceiver
import ReceiptCore
import ReceiptSimulator
import ReceiptTrust
@testable import ReceiptWatch
import RetryEngine
import ServiceTestSupport
import Testing
import TestSupport

/// One trail, two kinds of writer at once: a notification receiver's group commits and a
/// `watch --verify`-style audited verification, on SQLite and on PostgreSQL, with exact counts.
// A time limit: a test that waits for ever fails by name instead of stalling the run.
@Suite(.timeLimit(.minutes(2))) struct SharedTrailTests {
    @Test(arguments: BackendKind.allCases) func receiverAndVerifierWriteTheSameTrailAtOnce(_ kind: BackendKind) async throws {
        try await TestAuditDatabase.with(kind) { database in
            let receiverSide = try await database.open()
            let verifierSide = try await database.open()
            let store = NotificationStore(backend: receiverSide).started()
            let signer = try TestNotifications()
            let anchors = try TrustAnchors.apple.addingTestRoots([signer.pki.rootDER])
            let receiver = NotificationReceiver(
                sink: store, policy: ReceiverPolicy.replaying(anchors: anchors),
                logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
            // 40 receipts: 20 distinct, each twice (two sightings), verified through the simulator.
            let decoder = ReceiptDecoder()
            var ingests: [AuditIngest] = []
            for i in 0..<40 {
                let bytes = Array(SyntheticReceipt.base64(i % 20).utf8)
                ingests.append(AuditIngest(decoded: try decoder.decode(bytes), bytes: bytes, kind: .watch, source: "log-\(i / 20)", seenAt: Date()))
            }
            let simulator = try await VerifyReceiptSimulator.start(SimulatorConfiguration(latency: 0.005))
            let client = VerifyReceiptClient(endpoints: try simulator.endpoints, retry: wallClockRetry)
            let bodies = try (0..<60).map { try signer.body(uuid: String(format: "5e000000-0000-4000-8000-%012d", $0)) }

            async let verified: AuditedSummary = {
                let recorded = try await verifierSide.record(ingests)
                let fresh = recorded.filter(\.isNew)
                try await verifierSide.markPending(fresh.map(\.id))
                let items = fresh.map { BatchItem(id: Int($0.id), source: "#\($0.id)", receiptData: $0.receiptData!) }
                return await AuditedVerification(store: verifierSide, verifier: BatchVerifier(client: client, concurrency: 8))
                    .run(BatchItems(items)) { _ in }
            }()
            async let answered: [Int] = withTaskGroup(of: Int.self) { group in
                for body in bodies + bodies.prefix(10) {  // ten delivered twice
                    group.addTask { await receiver.handle(body: body, declaredLength: nil, truncated: false, peer: "17.0.0.1:443").status }
                }
                var statuses: [Int] = []
                for await status in group { statuses.append(status) }
                return statuses
            }
            let (summary, statuses) = try await (verified, answered)
            try await client.shutdown()
            try await simulator.stop()
            await store.close()

            #expect(statuses.count == 70)
            #expect(Set(statuses) == [200])
            #expect(summary.auditErrors.isEmpty)
            #expect(summary.batch.done == 20)
            let stored = try await verifierSide.notifications()
            #expect(stored.count == 60)
            #expect(stored.map(\.deliveries).reduce(0, +) == 70)
            #expect(try await verifierSide.counts() == ["done": 20])
            let rows = try await verifierSide.history(HistoryQuery(limit: 100))
            #expect(rows.count == 20)
            #expect(Set(rows.map(\.sightings)) == [2])
            #expect(try await verifierSide.attemptsPerReceipt().count == 20)
            await receiverSide.close()
            await verifierSide.close()
        }
    }
}
