import AppStoreClients
import AuditTrail
import Foundation
import AppStoreAPI
import ReceiptCore

/// What an audited batch did: the batch's totals and every audit write that failed.
public struct AuditedSummary: Sendable {
    public var batch: BatchSummary
    public var auditErrors: [AuditError]
}

/// Verification that writes through to the audit store: receipts are marked pending before
/// anything is sent, and each result (attempts, status) is written in its own transaction as it
/// arrives, in arrival order, by one writer task (the store may be a database across the
/// network). A process killed half-way leaves done receipts done and the rest pending, to be
/// resumed: nothing done is lost or done twice. A write that fails is never dropped: it is
/// reported through `onAuditError` as it happens and in the summary.
public struct AuditedVerification: Sendable {
    public let store: any AuditBackend
    public let verifier: BatchVerifier

    public init(store: any AuditBackend, verifier: BatchVerifier) {
        self.store = store
        self.verifier = verifier
    }

    /// Verifies the items (their ids are receipt row ids) and records every result.
    public func run<S: AsyncSequence & Sendable>(
        _ items: S, onEvent: @escaping @Sendable (BatchEvent) -> Void, onAuditError: (@Sendable (AuditError) -> Void)? = nil
    ) async -> AuditedSummary where S.Element == BatchItem {
        let store = self.store
        let (results, resultSink) = AsyncStream<(Int, VerificationOutcome, BatchEvent)>.makeStream()
        // The one writer: results are recorded in the order they arrive, each before its event
        // is passed on (a caller that saw "done" can count on the row saying so).
        async let writer: [AuditError] = {
            var errors: [AuditError] = []
            for await (id, outcome, event) in results {
                do {
                    try await store.recordResult(Int64(id), outcome: outcome, at: Date())
                } catch {
                    let failure = AuditError(.writeFailed, doing: "recording the result of #\(id)", error, in: store)
                    errors.append(failure)
                    onAuditError?(failure)
                }
                onEvent(event)
            }
            return errors
        }()
        let summary = await verifier.run(items) { event in
            if let (id, outcome) = event.result {
                resultSink.yield((id, outcome, event))
            } else {
                onEvent(event)
            }
        }
        resultSink.finish()
        return AuditedSummary(batch: summary, auditErrors: await writer)
    }
}
