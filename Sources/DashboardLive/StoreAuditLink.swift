import AuditTrail
import Dashboard
import Foundation
import AppStoreAPI
import PlainWords
import ReceiptCore
import Synchronization

/// The dashboard's audit link over the store: records what the dashboard loads, and in follow
/// mode (read-only) reports what the writing process records. No database error is dropped:
/// each is kept and handed to the dashboard loop by the next `poll()` (`.auditFailed`), which
/// shows it in the Log pane and the status line.
public final class StoreAuditLink: AuditLink, Sendable {
    public let store: any AuditBackend
    public let follow: Bool
    private let state = Mutex(State())
    /// Another writer committed (PostgreSQL's LISTEN/NOTIFY); a SQLite follower looks each pass.
    private let changes: ChangeWatch

    struct State {
        var lastReceipt: Int64 = 0
        var lastResult: Double = 0
        var errors: [AuditError] = []
    }

    public init(store: any AuditBackend, follow: Bool) {
        self.store = store
        self.follow = follow
        changes = ChangeWatch(follow ? store.changes() : nil)
    }

    /// Runs a database call; a failure is kept for the next poll and nil returned.
    private func attempt<T>(_ code: AuditError.Code, _ what: String, _ body: () async throws -> T) async -> T? {
        do {
            return try await body()
        } catch {
            let failure = AuditError(code, "\(what): \(store.words(for: error))")
            state.withLock { $0.errors.append(failure) }
            return nil
        }
    }

    public func record(source: String, bytes: [UInt8], decoded: DecodedInput) async -> Int64? {
        guard !follow else { return nil }
        let kind: AuditSourceKind = source == "-" ? .stdin : source.hasPrefix("paste") ? .paste : .file
        return await attempt(.writeFailed, "recording \(source)") {
            try await store.record([AuditIngest(decoded: decoded, bytes: bytes, kind: kind, source: source, seenAt: Date())]).first?.id
        } ?? nil
    }

    public func poll() async -> [AuditFeedEvent] {
        var events: [AuditFeedEvent] = state.withLock { s in
            defer { s.errors.removeAll() }
            return s.errors.map { .auditFailed($0) }
        }
        guard follow, changes.take() else { return events }
        let (lastReceipt, lastResult) = state.withLock { ($0.lastReceipt, $0.lastResult) }
        var newestReceipt = lastReceipt
        var newestResult = lastResult
        for r in await attempt(.readFailed, "reading new receipts", { try await store.receipts(after: lastReceipt) }) ?? [] {
            newestReceipt = max(newestReceipt, r.id)
            guard let data = r.receiptData, let bytes = Data(base64Encoded: data) else { continue }
            events.append(.receipt(rowID: r.id, source: r.source ?? "#\(r.id)", bytes: [UInt8](bytes)))
        }
        for r in await attempt(.readFailed, "reading new results", { try await store.results(after: lastResult) }) ?? [] {
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

    public func search(_ query: HistorySearch) async -> [AuditFeedEvent] {
        var q = HistoryQuery(limit: 200)
        switch query.field {
        case .tx: q.transactionID = query.value
        case .otx: q.originalTransactionID = query.value
        case .bundle: q.bundleID = query.value
        case .product: q.productID = query.value
        case .status: q.status = Int(query.value)
        }
        let rows = await attempt(.readFailed, "searching the history") { try await store.history(q) } ?? []
        var events: [AuditFeedEvent] = []
        for row in rows {
            guard let data = await attempt(.readFailed, "reading receipt #\(row.id)", { try await store.receiptData(row.id) }) ?? nil,
                let bytes = Data(base64Encoded: data)
            else { continue }
            events.append(.receipt(rowID: row.id, source: "history #\(row.id)", bytes: [UInt8](bytes)))
        }
        return events
    }

    public func pending() async -> [AuditFeedEvent] {
        guard !follow else { return [] }
        return (await attempt(.readFailed, "reading pending receipts") { try await store.pending() } ?? []).compactMap { id, data in
            Data(base64Encoded: data).map { .receipt(rowID: id, source: "pending #\(id)", bytes: [UInt8]($0)) }
        }
    }

    /// Marks rows as queued before the dashboard sends them.
    public func markPending(_ rows: [Int64]) async {
        _ = await attempt(.writeFailed, "marking \(CountNoun.receipt.count(rows.count)) pending") {
            try await store.markPending(rows, again: true)
        }
    }

    /// Records a verification result for a row (the dashboard's own verifications).
    public func recordResult(_ row: Int64, _ outcome: VerificationOutcome) async {
        _ = await attempt(.writeFailed, "recording the result of #\(row)") { try await store.recordResult(row, outcome: outcome, at: Date()) }
    }
}

/// Whether another writer committed since the last look: PostgreSQL tells (LISTEN/NOTIFY), so a
/// follower asks the database only then; without such a signal (SQLite) every look says yes.
public final class ChangeWatch: Sendable {
    private let changed = ChangedFlag()  // the first look always reads
    private let listener: Task<Void, Never>?
    private let alwaysChanged: Bool

    public init(_ stream: AsyncStream<Void>?) {
        alwaysChanged = stream == nil
        guard let stream else {
            listener = nil
            return
        }
        let changed = self.changed
        listener = Task {
            for await _ in stream { changed.set() }
        }
    }

    /// True once per change (always true without a signal).
    public func take() -> Bool {
        if alwaysChanged { return true }
        return changed.take()
    }

    deinit { listener?.cancel() }
}

/// Whether the store changed since the last look.
private final class ChangedFlag: Sendable {
    private let changed = Mutex(true)

    func set() {
        changed.withLock { $0 = true }
    }

    /// The flag, cleared.
    func take() -> Bool {
        changed.withLock { value in
            defer { value = false }
            return value
        }
    }
}
