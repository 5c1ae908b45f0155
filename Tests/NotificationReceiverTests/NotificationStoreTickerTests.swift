import AuditTrail
import Foundation
import NotificationReceiver
import ReceiptTrust
import RetryEngine
import ServiceTestSupport
import Testing
import TestSupport

/// The store's one-second ticker runs on its injected clock: a heartbeat every 10 s carrying
/// the clock's date, refusal rows pruned hourly by the clock's date. Time moves only when the
/// test steps it, one second at a time.
@Suite(.timeLimit(.minutes(5))) struct NotificationStoreTickerTests {
    static let start = Date(timeIntervalSince1970: 1_790_000_000)

    /// Waits until everything queued before it is committed: an append returns once its own
    /// commit is done, and the writer commits in order.
    func committed(_ store: NotificationStore) async throws {
        let marker = NotificationRecord(notificationUUID: UUID().uuidString, version: .v2, receivedAt: Self.start, verdict: .test)
        _ = try await store.append(marker)
    }

    @Test func heartbeatsAndPrunesFollowTheInjectedClock() async throws {
        let stepped = SteppedClock()
        let clock = ServiceClock(now: { Self.start + stepped.elapsed.seconds }, clock: stepped)
        let path = TemporaryFolder("ticker").appending("audit.sqlite").path
        let store = try NotificationStore(path: path, keepRefusals: .seconds(3600), heartbeat: "web-1 pid 7", clock: clock).started()
        // A refusal half an hour before the start: kept by the prune at start (cut-off an hour
        // before), gone after the hourly one (cut-off the start itself).
        try await store.reject(
            RejectionRecord(
                at: Self.start.addingTimeInterval(-1800), peer: "17.0.0.5:443", reason: "not JSON", httpStatus: 400, bodySize: 4,
                body: Array("nope".utf8)))
        await stepped.sleepsBegun(1)
        try await committed(store)
        #expect(try await store.backend.receiverHeartbeats() == [ReceiverHeartbeat(receiver: "web-1 pid 7", at: Self.start)])
        #expect(try await store.backend.rejections().count == 1)

        // Nine seconds: no new beat; the tenth: one at start + 10 s.
        for second in 1...9 {
            stepped.advance(by: .seconds(1))
            await stepped.sleepsBegun(second + 1)
        }
        try await committed(store)
        #expect(try await store.backend.receiverHeartbeats().map(\.at) == [Self.start])
        stepped.advance(by: .seconds(1))
        await stepped.sleepsBegun(11)
        try await committed(store)
        #expect(try await store.backend.receiverHeartbeats().map(\.at) == [Self.start.addingTimeInterval(10)])

        // On to the hour: the prune by the clock's date removes the refusal.
        for second in 11...3600 {
            stepped.advance(by: .seconds(1))
            await stepped.sleepsBegun(second + 1)
        }
        try await committed(store)
        #expect(try await store.backend.rejections().isEmpty)
        #expect(try await store.backend.receiverHeartbeats().map(\.at) == [Self.start.addingTimeInterval(3600)])
        await store.close()
    }
}
