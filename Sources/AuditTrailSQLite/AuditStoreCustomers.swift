import AuditTrail
import Foundation
import GRDB
import ReceiptCore
import ReceiptTrust

/// One customer's rows in the SQLite trail (`customer --offline`), each read through an index
/// (v4, v7, v8, v10): no table is scanned, however large the trail.
extension AuditStore {
    public func customerLinks(_ columns: [CustomerLinkColumn], in values: [String], limit: Int) async throws -> [CustomerLink] {
        guard !values.isEmpty, !columns.isEmpty else { return [] }
        return try await database.read { db in
            var links: [CustomerLink] = []
            // A write links its original transaction to the app transaction its plan knew (v13):
            // a customer the trail knows only by our writes is found by either.
            for table in ["purchase", "notification", "api_action"] {
                guard let (sql, arguments) = try Self.linksSQL(db, table: table, columns: columns, values: values) else { continue }
                let rows = try Row.fetchCursor(db.cachedStatement(sql: sql), arguments: arguments + [limit])
                while let row = try rows.next() {
                    links.append(CustomerLink(originalTransactionID: row[0], appTransactionID: row[1], appAccountToken: row[2]))
                }
            }
            return links
        }
    }

    public func customerRecords(originalTransactionIDs originals: [String], appTransactionIDs appIDs: [String], transactionIDs: [String], limit: Int)
        async throws -> StoredCustomerRecords
    {
        guard !originals.isEmpty || !appIDs.isEmpty else { return StoredCustomerRecords() }
        return try await database.read { db in
            var records = StoredCustomerRecords()
            // The newest `limit` of each, then oldest first.
            let (notificationSQL, notificationArguments) = try Self.notificationsSQL(db, originals: originals, appIDs: appIDs)
            let notifications = try Row.fetchAll(db.cachedStatement(sql: notificationSQL), arguments: notificationArguments + [limit + 1])
            records.notifications = try notifications.prefix(limit).reversed().map(Self.notification)
            let (purchaseSQL, purchaseArguments) = try Self.purchasesSQL(db, originals: originals, appIDs: appIDs)
            let purchases = try Row.fetchAll(db.cachedStatement(sql: purchaseSQL), arguments: purchaseArguments + [limit + 1])
            records.purchases = try purchases.prefix(limit).reversed().map { row in
                let format: String = row[2]
                return StoredPurchase(
                    receiptID: row[0], contentHash: row[1], format: format, firstSeen: Date(timeIntervalSince1970: row[3]), fromLookup: format == "api",
                    state: try ReceiptState(stored: row[4]).rawValue, verifyStatus: row[5],
                    verifiedAt: (row[6] as Double?).map(Date.init(timeIntervalSince1970:)), purchase: Self.purchase(row, sourceAt: 7))
            }
            records.originalTransactionIDs = StoredCustomerRecords.originals(originals, notifications: records.notifications, purchases: records.purchases)
            let all = records.originalTransactionIDs
            let columns = Set(try db.columns(in: "api_action").map(\.name))
            // Writes linked by app transaction id from v13 on, and the mass extensions of the
            // customer's products (the story keeps those Apple notified this customer of).
            let linkedApps = columns.contains("app_transaction_id") ? appIDs : []
            let products = records.productIDs
            let actions = try Row.fetchAll(
                db.cachedStatement(
                    sql: Self.actionsSQL(originals: all.count, transactions: transactionIDs.count, appIDs: linkedApps.count, products: products.count)),
                arguments: StatementArguments(all) + StatementArguments(transactionIDs) + StatementArguments(linkedApps)
                    + (products.isEmpty ? [] : [AuditSchema.massExtendAction] + StatementArguments(products)) + [limit + 1])
            records.actions = actions.prefix(limit).reversed().map { Self.action($0, columns: columns) }
            records.truncated = notifications.count > limit || purchases.count > limit || actions.count > limit
            return records
        }
    }

    // MARK: The statements (each ends with `LIMIT ?`)

    static func marks(_ count: Int) -> String { Array(repeating: "?", count: count).joined(separator: ", ") }

    /// `column`, or NULL where a trail older than v10 opened read-only lacks it.
    static func optional(_ db: Database, _ table: String, _ column: String) throws -> String {
        try db.columns(in: table).contains { $0.name == column } ? column : "NULL"
    }

    /// A notification row in ``notificationsSQL(_:originals:appIDs:)``'s order, read by
    /// position (by name, each cell's lookup lowercased its name: a third of the read).
    static func notification(_ row: Row) throws -> StoredNotification {
        StoredNotification(
            record: NotificationRecord(
                notificationUUID: row[0], version: try NotificationVersion(stored: row[1]), notificationType: row[2], subtype: row[3],
                bundleID: row[4], appAppleID: row[5], environment: row[6], signedDate: (row[7] as Double?).map(Date.init(timeIntervalSince1970:)),
                receivedAt: Date(timeIntervalSince1970: row[8]), verdict: try TrustReport.Verdict(stored: row[11]), reason: row[12],
                transactionID: row[13], originalTransactionID: row[14], productID: row[15], peer: row[16], signedPayload: row[17],
                appAccountToken: row[18], appTransactionID: row[19]),
            deliveries: row[10], lastReceivedAt: Date(timeIntervalSince1970: row[9]))
    }

    /// The links of `table` whose `columns` hold one of `values`; nil when a trail older than
    /// v10 opened read-only has none of them (nothing matches).
    static func linksSQL(_ db: Database, table: String, columns: [CustomerLinkColumn], values: [String]) throws
        -> (String, StatementArguments)?
    {
        let present = Set(try db.columns(in: table).map(\.name))
        let asked = columns.filter { present.contains($0.rawValue) }
        guard !asked.isEmpty else { return nil }
        func name(_ column: String) -> String { present.contains(column) ? column : "NULL" }
        let conditions = asked.map { column in
            (table == "purchase" && column == .appAccountToken ? "lower(app_account_token)" : column.rawValue) + " IN (\(marks(values.count)))"
        }
        var arguments = StatementArguments()
        for _ in asked { arguments += StatementArguments(values) }
        let sql = """
            SELECT DISTINCT original_transaction_id, \(name("app_transaction_id")) AS app_transaction_id,
                \(name("app_account_token")) AS app_account_token
            FROM \(table) WHERE \(conditions.joined(separator: " OR ")) LIMIT ?
            """
        return (sql, arguments)
    }

    /// `original_transaction_id IN (…) OR app_transaction_id IN (…)` (the latter where the
    /// table has the column and ids are given).
    static func customerCondition(_ db: Database, table: String, alias: String, originals: [String], appIDs: [String]) throws
        -> (String, StatementArguments)
    {
        var parts: [String] = []
        var arguments = StatementArguments()
        if !originals.isEmpty {
            parts.append("\(alias)original_transaction_id IN (\(marks(originals.count)))")
            arguments += StatementArguments(originals)
        }
        if !appIDs.isEmpty, try db.columns(in: table).contains(where: { $0.name == "app_transaction_id" }) {
            parts.append("\(alias)app_transaction_id IN (\(marks(appIDs.count)))")
            arguments += StatementArguments(appIDs)
        }
        return (parts.isEmpty ? "0" : parts.joined(separator: " OR "), arguments)
    }

    static func notificationsSQL(_ db: Database, originals: [String], appIDs: [String]) throws -> (String, StatementArguments) {
        let (condition, arguments) = try customerCondition(db, table: "notification", alias: "", originals: originals, appIDs: appIDs)
        let sql = """
            SELECT notification_uuid, version, notification_type, subtype, bundle_id, app_apple_id, environment, signed_date,
                received_at, last_received_at, deliveries, verdict, reason, transaction_id, original_transaction_id, product_id, peer,
                signed_payload, \(try optional(db, "notification", "app_account_token")), \(try optional(db, "notification", "app_transaction_id"))
            FROM notification WHERE \(condition) ORDER BY COALESCE(signed_date, received_at) DESC, id DESC LIMIT ?
            """
        return (sql, arguments)
    }

    static func purchasesSQL(_ db: Database, originals: [String], appIDs: [String]) throws -> (String, StatementArguments) {
        let (condition, arguments) = try customerCondition(db, table: "purchase", alias: "p.", originals: originals, appIDs: appIDs)
        let sql = """
            SELECT r.id, r.content_hash, r.format, r.first_seen, r.state, r.status, r.verified_at, p.source,
                \(try auditedColumns(db, prefix: "p."))
            FROM purchase p JOIN receipt r ON r.id = p.receipt_id
            WHERE \(condition)
            ORDER BY p.purchase_date DESC, p.id DESC LIMIT ?
            """
        return (sql, arguments)
    }

    /// The writes about `originals` original transactions or `transactions` transactions: one
    /// indexed read per column, united.
    static func actionsSQL(originals: Int, transactions: Int, appIDs: Int = 0, products: Int = 0) -> String {
        var parts = ["SELECT * FROM api_action WHERE original_transaction_id IN (\(marks(originals)))"]
        if transactions > 0 { parts.append("SELECT * FROM api_action WHERE transaction_id IN (\(marks(transactions)))") }
        if appIDs > 0 { parts.append("SELECT * FROM api_action WHERE app_transaction_id IN (\(marks(appIDs)))") }
        if products > 0 { parts.append("SELECT * FROM api_action WHERE action = ? AND product_id IN (\(marks(products)))") }
        return parts.joined(separator: " UNION ") + " ORDER BY at DESC, id DESC LIMIT ?"
    }
}

extension AuditStore: CustomerQueryProbe {
    package func bareCustomerRows(originalTransactionIDs originals: [String]) async throws -> Int {
        try await database.read { db in
            let list = StatementArguments(originals)
            let marks = Self.marks(originals.count)
            var rows = 0
            for table in ["notification", "purchase", "api_action"] {
                rows += try Row.fetchAll(db, sql: "SELECT * FROM \(table) WHERE original_transaction_id IN (\(marks))", arguments: list).count
            }
            return rows
        }
    }

    package func customerQueryPlans(_ key: CustomerKey, originalTransactionIDs originals: [String], appTransactionIDs appIDs: [String]) async throws
        -> [String]
    {
        let (column, value) = key.column
        let columns: [CustomerLinkColumn] = column == .transactionID ? [.transactionID, .originalTransactionID] : [column]
        return try await database.read { db in
            func plan(_ title: String, _ statement: (String, StatementArguments)?) throws -> String {
                guard let (sql, arguments) = statement else { return "\(title): (no such column)" }
                let steps = try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql, arguments: arguments + [10]).map { $0["detail"] as String? ?? "" }
                return "\(title): " + steps.joined(separator: "; ")
            }
            return [
                try plan("purchase links", try Self.linksSQL(db, table: "purchase", columns: columns, values: [value])),
                try plan("notification links", try Self.linksSQL(db, table: "notification", columns: columns, values: [value])),
                try plan("notifications", try Self.notificationsSQL(db, originals: originals, appIDs: appIDs)),
                try plan("purchases", try Self.purchasesSQL(db, originals: originals, appIDs: appIDs)),
                try plan(
                    "actions",
                    (Self.actionsSQL(originals: originals.count, transactions: 1, appIDs: appIDs.count, products: 1),
                     StatementArguments(originals) + [value] + StatementArguments(appIDs) + [AuditSchema.massExtendAction, "p"])),
            ]
        }
    }
}
