import AuditTrail
import Foundation
import GRDB

/// The forwarding outbox in the SQLite trail (v11). One writer connection serialises claims,
/// so a claim needs no row locks; the lease keeps a claimed row from being claimed again until
/// its attempt is recorded or the lease ends.
extension AuditStore {
    /// Queues a notification stored new for every registered target whose types match (inside
    /// the storing transaction).
    static func queueForwards(_ r: NotificationRecord, _ db: Database) throws {
        let queued = r.receivedAt.timeIntervalSince1970
        try db.cachedStatement(
            sql: AuditSchema.queueForRegisteredTargets(uuid: "?", order: "?", queued: "?", queuedAgain: "?", type: "?") { "instr(\($0), \($1)) > 0" }
        ).execute(arguments: [r.notificationUUID, r.forwardOrderKey, queued, queued, r.forwardTypeKey])
    }

    public func registerForwardTargets(_ urls: [String], types: Set<String>, at: Date) async throws {
        let stored = ForwardTargetRecord.storedTypes(types)
        try await database.write { db in
            let statement = try db.cachedStatement(
                sql: """
                    INSERT INTO forward_target (url, types, registered_at) VALUES (?, ?, ?)
                    ON CONFLICT(url) DO UPDATE SET types = excluded.types, registered_at = excluded.registered_at
                    """)
            for url in urls { try statement.execute(arguments: [url, stored, at.timeIntervalSince1970]) }
        }
    }

    public func forwardTargets() async throws -> [ForwardTargetRecord] {
        try await database.read { db in
            guard try db.tableExists("forward_target") else { return [] }
            return try Row.fetchAll(db, sql: "SELECT * FROM forward_target ORDER BY url").map { row in
                ForwardTargetRecord(
                    url: row["url"], types: ForwardTargetRecord.types(stored: row["types"]),
                    registeredAt: Date(timeIntervalSince1970: row["registered_at"]),
                    disabledAt: (row["disabled_at"] as Double?).map(Date.init(timeIntervalSince1970:)), disabledReason: row["disabled_reason"])
            }
        }
    }

    public func disableForwardTarget(_ url: String, at: Date, reason: String) async throws {
        try await database.write { db in
            try db.execute(
                sql: """
                    INSERT INTO forward_target (url, types, registered_at, disabled_at, disabled_reason) VALUES (?, '', ?, ?, ?)
                    ON CONFLICT(url) DO UPDATE SET disabled_at = excluded.disabled_at, disabled_reason = excluded.disabled_reason
                    """, arguments: [url, at.timeIntervalSince1970, at.timeIntervalSince1970, reason])
        }
    }

    public func enableForwardTarget(_ url: String) async throws -> Bool {
        try await database.write { db in
            try db.execute(sql: "UPDATE forward_target SET disabled_at = NULL, disabled_reason = NULL WHERE url = ?", arguments: [url])
            return db.changesCount > 0
        }
    }

    public func claimDeliveries(targets: [String], now: Date, leaseUntil: Date, limit: Int) async throws
        -> [(delivery: ForwardDelivery, notification: StoredNotification)]
    {
        guard !targets.isEmpty, limit > 0 else { return [] }
        let nowSeconds = now.timeIntervalSince1970
        let candidates = AuditSchema.claimCandidates(targetList: Self.marks(targets.count), now: "?", limit: "?")
        // Looked for first on a reader: an idle outbox never takes the write lock.
        let due = try await database.read { db -> Bool in
            guard try db.tableExists("forward_delivery") else { return false }
            return try Int64.fetchOne(db.cachedStatement(sql: candidates), arguments: StatementArguments(targets) + [nowSeconds, nowSeconds, 1]) != nil
        }
        guard due else { return [] }
        // The write holds SQLite's one writer only to take the leases: the receiver's stores
        // wait behind it. The notifications are read after, on a reader.
        let deliveries = try await writeLightly { db -> [ForwardDelivery] in
            let ids = try Int64.fetchAll(
                db.cachedStatement(sql: candidates), arguments: StatementArguments(targets) + [nowSeconds, nowSeconds, limit])
            guard !ids.isEmpty else { return [] }
            let rows = try Row.fetchAll(
                db,
                sql: """
                    UPDATE forward_delivery SET lease_until = ? WHERE id IN (\(Self.marks(ids.count)))
                    RETURNING *
                    """, arguments: [leaseUntil.timeIntervalSince1970] + StatementArguments(ids))
            return try rows.map(Self.delivery).sorted { $0.id < $1.id }
        }
        guard !deliveries.isEmpty else { return [] }
        let uuids = Array(Set(deliveries.map(\.notificationUUID)))
        let notifications = try await database.read { db -> [String: StoredNotification] in
            var notifications: [String: StoredNotification] = [:]
            for row in try Row.fetchAll(
                db, sql: "SELECT * FROM notification WHERE notification_uuid IN (\(Self.marks(uuids.count)))", arguments: StatementArguments(uuids))
            {
                let stored = try StoredNotification(row: row)
                notifications[stored.record.notificationUUID] = stored
            }
            return notifications
        }
        var claimed: [(delivery: ForwardDelivery, notification: StoredNotification)] = []
        var gone: [Int64] = []
        for delivery in deliveries {
            if let notification = notifications[delivery.notificationUUID] {
                claimed.append((delivery, notification))
            } else {
                gone.append(delivery.id)
            }
        }
        if !gone.isEmpty {
            let gone = gone
            // Its notification is gone (a test row replaced, a trail pruned by hand): nothing to
            // send, ever.
            try await writeLightly { db in
                try db.execute(
                    sql: """
                        UPDATE forward_delivery SET state = 'dead', lease_until = NULL, completed_at = ?, last_error = ?
                        WHERE id IN (\(Self.marks(gone.count)))
                        """,
                    arguments: [nowSeconds, "the notification is no longer stored"] + StatementArguments(gone))
            }
        }
        return claimed
    }

    public func recordDeliveryResults(_ results: [ForwardAttemptResult]) async throws {
        guard !results.isEmpty else { return }
        try await writeLightly { db in
            let statement = try db.cachedStatement(
                sql: """
                    UPDATE forward_delivery SET state = ?, attempts = attempts + 1, next_attempt_at = COALESCE(?, next_attempt_at),
                        lease_until = NULL, completed_at = ?, last_status = ?, last_error = ?
                    WHERE id = ?
                    """)
            for r in results {
                let (state, next, completed) = r.stored
                try statement.execute(arguments: [state.rawValue, next, completed, r.status, r.error, r.id])
            }
        }
    }

    public func outbox(state: ForwardDelivery.State?, limit: Int) async throws -> [ForwardDelivery] {
        try await database.read { db in
            guard try db.tableExists("forward_delivery") else { return [] }
            // With the notification's type and subtype (none when it is no longer stored).
            let select = """
                SELECT d.*, n.notification_type AS listed_type, n.subtype AS listed_subtype FROM forward_delivery d
                LEFT JOIN notification n ON n.notification_uuid = d.notification_uuid
                """
            let rows: [Row]
            if let state {
                rows = try Row.fetchAll(db, sql: "\(select) WHERE d.state = ? ORDER BY d.id DESC LIMIT ?", arguments: [state.rawValue, limit])
            } else {
                rows = try Row.fetchAll(db, sql: "\(select) ORDER BY d.id DESC LIMIT ?", arguments: [limit])
            }
            return try rows.map { row in
                var delivery = try Self.delivery(row)
                delivery.notificationType = row["listed_type"]
                delivery.subtype = row["listed_subtype"]
                return delivery
            }
        }
    }

    public func deliveriesByTarget() async throws -> [ForwardTargetCounts] {
        let targets = try await forwardTargets()
        let rows = try await database.read { db -> [(target: String, state: String, count: Int, oldest: Double?)] in
            guard try db.tableExists("forward_delivery") else { return [] }
            return try Row.fetchAll(db, sql: ForwardTargetCounts.countsSQL).map { ($0[0], $0[1], $0[2], $0[3]) }
        }
        return ForwardTargetCounts.combine(rows, targets: targets)
    }

    public func pendingDeliveries() async throws -> (count: Int, oldestQueuedAt: Date?) {
        try await database.read { db in
            guard try db.tableExists("forward_delivery"),
                let row = try Row.fetchOne(db, sql: "SELECT count(*), min(queued_at) FROM forward_delivery WHERE state = 'pending'")
            else { return (0, nil) }
            return (row[0], (row[1] as Double?).map(Date.init(timeIntervalSince1970:)))
        }
    }

    public func finishedDeliveries() async throws -> [ForwardDelivery.State: Int] {
        try await database.read { db in
            guard try db.tableExists("forward_delivery") else { return [:] }
            var counts: [ForwardDelivery.State: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT state, count(*) FROM forward_delivery WHERE state <> 'pending' GROUP BY state") {
                if let state = ForwardDelivery.State(rawValue: row[0]) { counts[state] = row[1] }
            }
            return counts
        }
    }

    public func requeueDeliveries(notificationUUIDs: [String]?, since: Date?, targets: [String]?, now: Date) async throws
        -> (queued: Int, unknown: [String])
    {
        let nowSeconds = now.timeIntervalSince1970
        return try await database.write { db in
            var found: [(uuid: String, order: String, type: String)] = []
            var unknown: [String] = []
            let columns = "notification_uuid, original_transaction_id, notification_type"
            func item(_ row: Row) -> (uuid: String, order: String, type: String) {
                let uuid: String = row[0]
                return (uuid, (row[1] as String?) ?? uuid, "," + ((row[2] as String?) ?? "").uppercased() + ",")
            }
            if let uuids = notificationUUIDs {
                let select = try db.cachedStatement(sql: "SELECT \(columns) FROM notification WHERE notification_uuid = ?")
                for uuid in uuids {
                    if let row = try Row.fetchOne(select, arguments: [uuid]) {
                        found.append(item(row))
                    } else {
                        unknown.append(uuid)
                    }
                }
            } else {
                let rows = try Row.fetchCursor(
                    db, sql: "SELECT \(columns) FROM notification WHERE received_at >= ? ORDER BY id", arguments: [since?.timeIntervalSince1970 ?? 0])
                while let row = try rows.next() { found.append(item(row)) }
            }
            // Without targets named: every registered target whose types match.
            let registered = try Row.fetchAll(db, sql: "SELECT url, types FROM forward_target ORDER BY url").map { (url: $0[0] as String, types: $0[1] as String) }
            let upsert = try db.cachedStatement(
                sql: """
                    INSERT INTO forward_delivery (notification_uuid, target, order_key, state, attempts, queued_at, next_attempt_at)
                    VALUES (?, ?, ?, 'pending', 0, ?, ?)
                    ON CONFLICT(notification_uuid, target) DO UPDATE SET state = 'pending', attempts = 0, queued_at = excluded.queued_at,
                        next_attempt_at = excluded.next_attempt_at, lease_until = NULL, completed_at = NULL, last_status = NULL,
                        last_error = NULL
                    """)
            var queued = 0
            for item in found {
                let to = targets ?? registered.filter { $0.types.isEmpty || $0.types.contains(item.type) }.map(\.url)
                for target in to {
                    try upsert.execute(arguments: [item.uuid, target, item.order, nowSeconds, nowSeconds])
                    queued += db.changesCount > 0 ? 1 : 0
                }
            }
            return (queued, unknown)
        }
    }

    static func delivery(_ row: Row) throws -> ForwardDelivery {
        let state: String = row["state"]
        guard let known = ForwardDelivery.State(rawValue: state) else {
            throw AuditError(.readFailed, "forward_delivery \(row["id"] as Int64) has state \(state), which this version does not know")
        }
        return ForwardDelivery(
            id: row["id"], notificationUUID: row["notification_uuid"], target: row["target"], orderKey: row["order_key"], state: known,
            attempts: row["attempts"], queuedAt: Date(timeIntervalSince1970: row["queued_at"]),
            nextAttemptAt: Date(timeIntervalSince1970: row["next_attempt_at"]),
            completedAt: (row["completed_at"] as Double?).map(Date.init(timeIntervalSince1970:)), lastStatus: row["last_status"],
            lastError: row["last_error"])
    }
}

/// Scheduled jobs on SQLite: one process writes a file at a time, so the job's last end in
/// `receiptdash_job` is what keeps a second receiver from running it again within its period.
extension AuditStore {
    public func runJob<T: Sendable>(_ name: String, every: TimeInterval, now: @escaping @Sendable () -> Date, _ body: @escaping @Sendable () async -> T)
        async throws -> T?
    {
        let started = now().timeIntervalSince1970
        let due = try await database.read { db -> Bool in
            guard try db.tableExists("receiptdash_job") else { return true }
            let last = try Double.fetchOne(db, sql: "SELECT finished_at FROM receiptdash_job WHERE name = ?", arguments: [name])
            return last.map { started - $0 >= every * AuditSchema.jobSlack } ?? true
        }
        guard due else { return nil }
        let value = await body()
        let finished = now().timeIntervalSince1970
        try await database.write { db in
            try db.execute(
                sql: "INSERT INTO receiptdash_job (name, finished_at) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET finished_at = excluded.finished_at",
                arguments: [name, finished])
        }
        return value
    }
}
