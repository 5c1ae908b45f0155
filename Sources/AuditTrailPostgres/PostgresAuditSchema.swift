import AuditTrail
import Logging
import PostgresNIO

/// The PostgreSQL audit trail's schema: the SQLite store's migrations (``AuditStore/migrator``)
/// under the same names and with the same tables and columns, in PostgreSQL's types: ids
/// `BIGINT GENERATED ALWAYS AS IDENTITY`, times as epoch seconds in `DOUBLE PRECISION` (as SQLite
/// keeps them), integers `BIGINT`, and `attempt.is_retryable` a `BOOLEAN` (SQLite's 0/1).
///
/// One migration is PostgreSQL's own, `pg1-follow`: the top-level transaction that last
/// inserted or changed a row (`xid8`), so that a follower finds rows that committed after a
/// newer one it already read (see ``PostgresAuditStore``).
///
/// Applied names are kept in `receiptdash_migration`; the migrations run in one transaction
/// holding `pg_advisory_xact_lock`, so two processes starting at once migrate once.
enum PostgresAuditSchema {
    struct Migration: Sendable {
        var name: String
        var statements: [PostgresQuery]
        /// Run after the statements, in the same transaction (rows filled from what they hold).
        var then: (@Sendable (CheckedConnection, Logger) async throws -> Void)? = nil
    }

    /// The advisory lock every migration runs under (an arbitrary, fixed 64-bit key).
    static let migrationLock: Int64 = 0x7265_6370_7464_6231  // "recptdb1"

    static let migrations: [Migration] = [
        Migration(
            name: "v1",
            statements: [
                """
                CREATE TABLE receipt (
                    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    content_hash TEXT NOT NULL UNIQUE,
                    format TEXT NOT NULL,
                    bundle_id TEXT,
                    environment TEXT,
                    receipt_data TEXT,
                    first_seen DOUBLE PRECISION NOT NULL,
                    last_seen DOUBLE PRECISION NOT NULL,
                    state TEXT NOT NULL DEFAULT 'decoded',
                    status BIGINT,
                    status_environment TEXT,
                    verified_at DOUBLE PRECISION,
                    failure TEXT
                )
                """,
                "CREATE INDEX receipt_bundle ON receipt(bundle_id)",
                "CREATE INDEX receipt_status ON receipt(status)",
                "CREATE INDEX receipt_state ON receipt(state)",
                "CREATE INDEX receipt_last_seen ON receipt(last_seen)",
                """
                CREATE TABLE sighting (
                    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    receipt_id BIGINT NOT NULL REFERENCES receipt(id) ON DELETE CASCADE,
                    source_kind TEXT NOT NULL,
                    source TEXT,
                    seen_at DOUBLE PRECISION NOT NULL
                )
                """,
                "CREATE INDEX sighting_receipt ON sighting(receipt_id)",
                """
                CREATE TABLE attempt (
                    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    receipt_id BIGINT NOT NULL REFERENCES receipt(id) ON DELETE CASCADE,
                    at DOUBLE PRECISION NOT NULL,
                    url TEXT NOT NULL,
                    environment TEXT,
                    http_status BIGINT,
                    apple_status BIGINT,
                    is_retryable BOOLEAN,
                    latency_ms DOUBLE PRECISION,
                    error TEXT
                )
                """,
                "CREATE INDEX attempt_receipt ON attempt(receipt_id)",
                """
                CREATE TABLE purchase (
                    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    receipt_id BIGINT NOT NULL REFERENCES receipt(id) ON DELETE CASCADE,
                    source TEXT,
                    product_id TEXT,
                    transaction_id TEXT,
                    original_transaction_id TEXT,
                    quantity BIGINT,
                    purchase_date DOUBLE PRECISION,
                    expires_date DOUBLE PRECISION,
                    cancellation_date DOUBLE PRECISION
                )
                """,
                "CREATE INDEX purchase_transaction ON purchase(transaction_id)",
                "CREATE INDEX purchase_original ON purchase(original_transaction_id)",
                "CREATE INDEX purchase_product ON purchase(product_id)",
                "CREATE INDEX purchase_receipt ON purchase(receipt_id)",
            ]),
        // v2: the typed outcome beside the words (as in SQLite, v1 rows classified once).
        Migration(
            name: "v2", statements: AuditSchema.v2.map { PostgresQuery(unsafeSQL: $0) }),
        // v3: App Store Server API look-ups and their requests (URLs only, never a token).
        Migration(
            name: "v3",
            statements: [
                """
                CREATE TABLE api_request (
                    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    receipt_id BIGINT NOT NULL REFERENCES receipt(id) ON DELETE CASCADE,
                    position BIGINT NOT NULL,
                    endpoint TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    url TEXT NOT NULL,
                    http_status BIGINT,
                    api_error BIGINT,
                    result TEXT NOT NULL,
                    latency_ms DOUBLE PRECISION,
                    retry_after DOUBLE PRECISION,
                    wait_seconds DOUBLE PRECISION
                )
                """,
                "CREATE INDEX api_request_receipt ON api_request(receipt_id)",
            ]),
        // v4: notifications received (one row per notificationUUID) and requests refused.
        Migration(
            name: "v4",
            statements: [
                """
                CREATE TABLE notification (
                    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    notification_uuid TEXT NOT NULL UNIQUE,
                    version TEXT NOT NULL,
                    notification_type TEXT,
                    subtype TEXT,
                    bundle_id TEXT,
                    app_apple_id BIGINT,
                    environment TEXT,
                    signed_date DOUBLE PRECISION,
                    received_at DOUBLE PRECISION NOT NULL,
                    last_received_at DOUBLE PRECISION NOT NULL,
                    deliveries BIGINT NOT NULL DEFAULT 1,
                    verdict TEXT NOT NULL,
                    reason TEXT,
                    transaction_id TEXT,
                    original_transaction_id TEXT,
                    product_id TEXT,
                    peer TEXT,
                    signed_payload TEXT
                )
                """,
                "CREATE INDEX notification_received ON notification(received_at)",
                "CREATE INDEX notification_type ON notification(notification_type)",
                "CREATE INDEX notification_transaction ON notification(transaction_id)",
                "CREATE INDEX notification_original ON notification(original_transaction_id)",
                """
                CREATE TABLE notification_rejection (
                    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    at DOUBLE PRECISION NOT NULL,
                    peer TEXT,
                    reason TEXT NOT NULL,
                    http_status BIGINT NOT NULL,
                    body_size BIGINT,
                    body_prefix TEXT
                )
                """,
                "CREATE INDEX notification_rejection_at ON notification_rejection(at)",
            ]),
        // v5: redeliveries are looked up by `last_received_at`.
        Migration(name: "v5", statements: ["CREATE INDEX notification_last_received ON notification(last_received_at)"]),
        // v6: refusals sampled per class, address and minute, with a count.
        Migration(name: "v6", statements: AuditSchema.v6.map { PostgresQuery(unsafeSQL: $0) }),
        // v7: the writes sent to Apple.
        Migration(
            name: "v7",
            statements: AuditSchema.v7(id: "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", real: "DOUBLE PRECISION", integer: "BIGINT").map {
                PostgresQuery(unsafeSQL: $0)
            }),
        // v8: today's payload fields of each purchase.
        Migration(name: "v8", statements: AuditSchema.v8(integer: "BIGINT").map { PostgresQuery(unsafeSQL: $0) }),
        // v9: writes recorded as pending before they are sent, completed with their outcome.
        Migration(name: "v9", statements: AuditSchema.v9(real: "DOUBLE PRECISION").map { PostgresQuery(unsafeSQL: $0) }),
        // PostgreSQL only: which top-level transaction last wrote each row a follower reads
        // (`pg_current_xact_id()`), indexed, so a follower can ask for the rows committed since
        // its last snapshot whatever their ids (several writers commit out of id order).
        Migration(
            name: "pg1-follow",
            statements: [
                "ALTER TABLE receipt ADD COLUMN inserted_xid xid8 NOT NULL DEFAULT pg_current_xact_id()",
                "ALTER TABLE receipt ADD COLUMN result_xid xid8",
                "CREATE INDEX receipt_inserted_xid ON receipt(inserted_xid)",
                "CREATE INDEX receipt_result_xid ON receipt(result_xid)",
                "ALTER TABLE notification ADD COLUMN changed_xid xid8 NOT NULL DEFAULT pg_current_xact_id()",
                "CREATE INDEX notification_changed_xid ON notification(changed_xid)",
                "ALTER TABLE notification_rejection ADD COLUMN inserted_xid xid8 NOT NULL DEFAULT pg_current_xact_id()",
                "CREATE INDEX notification_rejection_inserted_xid ON notification_rejection(inserted_xid)",
            ]),
        // v10: customers found by app account token and app transaction id; notifications
        // stored before it get both from their payloads.
        Migration(name: "v10", statements: AuditSchema.v10(flag: "BOOLEAN").map { PostgresQuery(unsafeSQL: $0) }, then: fillCustomerIDs),
        // v11: the forwarding outbox (`receive --forward`).
        Migration(
            name: "v11",
            statements: AuditSchema.v11(id: "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", real: "DOUBLE PRECISION", integer: "BIGINT").map {
                PostgresQuery(unsafeSQL: $0)
            }),
        // v12: the registered forwarding targets, queued for by every process that stores.
        Migration(name: "v12", statements: AuditSchema.v12(real: "DOUBLE PRECISION").map { PostgresQuery(unsafeSQL: $0) }),
        // v13: each write linked to the customer's app transaction id.
        Migration(name: "v13", statements: AuditSchema.v13.map { PostgresQuery(unsafeSQL: $0) }),
        // v14: Retention Messaging's realtime requests and the content Apple holds.
        Migration(
            name: "v14",
            statements: AuditSchema.v14(id: "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", real: "DOUBLE PRECISION", integer: "BIGINT").map {
                PostgresQuery(unsafeSQL: $0)
            }),
        // v15: consumption requests answered by policy, and the policy each write was sent by.
        Migration(
            name: "v15",
            statements: AuditSchema.v15(id: "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", real: "DOUBLE PRECISION", integer: "BIGINT").map {
                PostgresQuery(unsafeSQL: $0)
            }),
    ]

    static var names: [String] { migrations.map(\.name) }

    /// v10's fill: the app account token and app transaction id of each notification stored
    /// before it, read from its payload, a thousand rows at a time.
    @Sendable static func fillCustomerIDs(_ connection: CheckedConnection, logger: Logger) async throws {
        var after: Int64 = 0
        while true {
            let rows = try await connection.query(
                "SELECT id, signed_payload FROM notification WHERE id > \(after) AND signed_payload IS NOT NULL ORDER BY id LIMIT 1000",
                logger: logger
            ).collect()
            guard !rows.isEmpty else { return }
            for row in rows {
                let (id, payload) = try row.decode((Int64, String).self)
                after = id
                let ids = NotificationCustomerIDs.read(payload)
                guard ids.appAccountToken != nil || ids.appTransactionID != nil else { continue }
                try await connection.query(
                    "UPDATE notification SET app_account_token = \(ids.appAccountToken), app_transaction_id = \(ids.appTransactionID) WHERE id = \(id)",
                    logger: logger)
            }
        }
    }

    /// Applies the migrations not yet applied, in one transaction under the advisory lock.
    /// Returns the names applied now.
    /// - Parameter last: stop after this migration (tests build older databases).
    static func migrate(_ connection: CheckedConnection, logger: Logger, upTo last: String? = nil) async throws -> [String] {
        try await connection.query("BEGIN", logger: logger)
        do {
            try await connection.query("SELECT pg_advisory_xact_lock(\(migrationLock))", logger: logger)
            try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS receiptdash_migration (
                    name TEXT PRIMARY KEY,
                    applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
                )
                """, logger: logger)
            let applied = Set(
                try await connection.query("SELECT name FROM receiptdash_migration", logger: logger).collect().map { try $0.decode(String.self) })
            var now: [String] = []
            for migration in migrations {
                if !applied.contains(migration.name) {
                    for statement in migration.statements { try await connection.query(statement, logger: logger) }
                    try await migration.then?(connection, logger)
                    try await connection.query("INSERT INTO receiptdash_migration (name) VALUES (\(migration.name))", logger: logger)
                    now.append(migration.name)
                }
                if migration.name == last { break }
            }
            try await connection.query("COMMIT", logger: logger)
            return now
        } catch {
            _ = try? await connection.query("ROLLBACK", logger: logger)
            throw error
        }
    }

    /// The migrations a database lacks (all of them when it has none), without changing it.
    static func missing(_ connection: CheckedConnection, logger: Logger) async throws -> [String] {
        let exists = try await connection.query("SELECT to_regclass('receiptdash_migration') IS NOT NULL", logger: logger).collect()
        guard try exists.first?.decode(Bool.self) == true else { return names }
        let applied = Set(
            try await connection.query("SELECT name FROM receiptdash_migration", logger: logger).collect().map { try $0.decode(String.self) })
        return names.filter { !applied.contains($0) }
    }
}
