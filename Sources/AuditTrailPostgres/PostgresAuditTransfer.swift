import AuditTrail
import Foundation
import PostgresNIO
import AppStoreAPI
import ReceiptCore

/// `db copy` on PostgreSQL: the same merge as ``AuditStore``'s (content hash, then natural keys),
/// one transaction per batch, so a copy that stops half-way leaves whole receipts and can be run
/// again.
extension PostgresAuditStore: AuditTransferring {
    public func exportReceipts(after id: Int64, limit: Int) async throws -> [(id: Int64, receipt: AuditReceiptExport)] {
        try await readSnapshot("exporting receipts") { [self] connection in
            typealias Head = (Int64, String, String, String?, String?, String?, Double, Double, String, Int?, String?, Double?, String?, String?)
            let heads = try await connection.query(
                """
                SELECT id, content_hash, format, bundle_id, environment, receipt_data, first_seen, last_seen, state, status,
                       status_environment, verified_at, failure, failure_code
                FROM receipt WHERE id > \(id) ORDER BY id LIMIT \(limit)
                """, logger: logger
            ).collect().map { try $0.decode(Head.self) }
            guard !heads.isEmpty else { return [] }
            let ids = heads.map(\.0)
            var sightings: [Int64: [AuditReceiptExport.Sighting]] = [:]
            for row in try await connection.query(
                "SELECT receipt_id, source_kind, source, seen_at FROM sighting WHERE receipt_id = ANY(\(ids)) ORDER BY id", logger: logger
            ).collect() {
                let (receipt, kind, source, at) = try row.decode((Int64, String, String?, Double).self)
                sightings[receipt, default: []].append(.init(kind: kind, source: source, seenAt: at))
            }
            var attempts: [Int64: [AuditReceiptExport.Attempt]] = [:]
            for row in try await connection.query(
                """
                SELECT receipt_id, at, url, environment, http_status, apple_status, is_retryable, latency_ms, error, error_code
                FROM attempt WHERE receipt_id = ANY(\(ids)) ORDER BY id
                """, logger: logger
            ).collect() {
                let (receipt, at, url, environment, http, apple, retryable, latency, error, code) = try row.decode(
                    (Int64, Double, String, String?, Int?, Int?, Bool?, Double?, String?, String?).self)
                attempts[receipt, default: []].append(
                    .init(
                        at: at, url: url, environment: environment, httpStatus: http, appleStatus: apple, isRetryable: retryable,
                        latencyMilliseconds: latency, error: error, errorCode: code))
            }
            let purchases = try await Self.purchases(of: ids, order: "id", connection, logger)
            var requests: [Int64: [AuditReceiptExport.APIRequest]] = [:]
            for row in try await connection.query(
                """
                SELECT receipt_id, position, endpoint, environment, url, http_status, api_error, result, latency_ms, retry_after, wait_seconds
                FROM api_request WHERE receipt_id = ANY(\(ids)) ORDER BY receipt_id, position
                """, logger: logger
            ).collect() {
                let (receipt, position, endpoint, environment, url, http, apiError, result, latency, retryAfter, wait) = try row.decode(
                    (Int64, Int, String, String, String, Int?, Int?, String, Double?, Double?, Double?).self)
                requests[receipt, default: []].append(
                    .init(
                        position: position, endpoint: endpoint, environment: environment, url: url, httpStatus: http, apiError: apiError,
                        result: result, latencyMilliseconds: latency, retryAfter: retryAfter, waitSeconds: wait))
            }
            return try heads.map { h in
                (
                    h.0,
                    AuditReceiptExport(
                        contentHash: h.1, format: h.2, bundleID: h.3, environment: h.4, receiptData: h.5, firstSeen: h.6, lastSeen: h.7,
                        state: try ReceiptState(stored: h.8), status: h.9, statusEnvironment: h.10, verifiedAt: h.11, failure: h.12, failureCode: h.13,
                        sightings: sightings[h.0] ?? [], attempts: attempts[h.0] ?? [], purchases: purchases[h.0] ?? [],
                        apiRequests: requests[h.0] ?? [])
                )
            }
        }
    }

    public func importReceipts(_ receipts: [AuditReceiptExport]) async throws -> AuditCopyCounts {
        try await write("copying \(receipts.count) receipts") { [self] connection in
            var counts = AuditCopyCounts()
            for r in receipts {
                let inserted = try await connection.query(
                    """
                    INSERT INTO receipt (content_hash, format, bundle_id, environment, receipt_data, first_seen, last_seen, state, status,
                                         status_environment, verified_at, failure, failure_code)
                    VALUES (\(r.contentHash), \(r.format), \(r.bundleID), \(r.environment), \(r.receiptData), \(r.firstSeen), \(r.lastSeen),
                            \(r.state.rawValue), \(r.status), \(r.statusEnvironment), \(r.verifiedAt), \(r.failure), \(r.failureCode))
                    ON CONFLICT (content_hash) DO NOTHING RETURNING id
                    """, logger: logger
                ).collect()
                let id: Int64
                if let row = inserted.first {
                    id = try row.decode(Int64.self)
                    counts.receiptsAdded += 1
                } else {
                    let existing = try await connection.query(
                        "SELECT id, state FROM receipt WHERE content_hash = \(r.contentHash) FOR UPDATE", logger: logger
                    ).collect()
                    guard let (found, state) = try existing.first?.decode((Int64, String).self) else {
                        throw AuditDatabaseError(.refused, "receipt \(r.contentHash.prefix(12)) vanished during the copy")
                    }
                    id = found
                    counts.receiptsMerged += 1
                    try await connection.query(
                        """
                        UPDATE receipt SET first_seen = LEAST(first_seen, \(r.firstSeen)), last_seen = GREATEST(last_seen, \(r.lastSeen))
                        WHERE id = \(id)
                        """, logger: logger)
                    if try !ReceiptState(stored: state).isFinal, r.state.isFinal {
                        try await connection.query(
                            """
                            UPDATE receipt SET state = \(r.state.rawValue), status = \(r.status), status_environment = \(r.statusEnvironment),
                                verified_at = \(r.verifiedAt), failure = \(r.failure), failure_code = \(r.failureCode)
                            WHERE id = \(id)
                            """, logger: logger)
                    }
                }
                for s in r.sightings {
                    let added = try await connection.query(
                        """
                        INSERT INTO sighting (receipt_id, source_kind, source, seen_at)
                        SELECT \(id), \(s.kind), \(s.source), \(s.seenAt)
                        WHERE NOT EXISTS (SELECT 1 FROM sighting WHERE receipt_id = \(id) AND source_kind = \(s.kind)
                                          AND source IS NOT DISTINCT FROM \(s.source) AND seen_at = \(s.seenAt))
                        RETURNING 1
                        """, logger: logger
                    ).collect()
                    counts.sightingsAdded += added.count
                }
                for a in r.attempts {
                    let added = try await connection.query(
                        """
                        INSERT INTO attempt (receipt_id, at, url, environment, http_status, apple_status, is_retryable, latency_ms, error, error_code)
                        SELECT \(id), \(a.at), \(a.url), \(a.environment), \(a.httpStatus), \(a.appleStatus), \(a.isRetryable),
                               \(a.latencyMilliseconds), \(a.error), \(a.errorCode)
                        WHERE NOT EXISTS (SELECT 1 FROM attempt WHERE receipt_id = \(id) AND at = \(a.at) AND url = \(a.url))
                        RETURNING 1
                        """, logger: logger
                    ).collect()
                    counts.attemptsAdded += added.count
                }
                let known = Set(
                    try await connection.query(
                        "SELECT transaction_id FROM purchase WHERE receipt_id = \(id) AND transaction_id IS NOT NULL", logger: logger
                    ).collect().map { try $0.decode(String.self) })
                let hadPurchases = try await connection.query("SELECT 1 FROM purchase WHERE receipt_id = \(id) LIMIT 1", logger: logger)
                    .collect().count > 0
                // Rows without a transaction id cannot be matched: taken only into a receipt that has none yet.
                let missing = r.purchases.filter { p in p.transactionID.map { !known.contains($0) } ?? !hadPurchases }
                try await insertPurchases(connection, missing.map { (id, $0) })
                let hadRequests = try await connection.query("SELECT 1 FROM api_request WHERE receipt_id = \(id) LIMIT 1", logger: logger)
                    .collect().count > 0
                if !hadRequests {
                    for q in r.apiRequests {
                        try await connection.query(
                            """
                            INSERT INTO api_request (receipt_id, position, endpoint, environment, url, http_status, api_error, result,
                                                     latency_ms, retry_after, wait_seconds)
                            VALUES (\(id), \(q.position), \(q.endpoint), \(q.environment), \(q.url), \(q.httpStatus), \(q.apiError), \(q.result),
                                    \(q.latencyMilliseconds), \(q.retryAfter), \(q.waitSeconds))
                            """, logger: logger)
                    }
                }
            }
            return counts
        }
    }

    public func importNotifications(_ notifications: [StoredNotification], rejections: [RejectionRecord]) async throws -> AuditCopyCounts {
        try await write("copying \(notifications.count) notifications") { [self] connection in
            var counts = AuditCopyCounts()
            for n in notifications {
                let r = n.record
                let rows = try await connection.query(
                    """
                    INSERT INTO notification (notification_uuid, version, notification_type, subtype, bundle_id, app_apple_id,
                        environment, signed_date, received_at, last_received_at, deliveries, verdict, reason, transaction_id,
                        original_transaction_id, product_id, peer, signed_payload)
                    VALUES (\(r.notificationUUID), \(r.version.rawValue), \(r.notificationType), \(r.subtype), \(r.bundleID), \(r.appAppleID),
                        \(r.environment), \(r.signedDate?.timeIntervalSince1970), \(r.receivedAt.timeIntervalSince1970),
                        \(n.lastReceivedAt.timeIntervalSince1970), \(Int64(n.deliveries)), \(r.verdict.rawValue), \(r.reason), \(r.transactionID),
                        \(r.originalTransactionID), \(r.productID), \(r.peer), \(r.signedPayload))
                    ON CONFLICT (notification_uuid) DO UPDATE SET deliveries = GREATEST(notification.deliveries, EXCLUDED.deliveries),
                        last_received_at = GREATEST(notification.last_received_at, EXCLUDED.last_received_at)
                    RETURNING (xmax = 0) AS inserted
                    """, logger: logger
                ).collect()
                if try rows.first?.decode(Bool.self) == true { counts.notificationsAdded += 1 }
            }
            for j in rejections {
                let added = try await connection.query(
                    """
                    INSERT INTO notification_rejection (at, peer, reason, http_status, body_size, body_prefix)
                    SELECT \(j.at.timeIntervalSince1970), \(j.peer), \(j.reason), \(Int64(j.httpStatus)), \(j.bodySize.map(Int64.init)), \(j.bodyPrefix)
                    WHERE NOT EXISTS (SELECT 1 FROM notification_rejection WHERE at = \(j.at.timeIntervalSince1970)
                                      AND peer IS NOT DISTINCT FROM \(j.peer) AND reason = \(j.reason))
                    RETURNING 1
                    """, logger: logger
                ).collect()
                counts.rejectionsAdded += added.count
            }
            return counts
        }
    }
}
