@testable import AuditTrail
@testable import AuditTrailSQLite
import Foundation
import Logging
import AppStoreAPI
import ReceiptCore
import Testing
import TestSupport

/// `db copy`: a SQLite trail moved into another trail (SQLite, or PostgreSQL when a test server
/// runs), with exact counts, twice changing nothing, and a receipt the target already had
/// gaining only what it lacked.
// A time limit: a test that waits for ever fails by name instead of stalling the run.
@Suite(.timeLimit(.minutes(2))) struct AuditCopyTests {
    static let t0 = Date(timeIntervalSince1970: 1_700_000_000)

    func ingest(_ name: String, kind: AuditSourceKind = .file, at: Date = t0) throws -> AuditIngest {
        let bytes = [UInt8](try Data(contentsOf: ServiceFixture.folder.appendingPathComponent(name)))
        return AuditIngest(decoded: try ReceiptDecoder().decode(bytes), bytes: bytes, kind: kind, source: name, seenAt: at)
    }

    /// A source trail: two receipts (one seen twice), one verified with two attempts, one
    /// notification delivered twice and one refusal.
    func source() async throws -> AuditStore {
        let store = try AuditStore(path: TemporaryFolder("copy").appending("audit.sqlite").path)
        let recorded = try await store.record([try ingest("production.b64"), try ingest("sandbox-2023.der")])
        _ = try await store.record([try ingest("production.b64", kind: .watch, at: Self.t0 + 60)])
        try await store.markPending([recorded[1].id], again: false)
        let outcome = VerificationOutcome(
            status: 0, environment: "Sandbox",
            attempts: [
                VerificationAttempt(url: "https://buy.itunes.apple.com/verifyReceipt", endpoint: .production, result: .apple(status: 21007), httpStatus: 200, latencyMilliseconds: 120),
                VerificationAttempt(url: "https://sandbox.itunes.apple.com/verifyReceipt", endpoint: .sandbox, result: .apple(status: 0), httpStatus: 200, latencyMilliseconds: 95),
            ])
        try await store.recordResult(recorded[1].id, outcome: outcome, at: Self.t0 + 5)
        let record = NotificationRecord(
            notificationUUID: "1a7cdc3d-9360-49c3-ae37-0423e4c6e7c7", version: .v2, notificationType: "DID_RENEW", bundleID: "com.example.app",
            environment: "Sandbox", signedDate: Self.t0, receivedAt: Self.t0 + 1, verdict: .valid, transactionID: "2000001024998954")
        _ = try await store.writeNotifications([
            .notification(record), .notification(record),
            .rejection(RejectionRecord(at: Self.t0 + 2, peer: "10.0.0.1:5", reason: "the body is not JSON", httpStatus: 400, bodySize: 4, body: Array("nope".utf8))),
        ])
        try await store.recordAction(
            AuditAction(
                at: Self.t0 + 10, user: "support", action: "extend", environment: "Production", requestID: "ticket-1",
                originalTransactionID: "2000000900000001", transactionID: nil, productID: "pro.monthly",
                requestBody: #"{"extendByDays":7,"extendReasonCode":3,"requestIdentifier":"ticket-1"}"#, httpStatus: 200, apiError: nil,
                result: "success"))
        return store
    }

    func summary(_ store: any AuditBackend) async throws -> [String] {
        let rows = try await store.history(HistoryQuery(limit: 100)).sorted { $0.firstSeen == $1.firstSeen ? $0.format < $1.format : $0.firstSeen < $1.firstSeen }
        var lines = rows.map { r in
            "\(r.format) \(r.bundleID ?? "-") \(r.state) \(r.status.map(String.init) ?? "-") sightings \(r.sightings) purchases \(r.purchases.count)"
        }
        lines += try await store.notifications().map { "notification \($0.record.notificationUUID) \($0.deliveries)" }
        lines += try await store.rejections().map { "refused \($0.httpStatus) \($0.peer ?? "-")" }
        let attempts = try await store.attemptsPerReceipt().values.sorted()
        lines.append("attempts \(attempts)")
        lines += try await store.actions(AuditActionQuery()).map {
            "action \($0.action) \($0.user) \($0.requestID ?? "-") \($0.originalTransactionID ?? "-") \($0.httpStatus.map(String.init) ?? "-") \($0.result) \($0.requestBody ?? "-")"
        }
        return lines
    }

    @Test(arguments: BackendKind.allCases) func copyTwiceGivesTheSameTrail(_ kind: BackendKind) async throws {
        let words = Wording("audit-copy", case: "\(kind)")
        let source = try await source()
        try await TestAuditDatabase.with(kind) { database in
            let target = try #require(try await database.open() as? any AuditTransferring)
            let first = try await AuditCopy.run(from: source, to: target)
            #expect(first.receiptsAdded == 2)
            #expect(first.receiptsMerged == 0)
            #expect(first.sightingsAdded == 3)
            #expect(first.attemptsAdded == 2)
            #expect(first.notificationsAdded == 1)
            #expect(first.rejectionsAdded == 1)
            #expect(first.actionsAdded == 1)
            let expected = try await summary(source)
            #expect(try await summary(target) == expected)
            words.said(expected)

            let second = try await AuditCopy.run(from: source, to: target)
            #expect(second.receiptsAdded == 0)
            #expect(second.receiptsMerged == 2)
            #expect(second.sightingsAdded == 0)
            #expect(second.attemptsAdded == 0)
            #expect(second.notificationsAdded == 0)
            #expect(second.rejectionsAdded == 0)
            #expect(second.actionsAdded == 0)
            #expect(try await summary(target) == expected)

            // The target already knew one receipt from another validator: it gains the sightings
            // it lacked, keeps its own.
            _ = try await target.record([try ingest("production.b64", kind: .stdin, at: Self.t0 + 3600)])
            let third = try await AuditCopy.run(from: source, to: target)
            #expect(third.sightingsAdded == 0)
            let rows = try await target.history(HistoryQuery(bundleID: "org.getpure.pure-iphone"))
            #expect(rows.map(\.sightings) == [3])
            await target.close()
        }
        words.check()
    }
}
