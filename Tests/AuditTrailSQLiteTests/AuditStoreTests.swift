@testable import AppStoreClients
@testable import AuditTrail
@testable import AuditTrailSQLite
import Foundation
import GRDB
import AppStoreAPI
import ReceiptCore
import ReceiptSimulator
@testable import ReceiptWatch
import RetryEngine
import Testing
import TestSupport

@Suite struct AuditStoreTests {
    func temporaryPath() -> String {
        TemporaryFolder("audit").appending("audit.sqlite").path
    }

    func ingest(_ name: String, kind: AuditStore.SourceKind = .file, at: Date = Date(timeIntervalSince1970: 1_700_000_000)) throws
        -> AuditStore.Ingest
    {
        let bytes = [UInt8](try Data(contentsOf: ServiceFixture.folder.appendingPathComponent(name)))
        return AuditStore.Ingest(decoded: try ReceiptDecoder().decode(bytes), bytes: bytes, kind: kind, source: name, seenAt: at)
    }

    @Test func recordsOnceWithEverySighting() async throws {
        let store = try AuditStore(path: temporaryPath())
        let first = try await store.record([try ingest("production.b64"), try ingest("sandbox-2023.der")])
        #expect(first.map(\.isNew) == [true, true])
        #expect(first[0].receiptData != nil)
        // The same receipt again, from a log line this time: one row, two sightings.
        let line = "2024-01-01 INFO receipt=" + String(decoding: try Data(contentsOf: ServiceFixture.folder.appendingPathComponent("production.b64")), as: UTF8.self).filter { !$0.isWhitespace }
        let again = try await store.record([
            AuditStore.Ingest(decoded: try ReceiptDecoder().decode(text: line), bytes: Array(line.utf8), kind: .watch, source: "app.log", seenAt: Date(timeIntervalSince1970: 1_700_000_100))
        ])
        #expect(again == [AuditStore.Recorded(id: first[0].id, isNew: false, receiptData: first[0].receiptData)])
        let rows = try await store.history(HistoryQuery(bundleID: "org.getpure.pure-iphone"))
        #expect(rows.count == 1)
        #expect(rows[0].sightings == 2)
        #expect(rows[0].firstSeen == Date(timeIntervalSince1970: 1_700_000_000))
        #expect(rows[0].lastSeen == Date(timeIntervalSince1970: 1_700_000_100))
        #expect(rows[0].purchases.count == 4)
        #expect(rows[0].state == .decoded)
    }

    @Test func historyFilters() async throws {
        let store = try AuditStore(path: temporaryPath())
        _ = try await store.record([try ingest("production.b64"), try ingest("sandbox-2023.der"), try ingest("verify-response.json")])
        await #expect(try store.history(HistoryQuery(transactionID: "340001311555626")).map(\.bundleID) == ["org.getpure.pure-iphone"])
        await #expect(try store.history(HistoryQuery(originalTransactionID: "2000000284164527")).map(\.bundleID) == ["com.hannesoid.PurchasingExperiments"])
        await #expect(try store.history(HistoryQuery(productID: "myapp.2")).map(\.format) == ["verify-response"])
        await #expect(try store.history(HistoryQuery(status: 0)).map(\.format) == ["verify-response"])
        await #expect(try store.history(HistoryQuery(since: Date(timeIntervalSince1970: 1_800_000_000))).isEmpty)
        await #expect(try store.history(HistoryQuery()).count == 3)
        let csv = HistoryRendering.csv(try await store.history(HistoryQuery(transactionID: "340001311555626")))
        #expect(csv.split(separator: "\n").count == 5)
        #expect(csv.contains(",org.getpure.pure.Month,340001311555626,340001196262039,2023-09-19T23:26:23Z,2023-10-19T23:26:23Z,"))
    }

    @Test func resultsAttemptsPendingAndResume() async throws {
        let store = try AuditStore(path: temporaryPath())
        let recorded = try await store.record([try ingest("production.b64"), try ingest("sandbox-2023.der")])
        try await store.markPending(recorded.map(\.id), again: false)
        await #expect(try store.pending().map(\.id) == recorded.map(\.id))
        let outcome = VerificationOutcome(
            status: 0, environment: "Sandbox",
            attempts: [
                VerificationAttempt(url: "http://x/production", endpoint: .production, result: .apple(status: 21007), httpStatus: 200, latencyMilliseconds: 5),
                VerificationAttempt(url: "http://x/sandbox", endpoint: .sandbox, result: .apple(status: 0), httpStatus: 200, latencyMilliseconds: 4),
            ], response: nil, failure: nil)
        try await store.recordResult(recorded[1].id, outcome: outcome, at: Date())
        await #expect(try store.pending().map(\.id) == [recorded[0].id])
        await #expect(try store.counts() == ["pending": 1, "done": 1])
        let row = try await #require(try store.history(HistoryQuery(status: 0)).first)
        #expect(row.bundleID == "com.hannesoid.PurchasingExperiments")
        // A done receipt is not re-queued by a resume, only by an explicit request.
        try await store.markPending([recorded[1].id])
        await #expect(try store.counts()["done"] == 1)
        try await store.markPending([recorded[1].id], again: true)
        await #expect(try store.counts()["pending"] == 2)
    }

    /// A second, read-only connection (a follower dashboard) sees what the writer committed.
    @Test func readOnlyFollowerSeesCommits() async throws {
        let path = temporaryPath()
        let writer = try AuditStore(path: path)
        let follower = try AuditStore(readOnlyPath: path)
        await #expect(try follower.history(HistoryQuery()).isEmpty)
        _ = try await writer.record([try ingest("production.b64")])
        await #expect(try follower.history(HistoryQuery()).count == 1)
        await #expect(throws: (any Error).self) { try await follower.markPending([1]) }
    }

    @Test func migrationsRunOnceAndReopen() async throws {
        let path = temporaryPath()
        do {
            let store = try AuditStore(path: path)
            _ = try await store.record([try ingest("production.b64")])
        }
        let reopened = try AuditStore(path: path)
        await #expect(try reopened.history(HistoryQuery()).count == 1)
        #expect(FileManager.default.fileExists(atPath: path + "-wal"), "WAL mode")
    }

    /// Attempts and failures go in typed and come back typed (codes in the v2 columns).
    @Test func typedOutcomesRoundTrip() async throws {
        let words = Wording("audit-store")
        let store = try AuditStore(path: temporaryPath())
        let recorded = try await store.record([try ingest("production.b64")])
        let tls = TransportFailure(.tls, detail: "handshake failed: certificate verify failed")
        let outcome = VerificationOutcome(
            attempts: [
                VerificationAttempt(url: "https://x/p", result: .http(status: 503), httpStatus: 503, latencyMilliseconds: 3),
                VerificationAttempt(url: "https://x/p", result: .transport(TransportFailure(.timeout, detail: "read")), latencyMilliseconds: 9),
                VerificationAttempt(url: "https://x/p", endpoint: .sandbox, result: .transport(tls), latencyMilliseconds: 2),
            ],
            failure: .final(.transport(tls)))
        try await store.recordResult(recorded[0].id, outcome: outcome, at: Date(timeIntervalSince1970: 1_800_000_000))
        let result = try await #require(try store.results(after: 0).first)
        #expect(result.attempts.map(\.result) == [.http(status: 503), .transport(TransportFailure(.timeout)), .transport(TransportFailure(.tls))])
        #expect(result.attempts.map(\.endpoint) == [.production, .production, .sandbox])
        words.said(result.attempts.last?.result.description)
        #expect(result.failure?.code == .tls)
        words.said(result.failure?.reason)
        #expect(result.failure?.isTemporaryFailure == false)
        await #expect(try store.history(HistoryQuery()).first?.state == .failed)
        words.check()
    }

    /// A v1 database (texts only) is migrated to v2 once: its failures get their codes.
    @Test func version1DatabaseIsMigrated() async throws {
        let path = temporaryPath()
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let queue = try DatabaseQueue(path: path)
        try AuditStore.migrator.migrate(queue, upTo: "v1")
        try await queue.write { db in
            try db.execute(sql: """
                INSERT INTO receipt (id, content_hash, format, first_seen, last_seen, state, failure, verified_at)
                VALUES (1, 'h1', 'pkcs7', 1, 1, 'failed', 'TLS failed: bad certificate', 5),
                       (2, 'h2', 'pkcs7', 1, 1, 'failed', 'gave up after 5 attempts: HTTP 503', 6);
                INSERT INTO attempt (receipt_id, at, url, environment, http_status, error)
                VALUES (1, 5, 'https://x/p', 'Production', NULL, 'TLS failed: bad certificate'),
                       (2, 6, 'https://x/p', 'Production', 503, NULL),
                       (2, 6.1, 'https://x/p', 'Production', NULL, 'the connection was closed without an answer');
                """)
        }
        try queue.close()
        // A read-only follower of a database no v2 writer has opened yet still reads it.
        let follower = try AuditStore(readOnlyPath: path)
        await #expect(try follower.results(after: 0).map { $0.attempts.count } == [1, 2])
        let store = try AuditStore(path: path)
        let results = try await store.results(after: 0)
        #expect(results.map { $0.failure?.code } == [.tls, .retriesExhausted])
        #expect(results[0].attempts.map(\.result) == [.transport(TransportFailure(.tls))])
        #expect(results[0].attempts[0].result.description == "TLS failed: bad certificate")
        #expect(results[1].attempts.map(\.result) == [.http(status: 503), .transport(TransportFailure(.dropped))])
        #expect(results[1].failure?.isTemporaryFailure == true)
    }

    @Test func pruneRemovesOldReceiptsWithTheirRows() async throws {
        let store = try AuditStore(path: temporaryPath())
        _ = try await store.record([try ingest("production.b64", at: Date(timeIntervalSince1970: 1_000_000_000))])
        _ = try await store.record([try ingest("sandbox-2023.der", at: Date(timeIntervalSince1970: 1_700_000_000))])
        await #expect(try store.prune(keepDays: 30, now: Date(timeIntervalSince1970: 1_700_000_000)) == 1)
        await #expect(try store.history(HistoryQuery()).map(\.bundleID) == ["com.hannesoid.PurchasingExperiments"])
        await #expect(try store.history(HistoryQuery(transactionID: "340001311555626")).isEmpty)
    }

    /// Verified through the simulator with a shared secret: the secret's bytes are nowhere in
    /// the database files, the WAL and shared memory included, while the store is open.
    @Test func sharedSecretNeverReachesTheDatabase() async throws {
        let path = temporaryPath()
        let store = try AuditStore(path: path)
        let secret = SharedSecret("9d8c7b6a5f4e3d2c1b0a9d8c7b6a5f4e")
        let simulator = try await VerifyReceiptSimulator.start(SimulatorConfiguration(secret: secret))
        let client = VerifyReceiptClient(endpoints: try simulator.endpoints, secret: secret, retry: wallClockRetry)
        let recorded = try await store.record([try ingest("production.b64"), try ingest("sandbox-2023.der")])
        try await store.markPending(recorded.map(\.id))
        let items = recorded.map { BatchItem(id: Int($0.id), source: "#\($0.id)", receiptData: $0.receiptData!) }
        let summary = await AuditedVerification(store: store, verifier: BatchVerifier(client: client)).run(BatchItems(items)) { _ in }
        #expect(summary.batch.valid == 2)
        await #expect(try store.counts() == ["done": 2])
        try await client.shutdown()
        try await simulator.stop()
        var bytes = Data()
        for suffix in ["", "-wal", "-shm"] {
            if let data = FileManager.default.contents(atPath: path + suffix) { bytes.append(data) }
        }
        #expect(bytes.count > 10_000)
        #expect(bytes.range(of: Data("9d8c7b6a5f4e3d2c1b0a9d8c7b6a5f4e".utf8)) == nil)
        #expect(bytes.range(of: Data("9d8c7b6a".utf8)) == nil)
    }
}
