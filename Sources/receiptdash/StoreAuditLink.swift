import Dashboard
import Foundation
import ReceiptCore
import ReceiptService
import Synchronization

/// The dashboard's audit link over the store: records what the dashboard loads, and in follow
/// mode (read-only) reports what the writing process records. No database error is dropped:
/// each is kept and handed to the dashboard loop by the next `poll()` (`.auditFailed`), which
/// shows it in the Log pane and the status line.
final class StoreAuditLink: AuditLink, Sendable {
    let store: AuditStore
    let follow: Bool
    private let state = Mutex(State())

    struct State {
        var lastReceipt: Int64 = 0
        var lastResult: Double = 0
        var errors: [AuditLinkError] = []
    }

    init(store: AuditStore, follow: Bool) {
        self.store = store
        self.follow = follow
    }

    /// Runs a database call; a failure is kept for the next poll and nil returned.
    private func attempt<T>(_ code: AuditLinkError.Code, _ what: String, _ body: () throws -> T) -> T? {
        do {
            return try body()
        } catch {
            let failure = AuditLinkError(code, "\(what): \(error)")
            state.withLock { $0.errors.append(failure) }
            return nil
        }
    }

    func record(source: String, bytes: [UInt8], decoded: DecodedInput) -> Int64? {
        guard !follow else { return nil }
        let kind: AuditStore.SourceKind = source == "-" ? .stdin : source.hasPrefix("paste") ? .paste : .file
        return attempt(.writeFailed, "recording \(source)") {
            try store.record([AuditStore.Ingest(decoded: decoded, bytes: bytes, kind: kind, source: source, seenAt: Date())]).first?.id
        } ?? nil
    }

    func poll() -> [AuditFeedEvent] {
        var events: [AuditFeedEvent] = state.withLock { s in
            defer { s.errors.removeAll() }
            return s.errors.map { .auditFailed($0) }
        }
        guard follow else { return events }
        let (lastReceipt, lastResult) = state.withLock { ($0.lastReceipt, $0.lastResult) }
        var newestReceipt = lastReceipt
        var newestResult = lastResult
        for r in attempt(.readFailed, "reading new receipts", { try store.receipts(after: lastReceipt) }) ?? [] {
            newestReceipt = max(newestReceipt, r.id)
            guard let data = r.receiptData, let bytes = Data(base64Encoded: data) else { continue }
            events.append(.receipt(rowID: r.id, source: r.source ?? "#\(r.id)", bytes: [UInt8](bytes)))
        }
        for r in attempt(.readFailed, "reading new results", { try store.results(after: lastResult) }) ?? [] {
            newestResult = max(newestResult, r.verifiedAt)
            events.append(.result(rowID: r.id, status: r.status, environment: r.environment, failure: r.failure, attempts: r.attempts))
        }
        state.withLock {
            $0.lastReceipt = max($0.lastReceipt, newestReceipt)
            $0.lastResult = max($0.lastResult, newestResult)
        }
        // Read failures of this pass go out now too.
        events += state.withLock { s in
            defer { s.errors.removeAll() }
            return s.errors.map { .auditFailed($0) }
        }
        return events
    }

    func search(_ query: HistorySearch) -> [AuditFeedEvent] {
        var q = HistoryQuery(limit: 200)
        switch query.field {
        case .tx: q.transactionID = query.value
        case .otx: q.originalTransactionID = query.value
        case .bundle: q.bundleID = query.value
        case .product: q.productID = query.value
        case .status: q.status = Int(query.value)
        }
        let rows = attempt(.readFailed, "searching the history") { try store.history(q) } ?? []
        return rows.compactMap { row in
            guard let data = attempt(.readFailed, "reading receipt #\(row.id)", { try store.receiptData(row.id) }) ?? nil,
                let bytes = Data(base64Encoded: data)
            else { return nil }
            return .receipt(rowID: row.id, source: "history #\(row.id)", bytes: [UInt8](bytes))
        }
    }

    func pending() -> [AuditFeedEvent] {
        guard !follow else { return [] }
        return (attempt(.readFailed, "reading pending receipts") { try store.pending() } ?? []).compactMap { id, data in
            Data(base64Encoded: data).map { .receipt(rowID: id, source: "pending #\(id)", bytes: [UInt8]($0)) }
        }
    }

    /// Marks rows as queued before the dashboard sends them.
    func markPending(_ rows: [Int64]) {
        _ = attempt(.writeFailed, "marking \(rows.count) receipt\(rows.count == 1 ? "" : "s") pending") {
            try store.markPending(rows, again: true)
        }
    }

    /// Records a verification result for a row (the dashboard's own verifications).
    func recordResult(_ row: Int64, _ outcome: VerificationOutcome) {
        _ = attempt(.writeFailed, "recording the result of #\(row)") { try store.recordResult(row, outcome: outcome, at: Date()) }
    }
}
