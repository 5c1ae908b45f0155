import AuditTrail
import Foundation
import Logging
import PostgresNIO

/// The consumption requests on PostgreSQL (v15), shared by every receiver on the database: a
/// claim locks the rows it takes with `FOR UPDATE SKIP LOCKED` (another receiver's claim passes
/// them by) and leases them, so each request is answered by one receiver.
extension PostgresAuditStore {
    /// Queues a stored `CONSUMPTION_REQUEST` inside the storing transaction.
    static func queueConsumption(_ r: NotificationRecord, _ connection: CheckedConnection, logger: Logger) async throws {
        guard let deadline = AuditSchema.consumptionDeadline(r), let transactionID = r.transactionID, let signed = r.signedDate else { return }
        try await connection.query(
            """
            INSERT INTO consumption_request (notification_uuid, transaction_id, original_transaction_id, product_id, environment,
                requested_at, deadline, state)
            VALUES (\(r.notificationUUID), \(transactionID), \(r.originalTransactionID), \(r.productID), \(r.environment),
                \(signed.timeIntervalSince1970), \(deadline.timeIntervalSince1970), 'open')
            ON CONFLICT (notification_uuid) DO NOTHING
            """, logger: logger)
    }

    static let consumptionColumns = """
        id, notification_uuid, transaction_id, original_transaction_id, product_id, environment, requested_at, deadline, state, policy,
        body, request_id, action_id, http_status, api_error, detail, decided_at
        """

    /// The notification's payload and verdict, after ``consumptionColumns``.
    static let payloadColumns = """
        (SELECT n.signed_payload FROM notification n WHERE n.notification_uuid = consumption_request.notification_uuid),
        (SELECT n.verdict FROM notification n WHERE n.notification_uuid = consumption_request.notification_uuid)
        """

    static func consumptionRequest(_ row: PostgresRow) throws -> ConsumptionRequestRecord {
        let c = row.makeRandomAccess()
        return ConsumptionRequestRecord(
            id: try c[0].decode(Int64.self), notificationUUID: try c[1].decode(String.self), transactionID: try c[2].decode(String.self),
            originalTransactionID: try c[3].decode(String?.self), productID: try c[4].decode(String?.self), environment: try c[5].decode(String?.self),
            requestedAt: Date(timeIntervalSince1970: try c[6].decode(Double.self)), deadline: Date(timeIntervalSince1970: try c[7].decode(Double.self)),
            state: ConsumptionState(rawValue: try c[8].decode(String.self)) ?? .unknown, policy: try c[9].decode(String?.self),
            body: try c[10].decode(String?.self), requestID: try c[11].decode(String?.self), actionID: try c[12].decode(Int64?.self),
            httpStatus: try c[13].decode(Int64?.self).map(Int.init), apiError: try c[14].decode(Int64?.self).map(Int.init),
            detail: try c[15].decode(String?.self), decidedAt: try c[16].decode(Double?.self).map(Date.init(timeIntervalSince1970:)))
    }

    public func claimConsumptionRequests(owner: String, now: Date, leaseUntil: Date, limit: Int) async throws -> ConsumptionClaim {
        let time = now.timeIntervalSince1970
        let lease = leaseUntil.timeIntervalSince1970
        let logger = self.logger
        return try await run("claiming consumption requests", write: true, transaction: "BEGIN") { connection in
            let expired = try await connection.query(
                """
                UPDATE consumption_request
                SET state = CASE state WHEN 'open' THEN 'late' ELSE 'unknown' END, decided_at = \(time), claimed_by = \(owner),
                    detail = CASE state WHEN 'open' THEN 'its deadline passed before it was answered: nothing was sent'
                        ELSE 'its deadline passed while it was being sent: Apple may have taken it' END
                WHERE id IN (SELECT id FROM consumption_request
                             WHERE state IN ('open', 'sending') AND deadline <= \(time) AND (lease_until IS NULL OR lease_until <= \(time))
                             FOR UPDATE SKIP LOCKED)
                RETURNING \(unescaped: Self.consumptionColumns)
                """, logger: logger
            ).collect().map(Self.consumptionRequest)
            var claimed = try await connection.query(
                """
                UPDATE consumption_request SET claimed_by = \(owner), lease_until = \(lease)
                WHERE id IN (SELECT id FROM consumption_request
                             WHERE state IN ('open', 'sending') AND deadline > \(time) AND (lease_until IS NULL OR lease_until <= \(time))
                             ORDER BY deadline LIMIT \(limit)
                             FOR UPDATE SKIP LOCKED)
                RETURNING \(unescaped: Self.consumptionColumns)
                """, logger: logger
            ).collect().map(Self.consumptionRequest).sorted { $0.deadline < $1.deadline }
            if !claimed.isEmpty {
                var payloads: [String: (String?, String?)] = [:]
                for row in try await connection.query(
                    "SELECT notification_uuid, signed_payload, verdict FROM notification WHERE notification_uuid = ANY(\(claimed.map(\.notificationUUID)))",
                    logger: logger
                ).collect() {
                    let (uuid, payload, verdict) = try row.decode((String, String?, String?).self)
                    payloads[uuid] = (payload, verdict)
                }
                for index in claimed.indices {
                    (claimed[index].signedPayload, claimed[index].verdict) = payloads[claimed[index].notificationUUID] ?? (nil, nil)
                }
            }
            return ConsumptionClaim(claimed: claimed, expired: expired)
        }
    }

    public func hasDueConsumptionRequests(now: Date) async throws -> Bool {
        let time = now.timeIntervalSince1970
        return try await read("looking for consumption requests to answer") { [logger] connection in
            let rows = try await connection.query(
                """
                SELECT EXISTS (SELECT 1 FROM consumption_request
                               WHERE state IN ('open', 'sending') AND (lease_until IS NULL OR lease_until <= \(time)))
                """, logger: logger
            ).collect()
            return try rows.first?.decode(Bool.self) ?? false
        }
    }

    public func settleConsumptionRequests(_ settlements: [ConsumptionSettlement], owner: String, at: Date) async throws -> Set<Int64> {
        guard !settlements.isEmpty else { return [] }
        let seconds = at.timeIntervalSince1970
        return try await write("recording consumption decisions") { [logger] connection in
            var settled: Set<Int64> = []
            for s in settlements {
                let rows = try await connection.query(
                    """
                    UPDATE consumption_request SET state = \(s.state.rawValue), policy = \(s.policy), body = \(s.body), detail = \(s.detail),
                        decided_at = \(seconds), lease_until = NULL
                    WHERE id = \(s.id) AND claimed_by = \(owner) AND state = 'open' RETURNING id
                    """, logger: logger
                ).collect()
                if rows.count == 1 { settled.insert(s.id) }
            }
            return settled
        }
    }

    public func beginConsumptionAnswers(_ intents: [ConsumptionIntent], owner: String, at: Date) async throws -> [Int64: Int64] {
        guard !intents.isEmpty else { return [:] }
        return try await write("recording the consumption answers about to be sent") { [self] connection in
            var begun: [Int64: Int64] = [:]
            for intent in intents {
                let pending = intent.action.pendingRow
                let rows = try await connection.query(
                    """
                    UPDATE consumption_request SET state = 'sending', policy = \(intent.policy), body = \(intent.body), request_id = \(pending.requestID)
                    WHERE id = \(intent.id) AND claimed_by = \(owner) AND state = 'open' RETURNING id
                    """, logger: logger
                ).collect()
                guard rows.count == 1 else { continue }
                let actionID = try await insertAction(pending, on: connection)
                try await connection.query("UPDATE consumption_request SET action_id = \(actionID) WHERE id = \(intent.id)", logger: logger)
                begun[intent.id] = actionID
            }
            return begun
        }
    }

    public func completeConsumptionAnswers(_ outcomes: [ConsumptionOutcome], at: Date) async throws {
        guard !outcomes.isEmpty else { return }
        let seconds = at.timeIntervalSince1970
        try await write("recording the outcomes of consumption answers") { [logger] connection in
            for o in outcomes {
                let completed = (o.outcome.completedAt ?? at).timeIntervalSince1970
                let rows = try await connection.query(
                    """
                    UPDATE api_action SET http_status = \(o.outcome.httpStatus.map(Int64.init)), api_error = \(o.outcome.apiError.map(Int64.init)),
                           result = \(o.outcome.result), response_body = \(o.outcome.responseBody), completed_at = \(completed)
                    WHERE id = \(o.actionID) RETURNING id
                    """, logger: logger
                ).collect()
                guard rows.count == 1 else { throw AuditDatabaseError(.refused, "the pending row #\(o.actionID) of the write is missing") }
                try await connection.query(
                    """
                    UPDATE consumption_request SET state = \(o.state.rawValue), http_status = \(o.outcome.httpStatus.map(Int64.init)),
                        api_error = \(o.outcome.apiError.map(Int64.init)), detail = \(o.detail), decided_at = \(seconds), lease_until = NULL
                    WHERE id = \(o.id) AND state IN ('sending', 'unknown')
                    """, logger: logger)
            }
        }
    }

    public func consumptionRequests(transactionID: String?, limit: Int) async throws -> [ConsumptionRequestRecord] {
        try await read("reading the consumption requests") { [logger] connection in
            let rows =
                if let transactionID {
                    try await connection.query(
                        """
                        SELECT \(unescaped: Self.consumptionColumns), \(unescaped: Self.payloadColumns) FROM consumption_request
                        WHERE transaction_id = \(transactionID)
                        ORDER BY requested_at DESC, id DESC LIMIT \(limit)
                        """, logger: logger
                    ).collect()
                } else {
                    try await connection.query(
                        """
                        SELECT \(unescaped: Self.consumptionColumns), \(unescaped: Self.payloadColumns) FROM consumption_request
                        ORDER BY requested_at DESC, id DESC LIMIT \(limit)
                        """,
                        logger: logger
                    ).collect()
                }
            return try rows.map { row in
                var request = try Self.consumptionRequest(row)
                let c = row.makeRandomAccess()
                (request.signedPayload, request.verdict) = (try c[17].decode(String?.self), try c[18].decode(String?.self))
                return request
            }
        }
    }

    public func openConsumptionRequests() async throws -> ConsumptionOpenSummary {
        try await read("counting the open consumption requests") { [logger] connection in
            let rows = try await connection.query(
                "SELECT COUNT(*), MIN(deadline), MIN(requested_at) FROM consumption_request WHERE state IN ('open', 'sending')", logger: logger
            ).collect()
            guard let row = rows.first else { return ConsumptionOpenSummary(open: 0, nearestDeadline: nil, oldestRequestedAt: nil) }
            let (count, nearest, oldest) = try row.decode((Int64, Double?, Double?).self)
            return ConsumptionOpenSummary(
                open: Int(count), nearestDeadline: nearest.map(Date.init(timeIntervalSince1970:)), oldestRequestedAt: oldest.map(Date.init(timeIntervalSince1970:)))
        }
    }
}
