import AuditTrail
import Foundation
import Testing

/// Both stores keep Retention Messaging alike: a customer's facts from purchases and
/// notifications, each realtime request recorded and listed, the content states replaced per
/// list read.
@Suite(.timeLimit(.minutes(2))) struct RetentionTrailTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    static func notification(_ n: Int, _ type: String, transaction: String, daysAgo: Double) -> NotificationWrite {
        .notification(
            NotificationRecord(
                notificationUUID: "6b8f7c2a-0000-4000-8000-00000000000\(n)", version: .v2, notificationType: type, environment: "Production",
                signedDate: t0.addingTimeInterval(-daysAgo * 86_400), receivedAt: t0, verdict: .valid, transactionID: transaction,
                originalTransactionID: "2000000123", productID: "com.example.monthly"))
    }

    @Test(arguments: BackendKind.allCases) func factsRequestsAndContentRoundTrip(_ kind: BackendKind) async throws {
        try await TestAuditDatabase.with(kind) { db in
            let store = try await db.open()
            #expect(try await store.retentionFacts(originalTransactionID: "2000000123") == RetentionFacts(firstSeen: nil, offersRedeemed: 0, refunds: 0, known: false))
            _ = try await store.writeNotifications([
                Self.notification(1, "SUBSCRIBED", transaction: "2000000123", daysAgo: 200),
                Self.notification(2, "OFFER_REDEEMED", transaction: "2000000200", daysAgo: 100),
                Self.notification(3, "REFUND", transaction: "2000000300", daysAgo: 10),
                Self.notification(4, "REFUND", transaction: "2000000300", daysAgo: 9),
            ])
            let facts = try await store.retentionFacts(originalTransactionID: "2000000123")
            #expect(facts == RetentionFacts(firstSeen: Self.t0.addingTimeInterval(-200 * 86_400), offersRedeemed: 1, refunds: 1, known: true))
            #expect(facts.monthsSubscribed(at: Self.t0) == 6)

            for (i, result) in [RetentionResult.offered, .noMatch].enumerated() {
                try await store.recordRetention(
                    RetentionRecord(
                        requestIdentifier: "3db5c98d-8acf-4e29-831e-8e1f82f9f6e\(i)", receivedAt: Self.t0.addingTimeInterval(Double(i)), environment: "Production",
                        appAppleID: 531_412, originalTransactionID: i == 0 ? "2000000123" : "2000000999", productID: "com.example.monthly", locale: "fr-CA",
                        result: result, reason: "r\(i)", rule: i == 0 ? "loyal" : nil, answerKind: i == 0 ? "message" : nil,
                        messageIdentifier: nil, answer: "{}", latencyMilliseconds: 1.5, peer: "127.0.0.1:1"))
            }
            let all = try await store.retentionRequests(RetentionQuery())
            #expect(all.map(\.result) == [.offered, .noMatch])
            #expect(all[0].rule == "loyal" && all[0].appAppleID == 531_412 && all[0].latencyMilliseconds == 1.5 && all[1].rule == nil)
            #expect(try await store.retentionRequests(RetentionQuery(originalTransactionIDs: ["2000000999"])).map(\.requestIdentifier) == [
                "3db5c98d-8acf-4e29-831e-8e1f82f9f6e1"
            ])
            #expect(try await store.retentionRequests(RetentionQuery(limit: 1)).map(\.result) == [.noMatch])
            // The customer's records carry their realtime requests (the story's retention-offered).
            let customers = try await store.customers(.originalTransactionID("2000000123"))
            #expect(customers.map { $0.retention.map(\.requestIdentifier) } == [["3db5c98d-8acf-4e29-831e-8e1f82f9f6e0"]])

            let message = "8d5a1c2e-4b6f-4e21-9a3b-5c7d9e1f2a3b"
            let image = "11111111-2222-4333-8444-555555555555"
            try await store.recordRetentionContent(
                [RetentionContentItem(kind: .message, identifier: message, state: "PENDING", imageIdentifier: image, observedAt: Self.t0)], kind: .message,
                environment: "Production")
            // A later list read replaces the states and keeps the image the message shows.
            try await store.recordRetentionContent(
                [RetentionContentItem(kind: .message, identifier: message, state: "APPROVED", observedAt: Self.t0)], kind: .message, environment: "Production")
            try await store.recordRetentionContent(
                [RetentionContentItem(kind: .image, identifier: image, state: "APPROVED", observedAt: Self.t0)], kind: .image, environment: "Production")
            let content = try await store.retentionContent(environment: "Production")
            #expect(content.map { "\($0.kind.rawValue) \($0.identifier) \($0.state) \($0.imageIdentifier ?? "-")" } == [
                "image 11111111-2222-4333-8444-555555555555 APPROVED -",
                "message 8D5A1C2E-4B6F-4E21-9A3B-5C7D9E1F2A3B APPROVED 11111111-2222-4333-8444-555555555555",
            ])
            #expect(try await store.retentionContent(environment: "Sandbox").isEmpty)
            await store.close()
        }
    }
}
