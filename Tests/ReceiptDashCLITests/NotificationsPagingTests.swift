import AuditTrail
import Foundation
import NotificationReceiver
import ServiceTestSupport
import Testing
import TestSupport

/// `notifications` reads the table a page at a time (1,000 rows by id) and writes as it reads:
/// across page boundaries nothing is lost or repeated, in every format.
@Suite struct NotificationsPagingTests {
    @Test func everyRowOnceAcrossPages() async throws {
        let folder = TemporaryFolder("paging").url
        defer { try? FileManager.default.removeItem(at: folder) }
        let db = folder.appendingPathComponent("audit.sqlite").path
        let store = try NotificationStore(path: db, keepRefusals: nil).started()
        let total = 2_345
        try await withThrowingTaskGroup(of: Void.self) { group in
            for n in 0..<total {
                group.addTask {
                    _ = try await store.append(
                        NotificationRecord(
                            notificationUUID: String(format: "00000000-0000-4000-8000-%012d", n), version: .v2,
                            notificationType: n % 2 == 0 ? "DID_RENEW" : "REFUND", bundleID: "com.example.app", environment: "Production",
                            receivedAt: Date(timeIntervalSince1970: 1_790_000_000 + Double(n)), verdict: .valid))
                }
            }
            try await group.waitForAll()
        }
        await store.close()
        let cli = InspectCommandTests()
        let json = try await cli.run(["notifications", "--db", db, "--format", "json"])
        #expect(json.status == 0)
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        #expect(rows.count == total)
        #expect(Set(rows.compactMap { $0["notification_uuid"] as? String }).count == total)
        let text = try await cli.run(["notifications", "--db", db, "--type", "REFUND"])
        #expect(text.status == 0)
        #expect(text.stdout.hasSuffix("\n1172 notifications\n"))
        let csv = try await cli.run(["notifications", "--db", db, "--format", "csv"])
        #expect(csv.stdout.split(separator: "\r\n").count == total + 1)
    }
}
