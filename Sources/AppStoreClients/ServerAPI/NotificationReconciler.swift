import Foundation
import AppStoreAPI
import ReceiptRendering
import ReceiptCore

/// `notifications --reconcile`: what Apple says it sent in a window (Get Notification History)
/// against what the receiver stored, each missing notification explained.
public struct NotificationReconciler: Sendable {
    public let client: AppStoreServerAPIClient

    public init(client: AppStoreServerAPIClient) {
        self.client = client
    }

    /// - Parameter received: the notificationUUIDs the receiver stored.
    public func reconcile(
        received: Set<String>, filter: NotificationHistoryFilter, environment: APIEnvironment,
        onEvent: (@Sendable (APIClientEvent) -> Void)? = nil
    ) async -> NotificationReconciliation {
        let (start, end) = (filter.startDate, filter.endDate)
        let answer = await client.notificationHistory(filter, environment: environment, onEvent: onEvent)
        let decoder = ReceiptDecoder()
        var sent = 0
        var stored = 0
        var missing: [NotificationReconciliation.Missing] = []
        var seen = Set<String>()
        for item in answer.value ?? [] {
            guard let decoded = try? decoder.decode(text: item.signedPayload), let n = decoded.notification,
                let uuid = n.notificationUUID, seen.insert(uuid).inserted
            else { continue }
            sent += 1
            if received.contains(uuid) {
                stored += 1
                continue
            }
            let transactions = decoded.nested.flatMap(\.input.transactions)
            missing.append(
                .init(
                    notificationUUID: uuid, notificationType: n.notificationType, subtype: n.subtype, signedDate: n.signedDate,
                    transactionID: transactions.first?.transactionID, attempts: item.sendAttempts,
                    explanation: NotificationRow.explanation(type: n.notificationType, subtype: n.subtype, decoded: decoded),
                    signedPayload: item.signedPayload))
        }
        return NotificationReconciliation(
            environment: environment, start: start, end: end, sent: sent, received: stored, missing: missing,
            records: answer.records, failure: answer.failure)
    }
}
