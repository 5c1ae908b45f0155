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
}

extension DashboardState {
    /// Applies what a follower learned: new receipts load, finished results show as online
    /// states and feed the metrics.
    public mutating func apply(_ event: AuditFeedEvent, at time: Date) {
        switch event {
        case .receipt(let rowID, let source, let bytes):
            guard auditRows[rowID] == nil else { return }
            load(source: source, bytes: bytes)
            if let item = items.last {
                auditRows[rowID] = item.id
                auditedItems.insert(item.id)
            }
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
