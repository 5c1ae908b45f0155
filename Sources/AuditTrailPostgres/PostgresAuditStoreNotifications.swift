import AuditTrail
import Foundation
import PlainWords
import PostgresNIO
import ReceiptCore
import ReceiptTrust

/// Notifications and refusals on PostgreSQL (migration v4): one row per notificationUUID with
/// its deliveries counted by the database (`ON CONFLICT … DO UPDATE … RETURNING deliveries`, so
/// two receivers taking the same redelivery count two), a batch in one transaction with a
/// savepoint per item, and a follower that misses nothing committed out of id order.
extension PostgresAuditStore {
    public func writeNotifications(_ batch: [NotificationWrite]) async throws -> [Result<AppendOutcome, NotificationStoreError>] {
        guard !batch.isEmpty else { return [] }
        let password = postgresLocation.passwordValue
        return try await write("storing \(CountNoun.notification.count(batch.count))") { [self] connection in
            var results: [Result<AppendOutcome, NotificationStoreError>] = []
            results.reserveCapacity(batch.count)
            for item in batch {
                try await connection.query("SAVEPOINT item", logger: logger)
                do {
                    let outcome = try await Self.write(item, connection, logger: logger)
                    try await connection.query("RELEASE SAVEPOINT item", logger: logger)
                    results.append(.success(outcome))
                } catch {
                    // The server refused this row: undo it alone. Anything else (the connection
                    // went away) fails the transaction, which is retried as a whole.
                    guard Self.classify(error) == .refused else { throw error }
                    try await connection.query("ROLLBACK TO SAVEPOINT item", logger: logger)
                    results.append(.failure(NotificationStoreError(.database, "could not store: \(Self.describe(error, password: password))")))
                }
            }
            return results
        }
    }

    private static func write(_ item: NotificationWrite, _ connection: CheckedConnection, logger: Logger) async throws -> AppendOutcome {
        switch item {
        case .notification(let r):
            let received = r.receivedAt.timeIntervalSince1970
            // A test notification never shadows a genuine one (as on SQLite).
            if r.verdict != .test {
                try await connection.query(
                    "DELETE FROM notification WHERE notification_uuid = \(r.notificationUUID) AND verdict = \(TrustReport.Verdict.test.rawValue)",
                    logger: logger)
            }
            // As on SQLite: a new row counts this record's deliveries (a history copy's are none)
            // and is queued for forwarding; one already there gains Apple's delivery, and nothing
            // from a history copy. Another host's transaction may delete the row between the two
            // statements (a genuine delivery replacing a test row): then it is inserted again.
            while true {
                let inserted = try await connection.query(
                    """
                    INSERT INTO notification (notification_uuid, version, notification_type, subtype, bundle_id, app_apple_id,
                        environment, signed_date, received_at, last_received_at, deliveries, verdict, reason, transaction_id,
                        original_transaction_id, product_id, peer, signed_payload, app_account_token, app_transaction_id)
                    VALUES (\(r.notificationUUID), \(r.version.rawValue), \(r.notificationType), \(r.subtype), \(r.bundleID), \(r.appAppleID),
                        \(r.environment), \(r.signedDate?.timeIntervalSince1970), \(received), \(received), \(r.deliveriesCounted),
                        \(r.verdict.rawValue), \(r.reason), \(r.transactionID), \(r.originalTransactionID), \(r.productID), \(r.peer),
                        \(r.signedPayload), \(r.appAccountToken), \(r.appTransactionID))
                    ON CONFLICT (notification_uuid) DO NOTHING
                    RETURNING deliveries
                    """, logger: logger
                ).collect()
                if !inserted.isEmpty {
                    try await queueForwards(r, connection, logger: logger)
                    try await queueConsumption(r, connection, logger: logger)
                    return .stored
                }
                let counted = try await connection.query(
                    r.deliveriesCounted == 0
                        ? "SELECT deliveries FROM notification WHERE notification_uuid = \(r.notificationUUID)"
                        : """
                        UPDATE notification SET deliveries = notification.deliveries + 1,
                            last_received_at = GREATEST(notification.last_received_at, \(received)), changed_xid = pg_current_xact_id()
                        WHERE notification_uuid = \(r.notificationUUID) RETURNING deliveries
                        """, logger: logger
                ).collect()
                if let deliveries = try counted.first?.decode(Int.self) { return .redelivery(deliveries: deliveries) }
            }
        case .rejection(let r):
            try await connection.query(
                """
                INSERT INTO notification_rejection (at, peer, reason, http_status, body_size, body_prefix, kind, count, sample_key)
                VALUES (\(r.at.timeIntervalSince1970), \(r.peer), \(r.reason), \(r.httpStatus), \(r.bodySize), \(r.bodyPrefix),
                    \(r.kind), \(r.count), \(r.sampleKey))
                """, logger: logger)
            return .stored
        case .rejectionCount(let key, let add):
            try await connection.query(
                "UPDATE notification_rejection SET count = count + \(add) WHERE sample_key = \(key)", logger: logger)
            return .stored
        case .pruneRejections(let before):
            try await connection.query(
                "DELETE FROM notification_rejection WHERE at < \(before.timeIntervalSince1970)", logger: logger)
            return .stored
        case .heartbeat(let receiver, let at):
            let beat = ReceiverHeartbeat(receiver: receiver, at: at)
            let seconds = at.timeIntervalSince1970
            try await connection.query(
                """
                INSERT INTO receiptdash_job (name, finished_at) VALUES (\(beat.jobName), \(seconds))
                ON CONFLICT (name) DO UPDATE SET finished_at = EXCLUDED.finished_at
                """, logger: logger)
            try await connection.query(
                "DELETE FROM receiptdash_job WHERE name LIKE 'heartbeat %' AND finished_at < \(seconds - ReceiverHeartbeat.keep)", logger: logger)
            return .stored
        }
    }

    static let notificationColumns: StaticString = """
        SELECT id, notification_uuid, version, notification_type, subtype, bundle_id, app_apple_id, environment, signed_date,
            received_at, last_received_at, deliveries, verdict, reason, transaction_id, original_transaction_id, product_id, peer,
            signed_payload, app_account_token, app_transaction_id
        """

    /// A notification row in ``notificationColumns``' order, with its id.
    static func notification(_ row: PostgresRow) throws -> (id: Int64, stored: StoredNotification) {
        let c = row.makeRandomAccess()
        let record = NotificationRecord(
            notificationUUID: try c[1].decode(String.self), version: try NotificationVersion(stored: c[2].decode(String.self)),
            notificationType: try c[3].decode(String?.self), subtype: try c[4].decode(String?.self),
            bundleID: try c[5].decode(String?.self), appAppleID: try c[6].decode(Int64?.self), environment: try c[7].decode(String?.self),
            signedDate: try c[8].decode(Double?.self).map(Date.init(timeIntervalSince1970:)),
            receivedAt: Date(timeIntervalSince1970: try c[9].decode(Double.self)), verdict: try TrustReport.Verdict(stored: c[12].decode(String.self)),
            reason: try c[13].decode(String?.self), transactionID: try c[14].decode(String?.self),
            originalTransactionID: try c[15].decode(String?.self), productID: try c[16].decode(String?.self),
            peer: try c[17].decode(String?.self), signedPayload: try c[18].decode(String?.self),
            appAccountToken: try c[19].decode(String?.self), appTransactionID: try c[20].decode(String?.self))
        return (
            try c[0].decode(Int64.self),
            StoredNotification(
                record: record, deliveries: try c[11].decode(Int.self), lastReceivedAt: Date(timeIntervalSince1970: try c[10].decode(Double.self)))
        )
    }

    /// The columns ``rejection(_:)`` reads, in its order.
    static let rejectionColumns: StaticString = "SELECT id, at, peer, reason, http_status, body_size, body_prefix, kind, count, sample_key"

    /// A refusal row in ``rejectionColumns``' order.
    static func rejection(_ row: PostgresRow) throws -> (id: Int64, record: RejectionRecord) {
        let (id, at, peer, reason, status, size, prefix, kind, count, key) = try row.decode(
            (Int64, Double, String?, String, Int, Int?, String?, String?, Int, String?).self)
        var record = RejectionRecord(at: Date(timeIntervalSince1970: at), peer: peer, reason: reason, httpStatus: status, bodySize: size, body: [UInt8]())
        record.bodyPrefix = prefix
        record.kind = kind
        record.count = count
        record.sampleKey = key
        return (id, record)
    }

    public func notifications() async throws -> [StoredNotification] {
        try await read("reading notifications") { [self] connection in
            var q = PostgresQueryBuilder()
            q.sql("SELECT * FROM (")
            q.sql(Self.notificationColumns)
            q.sql(" FROM notification) n ORDER BY received_at, id")
            return try await connection.query(q.query, logger: logger).collect().map { try Self.notification($0).stored }
        }
    }

    public func receiverHeartbeats() async throws -> [ReceiverHeartbeat] {
        let logger = self.logger
        return try await read("reading receivers' heartbeats") { connection in
            let exists = try await connection.query("SELECT to_regclass('receiptdash_job') IS NOT NULL", logger: logger).collect()
            guard try exists.first?.decode(Bool.self) == true else { return [] }
            return try await connection.query(
                "SELECT name, finished_at FROM receiptdash_job WHERE name LIKE 'heartbeat %' ORDER BY finished_at DESC", logger: logger
            ).collect().map { row in
                let (name, at) = try row.decode((String, Double).self)
                return ReceiverHeartbeat(receiver: String(name.dropFirst(10)), at: Date(timeIntervalSince1970: at))
            }
        }
    }

    public func lastNotificationID() async throws -> Int64 {
        let logger = self.logger
        return try await read("reading the newest notification") { connection in
            try await connection.query("SELECT max(id) FROM notification", logger: logger).collect().first?.decode(Int64?.self) ?? 0
        }
    }

    public func notifications(after id: Int64, limit: Int) async throws -> [(id: Int64, notification: StoredNotification)] {
        try await read("reading notifications") { [self] connection in
            var q = PostgresQueryBuilder()
            q.sql(Self.notificationColumns)
            q.sql(" FROM notification WHERE id > ")
            q.bind(id)
            q.sql(" ORDER BY id LIMIT ")
            q.bind(limit)
            return try await connection.query(q.query, logger: logger).collect().map {
                let (id, stored) = try Self.notification($0)
                return (id: id, notification: stored)
            }
        }
    }

    public func rejections() async throws -> [RejectionRecord] {
        try await read("reading refusals") { [self] connection in
            var q = PostgresQueryBuilder()
            q.sql(Self.rejectionColumns)
            q.sql(" FROM notification_rejection ORDER BY at, id")
            return try await connection.query(q.query, logger: logger).collect().map { try Self.rejection($0).record }
        }
    }

    /// Several writers commit out of id order: an id skipped over may be committed later. It is
    /// awaited (``NotificationMarks/awaited``) and read as soon as it is committed, so a
    /// follower of new rows sees each row once; the dashboard's follower also reads again every
    /// row written by a transaction still running when it last read (its snapshot, remembered
    /// with the marks), so a late redelivery is not missed either.
    public func followNotifications(_ marks: NotificationMarks, limit: Int, lookBack: TimeInterval) async throws
        -> (notifications: [FollowedNotification], rejections: [RejectionRecord], marks: NotificationMarks)
    {
        let previous = marks.started && !marks.newRowsOnly ? snapshot(for: marks, in: \.notificationSnapshots) : nil
        let (rows, rejectionRows, snapshot) = try await readSnapshot("reading new notifications") { [self] connection in
            let snapshot = try await connection.query("SELECT pg_current_snapshot()::text", logger: logger).collect()
                .first?.decode(String.self) ?? ""
            var rejectionRows: [(id: Int64, record: RejectionRecord)] = []
            if !marks.started {
                var q = PostgresQueryBuilder()
                q.sql(Self.notificationColumns)
                q.sql(" FROM notification ORDER BY id DESC LIMIT ")
                q.bind(limit)
                let rows = try await connection.query(q.query, logger: logger).collect().map(Self.notification).reversed()
                let newest = try await connection.query("SELECT MAX(id) FROM notification_rejection", logger: logger).collect()
                return (Array(rows), rejectionRows, (snapshot, try newest.first?.decode(Int64?.self) ?? 0))
            }
            // Rows read before or skipped over: those awaited that are committed now, and those
            // delivered again since.
            var rows: [(id: Int64, stored: StoredNotification)] = []
            if !marks.awaited.isEmpty || !marks.newRowsOnly {
                var q = PostgresQueryBuilder()
                q.sql(Self.notificationColumns)
                q.sql(" FROM notification WHERE id <= ")
                q.bind(marks.lastID)
                q.sql(" AND (id = ANY(")
                q.bind(marks.awaited.keys.sorted())
                q.sql("::bigint[])")
                if !marks.newRowsOnly {
                    // Delivered again since read: a second POST, or a first POST of a backfilled row.
                    q.sql(" OR ((deliveries > 1 OR (deliveries = 1 AND peer = ")
                    q.bind(NotificationRecord.historyPeer)
                    q.sql(")) AND last_received_at >= ")
                    q.bind(marks.newestDelivery - lookBack)
                    q.sql(")")
                }
                if let previous {
                    // Written by transactions still running when the last read was made.
                    q.sql(" OR (changed_xid >= pg_snapshot_xmin(")
                    q.bind(previous)
                    q.sql("::pg_snapshot) AND NOT pg_visible_in_snapshot(changed_xid, ")
                    q.bind(previous)
                    q.sql("::pg_snapshot))")
                }
                q.sql(") ORDER BY id")
                rows = try await connection.query(q.query, logger: logger).collect().map(Self.notification)
            }
            var q = PostgresQueryBuilder()
            q.sql(Self.notificationColumns)
            q.sql(" FROM notification WHERE id > ")
            q.bind(marks.lastID)
            q.sql(" ORDER BY id LIMIT ")
            q.bind(limit)
            rows += try await connection.query(q.query, logger: logger).collect().map(Self.notification)
            if !marks.newRowsOnly {
                var r = PostgresQueryBuilder()
                r.sql(Self.rejectionColumns)
                r.sql(" FROM notification_rejection WHERE id > ")
                r.bind(marks.lastRejectionID)
                r.sql(" OR (id > ")
                r.bind(marks.firstRejectionID)
                r.sql(" AND count > 1 AND at >= ")
                r.bind(marks.newestRejection - NotificationMarks.refusalGrowthWindow)
                r.sql(")")
                if let previous {
                    r.sql(" OR (inserted_xid >= pg_snapshot_xmin(")
                    r.bind(previous)
                    r.sql("::pg_snapshot) AND NOT pg_visible_in_snapshot(inserted_xid, ")
                    r.bind(previous)
                    r.sql("::pg_snapshot))")
                }
                r.sql(" ORDER BY id")
                rejectionRows = try await connection.query(r.query, logger: logger).collect().map(Self.rejection)
            }
            return (rows, rejectionRows, (snapshot, marks.lastRejectionID))
        }
        var after = marks
        after.started = true
        after.lastRejectionID = max(after.lastRejectionID, snapshot.1)
        if !marks.started { after.firstRejectionID = after.lastRejectionID }
        for row in rows {
            after.lastID = max(after.lastID, row.id)
            after.newestDelivery = max(after.newestDelivery, row.stored.lastReceivedAt.timeIntervalSince1970)
        }
        for row in rejectionRows {
            after.lastRejectionID = max(after.lastRejectionID, row.id)
            after.newestRejection = max(after.newestRejection, row.record.at.timeIntervalSince1970)
        }
        if marks.started { after.awaitSkipped(rows.map(\.id), readAfter: marks.lastID, snapshot: snapshot.0) }
        if !marks.newRowsOnly { remember(after, snapshot.0, in: \.notificationSnapshots) }
        let followed = rows.map { FollowedNotification(id: $0.id, stored: $0.stored, isNew: marks.isFirstSight(of: $0.id)) }
        return (followed, rejectionRows.map(\.record), after)
    }
}

extension NotificationMarks {
    /// After a read in `snapshot` (`pg_current_snapshot()`'s text, `xmin:xmax:running`) that
    /// returned the rows `ids` (in id order): the ids read are no longer awaited; the ids
    /// skipped over between the rows read after `readAfter` are. An id is taken by a writer
    /// before it commits, so whoever holds an id skipped over at one read is running at it and
    /// has a transaction id by the next read (below that read's `xmax`): once every transaction
    /// below it has ended (the snapshot's `xmin` is past it), the row was read or never will be,
    /// and the id is given up.
    mutating func awaitSkipped(_ ids: [Int64], readAfter: Int64, snapshot: String) {
        let parts = snapshot.split(separator: ":")
        guard parts.count >= 2, let xmin = UInt64(parts[0]), let xmax = UInt64(parts[1]) else { return }
        for id in ids { awaited[id] = nil }
        awaited = awaited.filter { $0.value == 0 || $0.value > xmin }
        for (id, bound) in awaited where bound == 0 { awaited[id] = xmax }
        var skipped: [Int64] = []
        var previous = readAfter
        for id in ids where id > readAfter {
            // Of one gap, at most the ids nearest the row read after it.
            if id > previous + 1 { skipped += max(previous + 1, id - Int64(Self.awaitedLimit))..<id }
            previous = id
        }
        for id in skipped.suffix(Self.awaitedLimit) { awaited[id] = 0 }
        if awaited.count > Self.awaitedLimit {
            for id in awaited.keys.sorted().prefix(awaited.count - Self.awaitedLimit) { awaited[id] = nil }
        }
    }
}
