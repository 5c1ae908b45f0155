import AuditTrail
import Foundation
import Logging
import PostgresNIO

/// The forwarding outbox on PostgreSQL (v11), shared by every receiver on the database: a claim
/// locks the rows it takes with `FOR UPDATE SKIP LOCKED` (another receiver's claim passes them
/// by instead of waiting) and leases them, so each delivery is made by one receiver at a time.
extension PostgresAuditStore {
    /// Queues a notification stored new for every registered target whose types match (inside
    /// the storing transaction).
    static func queueForwards(_ r: NotificationRecord, _ connection: CheckedConnection, logger: Logger) async throws {
        let queued = r.receivedAt.timeIntervalSince1970
        var bindings = PostgresBindings()
        bindings.append(r.notificationUUID)
        bindings.append(r.forwardOrderKey)
        bindings.append(queued)
        bindings.append(queued)
        bindings.append(r.forwardTypeKey)
        try await connection.query(PostgresQuery(unsafeSQL: queueSQL, binds: bindings), logger: logger)
    }

    private static let queueSQL = AuditSchema.queueForRegisteredTargets(
        uuid: "$1", order: "$2", queued: "$3", queuedAgain: "$4", type: "$5::text") { "strpos(\($0), \($1)) > 0" }

    public func registerForwardTargets(_ urls: [String], types: Set<String>, at: Date) async throws {
        let stored = ForwardTargetRecord.storedTypes(types)
        let seconds = at.timeIntervalSince1970
        let logger = self.logger
        _ = try await run("registering forwarding targets", write: true, transaction: "BEGIN") { connection in
            try await connection.query(
                """
                INSERT INTO forward_target (url, types, registered_at) SELECT u, \(stored), \(seconds) FROM unnest(\(urls)::text[]) AS u
                ON CONFLICT (url) DO UPDATE SET types = EXCLUDED.types, registered_at = EXCLUDED.registered_at
                """, logger: logger)
        }
    }

    public func forwardTargets() async throws -> [ForwardTargetRecord] {
        let logger = self.logger
        return try await read("reading forwarding targets") { connection in
            var targets: [ForwardTargetRecord] = []
            for try await (url, types, registered, disabled, reason) in try await connection.query(
                "SELECT url, types, registered_at, disabled_at, disabled_reason FROM forward_target ORDER BY url", logger: logger
            ).decode((String, String, Double, Double?, String?).self) {
                targets.append(
                    ForwardTargetRecord(
                        url: url, types: ForwardTargetRecord.types(stored: types), registeredAt: Date(timeIntervalSince1970: registered),
                        disabledAt: disabled.map(Date.init(timeIntervalSince1970:)), disabledReason: reason))
            }
            return targets
        }
    }

    public func disableForwardTarget(_ url: String, at: Date, reason: String) async throws {
        let seconds = at.timeIntervalSince1970
        let logger = self.logger
        _ = try await run("disabling a forwarding target", write: true, transaction: "BEGIN") { connection in
            try await connection.query(
                """
                INSERT INTO forward_target (url, types, registered_at, disabled_at, disabled_reason) VALUES (\(url), '', \(seconds), \(seconds), \(reason))
                ON CONFLICT (url) DO UPDATE SET disabled_at = EXCLUDED.disabled_at, disabled_reason = EXCLUDED.disabled_reason
                """, logger: logger)
        }
    }

    public func enableForwardTarget(_ url: String) async throws -> Bool {
        let logger = self.logger
        return try await run("enabling a forwarding target", write: true, transaction: "BEGIN") { connection in
            let rows = try await connection.query(
                "UPDATE forward_target SET disabled_at = NULL, disabled_reason = NULL WHERE url = \(url) RETURNING url", logger: logger
            ).collect()
            return !rows.isEmpty
        }
    }

    public func claimDeliveries(targets: [String], now: Date, leaseUntil: Date, limit: Int) async throws
        -> [(delivery: ForwardDelivery, notification: StoredNotification)]
    {
        guard !targets.isEmpty, limit > 0 else { return [] }
        let nowSeconds = now.timeIntervalSince1970
        let lease = leaseUntil.timeIntervalSince1970
        let logger = self.logger
        // No pg_notify: a claim changes nothing a follower shows.
        return try await run("claiming deliveries", write: true, transaction: "BEGIN") { connection in
            let rows = try await connection.query(
                """
                UPDATE forward_delivery SET lease_until = \(lease) WHERE id IN (
                    SELECT o.id FROM forward_delivery o
                    WHERE o.state = 'pending' AND o.target = ANY(\(targets)) AND o.next_attempt_at <= \(nowSeconds)
                        AND (o.lease_until IS NULL OR o.lease_until <= \(nowSeconds))
                        AND NOT EXISTS (SELECT 1 FROM forward_target t WHERE t.url = o.target AND t.disabled_at IS NOT NULL)
                        AND NOT EXISTS (
                            SELECT 1 FROM forward_delivery p
                            WHERE p.state = 'pending' AND p.target = o.target AND p.order_key = o.order_key AND p.id < o.id)
                    ORDER BY o.id LIMIT \(limit)
                    FOR UPDATE SKIP LOCKED)
                RETURNING \(unescaped: Self.deliveryColumns)
                """, logger: logger
            ).collect()
            let deliveries = try rows.map(Self.delivery).sorted { $0.id < $1.id }
            guard !deliveries.isEmpty else { return [] }
            let uuids = Array(Set(deliveries.map(\.notificationUUID)))
            var q = PostgresQueryBuilder()
            q.sql(Self.notificationColumns)
            q.sql(" FROM notification WHERE notification_uuid = ANY(")
            q.bind(uuids)
            q.sql(")")
            var notifications: [String: StoredNotification] = [:]
            for row in try await connection.query(q.query, logger: logger).collect() {
                let stored = try Self.notification(row).stored
                notifications[stored.record.notificationUUID] = stored
            }
            var claimed: [(delivery: ForwardDelivery, notification: StoredNotification)] = []
            for delivery in deliveries {
                if let notification = notifications[delivery.notificationUUID] {
                    claimed.append((delivery, notification))
                } else {
                    // Its notification is gone: nothing to send, ever.
                    try await connection.query(
                        """
                        UPDATE forward_delivery SET state = 'dead', lease_until = NULL, completed_at = \(nowSeconds),
                            last_error = 'the notification is no longer stored' WHERE id = \(delivery.id)
                        """, logger: logger)
                }
            }
            return claimed
        }
    }

    public func recordDeliveryResults(_ results: [ForwardAttemptResult]) async throws {
        guard !results.isEmpty else { return }
        let logger = self.logger
        var ids: [Int64] = [], states: [String] = [], nexts: [Double?] = [], completed: [Double?] = []
        var statuses: [Int64?] = [], errors: [String?] = []
        for r in results {
            let (state, next, done) = r.stored
            ids.append(r.id)
            states.append(state.rawValue)
            nexts.append(next)
            completed.append(done)
            statuses.append(r.status.map(Int64.init))
            errors.append(r.error)
        }
        let (idArray, stateArray, nextValues, completedValues, statusValues, errorValues) = (ids, states, nexts, completed, statuses, errors)
        _ = try await run("recording deliveries", write: true, transaction: "BEGIN") { connection in
            let (nextArray, completedArray, statusArray, errorArray) = (
                PostgresNullableArray(nextValues), PostgresNullableArray(completedValues), PostgresNullableArray(statusValues),
                PostgresNullableArray(errorValues)
            )
            try await connection.query(
                """
                UPDATE forward_delivery d SET state = r.state, attempts = d.attempts + 1,
                    next_attempt_at = COALESCE(r.next, d.next_attempt_at), lease_until = NULL, completed_at = r.completed,
                    last_status = r.status, last_error = r.error
                FROM unnest(\(idArray)::int8[], \(stateArray)::text[], \(nextArray)::float8[], \(completedArray)::float8[],
                    \(statusArray)::int8[], \(errorArray)::text[]) AS r(id, state, next, completed, status, error)
                WHERE d.id = r.id
                """, logger: logger)
        }
    }

    public func outbox(state: ForwardDelivery.State?, limit: Int) async throws -> [ForwardDelivery] {
        let logger = self.logger
        let columns = Self.deliveryColumns.split(separator: ",").map { "d." + $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ", ")
        // With the notification's type and subtype (none when it is no longer stored).
        let select = """
            SELECT \(columns), n.notification_type, n.subtype FROM forward_delivery d
            LEFT JOIN notification n ON n.notification_uuid = d.notification_uuid
            """
        return try await read("reading the outbox") { connection in
            let rows: [PostgresRow]
            if let state {
                rows = try await connection.query(
                    "\(unescaped: select) WHERE d.state = \(state.rawValue) ORDER BY d.id DESC LIMIT \(limit)", logger: logger
                ).collect()
            } else {
                rows = try await connection.query("\(unescaped: select) ORDER BY d.id DESC LIMIT \(limit)", logger: logger).collect()
            }
            return try rows.map { row in
                var delivery = try Self.delivery(row)
                let cells = row.makeRandomAccess()
                delivery.notificationType = try cells[11].decode(String?.self)
                delivery.subtype = try cells[12].decode(String?.self)
                return delivery
            }
        }
    }

    public func deliveriesByTarget() async throws -> [ForwardTargetCounts] {
        let targets = try await forwardTargets()
        let logger = self.logger
        let rows = try await read("reading the outbox") { connection in
            var rows: [(target: String, state: String, count: Int, oldest: Double?)] = []
            for try await (target, state, count, oldest) in try await connection.query(
                "\(unescaped: ForwardTargetCounts.countsSQL)", logger: logger
            ).decode((String, String, Int64, Double?).self) {
                rows.append((target, state, Int(count), oldest))
            }
            return rows
        }
        return ForwardTargetCounts.combine(rows, targets: targets)
    }

    public func pendingDeliveries() async throws -> (count: Int, oldestQueuedAt: Date?) {
        let logger = self.logger
        return try await read("reading the outbox") { connection in
            guard
                let row = try await connection.query(
                    "SELECT count(*), min(queued_at) FROM forward_delivery WHERE state = 'pending'", logger: logger
                ).collect().first
            else { return (0, nil) }
            let (count, oldest) = try row.decode((Int64, Double?).self)
            return (Int(count), oldest.map(Date.init(timeIntervalSince1970:)))
        }
    }

    public func finishedDeliveries() async throws -> [ForwardDelivery.State: Int] {
        let logger = self.logger
        return try await read("reading the outbox") { connection in
            var counts: [ForwardDelivery.State: Int] = [:]
            for row in try await connection.query(
                "SELECT state, count(*) FROM forward_delivery WHERE state <> 'pending' GROUP BY state", logger: logger
            ).collect() {
                let (state, count) = try row.decode((String, Int64).self)
                if let state = ForwardDelivery.State(rawValue: state) { counts[state] = Int(count) }
            }
            return counts
        }
    }

    public func requeueDeliveries(notificationUUIDs: [String]?, since: Date?, targets: [String]?, now: Date) async throws
        -> (queued: Int, unknown: [String])
    {
        let nowSeconds = now.timeIntervalSince1970
        let sinceSeconds = since?.timeIntervalSince1970 ?? 0
        let logger = self.logger
        return try await run("queueing deliveries again", write: true, transaction: "BEGIN") { connection in
            var found: [(uuid: String, order: String, type: String)] = []
            var unknown: [String] = []
            func item(_ uuid: String, _ original: String?, _ type: String?) -> (uuid: String, order: String, type: String) {
                (uuid, original ?? uuid, "," + (type ?? "").uppercased() + ",")
            }
            if let uuids = notificationUUIDs {
                var known: [String: (uuid: String, order: String, type: String)] = [:]
                for try await (uuid, original, type) in try await connection.query(
                    "SELECT notification_uuid, original_transaction_id, notification_type FROM notification WHERE notification_uuid = ANY(\(uuids))",
                    logger: logger
                ).decode((String, String?, String?).self) {
                    known[uuid] = item(uuid, original, type)
                }
                for uuid in uuids {
                    if let row = known[uuid] { found.append(row) } else { unknown.append(uuid) }
                }
            } else {
                for try await (uuid, original, type) in try await connection.query(
                    """
                    SELECT notification_uuid, original_transaction_id, notification_type FROM notification
                    WHERE received_at >= \(sinceSeconds) ORDER BY id
                    """, logger: logger
                ).decode((String, String?, String?).self) {
                    found.append(item(uuid, original, type))
                }
            }
            // Without targets named: every registered target whose types match.
            var registered: [(url: String, types: String)] = []
            for try await (url, types) in try await connection.query("SELECT url, types FROM forward_target ORDER BY url", logger: logger)
                .decode((String, String).self)
            {
                registered.append((url, types))
            }
            var uuids: [String] = [], orders: [String] = [], tos: [String] = []
            for row in found {
                for target in targets ?? registered.filter({ $0.types.isEmpty || $0.types.contains(row.type) }).map(\.url) {
                    uuids.append(row.uuid)
                    orders.append(row.order)
                    tos.append(target)
                }
            }
            guard !uuids.isEmpty else { return (0, unknown) }
            let rows = try await connection.query(
                """
                INSERT INTO forward_delivery (notification_uuid, target, order_key, state, attempts, queued_at, next_attempt_at)
                SELECT u, t, o, 'pending', 0, \(nowSeconds), \(nowSeconds) FROM unnest(\(uuids)::text[], \(tos)::text[], \(orders)::text[]) AS x(u, t, o)
                ON CONFLICT (notification_uuid, target) DO UPDATE SET state = 'pending', attempts = 0, queued_at = EXCLUDED.queued_at,
                    next_attempt_at = EXCLUDED.next_attempt_at, lease_until = NULL, completed_at = NULL, last_status = NULL,
                    last_error = NULL
                RETURNING id
                """, logger: logger
            ).collect()
            return (rows.count, unknown)
        }
    }

    static let deliveryColumns =
        "id, notification_uuid, target, order_key, state, attempts, queued_at, next_attempt_at, completed_at, last_status, last_error"

    /// A delivery row in ``deliveryColumns``' order.
    static func delivery(_ row: PostgresRow) throws -> ForwardDelivery {
        let (id, uuid, target, order, state, attempts, queued, next, completed, status, error) = try row.decode(
            (Int64, String, String, String, String, Int64, Double, Double, Double?, Int64?, String?).self)
        guard let known = ForwardDelivery.State(rawValue: state) else {
            throw AuditError(.readFailed, "forward_delivery \(id) has state \(state), which this version does not know")
        }
        return ForwardDelivery(
            id: id, notificationUUID: uuid, target: target, orderKey: order, state: known, attempts: Int(attempts),
            queuedAt: Date(timeIntervalSince1970: queued), nextAttemptAt: Date(timeIntervalSince1970: next),
            completedAt: completed.map(Date.init(timeIntervalSince1970:)), lastStatus: status.map(Int.init), lastError: error)
    }
}

/// Scheduled jobs on PostgreSQL: the job runs inside a transaction that holds a
/// transaction-level advisory lock on its name, so a second receiver's try fails at once
/// instead of running it beside the first; the job's last end, in the same table, keeps it from
/// running again within its period.
extension PostgresAuditStore {
    public func runJob<T: Sendable>(_ name: String, every: TimeInterval, now: @escaping @Sendable () -> Date, _ body: @escaping @Sendable () async -> T)
        async throws -> T?
    {
        let logger = self.logger
        let key = Self.jobLockKey(name)
        return try await run("running \(name)", write: true, transaction: "BEGIN") { connection -> T? in
            let locked = try await connection.query("SELECT pg_try_advisory_xact_lock(\(key))", logger: logger).collect()
            guard try locked.first?.decode(Bool.self) == true else { return nil }
            let started = now().timeIntervalSince1970
            let last = try await connection.query("SELECT finished_at FROM receiptdash_job WHERE name = \(name)", logger: logger)
                .collect().first?.decode(Double.self)
            if let last, started - last < every * AuditSchema.jobSlack { return nil }
            let value = await body()
            let finished = now().timeIntervalSince1970
            try await connection.query(
                """
                INSERT INTO receiptdash_job (name, finished_at) VALUES (\(name), \(finished))
                ON CONFLICT (name) DO UPDATE SET finished_at = EXCLUDED.finished_at
                """, logger: logger)
            return value
        }
    }

    /// A stable 64-bit lock key per job name (FNV-1a), apart from the migration lock's.
    static func jobLockKey(_ name: String) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in "receiptdash-job:\(name)".utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return Int64(bitPattern: hash)
    }
}
