import AuditTrail
import Foundation
import GRDB

/// The consumption requests in the SQLite trail (v15). SQLite has one writer at a time, so a
/// claim (one write transaction) is exclusive across processes sharing the file.
///
/// Only the intents wait for the WAL's fsync, taken outside the write lock (``writeThenSync``):
/// they must outlive a power cut before anything is sent. A claim, a decision that sends
/// nothing or an outcome lost to one only makes a request decided again, or sent again with the
/// same request id and body: they are committed without the fsync. Either way the write lock
/// the receiver's group commits wait on is held for the rows alone.
extension AuditStore {
    /// Queues a stored `CONSUMPTION_REQUEST` in the notification's own transaction.
    static func queueConsumption(_ r: NotificationRecord, _ db: Database) throws {
        guard let deadline = AuditSchema.consumptionDeadline(r), let transactionID = r.transactionID, let signed = r.signedDate else { return }
        try db.cachedStatement(
            sql: """
                INSERT INTO consumption_request (notification_uuid, transaction_id, original_transaction_id, product_id, environment,
                    requested_at, deadline, state)
                VALUES (?, ?, ?, ?, ?, ?, ?, 'open')
                ON CONFLICT(notification_uuid) DO NOTHING
                """
        ).execute(arguments: [
            r.notificationUUID, transactionID, r.originalTransactionID, r.productID, r.environment, signed.timeIntervalSince1970,
            deadline.timeIntervalSince1970,
        ])
    }

    static func consumptionRequest(_ row: Row) -> ConsumptionRequestRecord {
        ConsumptionRequestRecord(
            id: row["id"], notificationUUID: row["notification_uuid"], transactionID: row["transaction_id"],
            originalTransactionID: row["original_transaction_id"], productID: row["product_id"], environment: row["environment"],
            requestedAt: Date(timeIntervalSince1970: row["requested_at"]), deadline: Date(timeIntervalSince1970: row["deadline"]),
            state: ConsumptionState(rawValue: row["state"]) ?? .unknown, policy: row["policy"], body: row["body"], requestID: row["request_id"],
            actionID: row["action_id"], httpStatus: row["http_status"], apiError: row["api_error"], detail: row["detail"],
            decidedAt: (row["decided_at"] as Double?).map(Date.init(timeIntervalSince1970:)))
    }

    /// Each request with its notification's payload and verdict.
    static let consumptionListing = """
        SELECT *, (SELECT n.signed_payload FROM notification n WHERE n.notification_uuid = consumption_request.notification_uuid) AS signed_payload,
            (SELECT n.verdict FROM notification n WHERE n.notification_uuid = consumption_request.notification_uuid) AS verdict
        FROM consumption_request
        """

    static func listedConsumptionRequest(_ row: Row) -> ConsumptionRequestRecord {
        var request = consumptionRequest(row)
        (request.signedPayload, request.verdict) = (row["signed_payload"], row["verdict"])
        return request
    }

    public func claimConsumptionRequests(owner: String, now: Date, leaseUntil: Date, limit: Int) async throws -> ConsumptionClaim {
        let time = now.timeIntervalSince1970
        let claim = try await writeLightly { db in
            guard try db.tableExists("consumption_request") else { return ConsumptionClaim(claimed: [], expired: []) }
            let expired = try Row.fetchAll(
                db,
                sql: """
                    UPDATE consumption_request
                    SET state = CASE state WHEN 'open' THEN 'late' ELSE 'unknown' END, decided_at = ?, claimed_by = ?,
                        detail = CASE state WHEN 'open' THEN 'its deadline passed before it was answered: nothing was sent'
                            ELSE 'its deadline passed while it was being sent: Apple may have taken it' END
                    WHERE state IN ('open', 'sending') AND deadline <= ? AND (lease_until IS NULL OR lease_until <= ?)
                    RETURNING *
                    """, arguments: [time, owner, time, time]
            ).map(Self.consumptionRequest)
            let claimed = try Row.fetchAll(
                db,
                sql: """
                    UPDATE consumption_request SET claimed_by = ?, lease_until = ?
                    WHERE id IN (SELECT id FROM consumption_request
                                 WHERE state IN ('open', 'sending') AND deadline > ? AND (lease_until IS NULL OR lease_until <= ?)
                                 ORDER BY deadline LIMIT ?)
                    RETURNING *
                    """, arguments: [owner, leaseUntil.timeIntervalSince1970, time, time, limit]
            ).map(Self.consumptionRequest).sorted { $0.deadline < $1.deadline }
            return ConsumptionClaim(claimed: claimed, expired: expired)
        }
        guard !claim.claimed.isEmpty else { return claim }
        // The payloads are read outside the write: the receiver's commits do not wait on them.
        let filled = try await database.read { db in
            let payload = try db.cachedStatement(sql: "SELECT signed_payload, verdict FROM notification WHERE notification_uuid = ?")
            return try claim.claimed.map { request in
                var request = request
                if let row = try Row.fetchOne(payload, arguments: [request.notificationUUID]) {
                    (request.signedPayload, request.verdict) = (row["signed_payload"], row["verdict"])
                }
                return request
            }
        }
        return ConsumptionClaim(claimed: filled, expired: claim.expired)
    }

    public func hasDueConsumptionRequests(now: Date) async throws -> Bool {
        try await database.read { db in
            guard try db.tableExists("consumption_request") else { return false }
            return try Bool.fetchOne(
                db,
                sql: """
                    SELECT EXISTS (SELECT 1 FROM consumption_request
                                   WHERE state IN ('open', 'sending') AND (lease_until IS NULL OR lease_until <= ?))
                    """, arguments: [now.timeIntervalSince1970]) ?? false
        }
    }

    public func settleConsumptionRequests(_ settlements: [ConsumptionSettlement], owner: String, at: Date) async throws -> Set<Int64> {
        guard !settlements.isEmpty else { return [] }
        return try await writeLightly { db in
            let statement = try db.cachedStatement(
                sql: """
                    UPDATE consumption_request SET state = ?, policy = ?, body = ?, detail = ?, decided_at = ?, lease_until = NULL
                    WHERE id = ? AND claimed_by = ? AND state = 'open'
                    """)
            var settled: Set<Int64> = []
            for s in settlements {
                try statement.execute(arguments: [s.state.rawValue, s.policy, s.body, s.detail, at.timeIntervalSince1970, s.id, owner])
                if db.changesCount == 1 { settled.insert(s.id) }
            }
            return settled
        }
    }

    public func beginConsumptionAnswers(_ intents: [ConsumptionIntent], owner: String, at: Date) async throws -> [Int64: Int64] {
        guard !intents.isEmpty else { return [:] }
        return try await writeThenSync { db in
            // Which are still this owner's and open, then each write's row and its request's
            // state in one update (rows written once each).
            let held = try db.cachedStatement(sql: "SELECT 1 FROM consumption_request WHERE id = ? AND claimed_by = ? AND state = 'open'")
            let mark = try db.cachedStatement(
                sql: "UPDATE consumption_request SET state = 'sending', policy = ?, body = ?, request_id = ?, action_id = ? WHERE id = ?")
            var begun: [Int64: Int64] = [:]
            for intent in intents {
                guard try Bool.fetchOne(held, arguments: [intent.id, owner]) == true else { continue }
                let pending = intent.action.pendingRow
                let actionID = try Self.insertAction(db, pending)
                try mark.execute(arguments: [intent.policy, intent.body, pending.requestID, actionID, intent.id])
                begun[intent.id] = actionID
            }
            return begun
        }
    }

    public func completeConsumptionAnswers(_ outcomes: [ConsumptionOutcome], at: Date) async throws {
        guard !outcomes.isEmpty else { return }
        try await writeLightly { db in
            let action = try db.cachedStatement(
                sql: "UPDATE api_action SET http_status = ?, api_error = ?, result = ?, response_body = ?, completed_at = ? WHERE id = ?")
            let request = try db.cachedStatement(
                sql: """
                    UPDATE consumption_request SET state = ?, http_status = ?, api_error = ?, detail = ?, decided_at = ?, lease_until = NULL
                    WHERE id = ? AND state IN ('sending', 'unknown')
                    """)
            for o in outcomes {
                try action.execute(arguments: [
                    o.outcome.httpStatus, o.outcome.apiError, o.outcome.result, o.outcome.responseBody,
                    (o.outcome.completedAt ?? at).timeIntervalSince1970, o.actionID,
                ])
                guard db.changesCount == 1 else { throw AuditDatabaseError(.refused, "the pending row #\(o.actionID) of the write is missing") }
                try request.execute(arguments: [o.state.rawValue, o.outcome.httpStatus, o.outcome.apiError, o.detail, at.timeIntervalSince1970, o.id])
            }
        }
    }

    public func consumptionRequests(transactionID: String?, limit: Int) async throws -> [ConsumptionRequestRecord] {
        try await database.read { db in
            guard try db.tableExists("consumption_request") else { return [] }
            if let transactionID {
                return try Row.fetchAll(
                    db, sql: "\(Self.consumptionListing) WHERE transaction_id = ? ORDER BY requested_at DESC, id DESC LIMIT ?",
                    arguments: [transactionID, limit]
                ).map(Self.listedConsumptionRequest)
            }
            return try Row.fetchAll(db, sql: "\(Self.consumptionListing) ORDER BY requested_at DESC, id DESC LIMIT ?", arguments: [limit])
                .map(Self.listedConsumptionRequest)
        }
    }

    public func openConsumptionRequests() async throws -> ConsumptionOpenSummary {
        try await database.read { db in
            guard try db.tableExists("consumption_request") else { return ConsumptionOpenSummary(open: 0, nearestDeadline: nil, oldestRequestedAt: nil) }
            let row = try Row.fetchOne(
                db, sql: "SELECT COUNT(*) AS n, MIN(deadline) AS nearest, MIN(requested_at) AS oldest FROM consumption_request WHERE state IN ('open', 'sending')")
            return ConsumptionOpenSummary(
                open: row?["n"] ?? 0, nearestDeadline: (row?["nearest"] as Double?).map(Date.init(timeIntervalSince1970:)),
                oldestRequestedAt: (row?["oldest"] as Double?).map(Date.init(timeIntervalSince1970:)))
        }
    }
}
