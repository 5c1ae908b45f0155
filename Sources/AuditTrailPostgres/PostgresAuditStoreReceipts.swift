import AuditTrail
import Foundation
import JSONWriting
import PlainWords
import PostgresNIO
import AppStoreAPI
import ReceiptCore

/// Receipts, sightings, verifications, look-ups and history on PostgreSQL: the SQL of
/// ``AuditStore`` with the same results, batched (one statement per table per transaction,
/// arrays bound as parameters and unnested).
extension PostgresAuditStore {
    // MARK: Recording

    public func record(_ ingests: [AuditIngest]) async throws -> [AuditRecorded] {
        guard !ingests.isEmpty else { return [] }
        // Each distinct receipt once (an upsert may not touch one row twice): first sighting's
        // data, the latest time seen.
        struct Row {
            var hash: String
            var ingest: AuditIngest
            var receiptData: String?
            var lastSeen: Double
        }
        var rows: [Row] = []
        var rowOf: [String: Int] = [:]
        var hashes: [String] = []
        var datas: [String?] = []
        for ingest in ingests {
            let receiptData = ingest.receiptData
            let hash = AuditContent.hash(receiptData.map { Array($0.utf8) } ?? ingest.bytes)
            let seen = ingest.seenAt.timeIntervalSince1970
            hashes.append(hash)
            datas.append(receiptData)
            if let index = rowOf[hash] {
                rows[index].lastSeen = max(rows[index].lastSeen, seen)
            } else {
                rowOf[hash] = rows.count
                rows.append(Row(hash: hash, ingest: ingest, receiptData: receiptData, lastSeen: seen))
            }
        }
        return try await write("recording \(CountNoun.input.count(ingests.count))") { [self, rows, hashes, datas] connection in
            var q = PostgresQueryBuilder()
            q.sql(
                """
                INSERT INTO receipt (content_hash, format, bundle_id, environment, receipt_data, first_seen, last_seen, status)
                SELECT h, f, b, e, d, fs, ls, st FROM UNNEST(
                """)
            q.bind(PostgresNullableArray<String>(rows.map(\.hash)))
            q.sql(", ")
            q.bind(PostgresNullableArray<String>(rows.map { $0.ingest.decoded.format.rawValue }))
            q.sql(", ")
            q.bind(PostgresNullableArray<String>(rows.map { $0.ingest.decoded.bundleID }))
            q.sql(", ")
            q.bind(PostgresNullableArray<String>(rows.map { $0.ingest.decoded.environment?.rawValue ?? $0.ingest.decoded.rawEnvironment }))
            q.sql(", ")
            q.bind(PostgresNullableArray<String>(rows.map(\.receiptData)))
            q.sql(", ")
            q.bind(PostgresNullableArray<Double>(rows.map { $0.ingest.seenAt.timeIntervalSince1970 }))
            q.sql(", ")
            q.bind(PostgresNullableArray<Double>(rows.map(\.lastSeen)))
            q.sql(", ")
            q.bind(PostgresNullableArray<Int64>(rows.map { $0.ingest.decoded.status.map(Int64.init) }))
            q.sql(
                """
                ) WITH ORDINALITY AS u(h, f, b, e, d, fs, ls, st, ord) ORDER BY ord
                ON CONFLICT (content_hash) DO UPDATE SET last_seen = GREATEST(receipt.last_seen, EXCLUDED.last_seen)
                RETURNING id, content_hash, (xmax = 0) AS inserted
                """)
            var stored: [String: (id: Int64, inserted: Bool)] = [:]
            for row in try await connection.query(q.query, logger: logger).collect() {
                let (id, hash, inserted) = try row.decode((Int64, String, Bool).self)
                stored[hash] = (id, inserted)
            }
            var purchases: [(Int64, Purchase)] = []
            for row in rows {
                guard let found = stored[row.hash], found.inserted else { continue }
                purchases += row.ingest.decoded.allPurchases.map { (found.id, $0) }
            }
            try await insertPurchases(connection, purchases)
            var out: [AuditRecorded] = []
            var announced = Set<String>()
            var sightings: [(Int64, AuditSourceKind, String?, Double)] = []
            for (index, ingest) in ingests.enumerated() {
                guard let found = stored[hashes[index]] else { throw AuditDatabaseError(.refused, "a receipt row came back missing") }
                out.append(AuditRecorded(id: found.id, isNew: found.inserted && announced.insert(hashes[index]).inserted, receiptData: datas[index]))
                sightings.append((found.id, ingest.kind, ingest.source, ingest.seenAt.timeIntervalSince1970))
            }
            try await insertSightings(connection, sightings)
            return out
        }
    }

    public func recordUndecodable(bytes: [UInt8], receiptData: String, kind: AuditSourceKind, source: String?, seenAt: Date) async throws
        -> AuditRecorded
    {
        let hash = AuditContent.hash(Array(receiptData.utf8))
        let seen = seenAt.timeIntervalSince1970
        return try await write("recording an undecodable input") { [self] connection in
            let rows = try await connection.query(
                """
                INSERT INTO receipt (content_hash, format, receipt_data, first_seen, last_seen)
                VALUES (\(hash), 'undecodable', \(receiptData), \(seen), \(seen))
                ON CONFLICT (content_hash) DO UPDATE SET last_seen = GREATEST(receipt.last_seen, EXCLUDED.last_seen)
                RETURNING id, (xmax = 0) AS inserted
                """, logger: logger
            ).collect()
            guard let (id, inserted) = try rows.first?.decode((Int64, Bool).self) else {
                throw AuditDatabaseError(.refused, "the receipt row came back missing")
            }
            try await insertSightings(connection, [(id, kind, source, seen)])
            return AuditRecorded(id: id, isNew: inserted, receiptData: receiptData)
        }
    }

    /// Sightings in the order given (ids follow it).
    func insertSightings(_ connection: CheckedConnection, _ sightings: [(Int64, AuditSourceKind, String?, Double)]) async throws {
        guard !sightings.isEmpty else { return }
        var q = PostgresQueryBuilder()
        q.sql("INSERT INTO sighting (receipt_id, source_kind, source, seen_at) SELECT r, k, s, t FROM UNNEST(")
        q.bind(PostgresNullableArray<Int64>(sightings.map(\.0)))
        q.sql(", ")
        q.bind(PostgresNullableArray<String>(sightings.map(\.1.rawValue)))
        q.sql(", ")
        q.bind(PostgresNullableArray<String>(sightings.map(\.2)))
        q.sql(", ")
        q.bind(PostgresNullableArray<Double>(sightings.map(\.3)))
        q.sql(") WITH ORDINALITY AS u(r, k, s, t, ord) ORDER BY ord")
        try await connection.query(q.query, logger: logger)
    }

    /// Purchases, the columns of ``PurchaseField/audited`` named as their fields, in order.
    func insertPurchases(_ connection: CheckedConnection, _ purchases: [(Int64, Purchase)]) async throws {
        guard !purchases.isEmpty else { return }
        var q = PostgresQueryBuilder()
        q.sql("INSERT INTO purchase (receipt_id, source")
        for field in PurchaseField.audited {
            q.sql(", ")
            q.identifier(field.name)
        }
        q.sql(") SELECT * FROM UNNEST(")
        q.bind(PostgresNullableArray<Int64>(purchases.map(\.0)))
        q.sql(", ")
        q.bind(PostgresNullableArray<String>(purchases.map(\.1.source.rawValue)))
        for field in PurchaseField.audited {
            q.sql(", ")
            let values = purchases.map { field.value(in: $0.1) }
            switch field.accessor {
            case .integer, .integer64:
                q.bind(PostgresNullableArray<Int64>(values.map { if case .integer(let n)? = $0 { n } else { nil } }))
            case .date:
                q.bind(PostgresNullableArray<Double>(values.map { if case .date(let d)? = $0 { d.timeIntervalSince1970 } else { nil } }))
            case .flag:
                q.bind(PostgresNullableArray<Bool>(values.map { if case .flag(let f)? = $0 { f } else { nil } }))
            default:
                q.bind(PostgresNullableArray<String>(values.map { $0?.text }))
            }
        }
        q.sql(")")
        try await connection.query(q.query, logger: logger)
    }

    public func markPending(_ ids: [Int64], again: Bool) async throws {
        guard !ids.isEmpty else { return }
        _ = try await write("marking \(CountNoun.receipt.count(ids.count)) pending") { [self] connection in
            if again {
                try await connection.query("UPDATE receipt SET state = \(ReceiptState.pending.rawValue) WHERE id = ANY(\(ids))", logger: logger)
            } else {
                try await connection.query(
                    "UPDATE receipt SET state = \(ReceiptState.pending.rawValue) WHERE id = ANY(\(ids)) AND state <> \(ReceiptState.done.rawValue)",
                    logger: logger)
            }
        }
    }

    public func recordResult(_ id: Int64, outcome: VerificationOutcome, at time: Date) async throws {
        let start = time.timeIntervalSince1970
        let attempts = outcome.attempts
        // Plain values captured, not `outcome`: capturing the whole outcome in this closure
        // crashed the release build's optimizer ("Found ownership error") in Swift 6.3.1.
        let state = ReceiptState.verified(failed: outcome.failure != nil).rawValue
        let status = outcome.status.map(Int64.init)
        let environment = outcome.environment
        let failureReason = outcome.failure?.reason
        let failureCode = outcome.failure?.code.description
        let latest = outcome.response?.latestReceiptInfo
        // The attempts' columns worked out by a plain synchronous function, for the same reason
        // (in this async function the optimizer crashed on them too).
        let (ats, urls, endpoints, httpStatuses, appleStatuses, retryables, latencies, errors, errorCodes) = Self.attemptColumns(attempts, start: start)
        _ = try await write("recording the result of #\(id)") { [self] connection in
            if !ats.isEmpty {
                var q = PostgresQueryBuilder()
                q.sql(
                    """
                    INSERT INTO attempt (receipt_id, at, url, environment, http_status, apple_status, is_retryable, latency_ms, error, error_code)
                    """)
                q.sql("SELECT ")
                q.bind(id)
                q.sql(", a, u, e, h, s, r, l, x, c FROM UNNEST(")
                q.bind(PostgresNullableArray<Double>(ats))
                q.sql(", ")
                q.bind(PostgresNullableArray<String>(urls))
                q.sql(", ")
                q.bind(PostgresNullableArray<String>(endpoints))
                q.sql(", ")
                q.bind(PostgresNullableArray<Int64>(httpStatuses))
                q.sql(", ")
                q.bind(PostgresNullableArray<Int64>(appleStatuses))
                q.sql(", ")
                q.bind(PostgresNullableArray<Bool>(retryables))
                q.sql(", ")
                q.bind(PostgresNullableArray<Double>(latencies))
                q.sql(", ")
                q.bind(PostgresNullableArray<String>(errors))
                q.sql(", ")
                q.bind(PostgresNullableArray<String>(errorCodes))
                q.sql(") WITH ORDINALITY AS u(a, u, e, h, s, r, l, x, c, ord) ORDER BY ord")
                try await connection.query(q.query, logger: logger)
            }
            try await connection.query(
                """
                UPDATE receipt SET state = \(state), status = \(status), status_environment = \(environment),
                    verified_at = \(start), failure = \(failureReason), failure_code = \(failureCode),
                    result_xid = pg_current_xact_id()
                WHERE id = \(id)
                """, logger: logger)
            if let latest {
                let known = Set(
                    try await connection.query(
                        "SELECT transaction_id FROM purchase WHERE receipt_id = \(id) AND transaction_id IS NOT NULL", logger: logger
                    ).collect().map { try $0.decode(String.self) })
                try await insertPurchases(
                    connection, latest.filter { !known.contains($0.transactionID ?? "") }.map { (id, $0) })
            }
        }
    }

    /// The purchases of the receipt rows `ids`, by row, in `order` (a fixed SQL ordering).
    static func purchases(of ids: [Int64], order: StaticString, _ connection: CheckedConnection, _ logger: Logger) async throws -> [Int64: [Purchase]] {
        var p = PostgresQueryBuilder()
        p.sql("SELECT receipt_id, source")
        for field in PurchaseField.audited {
            p.sql(", ")
            p.identifier(field.name)
        }
        p.sql(" FROM purchase WHERE receipt_id = ANY(")
        p.bind(ids)
        p.sql(") ORDER BY ")
        p.sql(order)
        var purchases: [Int64: [Purchase]] = [:]
        for row in try await connection.query(p.query, logger: logger).collect() {
            let cells = row.makeRandomAccess()
            purchases[try cells[0].decode(Int64.self), default: []].append(try purchase(cells, sourceAt: 1))
        }
        return purchases
    }

    /// A purchase from a row holding `source` at `sourceAt` and the columns of
    /// ``PurchaseField/audited`` right after it.
    static func purchase(_ cells: PostgresRandomAccessRow, sourceAt start: Int) throws -> Purchase {
        var purchase = Purchase(source: Purchase.Source(rawValue: try cells[start].decode(String?.self) ?? "") ?? .receiptInApp)
        for (offset, field) in PurchaseField.audited.enumerated() {
            let cell = cells[start + 1 + offset]
            let value: PurchaseField.Value? =
                switch field.accessor {
                case .date: try cell.decode(Double?.self).map { .date(Date(timeIntervalSince1970: $0)) }
                case .integer, .integer64: try cell.decode(Int64?.self).map { .integer($0) }
                case .flag: try cell.decode(Bool?.self).map { .flag($0) }
                case .json, .commitment: try cell.decode(String?.self).flatMap { try? JSONValue.parse(Array($0.utf8)) }.map { .object($0) }
                default: try cell.decode(String?.self).map { .text($0) }
                }
            field.set(value, in: &purchase)
        }
        return purchase
    }

    /// The `attempt` table's columns for `attempts`, one array each (times a microsecond apart,
    /// in order, as ``AuditStore`` writes them). Not optimised: Swift 6.3.1's CopyPropagation
    /// pass crashes on it ("Found ownership error?!": a borrow of the attempt ending before the
    /// switch over its result), wherever this code stands.
    @_optimize(none)
    static func attemptColumns(_ attempts: [VerificationAttempt], start: Double) -> (
        [Double], [String?], [String?], [Int64?], [Int64?], [Bool?], [Double?], [String?], [String?]
    ) {
        var columns: ([Double], [String?], [String?], [Int64?], [Int64?], [Bool?], [Double?], [String?], [String?]) = (
            [], [], [], [], [], [], [], [], []
        )
        for (index, attempt) in attempts.enumerated() {
            columns.0.append(start + Double(index) * 0.000_001)
            columns.1.append(attempt.url)
            columns.2.append(attempt.endpoint.rawValue)
            columns.3.append(attempt.httpStatus.map(Int64.init))
            columns.4.append(attempt.status.map(Int64.init))
            columns.5.append(attempt.isRetryable)
            columns.6.append(attempt.latencyMilliseconds)
            let failure = attempt.transportFailure
            columns.7.append(failure?.description)
            columns.8.append(failure?.code.description)
        }
        return columns
    }

    public func recordLookup(_ result: CustomerLookupResult, bundleID: String, source: String, at time: Date) async throws -> Int64 {
        let hash = AuditContent.lookupHash(result, source: source, at: time)
        let seen = time.timeIntervalSince1970
        let state = ReceiptState.verified(failed: result.failure != nil).rawValue
        return try await write("recording a look-up") { [self] connection in
            let rows = try await connection.query(
                """
                INSERT INTO receipt (content_hash, format, bundle_id, environment, first_seen, last_seen, state, verified_at, failure, failure_code)
                VALUES (\(hash), 'api', \(bundleID), \(result.environment?.rawValue), \(seen), \(seen), \(state), \(seen),
                        \(result.failure?.reason), \(result.failure?.code.description))
                RETURNING id
                """, logger: logger
            ).collect()
            guard let id = try rows.first?.decode(Int64.self) else { throw AuditDatabaseError(.refused, "the look-up row came back missing") }
            try await insertPurchases(connection, result.transactions.compactMap(\.transaction).map { (id, $0) })
            try await insertSightings(connection, [(id, .lookup, source, seen)])
            let records = result.records
            if !records.isEmpty {
                var q = PostgresQueryBuilder()
                q.sql(
                    """
                    INSERT INTO api_request (receipt_id, position, endpoint, environment, url, http_status, api_error, result,
                                             latency_ms, retry_after, wait_seconds)
                    """)
                q.sql("SELECT ")
                q.bind(id)
                q.sql(", ord - 1, e, v, u, h, a, r, l, ra, w FROM UNNEST(")
                q.bind(PostgresNullableArray<String>(records.map(\.endpoint.rawValue)))
                q.sql(", ")
                q.bind(PostgresNullableArray<String>(records.map(\.environment.rawValue)))
                q.sql(", ")
                q.bind(PostgresNullableArray<String>(records.map(\.url)))
                q.sql(", ")
                q.bind(PostgresNullableArray<Int64>(records.map { $0.httpStatus.map(Int64.init) }))
                q.sql(", ")
                q.bind(PostgresNullableArray<Int64>(records.map { $0.apiError.map { Int64($0.rawValue) } }))
                q.sql(", ")
                q.bind(PostgresNullableArray<String>(records.map(\.result.description)))
                q.sql(", ")
                q.bind(PostgresNullableArray<Double>(records.map(\.latencyMilliseconds)))
                q.sql(", ")
                q.bind(PostgresNullableArray<Double>(records.map { $0.retryAfter?.timeIntervalSince1970 }))
                q.sql(", ")
                q.bind(PostgresNullableArray<Double>(records.map(\.waitSeconds)))
                q.sql(") WITH ORDINALITY AS u(e, v, u, h, a, r, l, ra, w, ord) ORDER BY ord")
                try await connection.query(q.query, logger: logger)
            }
            return id
        }
    }

    @discardableResult
    public func recordAction(_ action: AuditAction) async throws -> Int64 {
        try await write("recording the \(action.action) sent") { [self] connection in try await insertAction(action, on: connection) }
    }

    public func beginAction(_ action: AuditAction) async throws -> Int64 {
        let row = action.pendingRow
        return try await write("recording the \(row.action) about to be sent") { [self] connection in
            try await insertAction(row, on: connection)
        }
    }

    public func completeAction(_ id: Int64, _ outcome: AuditAction) async throws {
        let completed = (outcome.completedAt ?? Date()).timeIntervalSince1970
        try await write("recording the outcome of the \(outcome.action) sent") { [self] connection in
            let rows = try await connection.query(
                """
                UPDATE api_action SET http_status = \(outcome.httpStatus.map(Int64.init)), api_error = \(outcome.apiError.map(Int64.init)),
                       result = \(outcome.result), response_body = \(outcome.responseBody), completed_at = \(completed)
                WHERE id = \(id) RETURNING id
                """, logger: logger
            ).collect()
            guard rows.count == 1 else { throw AuditDatabaseError(.refused, "the pending row #\(id) of the write is missing") }
        }
    }

    func insertAction(_ action: AuditAction, on connection: CheckedConnection) async throws -> Int64 {
        let rows = try await connection.query(
            """
            INSERT INTO api_action (at, os_user, action, environment, request_id, original_transaction_id, transaction_id,
                                    product_id, request_body, http_status, api_error, result, plan, response_body, completed_at,
                                    app_transaction_id, policy)
            VALUES (\(action.at.timeIntervalSince1970), \(action.user), \(action.action), \(action.environment), \(action.requestID),
                    \(action.originalTransactionID), \(action.transactionID), \(action.productID), \(action.requestBody),
                    \(action.httpStatus.map(Int64.init)), \(action.apiError.map(Int64.init)), \(action.result), \(action.plan),
                    \(action.responseBody), \(action.completedAt?.timeIntervalSince1970), \(action.appTransactionID),
                    \(action.policy))
            RETURNING id
            """, logger: logger
        ).collect()
        guard let id = try rows.first?.decode(Int64.self) else { throw AuditDatabaseError(.refused, "the action row came back missing") }
        return id
    }

    public func actions(_ query: AuditActionQuery) async throws -> [AuditAction] {
        try await read("reading the actions sent") { [self] connection in
            var q = PostgresQueryBuilder()
            q.sql(Self.actionColumns)
            q.sql(" FROM api_action")
            if query.transactionID != nil || query.appTransactionID != nil {
                q.sql(" WHERE transaction_id = ")
                q.bind(query.transactionID)
                q.sql(" OR original_transaction_id = ")
                q.bind(query.transactionID)
                q.sql(" OR app_transaction_id = ")
                q.bind(query.appTransactionID)
            }
            q.sql(" ORDER BY at DESC, id DESC LIMIT ")
            q.bind(Int64(query.limit))
            return try await connection.query(q.query, logger: logger).collect().map(Self.action)
        }
    }

    /// The columns ``action(_:)`` reads, in its order.
    static let actionColumns: StaticString = """
        SELECT id, at, os_user, action, environment, request_id, original_transaction_id, transaction_id, product_id,
               request_body, http_status, api_error, result, plan, response_body, completed_at, app_transaction_id, policy
        """

    /// An `api_action` row in ``actionColumns``' order.
    static func action(_ row: PostgresRow) throws -> AuditAction {
        let (id, at, user, action, environment, requestID, original, transaction) = try row.decode(
            (Int64, Double, String, String, String?, String?, String?, String?).self)
        let columns = row.makeRandomAccess()
        return AuditAction(
            id: id, at: Date(timeIntervalSince1970: at), user: user, action: action, environment: environment, requestID: requestID,
            originalTransactionID: original, transactionID: transaction, productID: try columns[8].decode(String?.self),
            requestBody: try columns[9].decode(String?.self), httpStatus: try columns[10].decode(Int64?.self).map(Int.init),
            apiError: try columns[11].decode(Int64?.self).map(Int.init), result: try columns[12].decode(String.self),
            plan: try columns[13].decode(String?.self), responseBody: try columns[14].decode(String?.self),
            completedAt: try columns[15].decode(Double?.self).map(Date.init(timeIntervalSince1970:)),
            appTransactionID: try columns[16].decode(String?.self), policy: try columns[17].decode(String?.self))
    }

    public func lookupRequests(_ id: Int64) async throws -> [AuditLookupRequest] {
        try await read("reading the requests of look-up #\(id)") { [self] connection in
            try await connection.query(
                "SELECT endpoint, environment, url, http_status, api_error FROM api_request WHERE receipt_id = \(id) ORDER BY position",
                logger: logger
            ).collect().map { row in
                let (endpoint, environment, url, http, api) = try row.decode((String, String, String, Int?, Int?).self)
                return AuditLookupRequest(endpoint: endpoint, environment: environment, url: url, httpStatus: http, apiError: api)
            }
        }
    }

    @discardableResult
    public func prune(keepDays days: Int, now: Date) async throws -> Int {
        let cutoff = now.timeIntervalSince1970 - Double(days) * 86_400
        return try await write("pruning receipts older than \(days) days") { [self] connection in
            let rows = try await connection.query(
                "WITH gone AS (DELETE FROM receipt WHERE last_seen < \(cutoff) RETURNING 1) SELECT count(*) FROM gone", logger: logger
            ).collect()
            return try rows.first?.decode(Int.self) ?? 0
        }
    }

    // MARK: Reading

    public func pending() async throws -> [(id: Int64, receiptData: String)] {
        let rows = try await read("reading pending receipts") { [self] connection in
            try await connection.query(
                "SELECT id, receipt_data FROM receipt WHERE state = \(ReceiptState.pending.rawValue) AND receipt_data IS NOT NULL ORDER BY id",
                logger: logger
            ).collect().map { try $0.decode((Int64, String).self) }
        }
        return rows.map { (id: $0.0, receiptData: $0.1) }
    }

    /// Receipts recorded after row `id`, oldest first, and (when `id` is a cursor this store
    /// handed back) those recorded before it by transactions that committed since.
    public func receipts(after id: Int64, limit: Int) async throws -> [AuditFeedReceipt] {
        let previous = snapshot(for: id, in: \.receiptSnapshots)
        let (rows, snapshot) = try await readSnapshot("reading new receipts") { [self] connection in
            let snapshot = try await connection.query("SELECT pg_current_snapshot()::text", logger: logger).collect()
                .first?.decode(String.self) ?? ""
            var rows = try await connection.query(
                """
                SELECT r.id, r.receipt_data, (SELECT source FROM sighting s WHERE s.receipt_id = r.id ORDER BY s.id LIMIT 1) AS source
                FROM receipt r WHERE r.id > \(id) ORDER BY r.id LIMIT \(limit)
                """, logger: logger
            ).collect().map { try $0.decode((Int64, String?, String?).self) }
            if let previous {
                let late = try await connection.query(
                    """
                    SELECT r.id, r.receipt_data, (SELECT source FROM sighting s WHERE s.receipt_id = r.id ORDER BY s.id LIMIT 1) AS source
                    FROM receipt r
                    WHERE r.id <= \(id) AND r.inserted_xid >= pg_snapshot_xmin(\(previous)::pg_snapshot)
                      AND NOT pg_visible_in_snapshot(r.inserted_xid, \(previous)::pg_snapshot)
                    ORDER BY r.id
                    """, logger: logger
                ).collect().map { try $0.decode((Int64, String?, String?).self) }
                rows = late + rows
            }
            return (rows, snapshot)
        }
        remember(rows.map(\.0).max().map { max($0, id) } ?? id, snapshot, in: \.receiptSnapshots)
        return rows.map { AuditFeedReceipt(id: $0.0, receiptData: $0.1, source: $0.2) }
    }

    /// Verifications finished after `time`, oldest first, with their attempts, and (when `time`
    /// is a cursor this store handed back) those finished by transactions that committed since
    /// with an earlier time (another host's clock, a long transaction).
    public func results(after time: Double, limit: Int) async throws -> [AuditFeedResult] {
        let previous = snapshot(for: time, in: \.resultSnapshots)
        typealias Head = (Int64, Int?, String?, String?, String?, Double)
        let (heads, attempts, snapshot) = try await readSnapshot("reading new results") { [self] connection in
            let snapshot = try await connection.query("SELECT pg_current_snapshot()::text", logger: logger).collect()
                .first?.decode(String.self) ?? ""
            var heads: [Head] = []
            if let previous {
                heads = try await connection.query(
                    """
                    SELECT id, status, status_environment, failure, failure_code, verified_at FROM receipt
                    WHERE verified_at <= \(time) AND state IN (\(ReceiptState.done.rawValue), \(ReceiptState.failed.rawValue))
                      AND result_xid >= pg_snapshot_xmin(\(previous)::pg_snapshot)
                      AND NOT pg_visible_in_snapshot(result_xid, \(previous)::pg_snapshot)
                    ORDER BY verified_at, id
                    """, logger: logger
                ).collect().map { try $0.decode(Head.self) }
            }
            heads += try await connection.query(
                """
                SELECT id, status, status_environment, failure, failure_code, verified_at FROM receipt
                WHERE verified_at > \(time) AND state IN (\(ReceiptState.done.rawValue), \(ReceiptState.failed.rawValue))
                ORDER BY verified_at LIMIT \(limit)
                """, logger: logger
            ).collect().map { try $0.decode(Head.self) }
            var attempts: [Int64: [VerificationAttempt]] = [:]
            if !heads.isEmpty {
                for row in try await connection.query(
                    """
                    SELECT receipt_id, url, environment, http_status, apple_status, is_retryable, latency_ms, error, error_code
                    FROM attempt WHERE receipt_id = ANY(\(heads.map(\.0))) ORDER BY id
                    """, logger: logger
                ).collect() {
                    let (receipt, url, environment, http, apple, retryable, latency, error, code) = try row.decode(
                        (Int64, String, String?, Int?, Int?, Bool?, Double?, String?, String?).self)
                    attempts[receipt, default: []].append(
                        Self.attempt(
                            url: url, environment: environment, httpStatus: http, appleStatus: apple, isRetryable: retryable,
                            latency: latency, error: error, errorCode: code))
                }
            }
            return (heads, attempts, snapshot)
        }
        remember(heads.map(\.5).max().map { max($0, time) } ?? time, snapshot, in: \.resultSnapshots)
        return heads.map { head in
            let (id, status, environment, failure, failureCode, verifiedAt) = head
            let list = attempts[id] ?? []
            return AuditFeedResult(
                id: id, status: status, environment: environment,
                failure: failure.map { reason in
                    VerificationFailure(
                        VerificationFailure.Code(storedName: failureCode ?? "") ?? .retriesExhausted, reason, last: list.last?.result)
                }, verifiedAt: verifiedAt, attempts: list)
        }
    }

    /// An attempt as recorded (as ``AuditStore/attempt(_:)`` reads it).
    static func attempt(
        url: String, environment: String?, httpStatus: Int?, appleStatus: Int?, isRetryable: Bool?, latency: Double?, error: String?,
        errorCode: String?
    ) -> VerificationAttempt {
        let result: AttemptResult
        if let appleStatus {
            result = .apple(status: appleStatus, isRetryable: isRetryable)
        } else if let errorCode {
            result = .transport(TransportFailure(TransportFailure.Code(storedName: errorCode) ?? .other, recordedDescription: error ?? ""))
        } else if let httpStatus, httpStatus != 200 {
            result = .http(status: httpStatus)
        } else {
            result = .transport(TransportFailure(.other, detail: error ?? "no answer"))
        }
        return VerificationAttempt(
            url: url, endpoint: VerifyEndpoint.Kind(rawValue: environment ?? "") ?? .production, result: result, httpStatus: httpStatus,
            latencyMilliseconds: latency ?? 0)
    }

    public func attemptsPerReceipt() async throws -> [Int64: Int] {
        let rows = try await read("counting attempts") { [self] connection in
            try await connection.query("SELECT receipt_id, COUNT(*) FROM attempt GROUP BY receipt_id", logger: logger).collect()
                .map { try $0.decode((Int64, Int).self) }
        }
        return Dictionary(uniqueKeysWithValues: rows)
    }

    public func receiptData(_ id: Int64) async throws -> String? {
        try await read("reading receipt #\(id)") { [self] connection in
            try await connection.query("SELECT receipt_data FROM receipt WHERE id = \(id)", logger: logger).collect()
                .first?.decode(String?.self) ?? nil
        }
    }

    public func counts() async throws -> [String: Int] {
        let rows = try await read("counting receipts") { [self] connection in
            try await connection.query("SELECT state, COUNT(*) FROM receipt GROUP BY state", logger: logger).collect()
                .map { try $0.decode((String, Int).self) }
        }
        return Dictionary(uniqueKeysWithValues: rows)
    }

    public func history(_ query: HistoryQuery) async throws -> [HistoryRow] {
        var q = PostgresQueryBuilder()
        q.sql("SELECT r.id, r.format, r.bundle_id, r.environment, r.first_seen, r.last_seen, r.state, r.status FROM receipt r WHERE TRUE")
        if let value = query.transactionID {
            q.sql(" AND r.id IN (SELECT receipt_id FROM purchase WHERE transaction_id = ")
            q.bind(value)
            q.sql(")")
        }
        if let value = query.originalTransactionID {
            q.sql(" AND r.id IN (SELECT receipt_id FROM purchase WHERE original_transaction_id = ")
            q.bind(value)
            q.sql(")")
        }
        if let value = query.productID {
            q.sql(" AND r.id IN (SELECT receipt_id FROM purchase WHERE product_id = ")
            q.bind(value)
            q.sql(")")
        }
        if let bundle = query.bundleID {
            q.sql(" AND r.bundle_id = ")
            q.bind(bundle)
        }
        if let status = query.status {
            q.sql(" AND r.status = ")
            q.bind(Int64(status))
        }
        if let since = query.since {
            q.sql(" AND r.last_seen >= ")
            q.bind(since.timeIntervalSince1970)
        }
        q.sql(" ORDER BY r.last_seen DESC, r.id DESC LIMIT ")
        q.bind(query.limit)
        let select = q.query
        typealias Head = (Int64, String, String?, String?, Double, Double, String, Int?)
        let (heads, purchases, seen) = try await readSnapshot("searching the history") { [self] connection in
            let heads = try await connection.query(select, logger: logger).collect().map { try $0.decode(Head.self) }
            var purchases: [Int64: [Purchase]] = [:]
            var seen: [Int64: [HistoryRow.Sighting]] = [:]
            guard !heads.isEmpty else { return (heads, purchases, seen) }
            let ids = heads.map(\.0)
            // SQLite sorts NULL first; so does this.
            purchases = try await Self.purchases(of: ids, order: "purchase_date NULLS FIRST, id", connection, logger)
            for row in try await connection.query(
                "SELECT receipt_id, source_kind, source, seen_at FROM sighting WHERE receipt_id = ANY(\(ids)) ORDER BY seen_at, id",
                logger: logger
            ).collect() {
                let (receipt, kind, source, at) = try row.decode((Int64, String, String?, Double).self)
                seen[receipt, default: []].append(HistoryRow.Sighting(kind: kind, source: source, seenAt: Date(timeIntervalSince1970: at)))
            }
            return (heads, purchases, seen)
        }
        return try heads.map { head in
            let (id, format, bundle, environment, first, last, state, status) = head
            return HistoryRow(
                id: id, format: format, bundleID: bundle, environment: environment, firstSeen: Date(timeIntervalSince1970: first),
                lastSeen: Date(timeIntervalSince1970: last), sightings: seen[id]?.count ?? 0, state: try ReceiptState(stored: state), status: status,
                purchases: purchases[id] ?? [], seen: seen[id] ?? [])
        }
    }
}
