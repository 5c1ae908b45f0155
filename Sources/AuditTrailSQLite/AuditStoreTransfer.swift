import AuditTrail
import Foundation
import GRDB
import AppStoreAPI
import ReceiptCore

/// `db copy` on the SQLite trail: export every receipt with what hangs off it, and merge such
/// exports idempotently.
extension AuditStore: AuditTransferring {
    public func exportReceipts(after id: Int64, limit: Int) async throws -> [(id: Int64, receipt: AuditReceiptExport)] {
        try await database.read { db in
            let typed = try db.columns(in: "attempt").contains { $0.name == "error_code" }
            let hasAPI = try db.tableExists("api_request")
            let purchaseColumns = try Self.auditedColumns(db)
            return try Row.fetchAll(db, sql: "SELECT * FROM receipt WHERE id > ? ORDER BY id LIMIT ?", arguments: [id, limit]).map { row in
                let rowID: Int64 = row["id"]
                let sightings = try Row.fetchAll(
                    db, sql: "SELECT source_kind, source, seen_at FROM sighting WHERE receipt_id = ? ORDER BY id", arguments: [rowID]
                ).map { AuditReceiptExport.Sighting(kind: $0["source_kind"], source: $0["source"], seenAt: $0["seen_at"]) }
                let attempts = try Row.fetchAll(db, sql: "SELECT * FROM attempt WHERE receipt_id = ? ORDER BY id", arguments: [rowID]).map {
                    AuditReceiptExport.Attempt(
                        at: $0["at"], url: $0["url"], environment: $0["environment"], httpStatus: $0["http_status"],
                        appleStatus: $0["apple_status"], isRetryable: $0["is_retryable"], latencyMilliseconds: $0["latency_ms"],
                        error: $0["error"], errorCode: typed ? $0["error_code"] : nil)
                }
                let purchases = try Row.fetchAll(
                    db, sql: "SELECT source, \(purchaseColumns) FROM purchase WHERE receipt_id = ? ORDER BY id", arguments: [rowID]
                ).map(Self.purchase)
                let requests =
                    hasAPI
                    ? try Row.fetchAll(db, sql: "SELECT * FROM api_request WHERE receipt_id = ? ORDER BY position", arguments: [rowID]).map {
                        AuditReceiptExport.APIRequest(
                            position: $0["position"], endpoint: $0["endpoint"], environment: $0["environment"], url: $0["url"],
                            httpStatus: $0["http_status"], apiError: $0["api_error"], result: $0["result"], latencyMilliseconds: $0["latency_ms"],
                            retryAfter: $0["retry_after"], waitSeconds: $0["wait_seconds"])
                    } : []
                let receipt = AuditReceiptExport(
                    contentHash: row["content_hash"], format: row["format"], bundleID: row["bundle_id"], environment: row["environment"],
                    receiptData: row["receipt_data"], firstSeen: row["first_seen"], lastSeen: row["last_seen"], state: try ReceiptState(stored: row["state"]),
                    status: row["status"], statusEnvironment: row["status_environment"], verifiedAt: row["verified_at"], failure: row["failure"],
                    failureCode: typed ? row["failure_code"] : nil, sightings: sightings, attempts: attempts, purchases: purchases,
                    apiRequests: requests)
                return (rowID, receipt)
            }
        }
    }

    public func importReceipts(_ receipts: [AuditReceiptExport]) async throws -> AuditCopyCounts {
        try await database.write { db in
            var counts = AuditCopyCounts()
            for r in receipts {
                let id: Int64
                if let existing = try Row.fetchOne(db, sql: "SELECT id, state FROM receipt WHERE content_hash = ?", arguments: [r.contentHash]) {
                    id = existing["id"]
                    counts.receiptsMerged += 1
                    try db.execute(
                        sql: "UPDATE receipt SET first_seen = MIN(first_seen, ?), last_seen = MAX(last_seen, ?) WHERE id = ?",
                        arguments: [r.firstSeen, r.lastSeen, id])
                    let state = try ReceiptState(stored: existing["state"])
                    if !state.isFinal, r.state.isFinal {
                        try db.execute(
                            sql: """
                                UPDATE receipt SET state = ?, status = ?, status_environment = ?, verified_at = ?, failure = ?, failure_code = ?
                                WHERE id = ?
                                """,
                            arguments: [r.state.rawValue, r.status, r.statusEnvironment, r.verifiedAt, r.failure, r.failureCode, id])
                    }
                } else {
                    try db.execute(
                        sql: """
                            INSERT INTO receipt (content_hash, format, bundle_id, environment, receipt_data, first_seen, last_seen, state,
                                                 status, status_environment, verified_at, failure, failure_code)
                            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                            """,
                        arguments: [
                            r.contentHash, r.format, r.bundleID, r.environment, r.receiptData, r.firstSeen, r.lastSeen, r.state.rawValue, r.status,
                            r.statusEnvironment, r.verifiedAt, r.failure, r.failureCode,
                        ])
                    id = db.lastInsertedRowID
                    counts.receiptsAdded += 1
                }
                for s in r.sightings {
                    let known = try Bool.fetchOne(
                        db, sql: "SELECT EXISTS (SELECT 1 FROM sighting WHERE receipt_id = ? AND source_kind = ? AND source IS ? AND seen_at = ?)",
                        arguments: [id, s.kind, s.source, s.seenAt]) ?? false
                    if known { continue }
                    try db.execute(
                        sql: "INSERT INTO sighting (receipt_id, source_kind, source, seen_at) VALUES (?, ?, ?, ?)",
                        arguments: [id, s.kind, s.source, s.seenAt])
                    counts.sightingsAdded += 1
                }
                for a in r.attempts {
                    let known = try Bool.fetchOne(
                        db, sql: "SELECT EXISTS (SELECT 1 FROM attempt WHERE receipt_id = ? AND at = ? AND url = ?)", arguments: [id, a.at, a.url]) ?? false
                    if known { continue }
                    try db.execute(
                        sql: """
                            INSERT INTO attempt (receipt_id, at, url, environment, http_status, apple_status, is_retryable, latency_ms, error, error_code)
                            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                            """,
                        arguments: [
                            id, a.at, a.url, a.environment, a.httpStatus, a.appleStatus, a.isRetryable, a.latencyMilliseconds, a.error, a.errorCode,
                        ])
                    counts.attemptsAdded += 1
                }
                let knownTransactions = Set(
                    try String.fetchAll(
                        db, sql: "SELECT transaction_id FROM purchase WHERE receipt_id = ? AND transaction_id IS NOT NULL", arguments: [id]))
                let hadPurchases = try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM purchase WHERE receipt_id = ?)", arguments: [id]) ?? false
                // Rows without a transaction id cannot be matched: taken only into a receipt that has none yet.
                try insertPurchases(
                    db, receipt: id,
                    r.purchases.filter { p in p.transactionID.map { !knownTransactions.contains($0) } ?? !hadPurchases })
                let hadRequests = try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM api_request WHERE receipt_id = ?)", arguments: [id]) ?? false
                if !hadRequests {
                    for q in r.apiRequests {
                        try db.execute(
                            sql: AuditStore.insertAPIRequest,
                            arguments: [
                                id, q.position, q.endpoint, q.environment, q.url, q.httpStatus, q.apiError, q.result, q.latencyMilliseconds,
                                q.retryAfter, q.waitSeconds,
                            ])
                    }
                }
            }
            return counts
        }
    }

    public func importNotifications(_ notifications: [StoredNotification], rejections: [RejectionRecord]) async throws -> AuditCopyCounts {
        try await database.write { db in
            var counts = AuditCopyCounts()
            for n in notifications {
                let r = n.record
                let known = try Bool.fetchOne(
                    db, sql: "SELECT EXISTS (SELECT 1 FROM notification WHERE notification_uuid = ?)", arguments: [r.notificationUUID]) ?? false
                if known {
                    try db.execute(
                        sql: """
                            UPDATE notification SET deliveries = MAX(deliveries, ?), last_received_at = MAX(last_received_at, ?)
                            WHERE notification_uuid = ?
                            """,
                        arguments: [n.deliveries, n.lastReceivedAt.timeIntervalSince1970, r.notificationUUID])
                    continue
                }
                try db.execute(
                    sql: """
                        INSERT INTO notification (notification_uuid, version, notification_type, subtype, bundle_id, app_apple_id,
                            environment, signed_date, received_at, last_received_at, deliveries, verdict, reason, transaction_id,
                            original_transaction_id, product_id, peer, signed_payload)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        r.notificationUUID, r.version.rawValue, r.notificationType, r.subtype, r.bundleID, r.appAppleID, r.environment,
                        r.signedDate?.timeIntervalSince1970, r.receivedAt.timeIntervalSince1970, n.lastReceivedAt.timeIntervalSince1970,
                        n.deliveries, r.verdict.rawValue, r.reason, r.transactionID, r.originalTransactionID, r.productID, r.peer, r.signedPayload,
                    ])
                counts.notificationsAdded += 1
            }
            for j in rejections {
                let known = try Bool.fetchOne(
                    db, sql: "SELECT EXISTS (SELECT 1 FROM notification_rejection WHERE at = ? AND peer IS ? AND reason = ?)",
                    arguments: [j.at.timeIntervalSince1970, j.peer, j.reason]) ?? false
                if known { continue }
                try db.execute(
                    sql: """
                        INSERT INTO notification_rejection (at, peer, reason, http_status, body_size, body_prefix)
                        VALUES (?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [j.at.timeIntervalSince1970, j.peer, j.reason, j.httpStatus, j.bodySize, j.bodyPrefix])
                counts.rejectionsAdded += 1
            }
            return counts
        }
    }
}
