import AppStoreAPI
import AuditTrail
import Foundation
import ReceiptCore

/// `notifications --reconcile --ingest`: the notifications Apple's Notification History lists
/// and the store lacks, each taken through the receiver exactly as a POST from Apple (size,
/// gates, trust, nested tokens, bundle, app, environment), stored from peer `history`.
/// Deduplicated on `notificationUUID` like every delivery: one already stored counts as a
/// redelivery, and a later POST of a backfilled one counts as a delivery.
public enum HistoryBackfill {
    /// The peer a backfilled notification is stored from (its `source` is `history`).
    public static let peer = NotificationRecord.historyPeer

    /// One notification to take in: its UUID and the `signedPayload` Apple's history holds.
    public struct Item: Sendable, Hashable {
        public var notificationUUID: String
        public var signedPayload: String

        public init(notificationUUID: String, signedPayload: String) {
            self.notificationUUID = notificationUUID
            self.signedPayload = signedPayload
        }
    }

    /// Each item's answer, in the items' order. At most `concurrency` at once: their commits
    /// share the store's group commits.
    public static func ingest(_ items: [Item], receiver: NotificationReceiver, concurrency: Int = 32) async -> [ReceiveAnswer] {
        var answers = [ReceiveAnswer?](repeating: nil, count: items.count)
        await withTaskGroup(of: (Int, ReceiveAnswer).self) { group in
            var next = 0
            func start() {
                guard next < items.count else { return }
                let index = next
                next += 1
                let body = Array(JSONValue.object(["signedPayload": .string(items[index].signedPayload)]).compactJSON.utf8)
                group.addTask {
                    (index, await receiver.handle(body: body, declaredLength: body.count, truncated: false, peer: peer, peerHost: peer))
                }
            }
            for _ in 0..<max(1, concurrency) { start() }
            for await (index, answer) in group {
                answers[index] = answer
                start()
            }
        }
        return answers.map { $0! }
    }

    /// One page of a reconciliation's missing notifications taken in (`--ingest` and the
    /// scheduled backfill hand each page's here as it arrives): each one's outcome and reason,
    /// in their order.
    public static func ingest(
        _ missing: [NotificationReconciliation.Missing], receiver: NotificationReceiver, concurrency: Int = 32
    ) async -> [NotificationReconciliation.Ingested] {
        let answers = await ingest(
            missing.map { Item(notificationUUID: $0.notificationUUID, signedPayload: $0.signedPayload) }, receiver: receiver,
            concurrency: concurrency)
        return zip(missing, answers).map { .init(notificationUUID: $0.notificationUUID, outcome: $1.outcome.rawValue, reason: $1.reason) }
    }
}
