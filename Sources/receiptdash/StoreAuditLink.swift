import Dashboard
import Foundation
import ReceiptCore
import ReceiptService

/// The dashboard's audit link over the store: records what the dashboard loads, and in follow
/// mode (read-only) reports what the writing process records.
final class StoreAuditLink: AuditLink, @unchecked Sendable {
    let store: AuditStore
    let follow: Bool
    private let lock = NSLock()
    private var lastReceipt: Int64 = 0
    private var lastResult: Double = 0

    init(store: AuditStore, follow: Bool) {
        self.store = store
        self.follow = follow
    }

    func record(source: String, bytes: [UInt8], decoded: DecodedInput) -> Int64? {
        guard !follow else { return nil }
        let kind: AuditStore.SourceKind = source == "-" ? .stdin : source.hasPrefix("paste") ? .paste : .file
        return try? store.record([AuditStore.Ingest(decoded: decoded, bytes: bytes, kind: kind, source: source, seenAt: Date())]).first?.id
    }

    func poll() -> [AuditFeedEvent] {
        guard follow else { return [] }
        lock.lock()
        defer { lock.unlock() }
        var events: [AuditFeedEvent] = []
        for r in (try? store.receipts(after: lastReceipt)) ?? [] {
            lastReceipt = max(lastReceipt, r.id)
            guard let data = r.receiptData, let bytes = Data(base64Encoded: data) else { continue }
            events.append(.receipt(rowID: r.id, source: r.source ?? "#\(r.id)", bytes: [UInt8](bytes)))
        }
        for r in (try? store.results(after: lastResult)) ?? [] {
            lastResult = max(lastResult, r.verifiedAt)
            events.append(
                .result(
                    rowID: r.id, status: r.status, environment: r.environment, failure: r.failure,
                    attempts: r.attempts.map(ServiceVerifier.line)))
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
        let rows = (try? store.history(q)) ?? []
        return rows.compactMap { row in
            guard let data = try? store.receiptData(row.id), let bytes = Data(base64Encoded: data) else { return nil }
            return .receipt(rowID: row.id, source: "history #\(row.id)", bytes: [UInt8](bytes))
        }
    }

    func pending() -> [AuditFeedEvent] {
        guard !follow else { return [] }
        return ((try? store.pending()) ?? []).compactMap { id, data in
            Data(base64Encoded: data).map { .receipt(rowID: id, source: "pending #\(id)", bytes: [UInt8]($0)) }
        }
    }

    /// Records a verification result for a row (the dashboard's own verifications).
    func recordResult(_ row: Int64, _ outcome: VerificationOutcome) {
        try? store.recordResult(row, outcome: outcome, at: Date())
    }
}
