import AuditTrail
import Foundation
import GRDB
import ReceiptCore

/// One customer's rows in the SQLite trail (`customer --offline`), each read through an index
/// (v4, v7, v8, v10): no table is scanned, however large the trail.
extension AuditStore {
    public func customerLinks(_ column: CustomerLinkColumn, in values: [String], limit: Int) async throws -> [CustomerLink] {
        guard !values.isEmpty else { return [] }
        return try await database.read { db in
            var links: [CustomerLink] = []
            for table in ["purchase", "notification"] {
                let present = Set(try db.columns(in: table).map(\.name))
                // A trail older than v10 opened read-only has no token column: nothing matches it.
                guard present.contains(column.rawValue) else { continue }
                func name(_ column: String) -> String { present.contains(column) ? column : "NULL" }
                let matched = table == "purchase" && column == .appAccountToken ? "lower(app_account_token)" : column.rawValue
                let marks = Array(repeating: "?", count: values.count).joined(separator: ", ")
                let sql = """
                    SELECT DISTINCT original_transaction_id, \(name("app_transaction_id")) AS app_transaction_id,
                        \(name("app_account_token")) AS app_account_token
                    FROM \(table) WHERE \(matched) IN (\(marks)) LIMIT ?
                    """
                let arguments = StatementArguments(values) + [limit]
                for row in try Row.fetchAll(db, sql: sql, arguments: arguments) {
                    links.append(
                        CustomerLink(
                            originalTransactionID: row["original_transaction_id"], appTransactionID: row["app_transaction_id"],
                            appAccountToken: row["app_account_token"]))
                }
            }
            return links
        }
    }

    public func customerRecords(originalTransactionIDs originals: [String], transactionIDs: [String], limit: Int) async throws
        -> StoredCustomerRecords
    {
        guard !originals.isEmpty else { return StoredCustomerRecords() }
        return try await database.read { db in
            var records = StoredCustomerRecords(originalTransactionIDs: originals)
            let marks = Array(repeating: "?", count: originals.count).joined(separator: ", ")
            let ids = StatementArguments(originals)
            // The newest `limit` of each, then oldest first.
            let notifications = try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM notification WHERE original_transaction_id IN (\(marks))
                    ORDER BY COALESCE(signed_date, received_at) DESC, id DESC LIMIT ?
                    """,
                arguments: ids + [limit + 1])
            records.notifications = try notifications.prefix(limit).reversed().map(StoredNotification.init(row:))
            let purchases = try Row.fetchAll(
                db,
                sql: """
                    SELECT p.source, \(try Self.auditedColumns(db, prefix: "p.")), r.id AS receipt_id, r.content_hash, r.format,
                        r.first_seen, r.state, r.status, r.verified_at,
                        EXISTS (SELECT 1 FROM sighting s WHERE s.receipt_id = r.id AND s.source_kind = 'lookup') AS from_lookup
                    FROM purchase p JOIN receipt r ON r.id = p.receipt_id
                    WHERE p.original_transaction_id IN (\(marks))
                    ORDER BY p.purchase_date DESC, p.id DESC LIMIT ?
                    """,
                arguments: ids + [limit + 1])
            records.purchases = try purchases.prefix(limit).reversed().map { row in
                StoredPurchase(
                    receiptID: row["receipt_id"], contentHash: row["content_hash"], format: row["format"],
                    firstSeen: Date(timeIntervalSince1970: row["first_seen"]), fromLookup: row["from_lookup"],
                    state: try ReceiptState(stored: row["state"]).rawValue, verifyStatus: row["status"],
                    verifiedAt: (row["verified_at"] as Double?).map(Date.init(timeIntervalSince1970:)), purchase: Self.purchase(row))
            }
            let both = originals + transactionIDs
            let actionMarks = Array(repeating: "?", count: both.count).joined(separator: ", ")
            let columns = Set(try db.columns(in: "api_action").map(\.name))
            let actions = try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM api_action WHERE original_transaction_id IN (\(marks)) OR transaction_id IN (\(actionMarks))
                    ORDER BY at DESC, id DESC LIMIT ?
                    """,
                arguments: ids + StatementArguments(both) + [limit + 1])
            records.actions = actions.prefix(limit).reversed().map { Self.action($0, columns: columns) }
            records.truncated = notifications.count > limit || purchases.count > limit || actions.count > limit
            return records
        }
    }
}
