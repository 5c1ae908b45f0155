@testable import AuditTrail
import Foundation
import Logging
@testable import NotificationReceiver
import ReceiptCore
import RetryEngine
import ServiceTestSupport
import Synchronization
import Testing
import TestSupport

/// What a following dashboard learns from a receiver's database, and what a dashboard that
/// embeds the receiver is told: real genuine notifications through the real receiver and store.
@Suite struct NotificationFollowerTests {
    static let receivedAt = Date(timeIntervalSince1970: 1_795_000_000)

    func temporaryPath() -> String {
        TemporaryFolder("follow").appending("audit.sqlite").path
    }

    func receiver(_ sink: any NotificationSink) -> NotificationReceiver {
        NotificationReceiver(
            sink: sink, policy: ReceiverPolicy.replaying(), logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }),
            now: { Self.receivedAt })
    }

    func deliver(_ receiver: NotificationReceiver, _ name: String) async throws -> Int {
        let body = NotificationFixture.body(token: try NotificationFixture.token(name))
        return await receiver.handle(body: body, declaredLength: nil, truncated: false, peer: "17.0.0.9:443").status
    }

    @Test func followerSeesNewRowsRedeliveriesAndNewRefusalsOnly() async throws {
        let words = Wording("notification-follower")
        let path = temporaryPath()
        let store = try NotificationStore(path: path).started()
        let receiver = receiver(store)
        #expect(try await deliver(receiver, "session-pro_00_DID_RENEW.jws") == 200)
        // A refusal from before the follower started is history, not news.
        #expect(await receiver.handle(body: Array("nope".utf8), declaredLength: nil, truncated: false, peer: "10.0.0.1:1").status == 400)

        let follower = try NotificationFollower(path: path)
        let first = try await follower.poll()
        #expect(first.notifications.map(\.record.notificationUUID) == ["1a7cdc3d-9360-49c3-ae37-0423e4c6e7c7"])
        #expect(first.notifications.map(\.deliveries) == [1])
        #expect(first.rejections.isEmpty)
        #expect(try await follower.poll().notifications.isEmpty, "nothing changed: nothing reported")

        #expect(try await deliver(receiver, "session-pro_03_EXPIRED_VOLUNTARY.jws") == 200)
        #expect(try await deliver(receiver, "session-pro_00_DID_RENEW.jws") == 200)  // Apple delivers it again
        #expect(await receiver.handle(body: Array("{}".utf8), declaredLength: nil, truncated: false, peer: "10.0.0.2:2").status == 400)
        let second = try await follower.poll()
        #expect(
            second.notifications.map { "\($0.record.notificationType ?? "-") \($0.deliveries)" } == ["DID_RENEW 2", "EXPIRED 1"])
        #expect(second.rejections.map(\.httpStatus) == [400])
        #expect(second.rejections.map(\.peer) == ["10.0.0.2:2"])
        words.said(second.rejections.map(\.reason))
        // The redelivered row is looked at again for a few seconds (a late commit is not
        // missed); new rows and refusals are not repeated.
        let third = try await follower.poll()
        #expect(third.notifications.map { "\($0.record.notificationType ?? "-") \($0.deliveries)" } == ["DID_RENEW 2"])
        #expect(third.rejections.isEmpty)
        await store.close()
        words.check()
    }

    /// `notifications --follow`'s stream waits on its clock between reads (SQLite cannot say
    /// when another process commits): a row stored while it waits is written once the poll
    /// interval has passed on that clock, not before; a redelivery is no new line; the stream
    /// ends when the reader goes away.
    @Test(.timeLimit(.minutes(5))) func theStreamReadsAgainAfterItsPollIntervalOnItsClock() async throws {
        let path = temporaryPath()
        let store = try NotificationStore(path: path).started()
        let receiver = receiver(store)
        #expect(try await deliver(receiver, "session-pro_00_DID_RENEW.jws") == 200)
        let backend = try NotificationFollower(path: path).backend
        let clock = SteppedClock()
        let stream = NotificationStream(backend: backend, filter: NotificationFilter(), jsonLines: true, clock: clock)
        #expect(stream.pollInterval == .milliseconds(500))
        let lines = Signal<[String]>([])
        let readerGone = Mutex(false)
        let run = Task {
            try await stream.run(from: .afterID(0)) { bytes in
                guard !readerGone.withLock({ $0 }) else { return false }
                lines.update { $0 += String(decoding: bytes, as: UTF8.self).split(separator: "\n").map(String.init) }
                return true
            }
        }
        func rows(_ lines: [String]) -> [String] {
            lines.map { line in
                let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
                return "\(object?["id"] as? Int ?? -1) \(object?["notification_type"] as? String ?? "-") \(object?["deliveries"] as? Int ?? -1)"
            }
        }
        #expect(rows(await lines.wait { $0.count == 1 }) == ["1 DID_RENEW 1"])
        await clock.sleepsBegun(1)
        #expect(try await deliver(receiver, "session-pro_03_EXPIRED_VOLUNTARY.jws") == 200)
        #expect(try await deliver(receiver, "session-pro_00_DID_RENEW.jws") == 200)  // delivered again
        clock.advance(by: .milliseconds(499))
        #expect(lines.value.count == 1, "the stream waits out its poll interval")
        clock.advance(by: .milliseconds(1))
        #expect(rows(await lines.wait { $0.count == 2 }) == ["1 DID_RENEW 1", "2 EXPIRED 1"])
        await clock.sleepsBegun(2)
        #expect(lines.value.count == 2, "the redelivery is no new line")

        readerGone.withLock { $0 = true }
        #expect(try await deliver(receiver, "session-pro_12_CONSUMPTION_REQUEST.jws") == 200)
        clock.advance(by: .milliseconds(500))
        try await run.value
        #expect(lines.value.count == 2)
        await backend.close()
        await store.close()
    }

    /// A refusal row counts the later refusals of its class, address and minute after it was
    /// written: the follower reads it again as its count grows, so a following dashboard shows
    /// 5 refusals, not 1 (issue 24). Rows from before the follower started are not re-read.
    @Test(.timeLimit(.minutes(5))) func aRefusalRowIsReadAgainAsItsCountGrows() async throws {
        let path = temporaryPath()
        let store = try NotificationStore(path: path).started()
        let receiver = receiver(store)
        // Before the follower: history, never reported even as it grows.
        _ = await receiver.handle(body: Array("old".utf8), declaredLength: nil, truncated: false, peer: "10.0.0.7:1")
        let follower = try NotificationFollower(path: path)
        #expect(try await follower.poll().rejections.isEmpty)
        _ = await receiver.handle(body: Array("junk".utf8), declaredLength: nil, truncated: false, peer: "10.0.0.1:1")
        let first = try await follower.poll().rejections
        #expect(first.map { "\($0.peer ?? "-") \($0.count)" } == ["10.0.0.1:1 1"])
        for port in 2...5 {
            _ = await receiver.handle(body: Array("junk".utf8), declaredLength: nil, truncated: false, peer: "10.0.0.1:\(port)")
            _ = await receiver.handle(body: Array("old".utf8), declaredLength: nil, truncated: false, peer: "10.0.0.7:\(port)")
        }
        // The store adds counts to the row within about a second; once it has committed them,
        // the follower must report the row again with its count.
        await store.waitUntilRefusalCountsCommitted()
        let seen = try await follower.poll().rejections
        #expect(seen.map { "\($0.peer ?? "-") \($0.count)" } == ["10.0.0.1:1 5"])
        #expect(seen.first?.sampleKey == first.first?.sampleKey)
        #expect(seen.first?.sampleKey != nil)
        await store.close()
    }

    @Test func followingADatabaseThatDoesNotExistSaysWhatToStart() {
        let words = Wording("notification-follower")
        #expect(throws: NotificationStoreError(.open, "")) { try NotificationFollower(path: "/nonexistent/audit.sqlite") }
        do {
            _ = try NotificationFollower(path: "/nonexistent/audit.sqlite")
        } catch {
            words.said(error.reason)
        }
        words.check()
    }

    @Test func observedSinkReportsOnlyWhatWasMadeDurable() async throws {
        let events = Mutex<[String]>([])
        let store = try NotificationStore(path: temporaryPath()).started()
        let sink = ObservedNotificationSink(store) { event in
            switch event {
            case .stored(let record, let deliveries): events.withLock { $0.append("stored \(record.notificationType ?? "-") \(deliveries)") }
            case .rejected(let rejection): events.withLock { $0.append("rejected \(rejection.httpStatus) \(rejection.peer ?? "-")") }
            }
        }
        let receiver = receiver(sink)
        #expect(try await deliver(receiver, "session-pro_12_CONSUMPTION_REQUEST.jws") == 200)
        #expect(try await deliver(receiver, "session-pro_12_CONSUMPTION_REQUEST.jws") == 200)
        #expect(await receiver.handle(body: Array("[1]".utf8), declaredLength: nil, truncated: false, peer: "10.0.0.3:3").status == 400)
        #expect(events.withLock { $0 } == ["stored CONSUMPTION_REQUEST 1", "stored CONSUMPTION_REQUEST 2", "rejected 400 10.0.0.3:3"])
        // A closed store makes nothing durable: nothing is reported as stored.
        await store.close()
        #expect(try await deliver(receiver, "session-pro_00_DID_RENEW.jws") == 503)
        #expect(events.withLock { $0.count } == 3)
    }

    @Test func listingRowExplainsFromThePayload() async throws {
        let words = Wording("notification-follower")
        let store = try NotificationStore(path: temporaryPath()).started()
        #expect(try await deliver(receiver(store), "session-pro_03_EXPIRED_VOLUNTARY.jws") == 200)
        #expect(try await deliver(receiver(store), "session-pro_00_DID_RENEW.jws") == 200)
        let renewed = try #require(try await store.notifications().first { $0.record.notificationType == "DID_RENEW" })
        // The date is the nested transaction's expiry, read from the payload.
        words.said(renewed.record.listingRow(deliveries: 1).explanation)
        let stored = try #require(try await store.notifications().first { $0.record.notificationType == "EXPIRED" })
        let row = stored.record.listingRow(deliveries: stored.deliveries)
        words.said(row.explanation)
        #expect(row.notificationType == "EXPIRED")
        #expect(row.subtype == "VOLUNTARY")
        #expect(row.deliveries == 1)
        await store.close()
        words.check()
    }
}
