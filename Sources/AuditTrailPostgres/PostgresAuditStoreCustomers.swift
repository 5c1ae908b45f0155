import AuditTrail
import Foundation
import PostgresNIO
import ReceiptCore

/// One customer's rows on PostgreSQL (`customer --offline`), each read through an index (v4,
/// v7, v8, v10), in one snapshot.
extension PostgresAuditStore {
    public func customerLinks(_ column: CustomerLinkColumn, in values: [String], limit: Int) async throws -> [CustomerLink] {
        guard !values.isEmpty else { return [] }
        return try await read("finding the customer") { [self] connection in
            var links: [CustomerLink] = []
            for table in ["purchase", "notification"] {
                var q = PostgresQueryBuilder()
                q.sql("SELECT DISTINCT original_transaction_id, app_transaction_id, app_account_token FROM ")
                q.identifier(table)
                q.sql(" WHERE ")
                if table == "purchase" && column == .appAccountToken {
                    q.sql("lower(app_account_token)")
                } else {
                    q.identifier(column.rawValue)
                }
                q.sql(" = ANY(")
                q.bind(values)
                q.sql(") LIMIT ")
                q.bind(Int64(limit))
                for row in try await connection.query(q.query, logger: logger).collect() {
                    let (original, app, token) = try row.decode((String?, String?, String?).self)
                    links.append(CustomerLink(originalTransactionID: original, appTransactionID: app, appAccountToken: token))
                }
            }
            return links
        }
    }

    public func customerRecords(originalTransactionIDs originals: [String], transactionIDs: [String], limit: Int) async throws
        -> StoredCustomerRecords
    {
        guard !originals.isEmpty else { return StoredCustomerRecords() }
        let over = Int64(limit + 1)
        return try await readSnapshot("reading the customer's rows") { [self] connection in
            var records = StoredCustomerRecords(originalTransactionIDs: originals)
            // The newest `limit` of each, then oldest first.
            var n = PostgresQueryBuilder()
            n.sql(Self.notificationColumns)
            n.sql(" FROM notification WHERE original_transaction_id = ANY(")
            n.bind(originals)
            n.sql(") ORDER BY COALESCE(signed_date, received_at) DESC, id DESC LIMIT ")
            n.bind(over)
            let notifications = try await connection.query(n.query, logger: logger).collect()
            records.notifications = try notifications.prefix(limit).reversed().map { try Self.notification($0).stored }

            var p = PostgresQueryBuilder()
            p.sql(
                """
                SELECT r.id, r.content_hash, r.format, r.first_seen, r.state, r.status, r.verified_at,
                    EXISTS (SELECT 1 FROM sighting s WHERE s.receipt_id = r.id AND s.source_kind = 'lookup'), p.source
                """)
            for field in PurchaseField.audited {
                p.sql(", p.")
                p.identifier(field.name)
            }
            p.sql(" FROM purchase p JOIN receipt r ON r.id = p.receipt_id WHERE p.original_transaction_id = ANY(")
            p.bind(originals)
            p.sql(") ORDER BY p.purchase_date DESC NULLS LAST, p.id DESC LIMIT ")
            p.bind(over)
            let purchases = try await connection.query(p.query, logger: logger).collect()
            records.purchases = try purchases.prefix(limit).reversed().map { row in
                let cells = row.makeRandomAccess()
                return StoredPurchase(
                    receiptID: try cells[0].decode(Int64.self), contentHash: try cells[1].decode(String.self), format: try cells[2].decode(String.self),
                    firstSeen: Date(timeIntervalSince1970: try cells[3].decode(Double.self)), fromLookup: try cells[7].decode(Bool.self),
                    state: try ReceiptState(stored: cells[4].decode(String.self)).rawValue, verifyStatus: try cells[5].decode(Int64?.self).map(Int.init),
                    verifiedAt: try cells[6].decode(Double?.self).map(Date.init(timeIntervalSince1970:)), purchase: try Self.purchase(cells, sourceAt: 8))
            }

            var a = PostgresQueryBuilder()
            a.sql(Self.actionColumns)
            a.sql(" FROM api_action WHERE original_transaction_id = ANY(")
            a.bind(originals)
            a.sql(") OR transaction_id = ANY(")
            a.bind(originals + transactionIDs)
            a.sql(") ORDER BY at DESC, id DESC LIMIT ")
            a.bind(over)
            let actions = try await connection.query(a.query, logger: logger).collect()
            records.actions = try actions.prefix(limit).reversed().map(Self.action)
            records.truncated = notifications.count > limit || purchases.count > limit || actions.count > limit
            return records
        }
    }
}
