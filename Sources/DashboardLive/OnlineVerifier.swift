import AppStoreClients
import Dashboard
import Foundation
import AppStoreAPI
import ReceiptCore

/// Plugs the AppStoreClients batch engine into the dashboard, which does no networking itself.
public struct ServiceVerifier: OnlineVerifying {
    public let client: VerifyReceiptClient
    public let concurrency: Int
    /// Where results are recorded too (the dashboard's `--db`); its write failures reach the
    /// Log pane through the link's poll.
    public var audit: StoreAuditLink?

    public init(client: VerifyReceiptClient, concurrency: Int, audit: StoreAuditLink?) {
        self.client = client
        self.concurrency = concurrency
        self.audit = audit
    }

    public func verify(_ requests: [OnlineRequest], onEvent: @escaping @Sendable (OnlineEvent) -> Void) async {
        let rows = Dictionary(requests.compactMap { r in r.auditID.map { (r.itemID, $0) } }, uniquingKeysWith: { a, _ in a })
        await audit?.markPending(Array(rows.values))
        let items = requests.map { BatchItem(id: $0.itemID, source: "#\($0.itemID)", receiptData: $0.receiptData) }
        // Results are recorded in arrival order by one writer, each before the dashboard hears
        // of it (the database may be across the network).
        let (recorded, recorder) = AsyncStream<BatchEvent>.makeStream()
        let writer = Task { [audit] in
            for await event in recorded {
                if let audit, let (id, outcome) = event.result, let row = rows[id] { await audit.recordResult(row, outcome) }
                Self.forward(event, to: onEvent)
            }
        }
        _ = await BatchVerifier(client: client, concurrency: concurrency).run(BatchItems(items)) { event in
            if audit != nil, event.result != nil { recorder.yield(event) } else { Self.forward(event, to: onEvent) }
        }
        recorder.finish()
        await writer.value
    }

    private static func forward(_ event: BatchEvent, to onEvent: @Sendable (OnlineEvent) -> Void) {
        switch event {
        case .queued(let id, _): onEvent(.queued(itemID: id))
        case .sending(let id, let attempt, let endpoint): onEvent(.sending(itemID: id, attempt: attempt, url: endpoint.url))
        case .retrying(let id, let seconds, let reason): onEvent(.retrying(itemID: id, inSeconds: seconds, reason: reason))
        case .done(let id, let outcome, _):
            onEvent(
                .done(
                    itemID: id, status: outcome.status ?? -1, environment: outcome.environment, attempts: outcome.attempts,
                    response: outcome.response))
        case .failed(let id, let failure, let attempts):
            onEvent(.failed(itemID: id, reason: failure, attempts: attempts))
        }
    }
}
