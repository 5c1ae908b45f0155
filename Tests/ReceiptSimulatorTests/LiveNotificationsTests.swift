@testable import AppStoreClients
@testable import AuditTrail
import Foundation
@testable import AppStoreAPI
@testable import ReceiptCore
@testable import ReceiptSimulator
import RetryEngine
import Testing
import TestSupport

/// What the simulator's writes make it send, as Apple does, to a real receiver on loopback
/// (`simulator --send-notifications URL`): a `TEST` for a test notification, `RENEWAL_EXTENDED`
/// for an extension, and for a mass extension one notification per subscription and a
/// `RENEWAL_EXTENSION`/`SUMMARY` with the counts.
@Suite(.timeLimit(.minutes(5))) struct LiveNotificationsTests {
    struct Live {
        let receiver: LoopbackReceiver
        let sender: NotificationSender
        let task: Task<Void, Never>
        let lines: NIOLockedLines

        /// The receiver's notifications once the sender has heard `count` answers (the receiver
        /// answers only once a notification is stored; only a broken sender makes the suite's
        /// time limit end the wait). Stopping sooner would cut an answer off.
        func stored(_ count: Int) async throws -> [StoredNotification] {
            await lines.waitForAnswers(atLeast: count)
            return try await receiver.store.notifications()
        }

        func stop() async {
            task.cancel()
            await task.value
            await sender.shutdown()
            await receiver.stop()
        }
    }

    /// The lines the sender reported, to be read and waited on.
    final class NIOLockedLines: Sendable {
        private let lines = Signal<[String]>([])
        func append(_ line: String) { lines.update { $0.append(line) } }
        var all: [String] { lines.value }
        /// Returns once `count` notifications' answers are reported, a line each (or when the
        /// task is cancelled).
        func waitForAnswers(atLeast count: Int) async {
            await lines.wait { $0.count(where: { $0.hasPrefix("notification ") }) >= count }
        }
    }

    private func live(_ service: ServerAPIService) async throws -> Live {
        let receiver = try await LoopbackReceiver.start(trusting: service.pki)
        let sender = try NotificationSender(
            NotificationSenderConfiguration(url: receiver.url, concurrency: 4, retrySchedule: .apple), onAttempt: service.sendAttemptRecorder)
        let lines = NIOLockedLines()
        let runner = LiveNotificationSender(api: service, sender: sender) { lines.append($0) }
        return Live(receiver: receiver, sender: sender, task: Task { await runner.run() }, lines: lines)
    }

    private func payload(_ stored: StoredNotification) throws -> [String: JSONValue] {
        let signed = try #require(stored.record.signedPayload)
        return try #require(try jwsPayload(signed).object)
    }

    @Test func anExtensionSendsRenewalExtendedWithTheNewExpiry() async throws {
        try await withAPISimulator { client, simulator in
            let live = try await live(simulator.service)
            let body = try ExtendRenewalDateBody(days: 7, reason: .serviceIssue, requestIdentifier: "ticket-1")
            let answer = try await client.send(try .extendRenewalDate(ServerAPIActionsTests.subscription, body), in: .production, as: ExtendRenewalDateResponse.self)
                .result.get()
            // The same request id again extends once, and announces once.
            _ = try await client.send(try .extendRenewalDate(ServerAPIActionsTests.subscription, body), in: .production, as: ExtendRenewalDateResponse.self)
                .result.get()
            let stored = try await live.stored(1)
            await live.stop()
            #expect(stored.count == 1)
            let record = try #require(stored.first).record
            #expect(record.notificationType == "RENEWAL_EXTENDED")
            #expect(record.subtype == nil)
            #expect(record.verdict == .test)
            #expect(record.originalTransactionID == ServerAPIActionsTests.subscription)
            #expect(record.productID == "com.example.receiptdash.pro.monthly")
            let first = try #require(stored.first)
            let data = try #require(try payload(first)["data"]?.object)
            #expect(data["status"]?.int64 == 1)
            let signedTransaction = try #require(data["signedTransactionInfo"]?.text)
            let signedRenewal = try #require(data["signedRenewalInfo"]?.text)
            let transaction = try jwsPayload(signedTransaction)
            let renewal = try jwsPayload(signedRenewal)
            #expect(transaction.object?["expiresDate"]?.int64 == answer.effectiveDate)
            #expect(renewal.object?["renewalDate"]?.int64 == answer.effectiveDate)
            #expect(live.lines.all == ["notification RENEWAL_EXTENDED \(record.notificationUUID) (Production): SUCCESS after 1 attempt"])
            // Apple's history lists it with its attempt.
            #expect(simulator.service.droppedLiveEvents == 0)
        }
    }

    /// The issue's lost `RENEWAL_EXTENDED`: the receiver starts at the same moment as the
    /// write, and there is no retry to save it. The live sender waits for the receiver's port
    /// (`--wait-for-receiver`) before the one attempt, so it is delivered, and said.
    @Test func aReceiverStartedAtTheMomentOfTheWriteStillGetsIt() async throws {
        try await withAPISimulator { client, simulator in
            let port = TestPorts.closed()
            let sender = try NotificationSender(
                NotificationSenderConfiguration(url: "http://127.0.0.1:\(port)/notifications", concurrency: 4, retrySchedule: .none),
                onAttempt: simulator.service.sendAttemptRecorder)
            let lines = NIOLockedLines()
            let runner = LiveNotificationSender(api: simulator.service, sender: sender, waitForReceiver: 30) { lines.append($0) }
            let task = Task { await runner.run() }
            let body = try ExtendRenewalDateBody(days: 7, reason: .serviceIssue, requestIdentifier: "ticket-race")
            async let extended = client.send(
                try .extendRenewalDate(ServerAPIActionsTests.subscription, body), in: .production, as: ExtendRenewalDateResponse.self)
            async let started = LoopbackReceiver.start(trusting: simulator.service.pki, port: port)
            let (answer, receiver) = try await (extended, started)
            _ = try answer.result.get()
            await lines.waitForAnswers(atLeast: 1)
            let stored = try await receiver.store.notifications()
            task.cancel()
            await task.value
            await sender.shutdown()
            await receiver.stop()
            let record = try #require(stored.first).record
            #expect(stored.count == 1)
            #expect(record.notificationType == "RENEWAL_EXTENDED")
            #expect(lines.all.filter { $0.hasPrefix("notification ") } == [
                "notification RENEWAL_EXTENDED \(record.notificationUUID) (Production): SUCCESS after 1 attempt"
            ])
        }
    }

    @Test func aTestNotificationIsSentAndItsStatusReportsTheRealAttempt() async throws {
        try await withAPISimulator { client, simulator in
            let live = try await live(simulator.service)
            let token = try await client.requestTestNotification(environment: .sandbox).result.get().testNotificationToken
            let stored = try await live.stored(1)
            // The status waits for the attempt to be recorded (4040008 until then, as Apple's "not
            // ready"); the sender records it before it reports its line, so it is there now.
            let status = await client.testNotificationStatus(token, environment: .sandbox).value
            await live.stop()
            let record = try #require(stored.first).record
            #expect(stored.count == 1)
            #expect(record.notificationType == "TEST")
            #expect(record.environment == "Sandbox")
            #expect(record.bundleID == ServerAPIData.demoBundleID)
            #expect(token.hasPrefix(record.notificationUUID + "_"))
            let answered = try #require(status)
            #expect(answered.sendAttempts.map(\.sendAttemptResult) == ["SUCCESS"])
            #expect(answered.signedPayload == record.signedPayload)
        }
    }

    @Test func aMassExtensionAnnouncesEachSubscriptionAndItsSummaryWhenDue() async throws {
        let clock = TestTime()
        try await withAPISimulator(clock: clock) { client, simulator in
            let live = try await live(simulator.service)
            let id = "5a8d0f4e-6f3b-4c1d-8e2a-9b7c6d5e4f30"
            let body = try MassExtendBody(
                days: 5, reason: .serviceIssue, productID: "com.example.receiptdash.pro.monthly", requestIdentifier: id, storefronts: [])
            _ = try await client.send(APIRequest.massExtend(body), in: .production, as: MassExtendResponse.self).result.get()
            // Nobody asks for its status: it completes on the simulator's clock and is announced.
            let summaryStored = try await live.stored(2)
            await live.stop()
            let byType = Dictionary(grouping: summaryStored) { [$0.record.notificationType, $0.record.subtype].compactMap { $0 }.joined(separator: "/") }
            let summary = try #require(byType["RENEWAL_EXTENSION/SUMMARY"]?.first)
            let fields = try #require(try payload(summary)["summary"]?.object)
            #expect(fields["requestIdentifier"]?.text == id)
            #expect(fields["productId"]?.text == "com.example.receiptdash.pro.monthly")
            #expect(fields["bundleId"]?.text == ServerAPIData.demoBundleID)
            #expect(fields["storefrontCountryCodes"] == nil)
            // The demo customer's one active monthly subscription was extended.
            #expect(fields["succeededCount"]?.int64 == 1)
            #expect(fields["failedCount"]?.int64 == 0)
            #expect(byType["RENEWAL_EXTENDED"]?.map(\.record.originalTransactionID) == [ServerAPIActionsTests.subscription])
            #expect(summaryStored.count == 2)
            // The status asked afterwards counts the same.
            let status = try await client.send(try .massExtendStatus(productID: body.productId, requestIdentifier: id), in: .production, as: MassExtendStatusResponse.self)
                .result.get()
            #expect(status.complete == true)
            #expect(status.succeededCount == 1)
            #expect(status.failedCount == 0)
        }
    }

    @Test func nothingIsQueuedWithoutAListenerAndAFullOutboxDropsAndCounts() async throws {
        try await withAPISimulator { client, simulator in
            // No listener: a test notification is reported delivered, nothing is queued.
            let token = try await client.requestTestNotification(environment: .production).result.get().testNotificationToken
            let status = try await client.testNotificationStatus(token, environment: .production).result.get()
            #expect(status.sendAttempts.map(\.sendAttemptResult) == ["SUCCESS"])
            #expect(simulator.service.droppedLiveEvents == 0)
            // A listener that never reads, two places deep: the third event is dropped.
            let events = simulator.service.liveNotifications(limit: 2)
            for _ in 0..<3 { _ = try await client.requestTestNotification(environment: .production).result.get() }
            #expect(simulator.service.droppedLiveEvents == 1)
            var iterator = events.makeAsyncIterator()
            for _ in 0..<2 {
                guard case .send(let notification)? = await iterator.next() else { throw CancellationError() }
                #expect(notification.notificationType == "TEST")
            }
        }
    }
}
