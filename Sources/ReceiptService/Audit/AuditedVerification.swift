import Foundation
import ReceiptCore

/// Verification that writes through to the audit store: receipts are marked pending before
/// anything is sent, and each result (attempts, status) is written in its own transaction as it
/// arrives. A process killed half-way leaves done receipts done and the rest pending, to be
/// resumed: nothing done is lost or done twice.
public struct AuditedVerification: Sendable {
    public let store: AuditStore
    public let verifier: BatchVerifier

    public init(store: AuditStore, verifier: BatchVerifier) {
        self.store = store
        self.verifier = verifier
    }

    /// Verifies the items (their ids are receipt row ids) and records every result.
    public func run<S: AsyncSequence & Sendable>(_ items: S, onEvent: @escaping @Sendable (BatchEvent) -> Void) async -> BatchSummary
    where S.Element == BatchItem {
        let store = self.store
        return await verifier.run(items) { event in
            if let (id, outcome) = event.result { try? store.recordResult(Int64(id), outcome: outcome, at: Date()) }
            onEvent(event)
        }
    }
}
