import AuditTrail
import Foundation
import GRDB
import AppStoreAPI
import JSONWriting
import LocalFiles
import ReceiptCore

/// The durable record of what was seen and what Apple said: every receipt ingested (by content
/// hash, with each sighting), every verification attempt, the final result, and the decoded
/// purchases (transaction ids indexed). SQLite through GRDB, in WAL mode, with migrations from
/// the first version on. The shared secret is never stored: attempts keep the URL only.
public final class AuditStore: AuditBackend {
    /// One App Store Server API request of a look-up (recorded, or copied by `db copy`).
    static let insertAPIRequest = """
        INSERT INTO api_request (receipt_id, position, endpoint, environment, url, http_status, api_error, result,
                                 latency_ms, retry_after, wait_seconds)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """

    let database: any DatabaseWriter
    public let path: String
    /// Opened with ``init(readOnlyPath:)``: nothing is ever written.
    let readOnly: Bool
    /// Opened with `synchronous = FULL` for every commit (the receiver's store).
    let durable: Bool
    /// Where ``writeThenSync(_:)`` waits for its fsync: a thread of its own, not one of the
    /// few cooperative threads the receiver's requests run on.
    private let syncQueue = DispatchQueue(label: "receiptdash.audit-store.sync")
    public var location: String { path }
    /// The migrations this open applied (empty when the file was at the current schema), in order.
    public let migrationsApplied: [String]
    /// Every migration's name, oldest first: the last is the current schema.
    public var schemaVersions: [String] { Self.migrator.migrations }

    /// `$XDG_DATA_HOME/receiptdash/audit.sqlite` (or `~/.local/share/…`).
    public static func defaultPath(environment: [String: String]) -> String { AuditDatabase.defaultPath(environment: environment) }

    /// Opens (creating and migrating) the store at `path`.
    /// - Parameter durable: commit with `synchronous = FULL` (WAL fsynced at every commit), as
    ///   the notification receiver needs: an acknowledged notification survives a power loss.
    public init(path: String, durable: Bool = false) throws {
        self.path = path
        self.durable = durable
        readOnly = false
        // The trail holds customers' receipts: owner-only. The file is made here, 0600, before
        // GRDB opens it (O_CREAT|O_EXCL, then fchmod: no umask change, which is process-wide and
        // would race other threads' files). SQLite creates the -wal and -shm files with the
        // mode of the database file (and sets it even against the umask), so they are 0600 too
        // whenever it recreates them; they are set again after the open all the same. An
        // existing database keeps the mode its owner gave it. Directories made for it are 0700.
        let onDisk = Self.isFile(path)
        let directory = PathNames.parent(of: path)
        if onDisk, !directory.isEmpty { try FilePermissions.createPrivateDirectory(atPath: directory) }
        let created = onDisk ? try FilePermissions.createPrivateFile(atPath: path) : false
        var configuration = Configuration()
        configuration.foreignKeysEnabled = true
        configuration.busyMode = .timeout(10)
        let pool = try DatabasePool(path: path, configuration: configuration)
        if created { FilePermissions.restrictToOwner([path + "-wal", path + "-shm"]) }
        // After GRDB's WAL set-up (which sets NORMAL) on the one writer connection.
        if durable { try pool.writeWithoutTransaction { try $0.execute(sql: "PRAGMA synchronous = FULL") } }
        let before = try pool.read { try Self.migrator.appliedIdentifiers($0) }
        try Self.migrator.migrate(pool)
        migrationsApplied = Self.migrator.migrations.filter { !before.contains($0) }
        database = pool
    }

    /// Opens an existing store read-only (a second dashboard following a validator).
    public init(readOnlyPath path: String) throws {
        self.path = path
        durable = false
        readOnly = true
        migrationsApplied = []
        var configuration = Configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(10)
        database = try DatabasePool(path: path, configuration: configuration)
    }

    /// The migrations the file lacks (works on a read-only open: nothing is changed).
    public func missingMigrations() throws -> [String]? {
        let applied = try database.read { try Self.migrator.appliedIdentifiers($0) }
        return Self.migrator.migrations.filter { !applied.contains($0) }
    }

    /// A SQLite or file error in words: SQLite's code and message (`SQLite error 26: file is not a database`),
    /// without GRDB's statement dump; nil for other errors.
    public static func words(_ error: any Error) -> String? {
        if let error = error as? DatabaseError {
            let message = "SQLite error \(error.resultCode.rawValue)" + (error.message.map { ": \($0)" } ?? "")
            switch error.resultCode {
            case .SQLITE_NOTADB: return "\(message): it is not a SQLite database (name the audit database, or a new file)"
            case .SQLITE_CANTOPEN: return "\(message): check the folder exists and that you may write to it"
            case .SQLITE_READONLY, .SQLITE_PERM: return "\(message): you may not write to it (check its mode and its folder's)"
            case .SQLITE_FULL: return "\(message): the disk is full"
            case .SQLITE_CORRUPT: return "\(message): the file is damaged"
            default: return message
            }
        }
        if let error = error as? FileCreationError { return error.description }
        return nil
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE receipt (
                        id INTEGER PRIMARY KEY,
                        content_hash TEXT NOT NULL UNIQUE,
                        format TEXT NOT NULL,
                        bundle_id TEXT,
                        environment TEXT,
                        receipt_data TEXT,
                        first_seen DOUBLE NOT NULL,
                        last_seen DOUBLE NOT NULL,
                        state TEXT NOT NULL DEFAULT 'decoded',
                        status INTEGER,
                        status_environment TEXT,
                        verified_at DOUBLE,
                        failure TEXT
                    );
                    CREATE INDEX receipt_bundle ON receipt(bundle_id);
                    CREATE INDEX receipt_status ON receipt(status);
                    CREATE INDEX receipt_state ON receipt(state);
                    CREATE INDEX receipt_last_seen ON receipt(last_seen);
                    CREATE TABLE sighting (
                        id INTEGER PRIMARY KEY,
                        receipt_id INTEGER NOT NULL REFERENCES receipt(id) ON DELETE CASCADE,
                        source_kind TEXT NOT NULL,
                        source TEXT,
                        seen_at DOUBLE NOT NULL
                    );
                    CREATE INDEX sighting_receipt ON sighting(receipt_id);
                    CREATE TABLE attempt (
                        id INTEGER PRIMARY KEY,
                        receipt_id INTEGER NOT NULL REFERENCES receipt(id) ON DELETE CASCADE,
                        at DOUBLE NOT NULL,
                        url TEXT NOT NULL,
                        environment TEXT,
                        http_status INTEGER,
                        apple_status INTEGER,
                        is_retryable INTEGER,
                        latency_ms DOUBLE,
                        error TEXT
                    );
                    CREATE INDEX attempt_receipt ON attempt(receipt_id);
                    CREATE TABLE purchase (
                        id INTEGER PRIMARY KEY,
                        receipt_id INTEGER NOT NULL REFERENCES receipt(id) ON DELETE CASCADE,
                        source TEXT,
                        product_id TEXT,
                        transaction_id TEXT,
                        original_transaction_id TEXT,
                        quantity INTEGER,
                        purchase_date DOUBLE,
                        expires_date DOUBLE,
                        cancellation_date DOUBLE
                    );
                    CREATE INDEX purchase_transaction ON purchase(transaction_id);
                    CREATE INDEX purchase_original ON purchase(original_transaction_id);
                    CREATE INDEX purchase_product ON purchase(product_id);
                    CREATE INDEX purchase_receipt ON purchase(receipt_id);
                    """)
        }
        // v2: the typed outcome beside the words (``AuditSchema/v2``, as on PostgreSQL).
        migrator.registerMigration("v2") { db in
            for statement in AuditSchema.v2 { try db.execute(sql: statement) }
        }
        // v3: App Store Server API look-ups. A look-up is a `receipt` row of format `api`
        // (its transactions in `purchase`, so `history --transaction-id` finds them) with the
        // requests it made. No token or key is stored: requests keep the URL only.
        migrator.registerMigration("v3") { db in
            try db.execute(
                sql: """
                    CREATE TABLE api_request (
                        id INTEGER PRIMARY KEY,
                        receipt_id INTEGER NOT NULL REFERENCES receipt(id) ON DELETE CASCADE,
                        position INTEGER NOT NULL,
                        endpoint TEXT NOT NULL,
                        environment TEXT NOT NULL,
                        url TEXT NOT NULL,
                        http_status INTEGER,
                        api_error INTEGER,
                        result TEXT NOT NULL,
                        latency_ms DOUBLE,
                        retry_after DOUBLE,
                        wait_seconds DOUBLE
                    );
                    CREATE INDEX api_request_receipt ON api_request(receipt_id);
                    """)
        }
        // v4: App Store Server Notifications received (`receiptdash receive`): one row per
        // notificationUUID (a redelivery counts in `deliveries`), and the requests refused.
        // In the audit database rather than a file of its own, so one `--db` serves the
        // receiver, `history` and a following dashboard, and transaction ids join `purchase`.
        // A refused request keeps at most a short prefix of its body, never a V1 password.
        migrator.registerMigration("v4") { db in
            try db.execute(
                sql: """
                    CREATE TABLE notification (
                        id INTEGER PRIMARY KEY,
                        notification_uuid TEXT NOT NULL UNIQUE,
                        version TEXT NOT NULL,
                        notification_type TEXT,
                        subtype TEXT,
                        bundle_id TEXT,
                        app_apple_id INTEGER,
                        environment TEXT,
                        signed_date DOUBLE,
                        received_at DOUBLE NOT NULL,
                        last_received_at DOUBLE NOT NULL,
                        deliveries INTEGER NOT NULL DEFAULT 1,
                        verdict TEXT NOT NULL,
                        reason TEXT,
                        transaction_id TEXT,
                        original_transaction_id TEXT,
                        product_id TEXT,
                        peer TEXT,
                        signed_payload TEXT
                    );
                    CREATE INDEX notification_received ON notification(received_at);
                    CREATE INDEX notification_type ON notification(notification_type);
                    CREATE INDEX notification_transaction ON notification(transaction_id);
                    CREATE INDEX notification_original ON notification(original_transaction_id);
                    CREATE TABLE notification_rejection (
                        id INTEGER PRIMARY KEY,
                        at DOUBLE NOT NULL,
                        peer TEXT,
                        reason TEXT NOT NULL,
                        http_status INTEGER NOT NULL,
                        body_size INTEGER,
                        body_prefix TEXT
                    );
                    CREATE INDEX notification_rejection_at ON notification_rejection(at);
                    """)
        }
        // v5: a following dashboard asks for the redeliveries since its last look
        // (`last_received_at`), twice a second: an index rather than a scan of every row.
        migrator.registerMigration("v5") { db in
            try db.execute(sql: "CREATE INDEX notification_last_received ON notification(last_received_at)")
        }
        // v6: refusals are sampled, one row per class, address and minute with a count (a
        // flood is counted in full and stored in a few rows), and pruned by age.
        migrator.registerMigration("v6") { db in
            for statement in AuditSchema.v6 { try db.execute(sql: statement) }
        }
        // v7: the writes sent to Apple (`history --actions`).
        migrator.registerMigration("v7") { db in
            for statement in AuditSchema.v7(id: "INTEGER PRIMARY KEY", real: "DOUBLE", integer: "INTEGER") { try db.execute(sql: statement) }
        }
        // v8: today's payload fields of each purchase.
        migrator.registerMigration("v8") { db in
            for statement in AuditSchema.v8(integer: "INTEGER") { try db.execute(sql: statement) }
        }
        // v9: writes recorded as pending before they are sent, completed with their outcome.
        migrator.registerMigration("v9") { db in
            for statement in AuditSchema.v9(real: "DOUBLE") { try db.execute(sql: statement) }
        }
        // v10: customers found by app account token and app transaction id; notifications
        // stored before it get both from their payloads, a thousand rows at a time.
        migrator.registerMigration("v10") { db in
            for statement in AuditSchema.v10(flag: "INTEGER") { try db.execute(sql: statement) }
            let update = try db.makeStatement(sql: "UPDATE notification SET app_account_token = ?, app_transaction_id = ? WHERE id = ?")
            var after: Int64 = 0
            while true {
                let rows = try Row.fetchAll(
                    db, sql: "SELECT id, signed_payload FROM notification WHERE id > ? AND signed_payload IS NOT NULL ORDER BY id LIMIT 1000",
                    arguments: [after])
                guard let last = rows.last else { break }
                after = last["id"]
                for row in rows {
                    let ids = NotificationCustomerIDs.read(row["signed_payload"])
                    if ids.appAccountToken != nil || ids.appTransactionID != nil {
                        try update.execute(arguments: [ids.appAccountToken, ids.appTransactionID, row["id"] as Int64])
                    }
                }
            }
        }
        // v11: the forwarding outbox (`receive --forward`).
        migrator.registerMigration("v11") { db in
            for statement in AuditSchema.v11(id: "INTEGER PRIMARY KEY", real: "DOUBLE", integer: "INTEGER") { try db.execute(sql: statement) }
        }
        // v12: the registered forwarding targets, queued for by every process that stores.
        migrator.registerMigration("v12") { db in
            for statement in AuditSchema.v12(real: "DOUBLE") { try db.execute(sql: statement) }
        }
        // v13: each write linked to the customer's app transaction id.
        migrator.registerMigration("v13") { db in
            for statement in AuditSchema.v13 { try db.execute(sql: statement) }
        }
        // v14: Retention Messaging's realtime requests and the content Apple holds.
        migrator.registerMigration("v14") { db in
            for statement in AuditSchema.v14(id: "INTEGER PRIMARY KEY", real: "DOUBLE", integer: "INTEGER") { try db.execute(sql: statement) }
        }
        // v15: consumption requests answered by policy, and the policy each write was sent by.
        migrator.registerMigration("v15") { db in
            for statement in AuditSchema.v15(id: "INTEGER PRIMARY KEY", real: "DOUBLE", integer: "INTEGER") { try db.execute(sql: statement) }
        }
        return migrator
    }

    public typealias SourceKind = AuditSourceKind
    public typealias Ingest = AuditIngest
    public typealias Recorded = AuditRecorded
    public typealias FeedReceipt = AuditFeedReceipt
    public typealias FeedResult = AuditFeedResult

    /// Records one look-up in one transaction: a `receipt` row of format `api` (bundle,
    /// environment, `done` or `failed` with the failure's code), a sighting named `source`, the
    /// transactions found and every request made.
    public func recordLookup(_ result: CustomerLookupResult, bundleID: String, source: String, at time: Date) async throws -> Int64 {
        let hash = AuditContent.lookupHash(result, source: source, at: time)
        let seen = time.timeIntervalSince1970
        return try await database.write { db in
            try db.execute(
                sql: """
                    INSERT INTO receipt (content_hash, format, bundle_id, environment, first_seen, last_seen, state, verified_at,
                                         failure, failure_code)
                    VALUES (?, 'api', ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    hash, bundleID, result.environment?.rawValue, seen, seen, ReceiptState.verified(failed: result.failure != nil).rawValue, seen,
                    result.failure?.reason, result.failure?.code.description,
                ])
            let id = db.lastInsertedRowID
            try insertPurchases(db, receipt: id, result.transactions.compactMap(\.transaction))
            try Self.insertSighting(db, receipt: id, kind: .lookup, source: source, at: seen)
            for (position, record) in result.records.enumerated() {
                try db.execute(
                    sql: Self.insertAPIRequest,
                    arguments: [
                        id, position, record.endpoint.rawValue, record.environment.rawValue, record.url, record.httpStatus,
                        record.apiError?.rawValue, record.result.description, record.latencyMilliseconds,
                        record.retryAfter?.timeIntervalSince1970, record.waitSeconds,
                    ])
            }
            return id
        }
    }

    @discardableResult
    public func recordAction(_ action: AuditAction) async throws -> Int64 {
        try await writeDurably { db in try Self.insertAction(db, action) }
    }

    public func beginAction(_ action: AuditAction) async throws -> Int64 {
        let pending = action.pendingRow
        return try await writeDurably { db in try Self.insertAction(db, pending) }
    }

    public func completeAction(_ id: Int64, _ outcome: AuditAction) async throws {
        try await writeDurably { db in
            try db.execute(
                sql: """
                    UPDATE api_action SET http_status = ?, api_error = ?, result = ?, response_body = ?, completed_at = ?
                    WHERE id = ?
                    """,
                arguments: [
                    outcome.httpStatus, outcome.apiError, outcome.result, outcome.responseBody,
                    (outcome.completedAt ?? Date()).timeIntervalSince1970, id,
                ])
            guard db.changesCount == 1 else { throw AuditDatabaseError(.refused, "the pending row #\(id) of the write is missing") }
        }
    }

    static func insertAction(_ db: Database, _ action: AuditAction) throws -> Int64 {
        try db.execute(
            sql: """
                INSERT INTO api_action (at, os_user, action, environment, request_id, original_transaction_id, transaction_id,
                                        product_id, request_body, http_status, api_error, result, plan, response_body, completed_at,
                                        app_transaction_id, policy)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                action.at.timeIntervalSince1970, action.user, action.action, action.environment, action.requestID,
                action.originalTransactionID, action.transactionID, action.productID, action.requestBody, action.httpStatus,
                action.apiError, action.result, action.plan, action.responseBody, action.completedAt?.timeIntervalSince1970,
                action.appTransactionID, action.policy,
            ])
        return db.lastInsertedRowID
    }

    /// A write to Apple's trail committed with `synchronous = FULL` (the WAL fsynced before the
    /// commit returns) whatever this store was opened with: a write that Apple may apply must
    /// not be lost with the machine's power.
    func writeDurably<T: Sendable>(_ work: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await database.writeWithoutTransaction { db in
            if !durable { try db.execute(sql: "PRAGMA synchronous = FULL") }
            defer { if !durable { try? db.execute(sql: "PRAGMA synchronous = NORMAL") } }
            var value: T?
            try db.inTransaction {
                value = try work(db)
                return .commit
            }
            return value!
        }
    }

    /// A write made durable without holding the write lock through the fsync: committed as
    /// ``writeLightly(_:)`` does, then the WAL file synced from outside SQLite. Its frames are
    /// then either in the WAL, which the sync covers, or already checkpointed into the database,
    /// which SQLite syncs before it reuses the WAL (WAL mode, `synchronous = NORMAL`). The
    /// receiver's group commits wait on the lock for the rows alone.
    func writeThenSync<T: Sendable>(_ work: @escaping @Sendable (Database) throws -> T) async throws -> T {
        let value = try await writeLightly(work)
        guard Self.isFile(path) else { return value }
        let path = self.path
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            syncQueue.async { continuation.resume(with: Result { try Self.sync(walOf: path) }) }
        }
        return value
    }

    /// Whether `path` names a file on disk: not SQLite's temporary or in-memory database, nor
    /// a URI.
    private static func isFile(_ path: String) -> Bool {
        !path.isEmpty && path != ":memory:" && !path.hasPrefix("file:")
    }

    /// fsync(2) of the WAL, or of the database file when there is none.
    private static func sync(walOf path: String) throws {
        for file in [path + "-wal", path] {
            guard let handle = FileHandle(forReadingAtPath: file) else {
                if file.hasSuffix("-wal"), !FileManager.default.fileExists(atPath: file) { continue }
                throw AuditDatabaseError(.unavailable, "\(file) cannot be opened to sync it")
            }
            defer { try? handle.close() }
            // FileHandle's synchronize is fsync(2).
            do { try handle.synchronize() } catch { throw AuditDatabaseError(.unavailable, "\(file) cannot be synced: \(error)") }
            // The WAL held the frames: the database file need not be synced too.
            if file.hasSuffix("-wal") { break }
        }
    }

    /// The outbox's bookkeeping (a claim's lease, an attempt's result) committed without
    /// waiting for the WAL's fsync (`synchronous = NORMAL` for that one transaction): losing it
    /// with the machine's power only sends a delivery again, which at-least-once allows, and
    /// it holds the write lock the receiver's group commits wait on for less time.
    func writeLightly<T: Sendable>(_ work: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await database.writeWithoutTransaction { db in
            if durable { try db.execute(sql: "PRAGMA synchronous = NORMAL") }
            defer { if durable { try? db.execute(sql: "PRAGMA synchronous = FULL") } }
            var value: T?
            try db.inTransaction {
                value = try work(db)
                return .commit
            }
            return value!
        }
    }

    public func actions(_ query: AuditActionQuery) async throws -> [AuditAction] {
        try await database.read { db in
            let columns = Set(try db.columns(in: "api_action").map(\.name))
            var sql = "SELECT * FROM api_action"
            var arguments: StatementArguments = []
            var conditions: [String] = []
            if let id = query.transactionID {
                conditions.append("transaction_id = ? OR original_transaction_id = ?")
                arguments += [id, id]
            }
            // A trail older than v13 opened read-only links no write to an app transaction.
            if let id = query.appTransactionID, columns.contains("app_transaction_id") {
                conditions.append("app_transaction_id = ?")
                arguments += [id]
            }
            let asked = query.transactionID != nil || query.appTransactionID != nil
            if asked && conditions.isEmpty { return [] }
            if !conditions.isEmpty { sql += " WHERE " + conditions.map { "(\($0))" }.joined(separator: " OR ") }
            sql += " ORDER BY at DESC, id DESC LIMIT ?"
            arguments += [query.limit]
            return try Row.fetchAll(db, sql: sql, arguments: arguments).map { Self.action($0, columns: columns) }
        }
    }

    /// An `api_action` row; `columns` are the table's (a database opened read-only may be
    /// older than v9 or v13: those columns read as nil).
    static func action(_ row: Row, columns: Set<String>) -> AuditAction {
        AuditAction(
            id: row["id"], at: Date(timeIntervalSince1970: row["at"]), user: row["os_user"], action: row["action"],
            environment: row["environment"], requestID: row["request_id"], originalTransactionID: row["original_transaction_id"],
            transactionID: row["transaction_id"], productID: row["product_id"], requestBody: row["request_body"],
            httpStatus: row["http_status"], apiError: row["api_error"], result: row["result"],
            plan: columns.contains("plan") ? row["plan"] : nil, responseBody: columns.contains("response_body") ? row["response_body"] : nil,
            completedAt: columns.contains("completed_at") ? (row["completed_at"] as Double?).map(Date.init(timeIntervalSince1970:)) : nil,
            appTransactionID: columns.contains("app_transaction_id") ? row["app_transaction_id"] : nil,
            policy: columns.contains("policy") ? row["policy"] : nil)
    }

    public func lookupRequests(_ id: Int64) async throws -> [AuditLookupRequest] {
        try await database.read { db in
            try Row.fetchAll(
                db, sql: "SELECT endpoint, environment, url, http_status, api_error FROM api_request WHERE receipt_id = ? ORDER BY position",
                arguments: [id]
            ).map {
                AuditLookupRequest(
                    endpoint: $0["endpoint"], environment: $0["environment"], url: $0["url"], httpStatus: $0["http_status"],
                    apiError: $0["api_error"])
            }
        }
    }

    /// Records inputs in one transaction: a new receipt row for unseen content, a sighting
    /// either way (the same receipt seen twice is one row with two sightings).
    public func record(_ ingests: [Ingest]) async throws -> [Recorded] {
        try await database.write { db in
            var out: [Recorded] = []
            for ingest in ingests {
                let receiptData = ingest.receiptData
                let hash = ingest.contentHash
                let seen = ingest.seenAt.timeIntervalSince1970
                var isNew = false
                let id: Int64
                if let existing = try Int64.fetchOne(db, sql: "SELECT id FROM receipt WHERE content_hash = ?", arguments: [hash]) {
                    id = existing
                    try db.execute(sql: "UPDATE receipt SET last_seen = MAX(last_seen, ?) WHERE id = ?", arguments: [seen, id])
                } else {
                    isNew = true
                    let d = ingest.decoded
                    try db.execute(
                        sql: """
                            INSERT INTO receipt (content_hash, format, bundle_id, environment, receipt_data, first_seen, last_seen, status)
                            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                            """,
                        arguments: [
                            hash, d.format.rawValue, d.bundleID, d.environment?.rawValue ?? d.rawEnvironment, receiptData, seen, seen,
                            d.status,
                        ])
                    id = db.lastInsertedRowID
                    try insertPurchases(db, receipt: id, d.allPurchases)
                }
                try Self.insertSighting(db, receipt: id, kind: ingest.kind, source: ingest.source, at: seen)
                out.append(Recorded(id: id, isNew: isNew, receiptData: receiptData))
            }
            return out
        }
    }

    /// Records an input the decoder could not read that is sent as it is
    /// (`verify --send-undecodable`): a receipt row of format `undecodable` holding what was
    /// sent, and a sighting.
    public func recordUndecodable(bytes: [UInt8], receiptData: String, kind: SourceKind, source: String?, seenAt: Date) async throws -> Recorded {
        try await database.write { db in
            let hash = AuditContent.hash(Array(receiptData.utf8))
            let seen = seenAt.timeIntervalSince1970
            var isNew = false
            let id: Int64
            if let existing = try Int64.fetchOne(db, sql: "SELECT id FROM receipt WHERE content_hash = ?", arguments: [hash]) {
                id = existing
                try db.execute(sql: "UPDATE receipt SET last_seen = MAX(last_seen, ?) WHERE id = ?", arguments: [seen, id])
            } else {
                isNew = true
                try db.execute(
                    sql: """
                        INSERT INTO receipt (content_hash, format, receipt_data, first_seen, last_seen)
                        VALUES (?, 'undecodable', ?, ?, ?)
                        """,
                    arguments: [hash, receiptData, seen, seen])
                id = db.lastInsertedRowID
            }
            try Self.insertSighting(db, receipt: id, kind: kind, source: source, at: seen)
            return Recorded(id: id, isNew: isNew, receiptData: receiptData)
        }
    }

    /// One sighting of a recorded input: where it came from and when (seconds since 1970).
    private static func insertSighting(_ db: Database, receipt id: Int64, kind: SourceKind, source: String?, at seen: Double) throws {
        try db.execute(
            sql: "INSERT INTO sighting (receipt_id, source_kind, source, seen_at) VALUES (?, ?, ?, ?)",
            arguments: [id, kind.rawValue, source, seen])
    }

    /// The `purchase` table's columns after `receipt_id` and `source`: those of
    /// ``PurchaseField/audited``, named as the field is (the one table of purchase fields).
    private static let purchaseInsertSQL: String = {
        let columns = ["receipt_id", "source"] + PurchaseField.audited.map(\.name)
        let marks = Array(repeating: "?", count: columns.count).joined(separator: ", ")
        return "INSERT INTO purchase (\(columns.joined(separator: ", "))) VALUES (\(marks))"
    }()

    func insertPurchases(_ db: Database, receipt id: Int64, _ purchases: [Purchase]) throws {
        let statement = try db.cachedStatement(sql: Self.purchaseInsertSQL)
        for p in purchases {
            var arguments: [(any DatabaseValueConvertible)?] = [id, p.source.rawValue]
            for field in PurchaseField.audited {
                switch field.value(in: p) {
                case nil: arguments.append(nil)
                case .text(let text)?: arguments.append(text)
                case .integer(let number)?: arguments.append(number)
                case .flag(let flag)?: arguments.append(flag)
                case .date(let date)?: arguments.append(date.timeIntervalSince1970)  // seconds, as the column always held
                case .object(let value)?: arguments.append(value.compactJSON)
                }
            }
            try statement.execute(arguments: StatementArguments(arguments))
        }
    }

    /// Marks receipts as queued for verification (before any request is sent), so a batch
    /// killed half-way leaves them visibly pending.
    ///
    /// - Parameter again: also re-queue receipts already verified (an explicit new request).
    public func markPending(_ ids: [Int64], again: Bool = false) async throws {
        try await database.write { db in
            for id in ids {
                try db.execute(
                    sql: "UPDATE receipt SET state = ? WHERE id = ?" + (again ? "" : " AND state != ?"),
                    arguments: again ? [ReceiptState.pending.rawValue, id] : [ReceiptState.pending.rawValue, id, ReceiptState.done.rawValue])
            }
        }
    }

    /// Records one verification's attempts and final result in one transaction.
    public func recordResult(_ id: Int64, outcome: VerificationOutcome, at time: Date) async throws {
        try await database.write { db in
            var at = time.timeIntervalSince1970
            for a in outcome.attempts {
                try db.execute(
                    sql: """
                        INSERT INTO attempt (receipt_id, at, url, environment, http_status, apple_status, is_retryable, latency_ms, error, error_code)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        id, at, a.url, a.endpoint.rawValue, a.httpStatus, a.status, a.isRetryable, a.latencyMilliseconds,
                        a.transportFailure?.description, a.transportFailure?.code.description,
                    ])
                at += 0.000_001
            }
            let state = ReceiptState.verified(failed: outcome.failure != nil)
            try db.execute(
                sql: """
                    UPDATE receipt SET state = ?, status = ?, status_environment = ?, verified_at = ?, failure = ?, failure_code = ?
                    WHERE id = ?
                    """,
                arguments: [
                    state.rawValue, outcome.status, outcome.environment, time.timeIntervalSince1970, outcome.failure?.reason,
                    outcome.failure?.code.description, id,
                ])
            if let response = outcome.response {
                let known = Set(try String.fetchAll(db, sql: "SELECT transaction_id FROM purchase WHERE receipt_id = ? AND transaction_id IS NOT NULL", arguments: [id]))
                try insertPurchases(db, receipt: id, response.latestReceiptInfo.filter { !known.contains($0.transactionID ?? "") })
            }
        }
    }

    /// Receipts queued but not finished (after a crash or a kill), oldest first.
    public func pending() async throws -> [(id: Int64, receiptData: String)] {
        try await database.read(Self.pending)
    }

    /// How many receipts wait for verification, read at once on the caller's thread: for a
    /// test that looks from inside a synchronous callback.
    package func pendingCountNow() throws -> Int {
        try database.read(Self.pending).count
    }

    private static func pending(_ db: Database) throws -> [(id: Int64, receiptData: String)] {
        try Row.fetchAll(
            db, sql: "SELECT id, receipt_data FROM receipt WHERE state = ? AND receipt_data IS NOT NULL ORDER BY id",
            arguments: [ReceiptState.pending.rawValue])
            .map { ($0["id"], $0["receipt_data"]) }
    }

    /// Receipts recorded after row `id`, oldest first.
    public func receipts(after id: Int64, limit: Int = 500) async throws -> [FeedReceipt] {
        try await database.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT r.id, r.receipt_data, (SELECT source FROM sighting s WHERE s.receipt_id = r.id ORDER BY s.id LIMIT 1) AS source
                    FROM receipt r WHERE r.id > ? ORDER BY r.id LIMIT ?
                    """, arguments: [id, limit]
            ).map { FeedReceipt(id: $0["id"], receiptData: $0["receipt_data"], source: $0["source"]) }
        }
    }

    /// Verifications finished after `time` (epoch seconds), oldest first, with their attempts.
    public func results(after time: Double, limit: Int = 500) async throws -> [FeedResult] {
        try await database.read { db in
            // A read-only follower may open a database an older writer has not migrated to v2.
            let typed = try db.columns(in: "attempt").contains { $0.name == "error_code" }
            let failureCode = typed ? "failure_code" : "NULL AS failure_code"
            let errorCode = typed ? "error_code" : "NULL AS error_code"
            return try Row.fetchAll(
                db,
                sql: """
                    SELECT id, status, status_environment, failure, \(failureCode), verified_at FROM receipt
                    WHERE verified_at > ? AND state IN (?, ?) ORDER BY verified_at LIMIT ?
                    """, arguments: [time, ReceiptState.done.rawValue, ReceiptState.failed.rawValue, limit]
            ).map { row in
                let id: Int64 = row["id"]
                let attempts = try Row.fetchAll(
                    db,
                    sql: """
                        SELECT url, environment, http_status, apple_status, is_retryable, latency_ms, error, \(errorCode)
                        FROM attempt WHERE receipt_id = ? ORDER BY id
                        """,
                    arguments: [id]
                ).map(Self.attempt)
                let failure = (row["failure"] as String?).map { reason in
                    VerificationFailure(
                        VerificationFailure.Code(storedName: row["failure_code"] ?? "") ?? .retriesExhausted, reason,
                        last: attempts.last?.result)
                }
                return FeedResult(
                    id: id, status: row["status"], environment: row["status_environment"], failure: failure,
                    verifiedAt: row["verified_at"], attempts: attempts)
            }
        }
    }

    /// An attempt as recorded: Apple's status, else the transport failure's code, else the
    /// HTTP status.
    static func attempt(_ a: Row) -> VerificationAttempt {
        let result: AttemptResult
        let httpStatus: Int? = a["http_status"]
        if let status: Int = a["apple_status"] {
            result = .apple(status: status, isRetryable: a["is_retryable"])
        } else if let name: String = a["error_code"] {
            let code = TransportFailure.Code(storedName: name) ?? .other
            result = .transport(TransportFailure(code, recordedDescription: a["error"] ?? ""))
        } else if let httpStatus, httpStatus != 200 {
            result = .http(status: httpStatus)
        } else {
            result = .transport(TransportFailure(.other, detail: a["error"] ?? "no answer"))
        }
        return VerificationAttempt(
            url: a["url"], endpoint: VerifyEndpoint.Kind(rawValue: a["environment"] ?? "") ?? .production, result: result,
            httpStatus: httpStatus, latencyMilliseconds: a["latency_ms"] ?? 0)
    }

    /// How many attempts each receipt has on record.
    public func attemptsPerReceipt() async throws -> [Int64: Int] {
        try await database.read { db in
            Dictionary(
                uniqueKeysWithValues: try Row.fetchAll(db, sql: "SELECT receipt_id, COUNT(*) AS n FROM attempt GROUP BY receipt_id").map {
                    ($0["receipt_id"] as Int64, $0["n"] as Int)
                })
        }
    }

    /// The stored receipt data of a row, if it has any.
    public func receiptData(_ id: Int64) async throws -> String? {
        try await database.read { db in try String.fetchOne(db, sql: "SELECT receipt_data FROM receipt WHERE id = ?", arguments: [id]) }
    }

    /// Counts by state.
    public func counts() async throws -> [String: Int] {
        try await database.read(Self.counts)
    }

    /// ``counts()`` read at once on the caller's thread: for a test that watches another
    /// process's batch from a thread of its own, while the cooperative pool may be busy.
    package func countsNow() throws -> [String: Int] {
        try database.read(Self.counts)
    }

    private static func counts(_ db: Database) throws -> [String: Int] {
        Dictionary(
            uniqueKeysWithValues: try Row.fetchAll(db, sql: "SELECT state, COUNT(*) AS n FROM receipt GROUP BY state").map {
                ($0["state"] as String, $0["n"] as Int)
            })
    }

    /// Deletes receipts not seen for `days` days (their sightings, attempts and purchases go
    /// with them). Returns how many receipts were removed.
    @discardableResult
    public func prune(keepDays days: Int, now: Date) async throws -> Int {
        try await database.write { db in
            try db.execute(sql: "DELETE FROM receipt WHERE last_seen < ?", arguments: [now.timeIntervalSince1970 - Double(days) * 86_400])
            return db.changesCount
        }
    }
}
