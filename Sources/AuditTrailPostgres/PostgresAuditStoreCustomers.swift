import AuditTrail
import Foundation
import PostgresNIO
import ReceiptCore

/// One customer's rows on PostgreSQL (`customer --offline`), each read through an index (v4,
/// v7, v8, v10).
extension PostgresAuditStore {
    public func customerLinks(_ columns: [CustomerLinkColumn], in values: [String], limit: Int) async throws -> [CustomerLink] {
        guard !values.isEmpty, !columns.isEmpty else { return [] }
        return try await read("finding the customer") { [self] connection in
            try await connection.query(Self.linksQuery(columns: columns, values: values, limit: limit).query, logger: logger).collect().map { row in
                let (original, app, token) = try row.decode((String?, String?, String?).self)
                return CustomerLink(originalTransactionID: original, appTransactionID: app, appAccountToken: token)
            }
        }
    }

    public func customerRecords(originalTransactionIDs originals: [String], appTransactionIDs appIDs: [String], transactionIDs: [String], limit: Int)
        async throws -> StoredCustomerRecords
    {
        guard !originals.isEmpty || !appIDs.isEmpty else { return StoredCustomerRecords() }
        // Three statements without a transaction around them (two round trips fewer): a row
        // committed between them shows in one table and not yet in another, as it would a
        // moment later anyway.
        return try await read("reading the customer's rows") { [self] connection in
            var records = StoredCustomerRecords()
            // The newest `limit` of each, then oldest first.
            let notifications = try await connection.query(Self.notificationsQuery(originals, appIDs, limit: limit + 1).query, logger: logger).collect()
            records.notifications = try notifications.prefix(limit).reversed().map { try Self.notification($0).stored }
            let purchases = try await connection.query(Self.purchasesQuery(originals, appIDs, limit: limit + 1).query, logger: logger).collect()
            records.purchases = try purchases.prefix(limit).reversed().map { row in
                let cells = row.makeRandomAccess()
                let format = try cells[2].decode(String.self)
                return StoredPurchase(
                    receiptID: try cells[0].decode(Int64.self), contentHash: try cells[1].decode(String.self), format: format,
                    firstSeen: Date(timeIntervalSince1970: try cells[3].decode(Double.self)), fromLookup: format == "api",
                    state: try ReceiptState(stored: cells[4].decode(String.self)).rawValue, verifyStatus: try cells[5].decode(Int64?.self).map(Int.init),
                    verifiedAt: try cells[6].decode(Double?.self).map(Date.init(timeIntervalSince1970:)), purchase: try Self.purchase(cells, sourceAt: 7))
            }
            records.originalTransactionIDs = StoredCustomerRecords.originals(originals, notifications: records.notifications, purchases: records.purchases)
            let actions = try await connection.query(
                Self.actionsQuery(
                    records.originalTransactionIDs, transactionIDs: transactionIDs, appIDs: appIDs, products: records.productIDs, limit: limit + 1
                ).query,
                logger: logger
            ).collect()
            records.actions = try actions.prefix(limit).reversed().map(Self.action)
            records.truncated = notifications.count > limit || purchases.count > limit || actions.count > limit
            return records
        }
    }

    // MARK: The statements (`explain`: their plans instead)

    /// The links of purchases and notifications whose `columns` hold one of `values`: one
    /// statement (one round trip), each table's part on its indexes.
    static func linksQuery(explain: Bool = false, columns: [CustomerLinkColumn], values: [String], limit: Int) -> PostgresQueryBuilder {
        var q = PostgresQueryBuilder()
        if explain { q.sql("EXPLAIN ") }
        // A write links its original transaction to the app transaction its plan knew (v13): a
        // customer the trail knows only by our writes is found by either. Writes hold no token.
        let writeColumns = columns.filter { $0 != .appAccountToken }
        for (position, table) in ["purchase", "notification", "api_action"].enumerated() {
            let asked = table == "api_action" ? writeColumns : columns
            if asked.isEmpty { continue }
            q.sql(position == 0 ? "(" : " UNION ALL (")
            q.sql(table == "api_action" ? "SELECT DISTINCT original_transaction_id, app_transaction_id, NULL::text FROM " : "SELECT DISTINCT original_transaction_id, app_transaction_id, app_account_token FROM ")
            q.identifier(table)
            q.sql(" WHERE ")
            for (index, column) in asked.enumerated() {
                if index > 0 { q.sql(" OR ") }
                if table == "purchase" && column == .appAccountToken {
                    q.sql("lower(app_account_token)")
                } else {
                    q.identifier(column.rawValue)
                }
                q.sql(" = ANY(")
                q.bind(values)
                q.sql(")")
            }
            q.sql(" LIMIT ")
            q.bind(Int64(limit))
            q.sql(")")
        }
        return q
    }

    /// `original_transaction_id = ANY(…) OR app_transaction_id = ANY(…)`.
    static func customerCondition(_ q: inout PostgresQueryBuilder, alias: StaticString, _ originals: [String], _ appIDs: [String]) {
        q.sql("(")
        q.sql(alias)
        q.sql("original_transaction_id = ANY(")
        q.bind(originals)
        q.sql(") OR ")
        q.sql(alias)
        q.sql("app_transaction_id = ANY(")
        q.bind(appIDs)
        q.sql("))")
    }

    static func notificationsQuery(explain: Bool = false, _ originals: [String], _ appIDs: [String], limit: Int) -> PostgresQueryBuilder {
        var n = PostgresQueryBuilder()
        if explain { n.sql("EXPLAIN ") }
        n.sql(notificationColumns)
        n.sql(" FROM notification WHERE ")
        customerCondition(&n, alias: "", originals, appIDs)
        n.sql(" ORDER BY COALESCE(signed_date, received_at) DESC, id DESC LIMIT ")
        n.bind(Int64(limit))
        return n
    }

    static func purchasesQuery(explain: Bool = false, _ originals: [String], _ appIDs: [String], limit: Int) -> PostgresQueryBuilder {
        var p = PostgresQueryBuilder()
        if explain { p.sql("EXPLAIN ") }
        p.sql("SELECT r.id, r.content_hash, r.format, r.first_seen, r.state, r.status, r.verified_at, p.source")
        for field in PurchaseField.audited {
            p.sql(", p.")
            p.identifier(field.name)
        }
        p.sql(" FROM purchase p JOIN receipt r ON r.id = p.receipt_id WHERE ")
        customerCondition(&p, alias: "p.", originals, appIDs)
        p.sql(" ORDER BY p.purchase_date DESC NULLS LAST, p.id DESC LIMIT ")
        p.bind(Int64(limit))
        return p
    }

    /// The writes about these original transactions, transactions or app transactions: one
    /// indexed read per column, united.
    static func actionsQuery(
        explain: Bool = false, _ originals: [String], transactionIDs: [String], appIDs: [String], products: [String] = [], limit: Int
    ) -> PostgresQueryBuilder {
        var a = PostgresQueryBuilder()
        if explain { a.sql("EXPLAIN ") }
        a.sql("SELECT * FROM (")
        a.sql(actionColumns)
        a.sql(" FROM api_action WHERE original_transaction_id = ANY(")
        a.bind(originals)
        a.sql(") UNION ")
        a.sql(actionColumns)
        a.sql(" FROM api_action WHERE transaction_id = ANY(")
        a.bind(transactionIDs)
        a.sql(") UNION ")
        a.sql(actionColumns)
        a.sql(" FROM api_action WHERE app_transaction_id = ANY(")
        a.bind(appIDs)
        // The mass extensions of the customer's products.
        a.sql(") UNION ")
        a.sql(actionColumns)
        a.sql(" FROM api_action WHERE action = ")
        a.bind(AuditSchema.massExtendAction)
        a.sql(" AND product_id = ANY(")
        a.bind(products)
        a.sql(")) a ORDER BY at DESC, id DESC LIMIT ")
        a.bind(Int64(limit))
        return a
    }
}

extension PostgresAuditStore: CustomerQueryProbe {
    package func bareCustomerRows(originalTransactionIDs originals: [String]) async throws -> Int {
        try await read("reading the customer's rows bare") { [self] connection in
            var rows = 0
            for table in ["notification", "purchase", "api_action"] {
                var q = PostgresQueryBuilder()
                q.sql("SELECT * FROM ")
                q.identifier(table)
                q.sql(" WHERE original_transaction_id = ANY(")
                q.bind(originals)
                q.sql(")")
                rows += try await connection.query(q.query, logger: logger).collect().count
            }
            return rows
        }
    }

    package func customerQueryPlans(_ key: CustomerKey, originalTransactionIDs originals: [String], appTransactionIDs appIDs: [String]) async throws
        -> [String]
    {
        let (column, value) = key.column
        let columns: [CustomerLinkColumn] = column == .transactionID ? [.transactionID, .originalTransactionID] : [column]
        return try await read("explaining the customer's queries") { [self] connection in
            func plan(_ title: String, _ q: PostgresQueryBuilder) async throws -> String {
                let lines = try await connection.query(q.query, logger: logger).collect().map { try $0.decode(String.self) }
                return "\(title): " + lines.map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: "; ")
            }
            return [
                try await plan("links", Self.linksQuery(explain: true, columns: columns, values: [value], limit: 10)),
                try await plan("notifications", Self.notificationsQuery(explain: true, originals, appIDs, limit: 10)),
                try await plan("purchases", Self.purchasesQuery(explain: true, originals, appIDs, limit: 10)),
                try await plan("actions", Self.actionsQuery(explain: true, originals, transactionIDs: [value], appIDs: appIDs, products: ["p"], limit: 10)),
            ]
        }
    }
}
