import Foundation
import ReceiptCore

/// Something a follower learns from the audit database that another process writes.
public enum AuditFeedEvent: Sendable {
    /// A receipt another process recorded.
    case receipt(rowID: Int64, source: String, bytes: [UInt8])
    /// Its verification finished there.
    case result(rowID: Int64, status: Int?, environment: String?, failure: String?, attempts: [OnlineAttempt])
}

/// The dashboard's link to the audit database (the executable implements it with the
/// ReceiptService store, so the dashboard itself stays free of SQL and networking).
public protocol AuditLink: Sendable {
    /// Records an input the dashboard loaded; returns its row id.
    func record(source: String, bytes: [UInt8], decoded: DecodedInput) -> Int64?
    /// What other processes wrote since the last poll (follow mode); empty otherwise.
    func poll() -> [AuditFeedEvent]
    /// Receipts matching a history search (`:tx ID`, …), as feed events to load.
    func search(_ query: HistorySearch) -> [AuditFeedEvent]
    /// Receipts an interrupted run left pending.
    func pending() -> [AuditFeedEvent]
}

/// A search typed at the `:` prompt: `tx ID`, `otx ID`, `bundle B`, `product P`, `status N`.
public struct HistorySearch: Sendable, Hashable {
    public enum Field: String, Sendable, CaseIterable {
        case tx, otx, bundle, product, status
    }

    public var field: Field
    public var value: String

    /// Parses `tx 1000000472106082` and the like; nil for anything else.
    public init?(parsing text: String) {
        let parts = text.split(separator: " ", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
        guard parts.count == 2, let field = Field(rawValue: parts[0].lowercased()), !parts[1].isEmpty else { return nil }
        if field == .status, Int(parts[1]) == nil { return nil }
        self.field = field
        value = parts[1]
    }

    /// Whether a loaded item matches (for searches without a database).
    func matches(_ item: LoadedItem) -> Bool {
        switch field {
        case .tx: item.rows.contains { $0.transactionID == value }
        case .otx: item.rows.contains { $0.originalTransactionID == value }
        case .bundle: item.decoded?.bundleID == value
        case .product: item.rows.contains { $0.productID == value }
        case .status: item.decoded?.status == Int(value)
        }
    }
}

extension DashboardState {
    /// Applies what a follower learned: new receipts load (judged by the pipeline first:
    /// `judged` is the event's receipt taken through it), finished results show as online
    /// states and feed the metrics.
    public mutating func apply(_ event: AuditFeedEvent, judged: JudgedInput?, at time: Date) {
        switch event {
        case .receipt(let rowID, _, _):
            guard auditRows[rowID] == nil, let judged, let itemID = add(judged) else { return }
            auditRows[rowID] = itemID
            auditedItems.insert(itemID)
        case .result(let rowID, let status, let environment, let failure, let attempts):
            guard let itemID = auditRows[rowID] else { return }
            metrics.recordRetries(in: attempts)
            if let status, failure == nil {
                apply(.done(itemID: itemID, status: status, environment: environment, attempts: attempts, response: nil), at: time)
            } else {
                apply(.failed(itemID: itemID, reason: failure ?? "no answer", attempts: attempts), at: time)
            }
        }
    }
}
