@testable import AuditTrail
import Foundation
@testable import NotificationReceiver
import ReceiptCore
import ServiceTestSupport
import Testing

/// `notifications --reconcile --ingest`'s core: a genuine notification from Apple's history is
/// judged as a POST and stored from peer `history`, as no delivery of Apple's; the same one
/// POSTed, later or at the same time, is its one delivery; one the receiver would refuse is
/// refused and not stored.
@Suite struct HistoryBackfillTests {
    let receivers = NotificationReceiverTests()

    @Test func aBackfilledNotificationIsStoredFromHistoryAndCountsApplesPostsOnly() async throws {
        let store = try NotificationStore(path: receivers.temporaryPath()).started()
        let receiver = receivers.receiver(store, policy: .replaying(allowedBundleIDs: ["com.loki-project.loki-messenger"], appAppleID: 1_470_168_868))
        let token = try NotificationFixture.token("session-pro_00_DID_RENEW.jws")
        let answers = await HistoryBackfill.ingest(
            [HistoryBackfill.Item(notificationUUID: "1a7cdc3d-9360-49c3-ae37-0423e4c6e7c7", signedPayload: token)], receiver: receiver)
        #expect(answers.map(\.outcome) == [.accepted])
        #expect(answers.map(\.verdict) == ["valid"])
        var rows = try await store.notifications()
        #expect(rows.map(\.record.peer) == [NotificationRecord.historyPeer])
        #expect(rows.map(\.deliveries) == [0])
        #expect(rows.first?.record.listingRow(deliveries: 0).source == "history")

        // Apple's own delivery comes in after the backfill: one row, Apple's one delivery.
        let (status, _) = try await receivers.post(receiver, NotificationFixture.body(token: token))
        #expect(status == 200)
        rows = try await store.notifications()
        #expect(rows.count == 1)
        #expect(rows.map(\.deliveries) == [1])
        // Backfilled again: a redelivery, nothing added.
        let again = await HistoryBackfill.ingest(
            [HistoryBackfill.Item(notificationUUID: "1a7cdc3d-9360-49c3-ae37-0423e4c6e7c7", signedPayload: token)], receiver: receiver)
        #expect(again.map(\.outcome) == [.redelivered])
        #expect(try await store.notifications().map(\.deliveries) == [1])
        // Neither Apple's first POST nor the copy is a redelivery; Apple's second POST is.
        #expect(try await receiver.scrapedSamples().contains("receiptdash_notification_redeliveries_total 0"))
        #expect(try await receivers.post(receiver, NotificationFixture.body(token: token)).0 == 200)
        #expect(try await store.notifications().map(\.deliveries) == [2])
        #expect(try await receiver.scrapedSamples().contains("receiptdash_notification_redeliveries_total 1"))
        await store.close()
    }

    /// The race: a backfill of Apple's genuine notifications while Apple POSTs the same
    /// ones to the receiver, through one store's group commits. Each row counts one delivery.
    @Test func aBackfillRacingApplesPostsCountsOneDeliveryEach() async throws {
        let store = try NotificationStore(path: receivers.temporaryPath()).started()
        let receiver = receivers.receiver(store)
        let tokens = try NotificationFixture.names().map(NotificationFixture.token)
        let items = try tokens.map { token in
            let uuid = try #require(try ReceiptDecoder().decode(text: token).notification?.notificationUUID)
            return HistoryBackfill.Item(notificationUUID: uuid, signedPayload: token)
        }
        async let backfilled = HistoryBackfill.ingest(items, receiver: receiver, concurrency: 4)
        let posted = await withTaskGroup(of: ReceiveAnswer.self) { group in
            for token in tokens {
                group.addTask {
                    await receiver.handle(body: NotificationFixture.body(token: token), declaredLength: nil, truncated: false, peer: "17.0.0.1:443")
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        let answers = await backfilled + posted
        #expect(answers.count == 26)
        #expect(answers.filter { $0.outcome == .accepted }.count == 13)
        #expect(answers.filter { $0.outcome == .redelivered }.count == 13)
        let rows = try await store.notifications()
        #expect(rows.count == 13)
        #expect(rows.filter { $0.deliveries != 1 }.map(\.record.notificationUUID) == [])
        #expect(try await receiver.scrapedSamples().contains("receiptdash_notification_redeliveries_total 0"))
        await store.close()
    }

    @Test func aBackfillTheReceiverWouldRefuseIsRefused() async throws {
        let store = try NotificationStore(path: receivers.temporaryPath()).started()
        // Another app's receiver: the bundle id is refused, as a POST's would be.
        let receiver = receivers.receiver(store, policy: .replaying(allowedBundleIDs: ["com.example.other"]))
        let token = try NotificationFixture.token("session-pro_00_DID_RENEW.jws")
        let answers = await HistoryBackfill.ingest(
            [
                HistoryBackfill.Item(notificationUUID: "1a7cdc3d-9360-49c3-ae37-0423e4c6e7c7", signedPayload: token),
                HistoryBackfill.Item(notificationUUID: "x", signedPayload: "not a JWS"),
            ], receiver: receiver)
        #expect(answers.map(\.outcome) == [.refused, .badRequest])
        #expect(answers.map(\.refusal) == [.bundle, answers[1].refusal])
        #expect(try await store.notifications().isEmpty)
        await store.close()
    }
}
