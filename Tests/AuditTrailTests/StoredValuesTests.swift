@testable import AuditTrail
@testable import AuditTrailSQLite
import Foundation
import NotificationReceiver
import GRDB
import AppStoreAPI
import ReceiptCore
import ReceiptTrust
import ServiceTestSupport
import Testing
import TestSupport

/// The enums of the audit trail write the very strings the columns always held, and the
/// store's codes print their old names.
@Suite(.timeLimit(.minutes(2))) struct StoredValuesTests {
    func temporaryPath() -> String {
        TemporaryFolder("stored-values").appending("audit.sqlite").path
    }

    func rawColumn(_ path: String, _ sql: String) throws -> String? {
        try DatabaseQueue(path: path).read { try String.fetchOne($0, sql: sql) }
    }

    @Test func receiptStatesAreTheStoredStrings() async throws {
        #expect(ReceiptState.allCases.map(\.rawValue) == ["decoded", "pending", "done", "failed"])
        let path = temporaryPath()
        let store = try AuditStore(path: path)
        let bytes = [UInt8](try Data(contentsOf: ServiceFixture.folder.appendingPathComponent("production.b64")))
        let recorded = try await store.record([
            AuditStore.Ingest(
                decoded: try ReceiptDecoder().decode(bytes), bytes: bytes, kind: .file, source: "production.b64",
                seenAt: Date(timeIntervalSince1970: 1_700_000_000))
        ])
        let id = recorded[0].id
        func state() throws -> String? { try rawColumn(path, "SELECT state FROM receipt WHERE id = \(id)") }
        #expect(try state() == ReceiptState.decoded.rawValue)
        try await store.markPending([id])
        #expect(try state() == ReceiptState.pending.rawValue)
        await #expect(try store.history(HistoryQuery()).first?.state == .pending)
        try await store.recordResult(id, outcome: VerificationOutcome(failure: VerificationFailure(.http, "HTTP 404")), at: Date(timeIntervalSince1970: 1_700_000_100))
        #expect(try state() == ReceiptState.failed.rawValue)
        try await store.markPending([id])
        try await store.recordResult(id, outcome: VerificationOutcome(status: 0, environment: "Production"), at: Date(timeIntervalSince1970: 1_700_000_200))
        #expect(try state() == ReceiptState.done.rawValue)
        await #expect(try store.history(HistoryQuery()).first?.state == .done)
        // Done is not re-queued unless asked again.
        try await store.markPending([id])
        #expect(try state() == ReceiptState.done.rawValue)
        try await store.markPending([id], again: true)
        #expect(try state() == ReceiptState.pending.rawValue)
    }

    /// A state this version never wrote is a read failure, not a guess.
    @Test func anUnknownStoredStateIsAReadFailure() async throws {
        let path = temporaryPath()
        let store = try AuditStore(path: path)
        let bytes = [UInt8](try Data(contentsOf: ServiceFixture.folder.appendingPathComponent("production.b64")))
        _ = try await store.record([AuditStore.Ingest(decoded: try ReceiptDecoder().decode(bytes), bytes: bytes, kind: .file, source: "p", seenAt: Date())])
        try await DatabaseQueue(path: path).write { try $0.execute(sql: "UPDATE receipt SET state = 'archived'") }
        let error = await #expect(throws: AuditError.self) { _ = try await store.history(HistoryQuery()) }
        #expect(error?.code == .readFailed)
    }

    @Test func notificationVersionsAndVerdictsAreTheStoredStrings() async throws {
        #expect(NotificationVersion.v1.rawValue == "1")
        #expect(NotificationVersion.v2.rawValue == "2")
        let path = temporaryPath()
        let store = try NotificationStore(path: path).started()
        let at = Date(timeIntervalSince1970: 1_790_000_000)
        let cases: [(String, NotificationVersion, TrustReport.Verdict)] = [
            ("u-valid", .v2, .valid), ("u-test", .v2, .test), ("v1:ab12", .v1, .unverifiable),
        ]
        for (uuid, version, verdict) in cases {
            _ = try await store.append(NotificationRecord(notificationUUID: uuid, version: version, receivedAt: at, verdict: verdict))
        }
        for (uuid, version, verdict) in cases {
            #expect(try rawColumn(path, "SELECT version FROM notification WHERE notification_uuid = '\(uuid)'") == version.rawValue)
            #expect(try rawColumn(path, "SELECT verdict FROM notification WHERE notification_uuid = '\(uuid)'") == verdict.rawValue)
        }
        let stored = try await store.notifications().sorted { $0.record.notificationUUID < $1.record.notificationUUID }
        #expect(stored.map(\.record.version) == [.v2, .v2, .v1])
        #expect(stored.map(\.record.verdict) == [.test, .valid, .unverifiable])
        await store.close()
    }

    @Test func storeCodesPrintTheirNames() {
        #expect(AuditDatabaseError.Code.invalidLocation.description == "invalid location")
        #expect(AuditError.Code.writeFailed.description == "write failed")
        #expect("\(AuditError.Code.readFailed)" == "read failed")
        #expect(NotificationStoreError.Code.busy.description == "busy")
        #expect(AuditDatabaseError(.refused, "a") == AuditDatabaseError(.refused, "b"))
    }
}
