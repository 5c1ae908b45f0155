import AuditTrail
import Foundation
import GRDB

/// Retention Messaging in the SQLite trail (v14): the realtime requests answered, what the
/// trail knows of a customer when one arrives, and the images and messages Apple holds.
extension AuditStore {
    /// Three indexed reads of one original transaction (``RetentionFacts``), in one snapshot.
    static let retentionFactsSQL = """
        SELECT
          (SELECT MIN(d) FROM (SELECT MIN(purchase_date) AS d FROM purchase WHERE original_transaction_id = ?1
                               UNION ALL SELECT MIN(signed_date) FROM notification WHERE original_transaction_id = ?1)) AS first_seen,
          (SELECT COUNT(*) FROM (SELECT transaction_id FROM purchase WHERE original_transaction_id = ?1 AND offer_type IS NOT NULL
                                 UNION SELECT transaction_id FROM notification WHERE original_transaction_id = ?1 AND notification_type = ?2)) AS offers,
          (SELECT COUNT(*) FROM (SELECT transaction_id FROM purchase WHERE original_transaction_id = ?1
                                   AND (cancellation_date IS NOT NULL OR revocation_type IS NOT NULL)
                                 UNION SELECT transaction_id FROM notification WHERE original_transaction_id = ?1 AND notification_type = ?3)) AS refunds,
          (EXISTS (SELECT 1 FROM purchase WHERE original_transaction_id = ?1)
             OR EXISTS (SELECT 1 FROM notification WHERE original_transaction_id = ?1)) AS known
        """

    public func retentionFacts(originalTransactionID: String) async throws -> RetentionFacts {
        try await database.read { db in
            let row = try Row.fetchOne(
                db, sql: Self.retentionFactsSQL, arguments: [originalTransactionID, AuditSchema.offerRedeemedType, AuditSchema.refundType])
            let first: Double? = row?["first_seen"]
            return RetentionFacts(
                firstSeen: first.map { Date(timeIntervalSince1970: $0) }, offersRedeemed: row?["offers"] ?? 0, refunds: row?["refunds"] ?? 0,
                known: row?["known"] ?? false)
        }
    }

    /// Committed without waiting for the WAL's fsync: the row is the answer's log, and the
    /// write lock the receiver's group commits wait on is held for less time.
    public func recordRetention(_ r: RetentionRecord) async throws {
        try await writeLightly { db in
            try db.cachedStatement(
                sql: """
                    INSERT INTO retention_request (request_identifier, received_at, environment, app_apple_id, original_transaction_id,
                        product_id, locale, result, reason, rule, answer_kind, message_identifier, answer, latency_ms, peer)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """
            ).execute(arguments: [
                r.requestIdentifier, r.receivedAt.timeIntervalSince1970, r.environment, r.appAppleID, r.originalTransactionID, r.productID,
                r.locale, r.result.rawValue, r.reason, r.rule, r.answerKind, r.messageIdentifier, r.answer, r.latencyMilliseconds, r.peer,
            ])
        }
    }

    public func retentionRequests(_ query: RetentionQuery) async throws -> [RetentionRecord] {
        try await database.read { db in
            guard try db.tableExists("retention_request") else { return [] }
            var sql = "SELECT * FROM retention_request"
            var arguments: [(any DatabaseValueConvertible)?] = []
            if !query.originalTransactionIDs.isEmpty {
                sql += " WHERE original_transaction_id IN (" + query.originalTransactionIDs.map { _ in "?" }.joined(separator: ",") + ")"
                arguments += query.originalTransactionIDs
            }
            sql += " ORDER BY id DESC LIMIT ?"
            arguments.append(query.limit)
            return try Row.fetchAll(db, sql: sql, arguments: StatementArguments(arguments)).reversed().map(Self.retention)
        }
    }

    static func retention(_ row: Row) -> RetentionRecord {
        RetentionRecord(
            requestIdentifier: row["request_identifier"], receivedAt: Date(timeIntervalSince1970: row["received_at"]), environment: row["environment"],
            appAppleID: row["app_apple_id"], originalTransactionID: row["original_transaction_id"], productID: row["product_id"],
            locale: row["locale"], result: RetentionResult(rawValue: row["result"]) ?? .fault, reason: row["reason"], rule: row["rule"],
            answerKind: row["answer_kind"], messageIdentifier: row["message_identifier"], answer: row["answer"],
            latencyMilliseconds: row["latency_ms"], peer: row["peer"])
    }

    public func recordRetentionContent(_ items: [RetentionContentItem], kind: RetentionContentItem.Kind, environment: String) async throws {
        try await database.write { db in
            // The images a message shows are kept across reads: a list does not say them.
            var shows: [String: String] = [:]
            for row in try Row.fetchAll(
                db, sql: "SELECT identifier, image_identifier FROM retention_content WHERE environment = ? AND kind = ? AND image_identifier IS NOT NULL",
                arguments: [environment, kind.rawValue])
            {
                shows[row["identifier"]] = row["image_identifier"]
            }
            try db.execute(sql: "DELETE FROM retention_content WHERE environment = ? AND kind = ?", arguments: [environment, kind.rawValue])
            let insert = try db.cachedStatement(
                sql: """
                    INSERT INTO retention_content (environment, kind, identifier, state, image_identifier, observed_at) VALUES (?, ?, ?, ?, ?, ?)
                    ON CONFLICT (environment, kind, identifier) DO UPDATE SET state = excluded.state, observed_at = excluded.observed_at
                    """)
            for item in items where item.kind == kind {
                let id = item.identifier.uppercased()
                try insert.execute(arguments: [
                    environment, kind.rawValue, id, item.state, item.imageIdentifier?.uppercased() ?? shows[id], item.observedAt.timeIntervalSince1970,
                ])
            }
        }
    }

    public func retentionContent(environment: String) async throws -> [RetentionContentItem] {
        try await database.read { db in
            guard try db.tableExists("retention_content") else { return [] }
            return try Row.fetchAll(
                db, sql: "SELECT * FROM retention_content WHERE environment = ? ORDER BY kind, identifier", arguments: [environment]
            ).map { row in
                RetentionContentItem(
                    kind: RetentionContentItem.Kind(rawValue: row["kind"]) ?? .message, identifier: row["identifier"], state: row["state"],
                    imageIdentifier: row["image_identifier"], observedAt: Date(timeIntervalSince1970: row["observed_at"]))
            }
        }
    }
}
