import AppStoreAPI
import AppStoreClients
import TestSupport
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

/// A Notification History far larger than memory should hold at once: `pages` pages (the
/// `paginationToken` of page k is `p<k>`, `hasMore` until the last) of 20 items, about 7 MB a
/// page. Item 0 of page k is `missing[k]`, a notification the store lacks (signed by the test
/// PKI, so a receiver that trusts it stores it); the other 19 are notifications of 360 kB each
/// (unsigned, as a stored row's payload reads), `received(page:item:)`, that the store holds.
package struct LargeNotificationHistory: Sendable {
    package static let perPage = 20
    package let pages: Int
    /// One signed notification a page, its UUID `missingUUID(page:)`.
    package let missing: [String]

    private static let header = base64URL(Array(#"{"alg":"ES256","x5c":[]}"#.utf8))
    /// The filler's bytes in base64url, 270,000 of them (a multiple of 3, so the encodings of
    /// the parts of a payload join into the payload's).
    private static let filler = String(repeating: "QUFB", count: 90_000)
    private static let tail = base64URL(Array(#""}"#.utf8))

    package init(pages: Int = 100, signer: TestNotifications) throws {
        self.pages = pages
        missing = try (0..<pages).map { try signer.token(uuid: Self.missingUUID(page: $0)) }
    }

    package static func missingUUID(page: Int) -> String {
        String(format: "0f000000-0000-4000-8000-%012d", page)
    }

    package static func received(page: Int, item: Int) -> String {
        String(format: "00000000-0000-4000-8000-%06d%06d", page, item)
    }

    /// Every UUID the store holds: 19 a page.
    package var receivedUUIDs: Set<String> {
        Set((0..<pages).flatMap { page in (1..<Self.perPage).map { Self.received(page: page, item: $0) } })
    }

    /// The answer to a request with `query` (`paginationToken=p<k>`, or none for the first).
    package func answer(query: String) -> ScriptedResponse {
        let page = query.isEmpty ? 0 : Int(query.dropFirst("paginationToken=p".count)) ?? -1
        guard query.isEmpty || query.hasPrefix("paginationToken=p"), (0..<pages).contains(page) else { return .error(400, 4_000_014) }
        return .json(200, body(page: page))
    }

    /// Page `page`'s JSON.
    package func body(page: Int) -> String {
        var items = [#"{"signedPayload":"\#(missing[page])","sendAttempts":[{"attemptDate":1790000000000,"sendAttemptResult":"TIMED_OUT"}]}"#]
        for item in 1..<Self.perPage {
            // 117 bytes before the filler: a multiple of 3.
            let head = #"{"notificationType":"DID_RENEW","notificationUUID":"\#(Self.received(page: page, item: item))","version":"2.0","padding":""#
            let token = Self.header + "." + Self.base64URL(Array(head.utf8)) + Self.filler + Self.tail + ".c2ln"
            items.append(#"{"signedPayload":"\#(token)","sendAttempts":[]}"#)
        }
        let more = page + 1 < pages ? #""hasMore":true,"paginationToken":"p\#(page + 1)""# : #""hasMore":false"#
        return #"{\#(more),"notificationHistory":[\#(items.joined(separator: ","))]}"#
    }

    private static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
