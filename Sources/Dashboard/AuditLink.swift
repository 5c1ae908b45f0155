import Foundation
import AppStoreAPI
import AuditTrail
import ReceiptCore
import ReceiptTrust
import UntrustedText

/// Something a follower learns from the audit database that another process writes.
public enum AuditFeedEvent: Sendable {
    /// A receipt another process recorded.
    case receipt(rowID: Int64, source: String, bytes: [UInt8])
    /// Its verification finished there.
    case result(rowID: Int64, status: Int?, environment: String?, failure: VerificationFailure?, attempts: [OnlineAttempt])
    /// A read or write of the audit database failed: shown in the Log pane and the status
    /// line, never dropped.
    case auditFailed(AuditError)
}

/// The dashboard's link to the audit database (the executable implements it with the
/// AuditStore store, so the dashboard itself stays free of SQL and networking).
public protocol AuditLink: Sendable {
    /// Records an input the dashboard loaded; returns its row id.
    func record(source: String, bytes: [UInt8], decoded: DecodedInput) async -> Int64?
    /// What other processes wrote since the last poll (follow mode), and every audit read or
    /// write that failed since the last poll (`.auditFailed`, in any mode). The loop calls it
    /// on every pass, so a failed write reaches the Log pane and the status line at once.
    func poll() async -> [AuditFeedEvent]
    /// Receipts matching a history search (`:tx ID`, …), as feed events to load.
    func search(_ query: HistorySearch) async -> [AuditFeedEvent]
    /// Receipts an interrupted run left pending.
    func pending() async -> [AuditFeedEvent]
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
        if item.isShelved, let keys = item.keys {
            switch field {
            case .tx: return keys.has(transaction: value)
            case .otx: return keys.has(original: value)
            case .product: return keys.has(product: value)
            case .bundle, .status: break
            }
        }
        return switch field {
        case .tx: item.rows.contains { $0.transactionID == value }
        case .otx: item.rows.contains { $0.originalTransactionID == value }
        case .bundle: item.bundleID == value
        case .product: item.rows.contains { $0.productID == value }
        case .status: item.status == Int(value)
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
                let failure = failure ?? VerificationFailure(.notVerified, "no answer recorded", last: attempts.last?.result)
                apply(.failed(itemID: itemID, reason: failure, attempts: attempts), at: time)
            }
        case .auditFailed(let error):
            let words = "audit database \(error.code): \(SafeText.escaped(error.reason))"
            addLog(words, role: .error, at: time)
            message = (words, .error)
        }
    }
}
