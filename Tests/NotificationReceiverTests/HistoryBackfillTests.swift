@testable import AuditTrail
import Foundation
@testable import NotificationReceiver
import ServiceTestSupport
import Testing

/// `notifications --reconcile --ingest`'s core: a genuine notification from Apple's history is
/// judged as a POST and stored from peer `history`; the same one POSTed later counts as a
/// delivery of that row; one the receiver would refuse is refused and not stored.
@Suite struct HistoryBackfillTests {
    let receivers = NotificationReceiverTests()

    @Test func aBackfilledNotificationIsStoredFromHistoryAndALaterPostCountsAsADelivery() async throws {
        let store = try NotificationStore(path: receivers.temporaryPath()).started()
        let receiver = receivers.receiver(store, policy: .replaying(allowedBundleIDs: ["com.loki-project.loki-messenger"], appAppleID: 1_470_168_868))
        let token = try NotificationFixture.token("session-pro_00_DID_RENEW.jws")
        let answers = await HistoryBackfill.ingest(
            [HistoryBackfill.Item(notificationUUID: "1a7cdc3d-9360-49c3-ae37-0423e4c6e7c7", signedPayload: token)], receiver: receiver)
        #expect(answers.map(\.outcome) == [.accepted])
        #expect(answers.map(\.verdict) == ["valid"])
        var rows = try await store.notifications()
        #expect(rows.map(\.record.peer) == [NotificationRecord.historyPeer])
        #expect(rows.map(\.deliveries) == [1])
        #expect(rows.first?.record.listingRow(deliveries: 1).source == "history")

        // Apple's own delivery comes in after the backfill: one row, two deliveries.
        let (status, _) = try await receivers.post(receiver, NotificationFixture.body(token: token))
        #expect(status == 200)
        rows = try await store.notifications()
        #expect(rows.count == 1)
        #expect(rows.map(\.deliveries) == [2])
        // Backfilled again: a redelivery, nothing added.
        let again = await HistoryBackfill.ingest(
            [HistoryBackfill.Item(notificationUUID: "1a7cdc3d-9360-49c3-ae37-0423e4c6e7c7", signedPayload: token)], receiver: receiver)
        #expect(again.map(\.outcome) == [.redelivered])
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
