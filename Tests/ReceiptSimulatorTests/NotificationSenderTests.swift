@testable import AuditTrail
import Foundation
import Logging
@testable import NotificationReceiver
import AppStoreAPI
import ReceiptCore
@testable import ReceiptSimulator
import ReceiptTrust
import RetryEngine
import ServiceTestSupport
import Synchronization
import Testing
import TestSupport

/// The real receiver's store, failing the first appends of chosen notifications (the receiver
/// then answers 503, as for a store that cannot be written).
final class FlakySink: NotificationSink {
    let store: NotificationStore
    private let failures: Mutex<[String: Int]>

    init(_ store: NotificationStore, failing: [String: Int] = [:]) {
        self.store = store
        failures = Mutex(failing)
    }

    func append(_ record: NotificationRecord) async throws(NotificationStoreError) -> AppendOutcome {
        let fail = failures.withLock { f -> Bool in
            guard let left = f[record.notificationUUID], left > 0 else { return false }
            f[record.notificationUUID] = left - 1
            return true
        }
        if fail { throw NotificationStoreError(.database, "disk I/O error (injected)") }
        return try await store.append(record)
    }

    func reject(_ record: RejectionRecord) async throws(NotificationStoreError) { try await store.reject(record) }
    func isWritable() async -> Bool { await store.isWritable() }
}

/// `NotificationReceiver` on a loopback port with a real store in a temporary folder, trusting
/// the simulator's test root.
struct LoopbackReceiver {
    let store: NotificationStore
    let url: String
    let task: Task<Void, any Error>

    static func start(trusting pki: AppleTestPKI, failing: [String: Int] = [:], port: Int = 0) async throws -> LoopbackReceiver {
        let path = TemporaryFolder("sender").appending("audit.sqlite").path
        let store = try NotificationStore(path: path).started()
        let receiver = NotificationReceiver(
            sink: FlakySink(store, failing: failing),
            policy: ReceiverPolicy.replaying(anchors: try TrustAnchors.apple.addingTestRoots([pki.rootDER])),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        let (addresses, listening) = AsyncStream.makeStream(of: String.self)
        let task = Task {
            try await receiver.run(host: "127.0.0.1", port: port) { listening.yield($0) }
        }
        var iterator = addresses.makeAsyncIterator()
        let address = try #require(await iterator.next())
        return LoopbackReceiver(store: store, url: "http://\(address)/notifications", task: task)
    }

    func stop() async {
        task.cancel()
        _ = await task.result
        await store.close()
    }
}

@Suite struct NotificationSenderTests {
    static let data = ServerAPIData(bundleID: "com.example.sender", appAppleID: 1_234_567_890)

    func service(_ data: ServerAPIData = Self.data, clock: TestTime = TestTime()) throws -> ServerAPIService {
        try ServerAPIService(ServerAPIConfiguration(data: data, clock: clock.clock))
    }

    @Test func everyNotificationIsAcknowledgedAndStoredOnce() async throws {
        let api = try service()
        let notifications = try await api.outgoingNotifications(includingData: false, count: 60, environment: .production)
        #expect(notifications.count == 60)
        #expect(Set(notifications.map(\.notificationUUID)).count == 60)
        let receiver = try await LoopbackReceiver.start(trusting: api.pki)
        let sender = try NotificationSender(NotificationSenderConfiguration(url: receiver.url, concurrency: 8, retrySchedule: .apple))
        let report = await sender.send(notifications)
        await sender.shutdown()
        #expect(report.summary.sent == 60)
        #expect(report.summary.acknowledged == 60)
        #expect(report.summary.failed == 0)
        #expect(report.summary.retried == 0)
        #expect(report.summary.attempts == 60)
        #expect(report.deliveries.map(\.attempts.count) == Array(repeating: 1, count: 60))
        #expect(Set(report.deliveries.flatMap { $0.attempts.map(\.httpStatus) }) == [200])

        let stored = try await receiver.store.notifications()
        #expect(stored.count == 60)
        #expect(Set(stored.map(\.record.notificationUUID)) == Set(notifications.map(\.notificationUUID)))
        #expect(Set(stored.map(\.deliveries)) == [1])
        #expect(Set(stored.map(\.record.verdict)) == [.test])
        #expect(Set(stored.map(\.record.bundleID)) == ["com.example.sender"])
        #expect(Set(stored.map(\.record.environment)) == ["Production"])
        // The nested transaction was verified and read (RESCIND_CONSENT carries the customer's
        // app transaction instead).
        let rescinded = stored.filter { $0.record.notificationType == "RESCIND_CONSENT" }
        #expect(!rescinded.isEmpty)
        #expect(rescinded.allSatisfy { $0.record.transactionID == nil && $0.record.verdict == .test })
        #expect(stored.filter { $0.record.notificationType != "RESCIND_CONSENT" }.allSatisfy { $0.record.transactionID?.hasPrefix("43001") == true })
        // Today's payloads are in the mix: a prorated refund, a commitment renewal, a win-back offer.
        let decoder = ReceiptDecoder()
        let mix = try await api.outgoingNotifications(includingData: false, count: 300, environment: .production)
        let transactions = mix.compactMap { try? decoder.decode(text: $0.signedPayload) }.flatMap(\.transactions)
        #expect(transactions.contains { $0.revocationType == "REFUND_PRORATED" && $0.revocationPercentage != nil })
        #expect(transactions.contains { $0.billingPlanType == "MONTHLY" && $0.commitmentInfo?.totalBillingPeriods == 12 })
        #expect(transactions.contains { $0.offerType == 4 && $0.offerPeriod == "P1M" })
        let types = Dictionary(uniqueKeysWithValues: notifications.map { ($0.notificationUUID, $0.notificationType) })
        #expect(stored.allSatisfy { types[$0.record.notificationUUID] == $0.record.notificationType })
        await receiver.stop()
    }

    @Test func a503IsRetriedOnTheCompressedScheduleAndSandboxIsNot() async throws {
        let clock = TestTime()
        let api = try service(clock: clock)
        let production = try await api.outgoingNotifications(includingData: false, count: 1, environment: .production, seed: 7)[0]
        let sandbox = try await api.outgoingNotifications(includingData: false, count: 1, environment: .sandbox, seed: 8)[0]
        // The production one fails twice (503) then is stored; the sandbox one fails every time.
        let receiver = try await LoopbackReceiver.start(
            trusting: api.pki, failing: [production.notificationUUID: 2, sandbox.notificationUUID: 100])
        let sender = try NotificationSender(
            NotificationSenderConfiguration(
                url: receiver.url, concurrency: 1, retrySchedule: try RetrySchedule(parsing: "1s,2s,4s,8s,16s"), clock: clock.clock),
            onAttempt: api.sendAttemptRecorder)
        let report = await sender.send([production, sandbox])
        await sender.shutdown()

        let start = TestTime.start
        #expect(report.deliveries[0].attempts.map(\.result) == [.unsuccessfulHTTPResponseCode, .unsuccessfulHTTPResponseCode, .success])
        #expect(report.deliveries[0].attempts.map(\.httpStatus) == [503, 503, 200])
        #expect(report.deliveries[0].attempts.map(\.number) == [1, 2, 3])
        #expect(report.deliveries[0].acknowledged)
        #expect(report.deliveries[1].attempts.map(\.result) == [.unsuccessfulHTTPResponseCode])
        #expect(report.deliveries[1].attempts.map(\.httpStatus) == [503])
        #expect(!report.deliveries[1].acknowledged)
        // Only the production notification waited: 1 s, then 2 s.
        #expect(clock.waits == [1, 2])
        #expect(report.deliveries[0].attempts.last?.date == start.addingTimeInterval(3))
        #expect(report.summary.sent == 2)
        #expect(report.summary.acknowledged == 1)
        #expect(report.summary.failed == 1)
        #expect(report.summary.retried == 1)
        #expect(report.summary.attempts == 4)
        #expect(try await receiver.store.notifications().map(\.record.notificationUUID) == [production.notificationUUID])
        #expect(try await receiver.store.notifications().map(\.deliveries) == [1])
        await receiver.stop()
    }

    @Test func aRefusedConnectionIsNoResponseEveryTime() async throws {
        let clock = TestTime()
        let api = try service(clock: clock)
        let notifications = try await api.outgoingNotifications(includingData: false, count: 2, environment: .production)
        let port = TestPorts.refusing()
        let sender = try NotificationSender(
            NotificationSenderConfiguration(
                url: "http://127.0.0.1:\(port)/notifications", retrySchedule: try RetrySchedule(parsing: "1s,500ms"), clock: clock.clock))
        let report = await sender.send(notifications)
        await sender.shutdown()
        #expect(report.deliveries.map { $0.attempts.map(\.result) } == Array(repeating: [.noResponse, .noResponse, .noResponse], count: 2))
        #expect(report.deliveries.flatMap { $0.attempts.map(\.httpStatus) } == Array(repeating: nil, count: 6))
        #expect(clock.waits.sorted() == [0.5, 0.5, 1, 1])
        #expect(report.summary.acknowledged == 0)
        #expect(report.summary.failed == 2)
        #expect(report.summary.retried == 2)
        #expect(report.summary.p50Milliseconds == nil)
    }

    /// The sender's attempts, as they happen, are what Get Notification History reports
    /// (through the existing client): a data notification keeps the attempts its data gave and
    /// gains the sender's; generated ones appear with theirs; the other environment sees none.
    @Test func notificationHistoryReportsTheSendersAttempts() async throws {
        let clock = TestTime()
        let startMS = Int64(TestTime.start.timeIntervalSince1970 * 1000)
        let fromFile: [String: JSONValue] = [
            "notificationType": .string("DID_RENEW"), "notificationUUID": .string("5b1a7e1c-00ff-4d7e-9c1e-5f1f0a0000ff"),
            "version": .string("2.0"), "signedDate": .integer(startMS - 3_600_000),
            "data": .object([
                "bundleId": .string(ServerAPIData.demoBundleID), "environment": .string("Production"),
                "signedTransactionInfo": .object([
                    "transactionId": .string("2000000900000077"), "originalTransactionId": .string("2000000900000070"),
                    "bundleId": .string(ServerAPIData.demoBundleID), "productId": .string("com.example.receiptdash.pro.monthly"),
                    "purchaseDate": .integer(startMS - 3_600_000), "environment": .string("Production"),
                    "type": .string("Auto-Renewable Subscription"),
                ]),
            ]),
            "sendAttempts": .array([.object(["attemptDate": .integer(startMS - 3_600_000), "sendAttemptResult": .string("TIMED_OUT")])]),
        ]
        let data = ServerAPIData(bundleID: ServerAPIData.demoBundleID, appAppleID: 1_234_567_890, notifications: [fromFile])
        try await withAPISimulator(data: data, clock: clock) { client, simulator in
            let api = simulator.service
            let notifications = try await api.outgoingNotifications(includingData: true, count: 3, environment: .production)
            #expect(notifications.count == 3)
            #expect(notifications[0].notificationUUID == "5b1a7e1c-00ff-4d7e-9c1e-5f1f0a0000ff")
            let range = NotificationHistoryFilter(startDate: TestTime.start.addingTimeInterval(-86_400), endDate: TestTime.start)
            // Before sending: only the file's notification, with its own attempt.
            let before = try #require(await client.notificationHistoryItems(range, environment: .production).value)
            #expect(before.map { $0.sendAttempts.map(\.sendAttemptResult) } == [["TIMED_OUT"]])

            let receiver = try await LoopbackReceiver.start(trusting: api.pki, failing: [notifications[1].notificationUUID: 1])
            let sender = try NotificationSender(
                NotificationSenderConfiguration(
                    // A loopback answer never takes 2 minutes, however loaded the machine: only the
                    // receiver's scripted failure makes a retry.
                    url: receiver.url, concurrency: 1, retrySchedule: try RetrySchedule(parsing: "1s"), timeout: 120, clock: clock.clock),
                onAttempt: api.sendAttemptRecorder)
            let report = await sender.send(notifications)
            await sender.shutdown()
            #expect(report.summary.acknowledged == 3)
            await receiver.stop()

            let end = clock.clock.now()
            let after = try #require(
                await client.notificationHistoryItems(
                    NotificationHistoryFilter(startDate: TestTime.start.addingTimeInterval(-86_400), endDate: end), environment: .production
                ).value)
            let byUUID = Dictionary(
                uniqueKeysWithValues: try after.map { item in
                    (try jwsPayload(item.signedPayload)["notificationUUID"]?.text ?? "", item.sendAttempts.map(\.sendAttemptResult))
                })
            #expect(
                byUUID == [
                    "5b1a7e1c-00ff-4d7e-9c1e-5f1f0a0000ff": ["TIMED_OUT", "SUCCESS"],
                    notifications[1].notificationUUID: ["UNSUCCESSFUL_HTTP_RESPONSE_CODE", "SUCCESS"],
                    notifications[2].notificationUUID: ["SUCCESS"],
                ])
            let uuids = try after.map { try jwsPayload($0.signedPayload)["notificationUUID"]?.text }
            let retried = try #require(uuids.firstIndex(of: notifications[1].notificationUUID).map { after[$0] })
            #expect(retried.sendAttempts.map(\.attemptDate) == [startMS, startMS + 1000])
            let failures = try #require(
                await client.notificationHistoryItems(
                    NotificationHistoryFilter(startDate: TestTime.start.addingTimeInterval(-86_400), endDate: end, onlyFailures: true),
                    environment: .production
                ).value)
            #expect(failures.isEmpty)
            let sandbox = try #require(
                await client.notificationHistoryItems(
                    NotificationHistoryFilter(startDate: TestTime.start.addingTimeInterval(-86_400), endDate: end), environment: .sandbox
                ).value)
            #expect(sandbox.isEmpty)
        }
    }

    /// The simulators' codes print the names they always printed.
    @Test func codesPrintTheirNames() {
        #expect(NotificationSenderError.Code.invalidURL.description == "invalid-url")
        #expect(NotificationSenderError.Code.invalidSchedule.description == "invalid-schedule")
        #expect(ServerAPISimulatorError.Code.invalidData.description == "invalid-data")
        #expect("\(ServerAPISimulatorError.Code.pki)" == "pki")
    }

    @Test func retrySchedulesAreReadOrRefusedInPlainWords() throws {
        let words = Wording("notification-sender")
        #expect(try RetrySchedule(parsing: "1s,2s,500ms,1m").delays == [1, 2, 0.5, 60])
        #expect(try RetrySchedule(parsing: "1h, 12h").delays == [3600, 43_200])
        #expect(try RetrySchedule(parsing: "none").delays == [])
        #expect(RetrySchedule.apple.description == "1h,12h,24h,48h,72h")
        #expect(try RetrySchedule(parsing: "1s,250ms,2m").description == "1s,250ms,2m")
        for bad in ["1", "s", "1x", "-1s", "1s,,2s", "8d", "1e3s", "nan s", "\u{1b}[31m1s"] {
            #expect(throws: NotificationSenderError(.invalidSchedule, "")) { try RetrySchedule(parsing: bad) }
        }
        #expect(throws: NotificationSenderError(.invalidSchedule, "")) { try RetrySchedule(parsing: "200h") }
        do {
            _ = try RetrySchedule(parsing: "5x")
            Issue.record("5x was accepted")
        } catch {
            words.said(error.reason)
        }
        #expect(throws: NotificationSenderError(.invalidURL, "")) {
            try NotificationSender(NotificationSenderConfiguration(url: "http://example.com/notifications"))
        }
        words.check()
    }
}
