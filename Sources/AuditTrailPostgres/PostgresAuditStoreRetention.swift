import AuditTrail
import Foundation
import PostgresNIO

/// Retention Messaging in the PostgreSQL trail (v14), with the SQLite store's meaning.
extension PostgresAuditStore {
    public func retentionFacts(originalTransactionID id: String) async throws -> RetentionFacts {
        try await read("reading what the trail knows of a customer") { [self] connection in
            let offers = AuditSchema.offerRedeemedType
            let refund = AuditSchema.refundType
            let rows = try await connection.query(
                """
                SELECT
                  (SELECT MIN(d) FROM (SELECT MIN(purchase_date) AS d FROM purchase WHERE original_transaction_id = \(id)
                                       UNION ALL SELECT MIN(signed_date) FROM notification WHERE original_transaction_id = \(id)) AS f),
                  (SELECT COUNT(*) FROM (SELECT transaction_id FROM purchase WHERE original_transaction_id = \(id) AND offer_type IS NOT NULL
                                         UNION SELECT transaction_id FROM notification
                                         WHERE original_transaction_id = \(id) AND notification_type = \(offers)) AS o),
                  (SELECT COUNT(*) FROM (SELECT transaction_id FROM purchase WHERE original_transaction_id = \(id)
                                           AND (cancellation_date IS NOT NULL OR revocation_type IS NOT NULL)
                                         UNION SELECT transaction_id FROM notification
                                         WHERE original_transaction_id = \(id) AND notification_type = \(refund)) AS r),
                  (EXISTS (SELECT 1 FROM purchase WHERE original_transaction_id = \(id))
                     OR EXISTS (SELECT 1 FROM notification WHERE original_transaction_id = \(id)))
                """, logger: logger
            ).collect()
            guard let row = rows.first else { return RetentionFacts(firstSeen: nil, offersRedeemed: 0, refunds: 0, known: false) }
            let (first, offered, refunded, known) = try row.decode((Double?, Int64, Int64, Bool).self)
            return RetentionFacts(
                firstSeen: first.map(Date.init(timeIntervalSince1970:)), offersRedeemed: Int(offered), refunds: Int(refunded), known: known)
        }
    }

    public func recordRetention(_ r: RetentionRecord) async throws {
        _ = try await run("recording a realtime request", write: true, transaction: "BEGIN") { [self] connection in
            try await connection.query(
                """
                INSERT INTO retention_request (request_identifier, received_at, environment, app_apple_id, original_transaction_id,
                    product_id, locale, result, reason, rule, answer_kind, message_identifier, answer, latency_ms, peer)
                VALUES (\(r.requestIdentifier), \(r.receivedAt.timeIntervalSince1970), \(r.environment), \(r.appAppleID),
                        \(r.originalTransactionID), \(r.productID), \(r.locale), \(r.result.rawValue), \(r.reason), \(r.rule),
                        \(r.answerKind), \(r.messageIdentifier), \(r.answer), \(r.latencyMilliseconds), \(r.peer))
                """, logger: logger)
        }
    }

    public func retentionRequests(_ query: RetentionQuery) async throws -> [RetentionRecord] {
        try await read("reading realtime requests") { [self] connection in
            var q = PostgresQueryBuilder()
            q.sql(
                """
                SELECT request_identifier, received_at, environment, app_apple_id, original_transaction_id, product_id, locale, result,
                       reason, rule, answer_kind, message_identifier, answer, latency_ms, peer FROM retention_request
                """)
            if !query.originalTransactionIDs.isEmpty {
                q.sql(" WHERE original_transaction_id = ANY(")
                q.bind(query.originalTransactionIDs)
                q.sql(")")
            }
            q.sql(" ORDER BY id DESC LIMIT ")
            q.bind(query.limit)
            return try await connection.query(q.query, logger: logger).collect().map { row in
                let c = row.makeRandomAccess()
                return RetentionRecord(
                    requestIdentifier: try c[0].decode(String.self), receivedAt: Date(timeIntervalSince1970: try c[1].decode(Double.self)),
                    environment: try c[2].decode(String?.self), appAppleID: try c[3].decode(Int64?.self),
                    originalTransactionID: try c[4].decode(String?.self), productID: try c[5].decode(String?.self),
                    locale: try c[6].decode(String?.self), result: RetentionResult(rawValue: try c[7].decode(String.self)) ?? .fault,
                    reason: try c[8].decode(String.self), rule: try c[9].decode(String?.self), answerKind: try c[10].decode(String?.self),
                    messageIdentifier: try c[11].decode(String?.self), answer: try c[12].decode(String.self),
                    latencyMilliseconds: try c[13].decode(Double.self), peer: try c[14].decode(String?.self))
            }.reversed()
        }
    }

    public func recordRetentionContent(_ items: [RetentionContentItem], kind: RetentionContentItem.Kind, environment: String) async throws {
        try await write("recording the images and messages Apple holds") { [self] connection in
            var shows: [String: String] = [:]
            for row in try await connection.query(
                """
                SELECT identifier, image_identifier FROM retention_content
                WHERE environment = \(environment) AND kind = \(kind.rawValue) AND image_identifier IS NOT NULL
                """, logger: logger
            ).collect() {
                let (id, image) = try row.decode((String, String).self)
                shows[id] = image
            }
            try await connection.query(
                "DELETE FROM retention_content WHERE environment = \(environment) AND kind = \(kind.rawValue)", logger: logger)
            for item in items where item.kind == kind {
                let id = item.identifier.uppercased()
                let image = item.imageIdentifier?.uppercased() ?? shows[id]
                try await connection.query(
                    """
                    INSERT INTO retention_content (environment, kind, identifier, state, image_identifier, observed_at)
                    VALUES (\(environment), \(kind.rawValue), \(id), \(item.state), \(image), \(item.observedAt.timeIntervalSince1970))
                    ON CONFLICT (environment, kind, identifier) DO UPDATE SET state = excluded.state, observed_at = excluded.observed_at
                    """, logger: logger)
            }
        }
    }

    public func retentionContent(environment: String) async throws -> [RetentionContentItem] {
        try await read("reading the images and messages Apple holds") { [self] connection in
            try await connection.query(
                """
                SELECT kind, identifier, state, image_identifier, observed_at FROM retention_content
                WHERE environment = \(environment) ORDER BY kind, identifier
                """, logger: logger
            ).collect().map { row in
                let (kind, id, state, image, at) = try row.decode((String, String, String, String?, Double).self)
                return RetentionContentItem(
                    kind: RetentionContentItem.Kind(rawValue: kind) ?? .message, identifier: id, state: state, imageIdentifier: image,
                    observedAt: Date(timeIntervalSince1970: at))
            }
        }
    }
}
