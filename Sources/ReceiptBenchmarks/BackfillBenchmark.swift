import AppStoreAPI
import AppStoreClients
import AuditTrail
import AuditTrailSQLite
import Crypto
import Foundation
import NotificationReceiver
import ReceiptCore
import ReceiptSimulator
import ReceiptTrust

extension BenchmarkRun {
    /// `bench --backfill N`: `notifications --reconcile --ingest` of `N` notifications from an
    /// in-process API simulator's Notification History into a fresh SQLite trail (durable:
    /// `synchronous = FULL`): each verified as the receiver verifies a POST, then stored.
    public func benchBackfill(count: Int) async throws {
        let key = P256.Signing.PrivateKey()
        let bundle = LookupBenchmark.bundleID
        let credentials = APICredentials(
            issuerID: "57246542-96fe-1a63-e053-0824d011072a", keyID: "BENCH00001", privateKey: APIPrivateKey(key), bundleID: bundle,
            appAppleID: 1_234_567_890)
        let now = Date()
        let nowMS = Int64(now.timeIntervalSince1970 * 1000)
        let notifications: [[String: JSONValue]] = (0..<count).map { i in
            let id = String(2_000_000_800_000_000 + i)
            let transaction: [String: JSONValue] = [
                "transactionId": .string(id), "originalTransactionId": .string(String(2_000_000_800_000_000 + i / 10)), "bundleId": .string(bundle),
                "productId": .string("com.example.bench.monthly"), "type": .string("Auto-Renewable Subscription"),
                "purchaseDate": .integer(nowMS - Int64(count - i) * 60_000), "expiresDate": .integer(nowMS + 86_400_000),
                "environment": .string("Production"), "appTransactionId": .string(String(7_040_000_000_000_000 + i / 10)),
            ]
            return [
                "notificationType": .string(i % 10 == 0 ? "SUBSCRIBED" : "DID_RENEW"), "notificationUUID": .string(UUID().uuidString.lowercased()),
                "version": .string("2.0"), "signedDate": .integer(nowMS - Int64(count - i) * 60_000),
                "data": .object([
                    "bundleId": .string(bundle), "environment": .string("Production"), "appAppleId": .integer(1_234_567_890),
                    "signedTransactionInfo": .object(transaction),
                ]),
            ]
        }
        let prepared = Date()
        let simulator = try await ServerAPISimulator.start(
            ServerAPIConfiguration(latency: 0, data: ServerAPIData(bundleID: bundle, appAppleID: 1_234_567_890, notifications: notifications), publicKey: key.publicKey))
        print(String(format: "backfill: %d notifications signed by the simulator in %.1f s", count, Date().timeIntervalSince(prepared)))
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("receiptdash-backfill-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let backend = try AuditStore(path: folder.appendingPathComponent("trail.sqlite").path, durable: true)
        let client = AppStoreServerAPIClient(credentials: credentials, hosts: try simulator.hosts)
        let policy = ReceiverPolicy(
            allowedBundleIDs: [bundle], appAppleID: 1_234_567_890, anchors: try TrustAnchors.apple.addingTestRoots([simulator.pki.rootDER]),
            environments: [.production], maximumAge: nil)
        let store = NotificationStore(backend: backend).started()
        let receiver = NotificationReceiver(sink: store, policy: policy)
        let begin = DispatchTime.now().uptimeNanoseconds
        let filter = NotificationHistoryFilter(startDate: now.addingTimeInterval(-Double(count + 10) * 60), endDate: now)
        // As the command does: each page's missing ones taken in as the page arrives.
        var stored = 0
        var ingesting: UInt64 = 0
        let report = await NotificationReconciler(client: client).reconcile(
            received: [], filter: filter, environment: .production,
            onMissing: { missing in
                let from = DispatchTime.now().uptimeNanoseconds
                stored += await HistoryBackfill.ingest(missing, receiver: receiver).filter { $0.outcome == ReceiveOutcome.accepted.rawValue }.count
                ingesting += DispatchTime.now().uptimeNanoseconds - from
            })
        await store.close()
        let end = DispatchTime.now().uptimeNanoseconds
        let held = try await backend.notificationUUIDs().count
        try? await client.shutdown()
        try await simulator.stop()
        let total = Double(end - begin) / 1e9
        let ingest = Double(ingesting) / 1e9
        print(String(
            format: "backfill: %d listed in %d history requests (%.2f s), %d stored and verified in %.2f s: %.0f stored/s overall, %.0f/s ingest alone; the trail holds %d",
            report.sent, report.records.count, total - ingest, stored, ingest, Double(stored) / total, Double(stored) / ingest, held))
    }
}
