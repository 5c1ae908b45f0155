@testable import AppStoreClients
@testable import AuditTrail
@testable import AuditTrailSQLite
@testable import AuditTrailPostgres
import Foundation
import NotificationReceiver
import GRDB
import Logging
import PostgresNIO
import AppStoreAPI
import ReceiptCore
import ReceiptSimulator
@testable import ReceiptWatch
import RetryEngine
import ServiceTestSupport
import Testing
import TestSupport

/// The two audit backends the suite runs on. PostgreSQL runs when `RECEIPTDASH_TEST_POSTGRES_URL`
/// names a server (`Tests/support/postgres.sh start`; CI always starts one) and is recorded as
/// cancelled (skipped) otherwise.
enum BackendKind: String, Sendable, CaseIterable, CustomTestStringConvertible {
    case sqlite, postgres
    var testDescription: String { rawValue }
}

/// A fresh, empty audit database for one test: a SQLite file in a new folder, or a PostgreSQL
/// database created for the test (left for the test server's end), so tests run in parallel.
struct TestAuditDatabase: Sendable {
    let kind: BackendKind
    /// The SQLite path, or the PostgreSQL location of the test's own database.
    let sqlitePath: String?
    let postgres: PostgresLocation?
    let postgresName: String?

    static var postgresURL: String? {
        ProcessInfo.processInfo.environment["RECEIPTDASH_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Makes the database and runs `body` (the database stays until the test server stops).
    static func with<T>(_ kind: BackendKind, _ body: (TestAuditDatabase) async throws -> T) async throws -> T {
        switch kind {
        case .sqlite:
            let path = TemporaryFolder("audit").appending("audit.sqlite").path
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            return try await body(TestAuditDatabase(kind: kind, sqlitePath: path, postgres: nil, postgresName: nil))
        case .postgres:
            guard let url = postgresURL else {
                try Test.cancel("RECEIPTDASH_TEST_POSTGRES_URL is not set (Tests/support/postgres.sh start): PostgreSQL case skipped")
            }
            let admin = try PostgresLocation(url: url, environment: ProcessInfo.processInfo.environment)
            let name = "receiptdash_t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(20)
            _ = try await Self.admin(admin) { connection in
                try await connection.query("CREATE DATABASE \(unescaped: name)", logger: testLogger)
            }
            var location = admin
            location.database = name
            let database = TestAuditDatabase(kind: kind, sqlitePath: nil, postgres: location, postgresName: name)
            // Not dropped after the test: each DROP DATABASE forces an immediate checkpoint
            // that syncs every dirty file of the server (7 s at times under a full run), and
            // those stalled every other test's fsyncs past their limits. The test server's
            // folder, databases and all, goes when `Tests/support/postgres.sh stop` runs.
            return try await body(database)
        }
    }

    /// A plain connection (no pool, no TLS) to `location`.
    static func connect(_ location: PostgresLocation, id: Int) async throws -> PostgresConnection {
        let configuration = PostgresConnection.Configuration(
            host: location.host, port: location.port, username: location.user, password: location.passwordValue,
            database: location.database, tls: .disable)
        return try await PostgresConnection.connect(configuration: configuration, id: id, logger: testLogger)
    }

    /// The test server's database (`RECEIPTDASH_TEST_POSTGRES_URL`); the test is skipped without one.
    static func serverLocation() throws -> PostgresLocation {
        guard let url = postgresURL else {
            try Test.cancel("RECEIPTDASH_TEST_POSTGRES_URL is not set (Tests/support/postgres.sh start): PostgreSQL case skipped")
        }
        return try PostgresLocation(url: url, environment: ProcessInfo.processInfo.environment)
    }

    /// A plain connection to `location` (the admin database, or a test's).
    static func admin<T>(_ location: PostgresLocation, _ body: (PostgresConnection) async throws -> T) async throws -> T {
        let connection = try await connect(location, id: 1)
        do {
            let value = try await body(connection)
            try await connection.close()
            return value
        } catch {
            try? await connection.close()
            throw error
        }
    }

    /// A connection to the test's own PostgreSQL database.
    func connection<T>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await Self.admin(try #require(postgres), body)
    }

    /// Opens the audit store (migrating it unless `readOnly`).
    func open(readOnly: Bool = false) async throws -> any AuditBackend {
        switch kind {
        case .sqlite:
            let path = try #require(sqlitePath)
            return readOnly ? try AuditStore(readOnlyPath: path) : try AuditStore(path: path)
        case .postgres:
            // A connection may take long on a loaded machine (a build beside the suite once took
            // more than the 5 s default): the tests wait for it rather than fail.
            return try await PostgresAuditStore(location: try #require(postgres), readOnly: readOnly, connectTimeout: .seconds(120))
                .runningForTest()
        }
    }

    /// Every byte the database holds, as text (a SQLite file and its WAL; a PostgreSQL
    /// database's rows, each table dumped as JSON).
    func allStoredText() async throws -> Data {
        switch kind {
        case .sqlite:
            let path = try #require(sqlitePath)
            var bytes = Data()
            for suffix in ["", "-wal", "-shm"] {
                if let data = FileManager.default.contents(atPath: path + suffix) { bytes.append(data) }
            }
            return bytes
        case .postgres:
            return try await connection { connection in
                var bytes = Data()
                for table in ["receipt", "sighting", "attempt", "purchase", "api_request", "notification", "notification_rejection"] {
                    for row in try await connection.query("SELECT row_to_json(t)::text FROM \(unescaped: table) t", logger: testLogger).collect() {
                        bytes.append(Data(try row.decode(String.self).utf8))
                    }
                }
                return bytes
            }
        }
    }

    /// Runs SQL on the database behind the store (test set-up only: triggers, raw rows).
    func execute(sqlite: String, postgres statements: [String]) async throws {
        switch kind {
        case .sqlite:
            let queue = try DatabaseQueue(path: try #require(sqlitePath))
            try await queue.write { try $0.execute(sql: sqlite) }
            try queue.close()
        case .postgres:
            try await connection { connection in
                for statement in statements { try await connection.query(PostgresQuery(unsafeSQL: statement), logger: testLogger) }
            }
        }
    }
}

let testLogger = Logger(label: "receiptdash.tests", factory: { _ in SwiftLogNoOpLogHandler() })

/// ``AuditStoreTests`` on ``AuditBackend``, run on SQLite and on PostgreSQL with the same
/// expected values, plus what only several writers on one server can show.
// A time limit: a test that waits for ever fails by name instead of stalling the run.
extension PostgresAuditStore {
    /// The store with its pool running, as its service runs it in a command's group: the
    /// tests open and close stores one by one, so the test owns the task; ``close()`` ends it.
    func runningForTest() -> Self {
        Task { await self.run() }
        return self
    }
}

@Suite(.timeLimit(.minutes(2))) struct AuditBackendTests {
    func ingest(_ name: String, kind: AuditSourceKind = .file, at: Date = Date(timeIntervalSince1970: 1_700_000_000)) throws -> AuditIngest {
        let bytes = [UInt8](try Data(contentsOf: ServiceFixture.folder.appendingPathComponent(name)))
        return AuditIngest(decoded: try ReceiptDecoder().decode(bytes), bytes: bytes, kind: kind, source: name, seenAt: at)
    }

    func logLine(at: Date) throws -> AuditIngest {
        let line = "2024-01-01 INFO receipt="
            + String(decoding: try Data(contentsOf: ServiceFixture.folder.appendingPathComponent("production.b64")), as: UTF8.self).filter { !$0.isWhitespace }
        return AuditIngest(decoded: try ReceiptDecoder().decode(text: line), bytes: Array(line.utf8), kind: .watch, source: "app.log", seenAt: at)
    }

    @Test(arguments: BackendKind.allCases) func recordsOnceWithEverySighting(_ kind: BackendKind) async throws {
        try await TestAuditDatabase.with(kind) { db in
            let store = try await db.open()
            let first = try await store.record([try ingest("production.b64"), try ingest("sandbox-2023.der")])
            #expect(first.map(\.isNew) == [true, true])
            #expect(first[0].receiptData != nil)
            #expect(first[1].id > first[0].id)
            // The same receipt again, from a log line this time: one row, two sightings.
            let again = try await store.record([try logLine(at: Date(timeIntervalSince1970: 1_700_000_100))])
            #expect(again == [AuditRecorded(id: first[0].id, isNew: false, receiptData: first[0].receiptData)])
            let rows = try await store.history(HistoryQuery(bundleID: "org.getpure.pure-iphone"))
            #expect(rows.count == 1)
            #expect(rows[0].sightings == 2)
            #expect(rows[0].seen.map(\.kind) == ["file", "watch"])
            #expect(rows[0].seen.map(\.source) == ["production.b64", "app.log"])
            #expect(rows[0].firstSeen == Date(timeIntervalSince1970: 1_700_000_000))
            #expect(rows[0].lastSeen == Date(timeIntervalSince1970: 1_700_000_100))
            #expect(rows[0].purchases.count == 4)
            #expect(rows[0].state == .decoded)
            // One batch holding one receipt twice: the first is new, the second a sighting.
            let twice = try await store.record([
                try ingest("verify-response.json", at: Date(timeIntervalSince1970: 1_700_000_300)),
                try ingest("verify-response.json", at: Date(timeIntervalSince1970: 1_700_000_200)),
            ])
            #expect(twice.map(\.isNew) == [true, false])
            #expect(twice[0].id == twice[1].id)
            let response = try #require(try await store.history(HistoryQuery(productID: "myapp.2")).first)
            #expect(response.sightings == 2)
            #expect(response.firstSeen == Date(timeIntervalSince1970: 1_700_000_300))
            #expect(response.lastSeen == Date(timeIntervalSince1970: 1_700_000_300))
            await store.close()
        }
    }

    /// Today's payload fields of a purchase are kept, and `history --format json` shows them.
    @Test(arguments: BackendKind.allCases) func todaysPurchaseFieldsRoundTrip(_ kind: BackendKind) async throws {
        try await TestAuditDatabase.with(kind) { db in
            let store = try await db.open()
            func b64(_ text: String) -> String {
                Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                    .replacingOccurrences(of: "=", with: "")
            }
            let payload = JSONValue.object([
                "transactionId": .string("2000000900000013"), "originalTransactionId": .string("2000000900000010"),
                "productId": .string("com.example.monthly"), "bundleId": .string("com.example.app"), "type": .string("Auto-Renewable Subscription"),
                "purchaseDate": .integer(1_709_251_200_000), "expiresDate": .integer(1_711_929_600_000), "environment": .string("Production"),
                "revocationDate": .integer(1_710_115_200_000), "revocationType": .string("REFUND_PRORATED"), "revocationPercentage": .integer(40000),
                "offerType": .integer(4), "offerDiscountType": .string("PAY_AS_YOU_GO"), "offerPeriod": .string("P1M"),
                "appTransactionId": .string("704289572311094157"), "billingPlanType": .string("MONTHLY"),
                "commitmentInfo": .object(["billingPeriodNumber": .integer(3), "totalBillingPeriods": .integer(12)]),
            ]).compactJSON
            let token = b64(#"{"alg":"ES256","x5c":["AA"]}"#) + "." + b64(payload) + "." + b64("not a signature")
            let ingest = AuditIngest(
                decoded: try ReceiptDecoder().decode(text: token), bytes: Array(token.utf8), kind: .file, source: "new.jws",
                seenAt: Date(timeIntervalSince1970: 1_700_000_000))
            _ = try await store.record([ingest])
            let row = try #require(try await store.history(HistoryQuery(transactionID: "2000000900000013")).first)
            let p = try #require(row.purchases.first)
            #expect(p.revocationType == "REFUND_PRORATED")
            #expect(p.revocationPercentage == 40000)
            #expect(p.offerType == 4)
            #expect(p.offerDiscountType == "PAY_AS_YOU_GO")
            #expect(p.offerPeriod == "P1M")
            #expect(p.appTransactionID == "704289572311094157")
            #expect(p.billingPlanType == "MONTHLY")
            #expect(p.commitmentInfo == CommitmentInfo(billingPeriodNumber: 3, totalBillingPeriods: 12))
            let json = try #require(HistoryRendering.json([row]).array?.first?.object?["in_app"]?.array?.first?.object)
            #expect(json["revocation_type"] == .string("REFUND_PRORATED"))
            #expect(json["revocation_percentage"] == .integer(40000))
            #expect(json["app_transaction_id"] == .string("704289572311094157"))
            #expect(json["commitment_info"] == .object(["billing_period_number": .integer(3), "total_billing_periods": .integer(12)]))
            #expect(try await store.history(HistoryQuery(transactionID: "2000000900000013")).count == 1)
            await store.close()
        }
    }

    /// A v7 SQLite trail (before today's purchase columns) opened read-only, as `history` and
    /// `db copy --from` open it, still reads: the new columns read as absent.
    @Test func aReadOnlyVersion7DatabaseIsStillRead() async throws {
        try await TestAuditDatabase.with(.sqlite) { db in
            let store = try await db.open()
            _ = try await store.record([try ingest("production.b64")])
            await store.close()
            // v8's eight columns and v10's three, with their indexes and v10's notification columns.
            let columns = PurchaseField.audited.suffix(11).map { "ALTER TABLE purchase DROP COLUMN \($0.name);" }.joined(separator: " ")
            try await db.execute(
                sqlite: """
                    DROP INDEX purchase_app_transaction; DROP INDEX purchase_app_account_token; \(columns)
                    DROP INDEX notification_app_account_token; DROP INDEX notification_app_transaction;
                    ALTER TABLE notification DROP COLUMN app_account_token; ALTER TABLE notification DROP COLUMN app_transaction_id;
                    DELETE FROM grdb_migrations WHERE identifier IN ('v8', 'v9', 'v10');
                    """, postgres: [])
            let reader = try #require(try await db.open(readOnly: true) as? AuditStore)
            let rows = try await reader.history(HistoryQuery(bundleID: "org.getpure.pure-iphone"))
            #expect(rows.first?.purchases.count == 4)
            #expect(rows.first?.purchases.allSatisfy { $0.revocationType == nil && $0.commitmentInfo == nil } == true)
            let exported = try await reader.exportReceipts(after: 0, limit: 10)
            #expect(exported.first?.receipt.purchases.count == 4)
            // `customer --offline` reads it too: nothing is found by a token it never kept.
            #expect(try await reader.customers(.appAccountToken("7e3fb20b-4cdb-47cc-936d-99d65f608138")).isEmpty)
            #expect(try await reader.customers(.transactionID("340001237736590")).first?.purchases.count == 4)
            await reader.close()
        }
    }

    @Test(arguments: BackendKind.allCases) func historyFilters(_ kind: BackendKind) async throws {
        try await TestAuditDatabase.with(kind) { db in
            let store = try await db.open()
            _ = try await store.record([try ingest("production.b64"), try ingest("sandbox-2023.der"), try ingest("verify-response.json")])
            #expect(try await store.history(HistoryQuery(transactionID: "340001311555626")).map(\.bundleID) == ["org.getpure.pure-iphone"])
            #expect(
                try await store.history(HistoryQuery(originalTransactionID: "2000000284164527")).map(\.bundleID) == [
                    "com.hannesoid.PurchasingExperiments"
                ])
            #expect(try await store.history(HistoryQuery(productID: "myapp.2")).map(\.format) == ["verify-response"])
            #expect(try await store.history(HistoryQuery(status: 0)).map(\.format) == ["verify-response"])
            #expect(try await store.history(HistoryQuery(since: Date(timeIntervalSince1970: 1_800_000_000))).isEmpty)
            #expect(try await store.history(HistoryQuery()).count == 3)
            #expect(try await store.history(HistoryQuery(limit: 2)).count == 2)
            let csv = HistoryRendering.csv(try await store.history(HistoryQuery(transactionID: "340001311555626")))
            #expect(csv.split(separator: "\n").count == 5)
            #expect(csv.contains(",org.getpure.pure.Month,340001311555626,340001196262039,2023-09-19T23:26:23Z,2023-10-19T23:26:23Z,"))
            await store.close()
        }
    }

    /// The whole history of the three fixtures is the same on both backends, field by field.
    @Test func historyIsTheSameOnBothBackends() async throws {
        let inputs = [try ingest("production.b64"), try ingest("sandbox-2023.der"), try ingest("verify-response.json")]
        var histories: [[HistoryRow]] = []
        for kind in BackendKind.allCases {
            if kind == .postgres, TestAuditDatabase.postgresURL == nil { continue }
            histories.append(
                try await TestAuditDatabase.with(kind) { db in
                    let store = try await db.open()
                    _ = try await store.record(inputs)
                    let history = try await store.history(HistoryQuery())
                    await store.close()
                    return history
                })
        }
        if histories.count == 2 {
            #expect(histories[0] == histories[1])
            #expect(HistoryRendering.csv(histories[0]) == HistoryRendering.csv(histories[1]))
        }
    }

    @Test(arguments: BackendKind.allCases) func resultsAttemptsPendingAndResume(_ kind: BackendKind) async throws {
        try await TestAuditDatabase.with(kind) { db in
            let store = try await db.open()
            let recorded = try await store.record([try ingest("production.b64"), try ingest("sandbox-2023.der")])
            try await store.markPending(recorded.map(\.id))
            #expect(try await store.pending().map(\.id) == recorded.map(\.id))
            #expect(try await store.pending().map(\.receiptData) == recorded.map(\.receiptData))
            let outcome = VerificationOutcome(
                status: 0, environment: "Sandbox",
                attempts: [
                    VerificationAttempt(
                        url: "http://x/production", endpoint: .production, result: .apple(status: 21007), httpStatus: 200, latencyMilliseconds: 5),
                    VerificationAttempt(url: "http://x/sandbox", endpoint: .sandbox, result: .apple(status: 0), httpStatus: 200, latencyMilliseconds: 4),
                ], response: nil, failure: nil)
            try await store.recordResult(recorded[1].id, outcome: outcome, at: Date(timeIntervalSince1970: 1_750_000_000))
            #expect(try await store.pending().map(\.id) == [recorded[0].id])
            #expect(try await store.counts() == ["pending": 1, "done": 1])
            #expect(try await store.attemptsPerReceipt() == [recorded[1].id: 2])
            let row = try #require(try await store.history(HistoryQuery(status: 0)).first)
            #expect(row.bundleID == "com.hannesoid.PurchasingExperiments")
            let result = try #require(try await store.results(after: 0).first)
            #expect(result.id == recorded[1].id)
            #expect(result.status == 0)
            #expect(result.environment == "Sandbox")
            #expect(result.failure == nil)
            #expect(result.verifiedAt == 1_750_000_000)
            #expect(result.attempts.map(\.result) == [.apple(status: 21007), .apple(status: 0)])
            #expect(result.attempts.map(\.endpoint) == [.production, .sandbox])
            #expect(result.attempts.map(\.latencyMilliseconds) == [5, 4])
            #expect(try await store.results(after: 1_750_000_000).isEmpty)
            // A done receipt is not re-queued by a resume, only by an explicit request.
            try await store.markPending([recorded[1].id])
            #expect(try await store.counts()["done"] == 1)
            try await store.markPending([recorded[1].id], again: true)
            #expect(try await store.counts()["pending"] == 2)
            #expect(try await store.receiptData(recorded[0].id) == recorded[0].receiptData)
            #expect(try await store.receiptData(999_999) == nil)
            await store.close()
        }
    }

    /// A second, read-only store (a follower dashboard) sees what the writer committed, and
    /// cannot write.
    @Test(arguments: BackendKind.allCases) func readOnlyFollowerSeesCommits(_ kind: BackendKind) async throws {
        try await TestAuditDatabase.with(kind) { db in
            let writer = try await db.open()
            let follower = try await db.open(readOnly: true)
            #expect(try await follower.history(HistoryQuery()).isEmpty)
            #expect(try await follower.receipts(after: 0).isEmpty)
            let recorded = try await writer.record([try ingest("production.b64")])
            #expect(try await follower.history(HistoryQuery()).count == 1)
            let feed = try await follower.receipts(after: 0)
            #expect(feed.map(\.id) == recorded.map(\.id))
            #expect(feed.map(\.source) == ["production.b64"])
            #expect(feed.map(\.receiptData) == recorded.map(\.receiptData))
            #expect(try await follower.receipts(after: recorded[0].id).isEmpty)
            await #expect(throws: (any Error).self) { try await follower.markPending([recorded[0].id]) }
            #expect(await follower.isWritable() == false)
            #expect(await writer.isWritable() == true)
            await follower.close()
            await writer.close()
        }
    }

    @Test(arguments: BackendKind.allCases) func migrationsRunOnceAndReopen(_ kind: BackendKind) async throws {
        try await TestAuditDatabase.with(kind) { db in
            let store = try await db.open()
            _ = try await store.record([try ingest("production.b64")])
            await store.close()
            let reopened = try await db.open()
            #expect(try await reopened.history(HistoryQuery()).count == 1)
            await reopened.close()
            switch kind {
            case .sqlite:
                #expect(FileManager.default.fileExists(atPath: try #require(db.sqlitePath) + "-wal"), "WAL mode")
            case .postgres:
                let names = try await db.connection { connection in
                    try await connection.query("SELECT name FROM receiptdash_migration ORDER BY applied_at, name", logger: testLogger).collect()
                        .map { try $0.decode(String.self) }
                }
                #expect(names == (["pg1-follow"] + (1...15).map { "v\($0)" }).sorted())
                #expect(Set(names) == Set(PostgresAuditSchema.names))
            }
        }
    }

    /// Two processes opening an empty database at once migrate it once.
    @Test func concurrentOpensMigrateOnce() async throws {
        try await TestAuditDatabase.with(.postgres) { db in
            let stores = try await withThrowingTaskGroup(of: (any AuditBackend).self) { group in
                for _ in 0..<4 { group.addTask { try await db.open() } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(stores.count == 4)
            let count = try await db.connection { connection in
                try await connection.query("SELECT count(*) FROM receiptdash_migration", logger: testLogger).collect().first?.decode(Int.self)
            }
            #expect(count == PostgresAuditSchema.names.count)
            for store in stores { await store.close() }
        }
    }

    /// A read-only open of an empty database fails clearly, and never creates anything.
    @Test func readOnlyOpenOfAnEmptyDatabaseFails() async throws {
        let words = Wording("audit-backend", matching: Wording.runVariables)
        try await TestAuditDatabase.with(.postgres) { db in
            let error = await #expect(throws: AuditDatabaseError.self) { _ = try await db.open(readOnly: true) }
            #expect(error?.code == .unavailable)
            words.said(error?.reason)
            let tables = try await db.connection { connection in
                try await connection.query("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'", logger: testLogger).collect()
                    .first?.decode(Int.self)
            }
            #expect(tables == 0)
        }
        words.check()
    }

    /// Attempts and failures go in typed and come back typed.
    @Test(arguments: BackendKind.allCases) func typedOutcomesRoundTrip(_ kind: BackendKind) async throws {
        let words = Wording("audit-backend", case: "\(kind)")
        try await TestAuditDatabase.with(kind) { db in
            let store = try await db.open()
            let recorded = try await store.record([try ingest("production.b64")])
            let tls = TransportFailure(.tls, detail: "handshake failed: certificate verify failed")
            let outcome = VerificationOutcome(
                attempts: [
                    VerificationAttempt(url: "https://x/p", result: .http(status: 503), httpStatus: 503, latencyMilliseconds: 3),
                    VerificationAttempt(url: "https://x/p", result: .transport(TransportFailure(.timeout, detail: "read")), latencyMilliseconds: 9),
                    VerificationAttempt(url: "https://x/p", endpoint: .sandbox, result: .transport(tls), latencyMilliseconds: 2),
                    VerificationAttempt(url: "https://x/p", result: .apple(status: 21199, isRetryable: true), httpStatus: 200, latencyMilliseconds: 1),
                ],
                failure: .final(.transport(tls)))
            try await store.recordResult(recorded[0].id, outcome: outcome, at: Date(timeIntervalSince1970: 1_800_000_000))
            let result = try #require(try await store.results(after: 0).first)
            #expect(
                result.attempts.map(\.result) == [
                    .http(status: 503), .transport(TransportFailure(.timeout)), .transport(TransportFailure(.tls)),
                    .apple(status: 21199, isRetryable: true),
                ])
            #expect(result.attempts.map(\.endpoint) == [.production, .production, .sandbox, .production])
            words.said(result.attempts[2].result.description)
            #expect(result.attempts.map(\.httpStatus) == [503, nil, nil, 200])
            #expect(result.failure?.code == .tls)
            words.said(result.failure?.reason)
            #expect(result.failure?.isTemporaryFailure == false)
            #expect(try await store.history(HistoryQuery()).first?.state == .failed)
            await store.close()
        }
        words.check()
    }

    /// A v1 database (texts only) is migrated to v2 once: its failures get their codes.
    @Test(arguments: BackendKind.allCases) func version1DatabaseIsMigrated(_ kind: BackendKind) async throws {
        let words = Wording("audit-backend", case: "\(kind)", matching: Wording.runVariables)
        try await TestAuditDatabase.with(kind) { db in
            let rows = """
                INSERT INTO receipt (content_hash, format, first_seen, last_seen, state, failure, verified_at)
                VALUES ('h1', 'pkcs7', 1, 1, 'failed', 'TLS failed: bad certificate', 5),
                       ('h2', 'pkcs7', 1, 1, 'failed', 'gave up after 5 attempts: HTTP 503', 6);
                INSERT INTO attempt (receipt_id, at, url, environment, http_status, error)
                VALUES (1, 5, 'https://x/p', 'Production', NULL, 'TLS failed: bad certificate'),
                       (2, 6, 'https://x/p', 'Production', 503, NULL),
                       (2, 6.1, 'https://x/p', 'Production', NULL, 'the connection was closed without an answer');
                """
            switch kind {
            case .sqlite:
                let queue = try DatabaseQueue(path: try #require(db.sqlitePath))
                try AuditStore.migrator.migrate(queue, upTo: "v1")
                try await queue.write { try $0.execute(sql: rows) }
                try queue.close()
                // A read-only follower of a database no v2 writer has opened yet still reads it.
                let follower = try await db.open(readOnly: true)
                #expect(try await follower.results(after: 0).map { $0.attempts.count } == [1, 2])
            case .postgres:
                try await db.connection { connection in
                    _ = try await PostgresAuditSchema.migrate(CheckedConnection(connection: connection), logger: testLogger, upTo: "v1")
                    for statement in rows.split(separator: ";").map({ $0.trimmingCharacters(in: .whitespacesAndNewlines) }) where !statement.isEmpty {
                        try await connection.query(PostgresQuery(unsafeSQL: statement), logger: testLogger)
                    }
                }
                // A read-only follower refuses an older schema, clearly.
                let error = await #expect(throws: AuditDatabaseError.self) { _ = try await db.open(readOnly: true) }
                #expect(error?.code == .unavailable)
                words.said(error?.reason)
            }
            let store = try await db.open()
            let results = try await store.results(after: 0)
            #expect(results.map { $0.failure?.code } == [.tls, .retriesExhausted])
            #expect(results[0].attempts.map(\.result) == [.transport(TransportFailure(.tls))])
            #expect(results[0].attempts[0].result.description == "TLS failed: bad certificate")
            #expect(results[1].attempts.map(\.result) == [.http(status: 503), .transport(TransportFailure(.dropped))])
            #expect(results[1].failure?.isTemporaryFailure == true)
            await store.close()
        }
        words.check()
    }

    @Test(arguments: BackendKind.allCases) func pruneRemovesOldReceiptsWithTheirRows(_ kind: BackendKind) async throws {
        try await TestAuditDatabase.with(kind) { db in
            let store = try await db.open()
            _ = try await store.record([try ingest("production.b64", at: Date(timeIntervalSince1970: 1_000_000_000))])
            _ = try await store.record([try ingest("sandbox-2023.der", at: Date(timeIntervalSince1970: 1_700_000_000))])
            #expect(try await store.prune(keepDays: 30, now: Date(timeIntervalSince1970: 1_700_000_000)) == 1)
            #expect(try await store.prune(keepDays: 30, now: Date(timeIntervalSince1970: 1_700_000_000)) == 0)
            #expect(try await store.history(HistoryQuery()).map(\.bundleID) == ["com.hannesoid.PurchasingExperiments"])
            #expect(try await store.history(HistoryQuery(transactionID: "340001311555626")).isEmpty)
            await store.close()
        }
    }

    /// A receipt that never got an answer still has every attempt on record.
    @Test(arguments: BackendKind.allCases) func failedVerificationKeepsItsAttempts(_ kind: BackendKind) async throws {
        try await TestAuditDatabase.with(kind) { db in
            let store = try await db.open()
            let retry = RetryPolicy(maximumRetries: 2, baseDelay: 0.005, maximumDelay: 0.01, totalBudget: 600, jitter: 0)
            let simulator = try await VerifyReceiptSimulator.start(SimulatorConfiguration(), script: [.http(503), .http(503), .http(503)])
            let client = VerifyReceiptClient(endpoints: try simulator.endpoints, retry: retry)
            let recorded = try await store.record([try ingest("production.b64")])
            try await store.markPending(recorded.map(\.id))
            let items = recorded.map { BatchItem(id: Int($0.id), source: "#\($0.id)", receiptData: $0.receiptData!) }
            let events = EventLog()
            let summary = await AuditedVerification(store: store, verifier: BatchVerifier(client: client)).run(BatchItems(items)) {
                events.add($0)
            }
            try await client.shutdown()
            try await simulator.stop()
            #expect(summary.batch.failed == 1)
            #expect(summary.auditErrors.isEmpty)
            let failed = events.events.compactMap { event -> [VerificationAttempt]? in
                if case .failed(_, _, let attempts) = event { return attempts }
                return nil
            }
            #expect(failed.map { $0.map(\.httpStatus) } == [[503, 503, 503]])
            #expect(try await store.counts() == ["failed": 1])
            #expect(try await store.attemptsPerReceipt() == [recorded[0].id: 3])
            #expect(try await store.results(after: 0).map { $0.attempts.map(\.httpStatus) } == [[503, 503, 503]])
            await store.close()
        }
    }

    /// Verified through the simulator with a shared secret: the secret is nowhere in what the
    /// database stores.
    @Test(arguments: BackendKind.allCases) func sharedSecretNeverReachesTheDatabase(_ kind: BackendKind) async throws {
        try await TestAuditDatabase.with(kind) { db in
            let store = try await db.open()
            let secret = SharedSecret("9d8c7b6a5f4e3d2c1b0a9d8c7b6a5f4e")
            let simulator = try await VerifyReceiptSimulator.start(SimulatorConfiguration(secret: secret))
            let client = VerifyReceiptClient(endpoints: try simulator.endpoints, secret: secret, retry: wallClockRetry)
            let recorded = try await store.record([try ingest("production.b64"), try ingest("sandbox-2023.der")])
            try await store.markPending(recorded.map(\.id))
            let items = recorded.map { BatchItem(id: Int($0.id), source: "#\($0.id)", receiptData: $0.receiptData!) }
            let summary = await AuditedVerification(store: store, verifier: BatchVerifier(client: client)).run(BatchItems(items)) { _ in }
            #expect(summary.batch.valid == 2)
            #expect(try await store.counts() == ["done": 2])
            try await client.shutdown()
            try await simulator.stop()
            await store.close()
            let bytes = try await db.allStoredText()
            #expect(bytes.count > 10_000)
            #expect(bytes.range(of: Data("9d8c7b6a5f4e3d2c1b0a9d8c7b6a5f4e".utf8)) == nil)
            #expect(bytes.range(of: Data("9d8c7b6a".utf8)) == nil)
        }
    }

    /// A write is recorded as pending before it is sent, then completed with its outcome; a
    /// pending row reads back as it was committed (a crash leaves it so).
    @Test(arguments: BackendKind.allCases) func aWriteIsPendingThenCompleted(_ kind: BackendKind) async throws {
        let words = Wording("audit-backend", case: "\(kind)")
        try await TestAuditDatabase.with(kind) { db in
            let store = try await db.open()
            let at = Date(timeIntervalSince1970: 1_760_000_000)
            let planned = AuditAction(
                at: at, user: "support", action: "extend", environment: "Sandbox", requestID: "ticket-9", originalTransactionID: "2000000000000001",
                transactionID: nil, productID: "pro.monthly", requestBody: #"{"extendByDays":3,"extendReasonCode":3,"requestIdentifier":"ticket-9"}"#,
                httpStatus: 200, apiError: nil, result: "success", plan: "extend in Sandbox:\n  data: valid\n")
            let id = try await store.beginAction(planned)
            let pending = try #require(try await store.actions(AuditActionQuery()).first)
            #expect(pending.result == AuditAction.pending)
            #expect(pending.httpStatus == nil)
            words.said(pending.plan)
            #expect(pending.completedAt == nil)
            #expect(pending.requestID == "ticket-9")
            #expect(ActionHistory.shownResult(pending) == "unknown")
            #expect(
                ActionHistory.repeatCommand(pending)
                    == "receiptdash extend --original-transaction-id 2000000000000001 --days 3 --reason service-issue --environment sandbox --request-id ticket-9")

            var outcome = planned
            outcome.responseBody = "<html>proxy</html>"
            outcome.completedAt = at.addingTimeInterval(2)
            try await store.completeAction(id, outcome)
            let done = try #require(try await store.actions(AuditActionQuery(transactionID: "2000000000000001")).first)
            #expect(done.id == id)
            #expect(done.result == "success")
            #expect(done.httpStatus == 200)
            #expect(done.responseBody == "<html>proxy</html>")
            #expect(done.completedAt == at.addingTimeInterval(2))
            #expect(done.at == at)
            #expect(ActionHistory.repeatCommand(done) == nil)
            // A row that is not there cannot be completed.
            await #expect(throws: (any Error).self) { try await store.completeAction(id + 1000, outcome) }
            await store.close()
        }
        words.check()
    }

    @Test(arguments: BackendKind.allCases) func lookupsRoundTrip(_ kind: BackendKind) async throws {
        try await TestAuditDatabase.with(kind) { db in
            let store = try await db.open()
            let at = Date(timeIntervalSince1970: 1_760_000_000)
            let result = CustomerLookupResult(
                query: .transactionID("2000000123456789"), at: at, environment: .sandbox,
                records: [
                    APIRequestRecord(
                        endpoint: .transactionInfo, environment: .production, url: "https://api.storekit.itunes.apple.com/inApps/v1/transactions/2000000123456789",
                        result: .apiError(httpStatus: 404, code: .invalidTransactionID), latencyMilliseconds: 12.5),
                    APIRequestRecord(
                        endpoint: .transactionInfo, environment: .sandbox,
                        url: "https://api.storekit-sandbox.itunes.apple.com/inApps/v1/transactions/2000000123456789",
                        result: .success(httpStatus: 200), latencyMilliseconds: 8, retryAfter: nil, waitSeconds: 0.5),
                ])
            let id = try await store.recordLookup(result, bundleID: "com.example.app", source: "lookup 2000000123456789", at: at)
            #expect(
                try await store.lookupRequests(id) == [
                    AuditLookupRequest(
                        endpoint: "transaction-info", environment: "Production",
                        url: "https://api.storekit.itunes.apple.com/inApps/v1/transactions/2000000123456789", httpStatus: 404, apiError: 4_000_006),
                    AuditLookupRequest(
                        endpoint: "transaction-info", environment: "Sandbox",
                        url: "https://api.storekit-sandbox.itunes.apple.com/inApps/v1/transactions/2000000123456789", httpStatus: 200, apiError: nil),
                ])
            #expect(try await store.lookupRequests(id + 1).isEmpty)
            let row = try #require(try await store.history(HistoryQuery(bundleID: "com.example.app")).first)
            #expect(row.id == id)
            #expect(row.format == "api")
            #expect(row.environment == "Sandbox")
            #expect(row.state == .done)
            #expect(row.seen.map(\.kind) == ["lookup"])
            #expect(row.seen.map(\.source) == ["lookup 2000000123456789"])
            #expect(try await store.counts() == ["done": 1])
            await store.close()
        }
    }

    // MARK: Notifications

    func notification(_ uuid: String, at seconds: Double, type: String = "DID_RENEW", peer: String? = "127.0.0.1") -> NotificationRecord {
        NotificationRecord(
            notificationUUID: uuid, version: .v2, notificationType: type, subtype: "BILLING_RECOVERY", bundleID: "com.example.app",
            appAppleID: 1_234_567_890, environment: "Sandbox", signedDate: Date(timeIntervalSince1970: seconds - 1),
            receivedAt: Date(timeIntervalSince1970: seconds), verdict: .test, reason: "signed by the test CA",
            transactionID: "2000000\(Int(seconds))", originalTransactionID: "2000000000000001", productID: "com.example.monthly", peer: peer,
            signedPayload: "eyJhbGciOiJFUzI1NiJ9.payload.signature")
    }

    @Test(arguments: BackendKind.allCases) func notificationsDeduplicateAndRejectionsAreKept(_ kind: BackendKind) async throws {
        try await TestAuditDatabase.with(kind) { db in
            let store = try await db.open()
            let a = notification("uuid-a", at: 1_760_000_000)
            let b = notification("uuid-b", at: 1_760_000_010, type: "SUBSCRIBED")
            var aAgain = a
            aAgain.receivedAt = Date(timeIntervalSince1970: 1_760_000_060)
            let refused = RejectionRecord(
                at: Date(timeIntervalSince1970: 1_760_000_020), peer: "10.0.0.9", reason: "the signature does not verify", httpStatus: 400,
                bodySize: 42, body: Array(#"{"signedPayload":"eyJ"}"#.utf8))
            let secretBody = RejectionRecord(
                at: Date(timeIntervalSince1970: 1_760_000_030), peer: nil, reason: "V1 body", httpStatus: 400, bodySize: 30,
                body: Array(#"{"password":"hunter2"}"#.utf8))
            let results = try await store.writeNotifications([
                .notification(a), .notification(b), .rejection(refused), .notification(aAgain), .rejection(secretBody),
            ])
            #expect(results.map { try? $0.get() } == [.stored, .stored, .stored, .redelivery(deliveries: 2), .stored])
            #expect(try await store.writeNotifications([.notification(aAgain)]).map { try? $0.get() } == [.redelivery(deliveries: 3)])
            let stored = try await store.notifications()
            #expect(stored.map(\.record.notificationUUID) == ["uuid-a", "uuid-b"])
            #expect(stored.map(\.deliveries) == [3, 1])
            #expect(stored[0].record == a)
            #expect(stored[0].lastReceivedAt == Date(timeIntervalSince1970: 1_760_000_060))
            #expect(stored[1].record == b)
            #expect(stored[1].lastReceivedAt == Date(timeIntervalSince1970: 1_760_000_010))
            let rejections = try await store.rejections()
            #expect(rejections == [refused, secretBody])
            #expect(rejections.map(\.bodyPrefix) == [#"{"signedPayload":"eyJ"}"#, nil])
            #expect(try await db.allStoredText().range(of: Data("hunter2".utf8)) == nil)
            await store.close()
        }
    }

    /// Migration v6 on both backends: a refusal's sample row takes its later count, rows older
    /// than a date are pruned (notifications never), and a genuine delivery replaces a test row
    /// of the same notificationUUID instead of counting as its redelivery.
    @Test(arguments: BackendKind.allCases) func refusalSamplesPruningAndGenuineOverTest(_ kind: BackendKind) async throws {
        try await TestAuditDatabase.with(kind) { db in
            let store = try await db.open()
            var old = RejectionRecord(
                at: Date(timeIntervalSince1970: 1_760_000_000), peer: "192.0.2.1:4000", reason: "not-json: junk", httpStatus: 400,
                bodySize: 4, body: Array("junk".utf8))
            old.kind = "not-json"
            old.sampleKey = "not-json|192.0.2.1|29333333"
            var recent = old
            recent.at = Date(timeIntervalSince1970: 1_770_000_000)
            recent.sampleKey = "not-json|192.0.2.1|29500000"
            var test = notification("uuid-shared", at: 1_769_000_000)  // the helper's rows are test ones
            test.bundleID = "com.example.forged"
            var genuine = notification("uuid-shared", at: 1_769_000_100)
            genuine.verdict = .valid
            genuine.reason = nil
            let results = try await store.writeNotifications([
                .rejection(old), .rejection(recent), .rejectionCount(sampleKey: recent.sampleKey!, add: 41), .notification(test),
                .notification(genuine),
            ])
            #expect(results.map { try? $0.get() } == [.stored, .stored, .stored, .stored, .stored])
            #expect(try await store.writeNotifications([.notification(test)]).map { try? $0.get() } == [.redelivery(deliveries: 2)])
            let stored = try await store.notifications()
            #expect(stored.map(\.record.verdict) == [.valid])
            #expect(stored.first?.record.bundleID == genuine.bundleID)
            #expect(try await store.rejections().map(\.count) == [1, 42])
            #expect(try await store.rejections().map(\.kind) == ["not-json", "not-json"])
            _ = try await store.writeNotifications([.pruneRejections(before: Date(timeIntervalSince1970: 1_765_000_000))])
            #expect(try await store.rejections().map(\.at) == [recent.at])
            #expect(try await store.notifications().count == 1)
            await store.close()
        }
    }

    /// One bad item in a group commit fails alone: the others are stored (a savepoint each).
    @Test(arguments: BackendKind.allCases) func notificationBatchWithOneBadItemStoresTheOthers(_ kind: BackendKind) async throws {
        let words = Wording("audit-backend", case: "\(kind)")
        try await TestAuditDatabase.with(kind) { db in
            let store = try await db.open()
            try await db.execute(
                sqlite: """
                    CREATE TRIGGER refuse_bad BEFORE INSERT ON notification WHEN NEW.peer = 'bad'
                    BEGIN SELECT RAISE(ABORT, 'refused by the test'); END
                    """,
                postgres: [
                    """
                    CREATE FUNCTION refuse_bad() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN RAISE EXCEPTION 'refused by the test'; END $$
                    """,
                    "CREATE TRIGGER refuse_bad BEFORE INSERT ON notification FOR EACH ROW WHEN (NEW.peer = 'bad') EXECUTE FUNCTION refuse_bad()",
                ])
            let results = try await store.writeNotifications([
                .notification(notification("n1", at: 1_760_000_000)),
                .notification(notification("n2", at: 1_760_000_001, peer: "bad")),
                .notification(notification("n3", at: 1_760_000_002)),
            ])
            #expect(try results[0].get() == .stored)
            #expect(try results[2].get() == .stored)
            guard case .failure(let error) = results[1] else {
                Issue.record("the bad row was stored")
                return
            }
            #expect(error.code == .database)
            words.said(error.reason)
            #expect(try await store.notifications().map(\.record.notificationUUID) == ["n1", "n3"])
            // Through the group-committing store too.
            let notifications = NotificationStore(backend: store).started()
            #expect(try await notifications.append(notification("n4", at: 1_760_000_003)) == .stored)
            await #expect(throws: NotificationStoreError.self) { try await notifications.append(notification("n5", at: 1_760_000_004, peer: "bad")) }
            #expect(try await notifications.append(notification("n1", at: 1_760_000_005)) == .redelivery(deliveries: 2))
            await notifications.close()
            #expect(try await store.notifications().map(\.record.notificationUUID) == ["n1", "n3", "n4"])
            await store.close()
        }
        words.check()
    }

    @Test(arguments: BackendKind.allCases) func notificationFollowerFeed(_ kind: BackendKind) async throws {
        try await TestAuditDatabase.with(kind) { db in
            let writer = try await db.open()
            _ = try await writer.writeNotifications([
                .notification(notification("old-1", at: 1_760_000_000)), .notification(notification("old-2", at: 1_760_000_001)),
                .notification(notification("old-3", at: 1_760_000_002)),
                .rejection(RejectionRecord(at: Date(timeIntervalSince1970: 1_760_000_003), peer: nil, reason: "old", httpStatus: 400, bodySize: 0, body: [UInt8]())),
            ])
            let follower = try await db.open(readOnly: true)
            // First look: the newest rows only, and no old refusals.
            let first = try await follower.followNotifications(NotificationMarks(), limit: 2, lookBack: 5)
            #expect(first.notifications.map(\.stored.record.notificationUUID) == ["old-2", "old-3"])
            #expect(first.rejections.isEmpty)
            #expect(first.marks.started)
            #expect(first.marks.newestDelivery == 1_760_000_002)
            let quiet = try await follower.followNotifications(first.marks, limit: 2, lookBack: 5)
            #expect(quiet.notifications.isEmpty)
            #expect(quiet.rejections.isEmpty)
            _ = try await writer.writeNotifications([
                .notification(notification("new-1", at: 1_760_000_100)), .notification(notification("old-1", at: 1_760_000_101)),
                .rejection(RejectionRecord(at: Date(timeIntervalSince1970: 1_760_000_102), peer: "10.1.1.1", reason: "new", httpStatus: 401, bodySize: 3, body: Array("abc".utf8))),
            ])
            let next = try await follower.followNotifications(quiet.marks, limit: 2, lookBack: 5)
            #expect(next.notifications.map(\.stored.record.notificationUUID) == ["old-1", "new-1"])
            #expect(next.notifications.map(\.stored.deliveries) == [2, 1])
            #expect(next.notifications.map(\.isNew) == [false, true])
            #expect(next.rejections.map(\.reason) == ["new"])
            #expect(next.marks.newestDelivery == 1_760_000_101)
            await follower.close()
            await writer.close()
        }
    }

    /// `notifications --follow` reads through the store's follower, the dashboard's: on both
    /// backends each row stored after the start is read once and a redelivery is no news to it;
    /// on PostgreSQL a row committed after a newer one (another host's long transaction took its
    /// id first) is read when it commits, once.
    @Test(arguments: BackendKind.allCases) func aFollowerOfNewRowsReadsEachRowOnceWhateverTheCommitOrder(_ kind: BackendKind) async throws {
        try await TestAuditDatabase.with(kind) { db in
            let writer = try await db.open()
            let reader = try await db.open(readOnly: true)
            func write(_ uuid: String, at seconds: Double) async throws {
                _ = try await writer.writeNotifications([.notification(notification(uuid, at: seconds))])
            }
            try await write("before", at: 1_760_000_000)
            let follower = NotificationFollower(backend: reader, after: try await reader.lastNotificationID())
            var reads: [[String]] = []
            var ids: [String: Int64] = [:]
            func read() async throws {
                let rows = try await follower.next(limit: NotificationStream.pageSize).notifications
                #expect(rows.filter { !$0.isNew }.isEmpty, "\(rows.map(\.stored.record.notificationUUID))")
                reads.append(rows.map(\.stored.record.notificationUUID))
                for row in rows { ids[row.stored.record.notificationUUID] = row.id }
            }
            try await read()
            var slow: PostgresConnection?
            if kind == .postgres {
                // Another host's transaction takes an id first and commits last.
                let location = try #require(db.postgres)
                let connection = try await TestAuditDatabase.connect(location, id: 8)
                try await connection.query("BEGIN", logger: testLogger)
                try await connection.query(
                    """
                    INSERT INTO notification (notification_uuid, version, notification_type, received_at, last_received_at, verdict)
                    VALUES ('late', '2', 'REFUND', 1760000100, 1760000100, 'valid')
                    """, logger: testLogger)
                slow = connection
            }
            try await write("after", at: 1_760_000_200)
            try await read()
            if let slow {
                try await slow.query("COMMIT", logger: testLogger)
                try await slow.close()
            } else {
                try await write("late", at: 1_760_000_100)
            }
            try await write("before", at: 1_760_000_300)  // delivered again: no news to this follower
            try await read()
            try await read()
            try await write("last", at: 1_760_000_400)
            try await read()
            #expect(reads == [[], ["after"], ["late"], [], ["last"]])
            if kind == .postgres {
                #expect(try #require(ids["late"]) < (try #require(ids["after"])), "the late row took its id first")
            } else {
                #expect(ids == ["after": 2, "late": 3, "last": 4])
            }
            await reader.close()
            await writer.close()
        }
    }

    /// A history copy is not a delivery: `deliveries` counts Apple's POSTs, whichever of a
    /// backfill and Apple's POST of one notification is stored first, in one group commit too;
    /// a copy moves no `last_received_at`, and the row keeps its first writer's peer.
    @Test(arguments: BackendKind.allCases) func aHistoryCopyIsNotADelivery(_ kind: BackendKind) async throws {
        try await TestAuditDatabase.with(kind) { db in
            let store = try await db.open()
            func write(_ records: NotificationRecord...) async throws -> [AppendOutcome] {
                try await store.writeNotifications(records.map { .notification($0) }).map { try $0.get() }
            }
            func copy(_ uuid: String, at seconds: Double) -> NotificationRecord {
                notification(uuid, at: seconds, peer: NotificationRecord.historyPeer)
            }
            #expect(try await write(copy("history-then-post", at: 1_760_000_000)) == [.stored])
            #expect(try await write(notification("history-then-post", at: 1_760_000_010)) == [.redelivery(deliveries: 1)])
            #expect(try await write(notification("post-then-history", at: 1_760_000_020)) == [.stored])
            #expect(try await write(copy("post-then-history", at: 1_760_000_030)) == [.redelivery(deliveries: 1)])
            #expect(try await write(notification("two-posts", at: 1_760_000_040)) == [.stored])
            #expect(try await write(notification("two-posts", at: 1_760_000_050)) == [.redelivery(deliveries: 2)])
            #expect(try await write(copy("history-only", at: 1_760_000_060)) == [.stored])
            #expect(try await write(copy("history-only", at: 1_760_000_070)) == [.redelivery(deliveries: 0)])
            #expect(
                try await write(copy("one-commit", at: 1_760_000_080), notification("one-commit", at: 1_760_000_090))
                    == [.stored, .redelivery(deliveries: 1)])
            let stored = try await store.notifications()
            #expect(
                stored.map { "\($0.record.notificationUUID) \($0.deliveries) \(Int($0.lastReceivedAt.timeIntervalSince1970)) \($0.record.peer ?? "-")" }
                    == [
                        "history-then-post 1 1760000010 history", "post-then-history 1 1760000020 127.0.0.1",
                        "two-posts 2 1760000050 127.0.0.1", "history-only 0 1760000060 history", "one-commit 1 1760000090 history",
                    ])
            await store.close()
        }
    }

    /// A following dashboard is shown Apple's first POST of a row a backfill stored (its
    /// `deliveries` going from 0 to 1), as it is shown any redelivery; a copy alone is news once.
    @Test(arguments: BackendKind.allCases) func aFollowerSeesTheFirstPostOfABackfilledRow(_ kind: BackendKind) async throws {
        try await TestAuditDatabase.with(kind) { db in
            let writer = try await db.open()
            let follower = try await db.open(readOnly: true)
            let first = try await follower.followNotifications(NotificationMarks(), limit: 10, lookBack: 5)
            #expect(first.notifications.isEmpty)
            _ = try await writer.writeNotifications([.notification(notification("backfilled", at: 1_760_000_000, peer: NotificationRecord.historyPeer))])
            let copied = try await follower.followNotifications(first.marks, limit: 10, lookBack: 5)
            #expect(copied.notifications.map { "\($0.stored.record.notificationUUID) \($0.stored.deliveries)" } == ["backfilled 0"])
            let quiet = try await follower.followNotifications(copied.marks, limit: 10, lookBack: 5)
            #expect(quiet.notifications.isEmpty)
            _ = try await writer.writeNotifications([.notification(notification("backfilled", at: 1_760_000_100))])
            let posted = try await follower.followNotifications(quiet.marks, limit: 10, lookBack: 5)
            #expect(posted.notifications.map { "\($0.stored.record.notificationUUID) \($0.stored.deliveries)" } == ["backfilled 1"])
            await follower.close()
            await writer.close()
        }
    }

    // MARK: Several writers

    /// Two writers (two stores, as two hosts would have) record overlapping receipts at once:
    /// one row per receipt, one sighting per recording.
    @Test(arguments: BackendKind.allCases) func concurrentWritersMakeOneRowWithEverySighting(_ kind: BackendKind) async throws {
        try await TestAuditDatabase.with(kind) { db in
            let one = try await db.open()
            let two = try await db.open()
            let names = ["production.b64", "sandbox-2023.der", "verify-response.json"]
            let inputs = try names.map { try ingest($0) }
            let rounds = 20
            let recorded = try await withThrowingTaskGroup(of: [AuditRecorded].self) { group in
                for (index, store) in [one, two].enumerated() {
                    group.addTask {
                        var all: [AuditRecorded] = []
                        for round in 0..<rounds {
                            // Each writer in its own order, so their transactions interleave.
                            let batch = index == 0 ? inputs : inputs.reversed()
                            let seen = batch.map { var i = $0; i.seenAt = Date(timeIntervalSince1970: 1_700_000_000 + Double(round)); return i }
                            all += try await store.record(seen)
                        }
                        return all
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(recorded.count == 2 * rounds * names.count)
            #expect(recorded.filter(\.isNew).count == names.count)
            #expect(Set(recorded.map(\.id)).count == names.count)
            let rows = try await one.history(HistoryQuery())
            #expect(rows.count == names.count)
            #expect(rows.map(\.sightings) == Array(repeating: 2 * rounds, count: names.count))
            #expect(rows.map(\.lastSeen) == Array(repeating: Date(timeIntervalSince1970: 1_700_000_000 + Double(rounds - 1)), count: names.count))
            let purchases: Int = rows.map(\.purchases.count).reduce(0, +)
            let expected: Int = inputs.map(\.decoded.allPurchases.count).reduce(0, +)
            #expect(purchases == expected)
            await one.close()
            await two.close()
        }
    }

    /// Two receivers taking the same notification at once: one row, two deliveries.
    @Test(arguments: BackendKind.allCases) func concurrentReceiversCountEveryDelivery(_ kind: BackendKind) async throws {
        try await TestAuditDatabase.with(kind) { db in
            let one = try await db.open()
            let two = try await db.open()
            let outcomes = try await withThrowingTaskGroup(of: [AppendOutcome].self) { group in
                for store in [one, two] {
                    group.addTask {
                        var out: [AppendOutcome] = []
                        for n in 0..<25 {
                            out += try await store.writeNotifications([.notification(notification("shared-\(n)", at: 1_760_000_000 + Double(n)))])
                                .map { try $0.get() }
                        }
                        return out
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(outcomes.filter { $0 == .stored }.count == 25)
            #expect(outcomes.filter { $0 == .redelivery(deliveries: 2) }.count == 25)
            let stored = try await one.notifications()
            #expect(stored.count == 25)
            #expect(stored.allSatisfy { $0.deliveries == 2 })
            await one.close()
            await two.close()
        }
    }

    /// A backfill on one host racing Apple's POSTs of the same notifications on another: one
    /// row each, counting Apple's one delivery, whichever of the two stored it.
    @Test(arguments: BackendKind.allCases) func aBackfillRacingPostsCountsApplesDeliveriesExactly(_ kind: BackendKind) async throws {
        try await TestAuditDatabase.with(kind) { db in
            let backfill = try await db.open()
            let receiver = try await db.open()
            let outcomes = try await withThrowingTaskGroup(of: [AppendOutcome].self) { group in
                for (store, peer) in [(backfill, NotificationRecord.historyPeer), (receiver, "17.0.0.1:443")] {
                    group.addTask {
                        var out: [AppendOutcome] = []
                        for n in 0..<25 {
                            out += try await store.writeNotifications([
                                .notification(notification("raced-\(n)", at: 1_760_000_000 + Double(n), peer: peer))
                            ]).map { try $0.get() }
                        }
                        return out
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(outcomes.filter { $0 == .stored }.count == 25)
            #expect(outcomes.filter { $0 == .redelivery(deliveries: 1) }.count == 25)
            let stored = try await backfill.notifications()
            #expect(stored.count == 25)
            #expect(stored.filter { $0.deliveries != 1 }.map(\.record.notificationUUID) == [])
            await backfill.close()
            await receiver.close()
        }
    }

    /// A receipt row committed after a newer one (a long transaction on another host) is still
    /// handed to a follower: ids are taken at insert, not at commit.
    @Test func followerFindsRowsCommittedOutOfIdOrder() async throws {
        try await TestAuditDatabase.with(.postgres) { db in
            let writer = try await db.open()
            let follower = try await db.open(readOnly: true)
            #expect(try await follower.receipts(after: 0).isEmpty)
            #expect(try await follower.results(after: 0).isEmpty)
            let location = try #require(db.postgres)
            // Another host's transaction takes an id first and commits last.
            let slow = try await TestAuditDatabase.connect(location, id: 7)
            try await slow.query("BEGIN", logger: testLogger)
            let slowID = try await slow.query(
                """
                INSERT INTO receipt (content_hash, format, receipt_data, first_seen, last_seen) VALUES ('slow', 'pkcs7', 'c2xvdw==', 1, 1)
                RETURNING id
                """, logger: testLogger
            ).collect().first?.decode(Int64.self)
            let fast = try await writer.record([try ingest("production.b64")])
            #expect(try #require(slowID) < fast[0].id)
            let seen = try await follower.receipts(after: 0)
            #expect(seen.map(\.id) == [fast[0].id])
            try await slow.query("COMMIT", logger: testLogger)
            let late = try await follower.receipts(after: fast[0].id)
            #expect(late.map(\.id) == [slowID])
            #expect(late.map(\.receiptData) == ["c2xvdw=="])
            #expect(try await follower.receipts(after: fast[0].id).isEmpty)

            // The same for results: one verified later with an earlier clock.
            try await slow.query("BEGIN", logger: testLogger)
            try await slow.query(
                "UPDATE receipt SET state = 'done', status = 0, verified_at = 100, result_xid = pg_current_xact_id() WHERE id = \(try #require(slowID))",
                logger: testLogger)
            try await writer.recordResult(
                fast[0].id, outcome: VerificationOutcome(status: 0, environment: "Production", attempts: [], response: nil, failure: nil),
                at: Date(timeIntervalSince1970: 200))
            #expect(try await follower.results(after: 0).map(\.id) == [fast[0].id])
            try await slow.query("COMMIT", logger: testLogger)
            #expect(try await follower.results(after: 200).map(\.id) == [slowID])
            #expect(try await follower.results(after: 200).isEmpty)
            try await slow.close()
            await follower.close()
            await writer.close()
        }
    }

    /// A commit by one store wakes another store's `changes()` (LISTEN/NOTIFY), with no query.
    @Test(arguments: BackendKind.allCases) func commitsWakeAnotherStoresFollower(_ kind: BackendKind) async throws {
        try await TestAuditDatabase.with(kind) { db in
            let writer = try await db.open()
            let follower = try await db.open(readOnly: true)
            guard let changes = follower.changes() else {
                #expect(kind == .sqlite, "SQLite cannot tell another process's commit")
                await follower.close()
                await writer.close()
                return
            }
            var wakes = changes.makeAsyncIterator()
            // The first wake-up says the listener is connected.
            #expect(await wakes.next() != nil)
            _ = try await writer.record([try ingest("production.b64")])
            #expect(await wakes.next() != nil)
            #expect(try await follower.receipts(after: 0).count == 1)
            _ = try await writer.writeNotifications([.notification(notification("wake", at: 1_760_000_000))])
            #expect(await wakes.next() != nil)
            await follower.close()
            #expect(await wakes.next() == nil, "close ends the stream")
            await writer.close()
        }
    }

    /// The server drops every connection (a restart, a failover): the next write reconnects and
    /// commits; the store never needed reopening.
    @Test func writesSurviveDroppedConnections() async throws {
        try await TestAuditDatabase.with(.postgres) { db in
            let store = try await db.open()
            let changes = try #require(store.changes())
            var wakes = changes.makeAsyncIterator()
            #expect(await wakes.next() != nil)
            _ = try await store.record([try ingest("production.b64")])
            #expect(await wakes.next() != nil)
            let admin = try PostgresLocation(url: try #require(TestAuditDatabase.postgresURL), environment: ProcessInfo.processInfo.environment)
            let killed = try await TestAuditDatabase.admin(admin) { connection in
                try await connection.query(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = \(try #require(db.postgresName)) AND pid <> pg_backend_pid()",
                    logger: testLogger
                ).collect().first?.decode(Int.self)
            }
            #expect((killed ?? 0) >= 2, "the pool's connection and the listener's")
            _ = try await store.record([try ingest("sandbox-2023.der")])
            #expect(try await store.history(HistoryQuery()).count == 2)
            #expect(await store.isWritable())
            // The listener reconnected by itself: a wake-up for the reconnection or the commit.
            #expect(await wakes.next() != nil)
            await store.close()
        }
    }

    /// A statement whose connection the server drops ends at once, as a connection failure
    /// the retry then takes over, not at the end of the lease limit (with a slow server's
    /// connect timeout that limit is a write's whole retry budget). The store runs each attempt
    /// in its own task group and no longer checks the connection four times a second: this is
    /// PostgresNIO failing the statement itself when the socket closes. The statement would run
    /// an hour; the lease limit is an hour: only the dropped connection can end it.
    @Test(.timeLimit(.minutes(5))) func aStatementOnADroppedConnectionFailsAtOnce() async throws {
        let location = try TestAuditDatabase.serverLocation()
        let connection = try await TestAuditDatabase.connect(location, id: 2)
        let pid = try #require(
            try await connection.query("SELECT pg_backend_pid()", logger: testLogger).collect().first?.decode(Int32.self))
        let progress = PostgresAuditStore.AttemptProgress()
        #expect(progress.leased())
        async let outcome: Result<Int, any Error> = {
            do {
                return .success(
                    try await PostgresAuditStore.withLeaseLimit(.seconds(3600), progress: progress, clock: TestClock()) {
                        _ = try await connection.query("SELECT pg_sleep(3600)", logger: testLogger).collect()
                        return 1
                    })
            } catch {
                return .failure(error)
            }
        }()
        // Once the statement runs (asked again until the server shows it), its backend is ended.
        try await TestAuditDatabase.admin(location) { admin in
            while try await admin.query(
                "SELECT count(*)::int FROM pg_stat_activity WHERE pid = \(pid) AND query LIKE 'SELECT pg_sleep%' AND state = 'active'",
                logger: testLogger
            ).collect().first?.decode(Int.self) != 1 {}
            _ = try await admin.query("SELECT pg_terminate_backend(\(pid))", logger: testLogger).collect()
        }
        guard case .failure(let error) = await outcome else {
            Issue.record("the statement answered on a dropped connection")
            return
        }
        #expect(PostgresAuditStore.classify(error) == .connection, "\(error)")
        try? await connection.close()
    }

    /// A statement is never written to a connection that has closed: PostgresNIO 1.33 would
    /// never answer it (the write's promise is dropped with the closed pipeline, and the
    /// `await` ignores cancellation: a plain `connection.query` here hangs the test for ever).
    /// The store's connection checks on the event loop and fails at once, as a lost connection
    /// that the retry takes over.
    @Test(.timeLimit(.minutes(5))) func aStatementIsNeverWrittenToAClosedConnection() async throws {
        let location = try TestAuditDatabase.serverLocation()
        let connection = CheckedConnection(connection: try await TestAuditDatabase.connect(location, id: 3))
        #expect(try await connection.query("SELECT 1", logger: testLogger).collect().first?.decode(Int.self) == 1)
        try await connection.close()
        let error = await #expect(throws: ConnectionLost.self) { try await connection.query("SELECT 1", logger: testLogger) }
        #expect(error.map(PostgresAuditStore.classify) == .connection)
    }

    /// The listener's health check runs on the store's clock: a `SELECT 1` answered before the
    /// limit passes keeps the connection; one the limit overtakes closes it and fails, so the
    /// listener connects again. The limit is an hour: only the test's clock makes it pass.
    @Test(.timeLimit(.minutes(5))) func theListenersCheckIsTimedOnTheStoresClock() async throws {
        let location = try TestAuditDatabase.serverLocation()
        let connection = CheckedConnection(connection: try await TestAuditDatabase.connect(location, id: 4))
        // Time stands still: the answer comes first.
        try await PostgresAuditStore.check(connection, within: .seconds(3600), clock: SteppedClock(), logger: testLogger)
        #expect(!connection.isClosed)
        // The server stops answering (its backend is paused): the hour passes, the connection
        // is closed and the check fails.
        let pid = try #require(try await connection.query("SELECT pg_backend_pid()", logger: testLogger).collect().first?.decode(Int32.self))
        kill(pid, SIGSTOP)
        defer { kill(pid, SIGCONT) }
        let clock = SteppedClock()
        let checking = Task { try await PostgresAuditStore.check(connection, within: .seconds(3600), clock: clock, logger: testLogger) }
        await clock.sleepsBegun(1)
        clock.advance(by: .seconds(3600))
        await #expect(throws: PostgresAuditStore.ListenerLost.self) { try await checking.value }
        #expect(connection.isClosed)
    }

    /// A store whose service was never started says so, instead of waiting for a pool that
    /// does not run: its statement fails at the lease limit (driven on the test's clock) with
    /// the code `unavailable`, and opening it (which uses a connection of its own) worked.
    @Test func aStoreThatIsNotRunningSaysSo() async throws {
        try await TestAuditDatabase.with(.postgres) { db in
            let store = try await PostgresAuditStore(
                location: try #require(db.postgres), writeRetryBudget: .seconds(30), connectTimeout: .seconds(120), clock: TestClock())
            let error = await #expect(throws: AuditDatabaseError.self) { _ = try await store.counts() }
            #expect(error?.code == .unavailable)
            #expect(error?.reason.contains("not running") == true)
            await store.close()
        }
    }

    /// An unreachable server: opening fails in plain words (no password), quickly.
    @Test func unreachableServerFailsClearlyWithoutThePassword() async throws {
        let words = Wording("audit-backend")
        let port = TestPorts.refusing()
        let location = try PostgresLocation(
            url: "postgres://receiptdash:s3cr3t-pw-xyz@127.0.0.1:\(port)/nowhere", environment: [:])
        let error = await #expect(throws: AuditDatabaseError.self) {
            _ = try await PostgresAuditStore(location: location, writeRetryBudget: .seconds(1), connectTimeout: .seconds(1))
        }
        #expect(error?.code == .unavailable)
        words.said(error?.reason)
        #expect(error?.reason.contains("s3cr3t") == false)
        #expect("\(location)".contains("s3cr3t") == false)
        words.check()
    }

}
