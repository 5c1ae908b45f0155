import Foundation
import AppStoreAPI
import ReceiptCore

/// `notifications --reconcile`: what Apple says it sent in a window (Get Notification History)
/// against what the receiver stored, each missing notification explained.
public struct NotificationReconciler: Sendable {
    public let client: AppStoreServerAPIClient

    public init(client: AppStoreServerAPIClient) {
        self.client = client
    }

    /// Folds Apple's history a page at a time: a page is let go once folded, so what the
    /// report keeps across pages is the counts, each missing notification without its payload
    /// and one record per request. What grows besides is the set of notificationUUIDs seen
    /// (one string each, so that a notification listed twice counts once). On a failure the
    /// report covers the pages read before it.
    ///
    /// - Parameters:
    ///   - received: the notificationUUIDs the receiver stored.
    ///   - onMissing: each page's missing notifications with the `signedPayload` Apple's
    ///     history holds (what `--ingest` takes in), before the next page is asked.
    public func reconcile(
        received: Set<String>, filter: NotificationHistoryFilter, environment: APIEnvironment,
        onEvent: (@Sendable (APIClientEvent) -> Void)? = nil, onMissing: ([NotificationReconciliation.Missing]) async -> Void = { _ in }
    ) async -> NotificationReconciliation {
        let decoder = ReceiptDecoder()
        var sent = 0
        var stored = 0
        var missing: [NotificationReconciliation.Missing] = []
        var seen = Set<String>()
        let answer = await client.notificationHistory(filter, environment: environment, onEvent: onEvent) { page in
            var found: [NotificationReconciliation.Missing] = []
            for item in page.notificationHistory {
                guard let decoded = try? decoder.decode(text: item.signedPayload), let n = decoded.notification,
                    let uuid = n.notificationUUID, seen.insert(uuid).inserted
                else { continue }
                sent += 1
                if received.contains(uuid) {
                    stored += 1
                    continue
                }
                let transactions = decoded.nested.flatMap(\.input.transactions)
                found.append(
                    .init(
                        notificationUUID: uuid, notificationType: n.notificationType, subtype: n.subtype, signedDate: n.signedDate,
                        transactionID: transactions.first?.transactionID, attempts: item.sendAttempts,
                        explanation: NotificationRow.explanation(type: n.notificationType, subtype: n.subtype, decoded: decoded),
                        signedPayload: item.signedPayload))
            }
            guard !found.isEmpty else { return }
            await onMissing(found)
            for var one in found {
                one.signedPayload = ""
                missing.append(one)
            }
        }
        return NotificationReconciliation(
            environment: environment, start: filter.startDate, end: filter.endDate, sent: sent, received: stored, missing: missing,
            records: answer.records, failure: answer.failure)
    }
}
