import AuditTrail
import Foundation
import GRDB
import ReceiptCore
import ReceiptTrust

/// The notification tables of the SQLite trail (migration v4): one row per notificationUUID,
/// the refused requests, and a follower's view of both.
extension AuditStore {
    public func writeNotifications(_ batch: [NotificationWrite]) async throws -> [Result<AppendOutcome, NotificationStoreError>] {
        try await database.write { db in
            batch.map { item in
                do {
                    var outcome = AppendOutcome.stored
                    try db.inSavepoint {
                        outcome = try Self.write(item, db)
                        return .commit
                    }
                    return .success(outcome)
                } catch {
                    return .failure(NotificationStoreError(.database, "could not store: \(error)"))
                }
            }
        }
    }

    private static func write(_ item: NotificationWrite, _ db: Database) throws -> AppendOutcome {
        switch item {
        case .notification(let r):
            // A test notification (a --root-ca chain) never shadows a genuine one: a genuine
            // delivery of the same notificationUUID replaces its row instead of counting as a
            // redelivery of it.
            // Both statements are compiled once per connection (GRDB's statement cache):
            // compiling them for every notification was a seventh of the receiver's SQLite time.
            if r.verdict != .test {
                try db.cachedStatement(sql: "DELETE FROM notification WHERE notification_uuid = ? AND verdict = ?")
                    .execute(arguments: [r.notificationUUID, TrustReport.Verdict.test.rawValue])
            }
            // A new row counts this record's deliveries (a history copy's are none) and is queued
            // for forwarding. One already there (this transaction holds SQLite's one write lock,
            // so it stays there) gains Apple's delivery, and nothing from a history copy.
            let inserted = try Int.fetchOne(
                db.cachedStatement(
                    sql: """
                        INSERT INTO notification (notification_uuid, version, notification_type, subtype, bundle_id, app_apple_id,
                            environment, signed_date, received_at, last_received_at, deliveries, verdict, reason, transaction_id,
                            original_transaction_id, product_id, peer, signed_payload, app_account_token, app_transaction_id)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        ON CONFLICT(notification_uuid) DO NOTHING
                        RETURNING deliveries
                        """),
                arguments: [
                    r.notificationUUID, r.version.rawValue, r.notificationType, r.subtype, r.bundleID, r.appAppleID, r.environment,
                    r.signedDate?.timeIntervalSince1970, r.receivedAt.timeIntervalSince1970, r.receivedAt.timeIntervalSince1970,
                    r.deliveriesCounted, r.verdict.rawValue, r.reason, r.transactionID, r.originalTransactionID, r.productID, r.peer,
                    r.signedPayload, r.appAccountToken, r.appTransactionID,
                ])
            if inserted != nil {
                try queueForwards(r, db)
                try queueConsumption(r, db)
                return .stored
            }
            let deliveries =
                r.deliveriesCounted == 0
                ? try Int.fetchOne(
                    db.cachedStatement(sql: "SELECT deliveries FROM notification WHERE notification_uuid = ?"), arguments: [r.notificationUUID])
                : try Int.fetchOne(
                    db.cachedStatement(
                        sql: """
                            UPDATE notification SET deliveries = deliveries + 1, last_received_at = MAX(last_received_at, ?)
                            WHERE notification_uuid = ? RETURNING deliveries
                            """),
                    arguments: [r.receivedAt.timeIntervalSince1970, r.notificationUUID])
            return .redelivery(deliveries: deliveries ?? 0)
        case .rejection(let r):
            try db.cachedStatement(
                sql: """
                    INSERT INTO notification_rejection (at, peer, reason, http_status, body_size, body_prefix, kind, count, sample_key)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """
            ).execute(
                arguments: [
                    r.at.timeIntervalSince1970, r.peer, r.reason, r.httpStatus, r.bodySize, r.bodyPrefix, r.kind, r.count, r.sampleKey,
                ])
            return .stored
        case .rejectionCount(let key, let add):
            try db.cachedStatement(sql: "UPDATE notification_rejection SET count = count + ? WHERE sample_key = ?")
                .execute(arguments: [add, key])
            return .stored
        case .pruneRejections(let before):
            try db.execute(sql: "DELETE FROM notification_rejection WHERE at < ?", arguments: [before.timeIntervalSince1970])
            return .stored
        case .heartbeat(let receiver, let at):
            let beat = ReceiverHeartbeat(receiver: receiver, at: at)
            try db.cachedStatement(
                sql: "INSERT INTO receiptdash_job (name, finished_at) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET finished_at = excluded.finished_at"
            ).execute(arguments: [beat.jobName, at.timeIntervalSince1970])
            try db.cachedStatement(sql: "DELETE FROM receiptdash_job WHERE name LIKE 'heartbeat %' AND finished_at < ?")
                .execute(arguments: [at.timeIntervalSince1970 - ReceiverHeartbeat.keep])
            return .stored
        }
    }

    public func notifications() async throws -> [StoredNotification] {
        try await database.read { db in
            guard try db.tableExists("notification") else { return [] }
            return try Row.fetchAll(db, sql: "SELECT * FROM notification ORDER BY received_at, id").map(StoredNotification.init(row:))
        }
    }

    public func receiverHeartbeats() async throws -> [ReceiverHeartbeat] {
        try await database.read { db in
            guard try db.tableExists("receiptdash_job") else { return [] }
            return try Row.fetchAll(db, sql: "SELECT name, finished_at FROM receiptdash_job WHERE name LIKE 'heartbeat %' ORDER BY finished_at DESC")
                .map { ReceiverHeartbeat(receiver: String(($0[0] as String).dropFirst(10)), at: Date(timeIntervalSince1970: $0[1])) }
        }
    }

    public func lastNotificationID() async throws -> Int64 {
        try await database.read { db in
            guard try db.tableExists("notification") else { return 0 }
            return try Int64.fetchOne(db, sql: "SELECT max(id) FROM notification") ?? 0
        }
    }

    public func notifications(after id: Int64, limit: Int) async throws -> [(id: Int64, notification: StoredNotification)] {
        try await database.read { db in
            guard try db.tableExists("notification") else { return [] }
            return try Row.fetchAll(db, sql: "SELECT * FROM notification WHERE id > ? ORDER BY id LIMIT ?", arguments: [id, limit])
                .map { (id: $0["id"], notification: try StoredNotification(row: $0)) }
        }
    }

    public func rejections() async throws -> [RejectionRecord] {
        try await database.read { db in
            guard try db.tableExists("notification_rejection") else { return [] }
            return try Row.fetchAll(db, sql: "SELECT * FROM notification_rejection ORDER BY at, id").map(RejectionRecord.init(row:))
        }
    }

    /// Rows are numbered in commit order here (one writer): an id skipped over is never
    /// committed later, so nothing is awaited.
    public func followNotifications(_ marks: NotificationMarks, limit: Int, lookBack: TimeInterval) async throws
        -> (notifications: [FollowedNotification], rejections: [RejectionRecord], marks: NotificationMarks)
    {
        try await database.read { db in
            var after = marks
            guard try db.tableExists("notification") else { return ([], [], after) }
            var rows: [Row]
            var rejectionRows: [Row] = []
            if !marks.started {
                rows = try Row.fetchAll(db, sql: "SELECT * FROM notification ORDER BY id DESC LIMIT ?", arguments: [limit]).reversed()
                after.lastRejectionID = try Int64.fetchOne(db, sql: "SELECT MAX(id) FROM notification_rejection") ?? 0
                after.firstRejectionID = after.lastRejectionID
                after.started = true
            } else {
                rows = []
                if !marks.newRowsOnly {
                    // Delivered again since read: a second POST, or a first POST of a backfilled row.
                    rows = try Row.fetchAll(
                        db,
                        sql: """
                            SELECT * FROM notification
                            WHERE id <= ? AND (deliveries > 1 OR (deliveries = 1 AND peer = ?)) AND last_received_at >= ? ORDER BY id
                            """,
                        arguments: [marks.lastID, NotificationRecord.historyPeer, marks.newestDelivery - lookBack])
                    rejectionRows = try Row.fetchAll(
                        db,
                        sql: "SELECT * FROM notification_rejection WHERE id > ? OR (id > ? AND count > 1 AND at >= ?) ORDER BY id",
                        arguments: [marks.lastRejectionID, marks.firstRejectionID, marks.newestRejection - NotificationMarks.refusalGrowthWindow])
                }
                rows += try Row.fetchAll(db, sql: "SELECT * FROM notification WHERE id > ? ORDER BY id LIMIT ?", arguments: [marks.lastID, limit])
            }
            for row in rows {
                after.lastID = max(after.lastID, row["id"])
                after.newestDelivery = max(after.newestDelivery, row["last_received_at"])
            }
            for row in rejectionRows {
                after.lastRejectionID = max(after.lastRejectionID, row["id"])
                after.newestRejection = max(after.newestRejection, row["at"])
            }
            let followed = try rows.map { row in
                let id: Int64 = row["id"]
                return FollowedNotification(id: id, stored: try StoredNotification(row: row), isNew: marks.isFirstSight(of: id))
            }
            return (followed, rejectionRows.map(RejectionRecord.init(row:)), after)
        }
    }

    public func isWritable() async -> Bool {
        guard !readOnly else { return false }
        do {
            // BEGIN IMMEDIATE … COMMIT: takes the write lock, writes nothing.
            try await database.write { _ in }
            return true
        } catch {
            return false
        }
    }

    /// SQLite cannot tell another process's commit: followers look twice a second.
    public func changes() -> AsyncStream<Void>? { nil }

    /// SQLite has nothing to run: its connections are opened with the store.
    public func run() async {}

    public func close() async {}

    public func words(for error: any Error) -> String {
        AuditErrorWords.common(error) ?? Self.words(error) ?? String(describing: error)
    }

    /// The synchronous mode of the writer connection (2 is FULL).
    public func synchronousMode() throws -> Int {
        try database.writeWithoutTransaction { try Int.fetchOne($0, sql: "PRAGMA synchronous") ?? -1 }
    }
}

extension StoredNotification {
    init(row: Row) throws {
        self.init(
            record: NotificationRecord(
                notificationUUID: row["notification_uuid"], version: try NotificationVersion(stored: row["version"]), notificationType: row["notification_type"],
                subtype: row["subtype"], bundleID: row["bundle_id"], appAppleID: row["app_apple_id"], environment: row["environment"],
                signedDate: (row["signed_date"] as Double?).map(Date.init(timeIntervalSince1970:)),
                receivedAt: Date(timeIntervalSince1970: row["received_at"]), verdict: try TrustReport.Verdict(stored: row["verdict"]), reason: row["reason"],
                transactionID: row["transaction_id"], originalTransactionID: row["original_transaction_id"],
                productID: row["product_id"], peer: row["peer"], signedPayload: row["signed_payload"],
                // Absent from a trail older than v10 opened read-only: nil.
                appAccountToken: row["app_account_token"], appTransactionID: row["app_transaction_id"]),
            deliveries: row["deliveries"], lastReceivedAt: Date(timeIntervalSince1970: row["last_received_at"]))
    }
}

extension RejectionRecord {
    init(row: Row) {
        self.init(
            at: Date(timeIntervalSince1970: row["at"]), peer: row["peer"], reason: row["reason"], httpStatus: row["http_status"],
            bodySize: row["body_size"], body: [UInt8]())
        bodyPrefix = row["body_prefix"]
        kind = row["kind"]
        count = row["count"] ?? 1
        sampleKey = row["sample_key"]
    }
}
