import AppStoreAPI
import AuditTrail
import AuditTrailSQLite
import Foundation
import NotificationForwarder
import NotificationReceiver
import RetryEngine
import ServiceTestSupport
import Synchronization
import Testing
import TestSupport

/// A downstream that answers what the test says and keeps every request it got.
final class ScriptedDownstream: ForwardTransport {
    struct Request: Sendable {
        var url: String
        var headers: [String: String]
        var body: [UInt8]
    }

    let requests = Mutex<[Request]>([])
    let answer: @Sendable (String, Int) -> ForwardAnswer

    init(answer: @escaping @Sendable (_ url: String, _ count: Int) -> ForwardAnswer = { _, _ in .status(200, retryAfter: nil) }) {
        self.answer = answer
    }

    func post(url: String, headers: [(String, String)], body: [UInt8], timeout: Duration) async -> ForwardAnswer {
        let count = requests.withLock { list in
            list.append(Request(url: url, headers: Dictionary(headers, uniquingKeysWith: { a, _ in a }), body: body))
            return list.count
        }
        return answer(url, count)
    }

    var all: [Request] { requests.withLock { $0 } }
}

/// A wall clock the test sets.
final class SetClock: Sendable {
    let date: Mutex<Date>
    init(_ date: Date) { self.date = Mutex(date) }
    func set(_ seconds: Double) { date.withLock { $0 = Date(timeIntervalSince1970: seconds) } }
    var service: ServiceClock { ServiceClock(now: { self.date.withLock { $0 } }, clock: TestClock()) }
}

/// `receive --forward`: what is stored is queued in the same transaction, delivered signed as a
/// Standard Webhook with the listing's JSON, the decoded transaction and the signed payload;
/// failures are retried with backoff in order per original transaction, then dead-lettered.
@Suite struct ForwardDeliveryTests {
    static let hook = "https://hooks.example.com/apple"
    static let secretText = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

    func path() -> String {
        TemporaryFolder("forward").appending("audit.sqlite").path
    }

    func record(_ uuid: String, type: String = "DID_RENEW", original: String, at seconds: Double) throws -> NotificationRecord {
        NotificationRecord(
            notificationUUID: uuid, version: .v2, notificationType: type, bundleID: "com.loki-project.loki-messenger", environment: "Production",
            receivedAt: Date(timeIntervalSince1970: seconds), verdict: .valid, originalTransactionID: original,
            signedPayload: try NotificationFixture.token("session-pro_00_DID_RENEW.jws"))
    }

    func forwarder(_ backend: AuditStore, _ downstream: some ForwardTransport, _ clock: SetClock, targets: [String] = [hook]) throws -> Forwarder {
        Forwarder(
            outbox: backend,
            configuration: .init(targets: try targets.map { try ForwardTarget($0) }, secrets: [try WebhookSecret(Self.secretText)]),
            transport: downstream, clock: clock.service, random: { 0.5 })
    }

    /// A trail with `targets` registered (every type unless `types` says).
    func trail(_ targets: [String] = [hook], types: Set<String> = []) async throws -> AuditStore {
        let backend = try AuditStore(path: path(), durable: true)
        try await backend.registerForwardTargets(targets, types: types, at: Date(timeIntervalSince1970: 1_700_000_000))
        return backend
    }

    @Test func storedNotificationsAreDeliveredOnceSignedWithTheirDecodedPayload() async throws {
        let backend = try await trail(types: ["DID_RENEW"])
        let store = NotificationStore(backend: backend).started()
        #expect(try await store.append(record("n-1", original: "700", at: 1_800_000_000)) == .stored)
        #expect(try await store.append(record("n-2", type: "TEST", original: "701", at: 1_800_000_001)) == .stored)
        #expect(try await store.append(record("n-1", original: "700", at: 1_800_000_002)) == .redelivery(deliveries: 2))
        // Only DID_RENEW is routed, and the redelivery queued nothing.
        #expect(try await backend.outboxSummary().pending == 1)

        let downstream = ScriptedDownstream()
        let clock = SetClock(Date(timeIntervalSince1970: 1_800_000_010))
        let forwarder = try forwarder(backend, downstream, clock)
        #expect(try await forwarder.round() == Forwarder.Round(claimed: 1, delivered: 1))
        #expect(try await forwarder.round() == Forwarder.Round())

        let request = try #require(downstream.all.first)
        #expect(downstream.all.count == 1)
        #expect(request.url == Self.hook)
        #expect(request.headers["webhook-id"] == "n-1")
        #expect(request.headers["webhook-timestamp"] == "1800000010")
        #expect(request.headers["content-type"] == "application/json")
        let signature = try #require(request.headers["webhook-signature"])
        #expect(
            WebhookSignature.verify(
                id: "n-1", timestamp: 1_800_000_010, body: request.body, header: signature, secret: try WebhookSecret(Self.secretText),
                now: Date(timeIntervalSince1970: 1_800_000_010)))
        let json = try #require(try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any])
        #expect(json["notification_uuid"] as? String == "n-1")
        #expect(json["notification_type"] as? String == "DID_RENEW")
        #expect(json["deliveries"] as? Int == 2)
        #expect(json["source"] as? String == "receiver")
        #expect(json["signed_payload"] as? String == (try NotificationFixture.token("session-pro_00_DID_RENEW.jws")))
        let transaction = try #require(json["transaction"] as? [String: Any])
        #expect(transaction["product_id"] as? String != nil)
        #expect(transaction["original_transaction_id"] as? String != nil)
        #expect(json.keys.contains("renewal_info"))
        let delivered = try await backend.outbox(state: .delivered, limit: 10)
        #expect(delivered.map(\.lastStatus) == [200])
        #expect(delivered.map(\.attempts) == [1])
        await store.close()
        await backend.close()
    }

    @Test func failuresAreRetriedInOrderPerOriginalTransactionThenDeadLettered() async throws {
        let words = Wording("forward-delivery")
        let backend = try await trail()
        let store = NotificationStore(backend: backend).started()
        let start = 1_800_000_000.0
        _ = try await store.append(record("a-1", original: "700", at: start))
        _ = try await store.append(record("b-1", original: "800", at: start + 1))
        _ = try await store.append(record("a-2", original: "700", at: start + 2))
        await store.close()

        // The downstream is down for a-1 until the clock passes start + 100, and for good after
        // start + 3 days.
        let clock = SetClock(Date(timeIntervalSince1970: start + 10))
        let downstream = ScriptedDownstream { _, _ in
            let now = clock.date.withLock { $0.timeIntervalSince1970 }
            if now > start + Forwarder.Configuration.defaultRetryWindow { return .failed(TransportFailure(.refused)) }
            return now < start + 100 ? .status(503, retryAfter: nil) : .status(200, retryAfter: nil)
        }
        let forwarder = try forwarder(backend, downstream, clock)
        // a-1 and b-1 are heads; a-2 waits behind a-1.
        #expect(try await forwarder.round() == Forwarder.Round(claimed: 2, retried: 2))
        // Different customers' deliveries go out side by side.
        #expect(Set(downstream.all.map { $0.headers["webhook-id"] }) == ["a-1", "b-1"])
        // Retried after the backoff's first wait (5 s, no jitter at random 0.5).
        let pending = try await backend.outbox(state: .pending, limit: 10).sorted { $0.id < $1.id }
        #expect(pending.map(\.nextAttemptAt) == [start + 15, start + 15, start + 2].map(Date.init(timeIntervalSince1970:)))
        #expect(pending.map(\.lastStatus) == [503, 503, nil])
        clock.set(start + 12)
        #expect(try await forwarder.round() == Forwarder.Round())
        clock.set(start + 200)
        #expect(try await forwarder.round() == Forwarder.Round(claimed: 2, delivered: 2))
        #expect(try await forwarder.round() == Forwarder.Round(claimed: 1, delivered: 1))
        let ids = downstream.all.compactMap { $0.headers["webhook-id"] }
        #expect(Set(ids[2...3]) == ["a-1", "b-1"])
        #expect(ids.count == 5)
        #expect(ids.last == "a-2")

        // A new one meets a downstream gone for good: retried until three days after it was
        // queued, a last time at the window's end, then dead-lettered.
        let late = NotificationStore(backend: backend).started()
        _ = try await late.append(record("c-1", original: "900", at: start + 300))
        await late.close()
        let end = start + 300 + Forwarder.Configuration.defaultRetryWindow
        clock.set(end - 1)
        #expect(try await forwarder.round() == Forwarder.Round(claimed: 1, retried: 1))
        #expect(try await backend.outbox(state: .pending, limit: 1).map(\.nextAttemptAt) == [Date(timeIntervalSince1970: end)])
        clock.set(end + 1)
        #expect(try await forwarder.round() == Forwarder.Round(claimed: 1, dead: 1))
        let dead = try await backend.outbox(state: .dead, limit: 10)
        #expect(dead.map(\.notificationUUID) == ["c-1"])
        words.said(dead.map(\.lastError))
        await backend.close()
        words.check()
    }
}

/// Faults: a downstream down for ten minutes loses nothing and gets nothing twice that it
/// answered 2xx to, in order per customer; a backfill overlapping live traffic forwards each
/// notification once.
@Suite struct ForwardFaultTests {
    let deliveries = ForwardDeliveryTests()

    @Test func aDownstreamDownForTenMinutesThenBackLosesNothing() async throws {
        let backend = try await deliveries.trail()
        let store = NotificationStore(backend: backend).started()
        let start = 1_800_000_000.0
        var expected: [String: [String]] = [:]
        for i in 0..<20 {
            let original = "70\(i % 5)"
            let uuid = "n-\(i)"
            _ = try await store.append(try deliveries.record(uuid, original: original, at: start + Double(i)))
            expected[original, default: []].append(uuid)
        }
        await store.close()

        let clock = SetClock(Date(timeIntervalSince1970: start + 30))
        let downstream = ScriptedDownstream { _, _ in
            clock.date.withLock { $0.timeIntervalSince1970 } < start + 630 ? .failed(TransportFailure(.refused)) : .status(200, retryAfter: nil)
        }
        let forwarder = try deliveries.forwarder(backend, downstream, clock)
        // Ten minutes down, a round every 30 s: only heads are tried, none delivered.
        var now = start + 30
        while now < start + 630 {
            clock.set(now)
            let round = try await forwarder.round()
            #expect(round.delivered == 0)
            now += 30
        }
        #expect(Set(downstream.all.compactMap { $0.headers["webhook-id"] }).isSubset(of: ["n-0", "n-1", "n-2", "n-3", "n-4"]))
        // Back: everything goes out, once, in order per original transaction.
        let failedBefore = downstream.all.count
        var rounds = 0
        while try await backend.outboxSummary().pending > 0 && rounds < 100 {
            now += 3_600
            clock.set(now)
            try await forwarder.round()
            rounds += 1
        }
        let answered = Array(downstream.all.dropFirst(failedBefore)).compactMap { $0.headers["webhook-id"] }
        #expect(answered.count == 20)
        #expect(Set(answered).count == 20)
        for (_, uuids) in expected {
            #expect(answered.filter { uuids.contains($0) } == uuids)
        }
        #expect(try await backend.outboxSummary() == ForwardOutboxSummary(pending: 0, oldestPendingQueuedAt: nil, delivered: 20, dead: 0))
        await backend.close()
    }

    /// A backfill of Apple's history running while the same notifications arrive as POSTs: one
    /// row each, and one delivery queued each.
    @Test func aBackfillOverlappingLiveTrafficForwardsEachOnce() async throws {
        let backend = try await deliveries.trail()
        let store = NotificationStore(backend: backend).started()
        let receiver = NotificationReceiver(
            sink: store, policy: .replaying(allowedBundleIDs: ["com.loki-project.loki-messenger"], appAppleID: 1_470_168_868))
        let names = try NotificationFixture.names().filter { $0.hasPrefix("session-pro_") }
        let tokens = try names.map { try NotificationFixture.token($0) }
        #expect(tokens.count >= 8)
        let items = tokens.enumerated().map { HistoryBackfill.Item(notificationUUID: "item-\($0.offset)", signedPayload: $0.element) }
        async let backfilled = HistoryBackfill.ingest(items, receiver: receiver, concurrency: 4)
        async let posted = withTaskGroup(of: ReceiveAnswer.self) { group in
            for token in tokens {
                let body = NotificationFixture.body(token: token)
                group.addTask { await receiver.handle(body: body, declaredLength: body.count, truncated: false, peer: "17.0.0.1:443") }
            }
            var answers: [ReceiveAnswer] = []
            for await answer in group { answers.append(answer) }
            return answers
        }
        let answers = await backfilled + posted
        await store.close()
        // Each notification stored once (the other arrival counted as its redelivery); Apple
        // delivered each once: the history copy is not a delivery.
        #expect(answers.filter { $0.outcome == .accepted }.count == tokens.count)
        #expect(answers.filter { $0.outcome == .redelivered }.count == tokens.count)
        let stored = try await backend.notifications()
        #expect(stored.count == tokens.count)
        #expect(stored.map(\.deliveries) == Array(repeating: 1, count: tokens.count))
        #expect(try await backend.outboxSummary().pending == tokens.count)
        await backend.close()
    }
}
