import AppStoreAPI
import AppStoreClients
import Foundation

extension AppStoreServerAPIClient {
    /// Every item of a small Notification History, its pages joined: for tests that read a few
    /// pages whole (the product folds each page and lets it go).
    package func notificationHistoryItems(
        _ filter: NotificationHistoryFilter, environment: APIEnvironment
    ) async -> APIAnswer<[NotificationHistoryPage.Item]> {
        var items: [NotificationHistoryPage.Item] = []
        let answer = await notificationHistory(filter, environment: environment) { items += $0.notificationHistory }
        return APIAnswer(result: answer.result.map { _ in items }, environment: answer.environment, records: answer.records)
    }
}
