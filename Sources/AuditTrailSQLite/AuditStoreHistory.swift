import AuditTrail
import Foundation
import GRDB
import ReceiptCore

extension AuditStore {
    /// Distinct receipts matching `query`, most recently seen first.
    public func history(_ query: HistoryQuery) async throws -> [HistoryRow] {
        try await database.read { db in
            var conditions: [String] = []
            var arguments: [any DatabaseValueConvertible] = []
            func purchase(_ column: String, _ value: String?) {
                guard let value else { return }
                conditions.append("r.id IN (SELECT receipt_id FROM purchase WHERE \(column) = ?)")
                arguments.append(value)
            }
            purchase("transaction_id", query.transactionID)
            purchase("original_transaction_id", query.originalTransactionID)
            purchase("product_id", query.productID)
            if let bundle = query.bundleID {
                conditions.append("r.bundle_id = ?")
                arguments.append(bundle)
            }
            if let status = query.status {
                conditions.append("r.status = ?")
                arguments.append(status)
            }
            if let since = query.since {
                conditions.append("r.last_seen >= ?")
                arguments.append(since.timeIntervalSince1970)
            }
            let whereClause = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT r.id, r.format, r.bundle_id, r.environment, r.first_seen, r.last_seen, r.state, r.status
                    FROM receipt r \(whereClause)
                    ORDER BY r.last_seen DESC, r.id DESC LIMIT ?
                    """,
                arguments: StatementArguments(arguments + [query.limit]))
            // Purchases and sightings of all the rows, a few queries in all rather than two per row.
            let ids: [Int64] = rows.map { $0["id"] }
            var purchases: [Int64: [Purchase]] = [:]
            var seen: [Int64: [HistoryRow.Sighting]] = [:]
            let purchaseColumns = try Self.auditedColumns(db)
            for start in stride(from: 0, to: ids.count, by: 500) {
                let chunk = Array(ids[start..<min(start + 500, ids.count)])
                let marks = databaseQuestionMarks(count: chunk.count)
                for p in try Row.fetchAll(
                    db,
                    sql: """
                        SELECT receipt_id, source, \(purchaseColumns)
                        FROM purchase WHERE receipt_id IN (\(marks)) ORDER BY purchase_date, id
                        """, arguments: StatementArguments(chunk))
                {
                    purchases[p["receipt_id"], default: []].append(Self.purchase(p))
                }
                for s in try Row.fetchAll(
                    db,
                    sql: "SELECT receipt_id, source_kind, source, seen_at FROM sighting WHERE receipt_id IN (\(marks)) ORDER BY seen_at, id",
                    arguments: StatementArguments(chunk))
                {
                    seen[s["receipt_id"], default: []].append(
                        HistoryRow.Sighting(kind: s["source_kind"], source: s["source"], seenAt: Date(timeIntervalSince1970: s["seen_at"])))
                }
            }
            return try rows.map { row in
                let id: Int64 = row["id"]
                return HistoryRow(
                    id: id, format: row["format"], bundleID: row["bundle_id"], environment: row["environment"],
                    firstSeen: Date(timeIntervalSince1970: row["first_seen"]), lastSeen: Date(timeIntervalSince1970: row["last_seen"]),
                    sightings: seen[id]?.count ?? 0, state: try ReceiptState(stored: row["state"]), status: row["status"], purchases: purchases[id] ?? [],
                    seen: seen[id] ?? [])
            }
        }
    }
}

extension AuditStore {
    /// The `purchase` table's columns for ``PurchaseField/audited``: each is named as its field.
    /// A database opened read-only may be older than the newest columns (v8): those read as NULL.
    static func auditedColumns(_ db: Database, prefix: String = "") throws -> String {
        let present = Set(try db.columns(in: "purchase").map(\.name))
        return PurchaseField.audited.map { present.contains($0.name) ? prefix + $0.name : "NULL AS \($0.name)" }.joined(separator: ", ")
    }

    /// A purchase from a `purchase` row: text and integers as stored, dates as epoch seconds.
    static func purchase(_ row: Row) -> Purchase {
        var purchase = Purchase(source: Purchase.Source(rawValue: row["source"] ?? "") ?? .receiptInApp)
        for field in PurchaseField.audited {
            let value: PurchaseField.Value? =
                switch field.accessor {
                case .date: (row[field.name] as Double?).map { .date(Date(timeIntervalSince1970: $0)) }
                case .integer, .integer64: (row[field.name] as Int64?).map { .integer($0) }
                case .flag: (row[field.name] as Bool?).map { .flag($0) }
                case .json, .commitment: (row[field.name] as String?).flatMap { try? JSONValue.parse(Array($0.utf8)) }.map { .object($0) }
                default: (row[field.name] as String?).map { .text($0) }
                }
            field.set(value, in: &purchase)
        }
        return purchase
    }

    /// The same from a row holding `source` at `sourceAt` and ``PurchaseField/audited``'s
    /// columns right after it, read by position.
    static func purchase(_ row: Row, sourceAt start: Int) -> Purchase {
        var purchase = Purchase(source: Purchase.Source(rawValue: row[start] ?? "") ?? .receiptInApp)
        for (offset, field) in PurchaseField.audited.enumerated() {
            let index = start + 1 + offset
            let value: PurchaseField.Value? =
                switch field.accessor {
                case .date: (row[index] as Double?).map { .date(Date(timeIntervalSince1970: $0)) }
                case .integer, .integer64: (row[index] as Int64?).map { .integer($0) }
                case .flag: (row[index] as Bool?).map { .flag($0) }
                case .json, .commitment: (row[index] as String?).flatMap { try? JSONValue.parse(Array($0.utf8)) }.map { .object($0) }
                default: (row[index] as String?).map { .text($0) }
                }
            field.set(value, in: &purchase)
        }
        return purchase
    }
}
