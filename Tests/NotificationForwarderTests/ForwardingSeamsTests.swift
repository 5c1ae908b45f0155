import AppStoreAPI
import AuditTrail
import AuditTrailSQLite
import Foundation
import Hummingbird
import HummingbirdTesting
import NotificationForwarder
import NotificationReceiver
import RetryEngine
import ServiceTestSupport
import Synchronization
import Testing
import TestSupport

/// `Retry-After` read with care: seconds or an HTTP date; below the backoff's floor, negative,
/// not a number or infinite, the backoff applies; past the retry window, one last attempt at
/// the window's end.
@Suite struct RetryAfterTests {
    let backoff = Forwarder.Configuration(targets: [], secrets: []).backoff
    let queued = Date(timeIntervalSince1970: 1_800_000_000)
    let window = Forwarder.Configuration.defaultRetryWindow

    func next(_ retryAfter: String?, attempts: Int = 1, after seconds: Double = 100) -> Double? {
        Forwarder.nextAttempt(
            at: queued.addingTimeInterval(seconds), queuedAt: queued, attempts: attempts, retryAfter: retryAfter, backoff: backoff,
            window: window, random: 0.5
        ).map { $0.timeIntervalSince(queued) }
    }

    @Test func saneValuesAreHonouredAndTheRestIgnored() {
        // The backoff at random 0.5 (no jitter): 5 s, then 10 s.
        #expect(next(nil) == 105)
        #expect(next(nil, attempts: 2) == 110)
        #expect(next("120") == 220)
        #expect(next(HTTPDate.format(queued.addingTimeInterval(700))) == 700)
        for ignored in ["0", "4", "-5", "nan", "inf", "-inf", "1e400", "soon", ""] {
            #expect(next(ignored) == 105, "\(ignored)")
        }
        // A date in the past is a wait of 0: below the floor.
        #expect(next(HTTPDate.format(queued)) == 105)
    }

    @Test func aWaitPastTheWindowIsOneLastAttemptAtItsEnd() {
        #expect(next("259300") == window)
        #expect(next("99999999999999999999999") == window)
        #expect(next(nil, after: window - 1) == window)
        // The last attempt failed: dead-lettered.
        #expect(next(nil, after: window) == nil)
        #expect(next("120", after: window + 1) == nil)
    }

    @Test func theBackoffHasJitter() {
        let low = Forwarder.nextAttempt(
            at: queued, queuedAt: queued, attempts: 3, retryAfter: nil, backoff: backoff, window: window, random: 0)
        let high = Forwarder.nextAttempt(
            at: queued, queuedAt: queued, attempts: 3, retryAfter: nil, backoff: backoff, window: window, random: 1)
        // 20 s ± 20 %.
        #expect(low?.timeIntervalSince(queued) == 16)
        #expect(high?.timeIntervalSince(queued) == 24)
    }
}

/// What the downstream's status says of the whole target: `429`, `502`, `503` and `504` hold
/// its other deliveries back; `410 Gone` disables it until it is enabled, while its deliveries
/// keep being queued.
@Suite struct TargetStatusTests {
    let deliveries = ForwardDeliveryTests()
    static let other = "https://warehouse.example.com/apple"

    @Test(arguments: [429, 502, 503, 504]) func anOverloadedTargetIsSlowedDownAsAWhole(_ status: Int) async throws {
        let backend = try await deliveries.trail([ForwardDeliveryTests.hook, Self.other])
        let store = NotificationStore(backend: backend).started()
        let start = 1_800_000_000.0
        for i in 0..<4 { _ = try await store.append(try deliveries.record("n-\(i)", original: "70\(i)", at: start + Double(i))) }
        let failing = Mutex(true)
        // The hook answers the overload status with Retry-After 60 while failing; the other, 200.
        let downstream = ScriptedDownstream { url, _ in
            url == ForwardDeliveryTests.hook && failing.withLock({ $0 }) ? .status(status, retryAfter: "60") : .status(200, retryAfter: nil)
        }
        let clock = SetClock(Date(timeIntervalSince1970: start + 10))
        let forwarder = try deliveries.forwarder(backend, downstream, clock, targets: [ForwardDeliveryTests.hook, Self.other])
        #expect(try await forwarder.round() == Forwarder.Round(claimed: 8, delivered: 4, retried: 4))
        // Four more, for other customers: due at once, but the hook is held back for the 60 s
        // it asked for; the other target takes them.
        for i in 4..<8 { _ = try await store.append(try deliveries.record("n-\(i)", original: "70\(i)", at: start + 20)) }
        await store.close()
        clock.set(start + 40)
        #expect(try await forwarder.round() == Forwarder.Round(claimed: 4, delivered: 4))
        #expect(downstream.all.filter { $0.url == ForwardDeliveryTests.hook }.count == 4)
        failing.withLock { $0 = false }
        clock.set(start + 71)
        #expect(try await forwarder.round() == Forwarder.Round(claimed: 8, delivered: 8))
        #expect(try await backend.outboxSummary() == ForwardOutboxSummary(pending: 0, oldestPendingQueuedAt: nil, delivered: 16, dead: 0))
        await backend.close()
    }

    @Test func goneDisablesTheTargetUntilItIsEnabled() async throws {
        let backend = try await deliveries.trail([ForwardDeliveryTests.hook, Self.other])
        let store = NotificationStore(backend: backend).started()
        let start = 1_800_000_000.0
        _ = try await store.append(try deliveries.record("n-0", original: "700", at: start))
        let gone = Mutex(true)
        let downstream = ScriptedDownstream { url, _ in
            url == ForwardDeliveryTests.hook && gone.withLock({ $0 }) ? .status(410, retryAfter: nil) : .status(200, retryAfter: nil)
        }
        let clock = SetClock(Date(timeIntervalSince1970: start + 10))
        let forwarder = try deliveries.forwarder(backend, downstream, clock, targets: [ForwardDeliveryTests.hook, Self.other])
        #expect(try await forwarder.round() == Forwarder.Round(claimed: 2, delivered: 1, retried: 1))
        let hook = try #require(try await backend.forwardTargets().first { $0.url == ForwardDeliveryTests.hook })
        #expect(hook.disabledAt == Date(timeIntervalSince1970: start + 10))
        // New notifications are still queued for it, and wait.
        _ = try await store.append(try deliveries.record("n-1", original: "800", at: start + 20))
        await store.close()
        clock.set(start + 1_000)
        #expect(try await forwarder.round() == Forwarder.Round(claimed: 1, delivered: 1))
        #expect(downstream.all.filter { $0.url == ForwardDeliveryTests.hook }.count == 1)
        let waiting = try await backend.outbox(state: .pending, limit: 10)
        #expect(waiting.map(\.notificationUUID).sorted() == ["n-0", "n-1"])
        #expect(waiting.first { $0.notificationUUID == "n-0" }?.lastStatus == 410)
        // Enabled again (`notifications --outbox --enable`, another process): the same forwarder
        // sends both at its next claim.
        gone.withLock { $0 = false }
        #expect(try await backend.enableForwardTarget(ForwardDeliveryTests.hook))
        #expect(try await forwarder.round() == Forwarder.Round(claimed: 2, delivered: 2))
        #expect(try await backend.outboxSummary().pending == 0)
        await backend.close()
    }
}

/// Blame where it belongs: what the client refuses to send (a notificationUUID holding CR/LF,
/// stored before the receiver's gate refused such ids) is dead-lettered at once and never
/// reaches the downstream; a 2xx is delivered.
@Suite(.timeLimit(.minutes(5))) struct LocalRefusalTests {
    let deliveries = ForwardDeliveryTests()

    @Test func whatTheClientWillNotSendIsDeadAtOnce() async throws {
        let hits = Mutex<[String]>([])
        let router = Router()
        router.post("/hook") { request, _ -> Response in
            hits.withLock { $0.append(request.headers[values: .init("webhook-id")!].first ?? "") }
            return Response(status: .ok)
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in
            let hook = "http://127.0.0.1:\(try #require(client.port))/hook"
            let backend = try await deliveries.trail([hook])
            let start = 1_800_000_000.0
            _ = try await backend.writeNotifications([
                .notification(try deliveries.record("bad\r\nX-Injected: yes", original: "700", at: start)),
                .notification(try deliveries.record("5d4c2f7e-0c1a-4b8e-9f3a-2b1c0d9e8f7a", original: "800", at: start + 1)),
            ])
            let clock = SetClock(Date(timeIntervalSince1970: start + 10))
            let forwarder = try deliveries.forwarder(backend, HTTPForwardTransport(), clock, targets: [hook])
            #expect(try await forwarder.round() == Forwarder.Round(claimed: 2, delivered: 1, dead: 1))
            #expect(hits.withLock { $0 } == ["5d4c2f7e-0c1a-4b8e-9f3a-2b1c0d9e8f7a"])
            let dead = try await backend.outbox(state: .dead, limit: 10)
            #expect(dead.map(\.attempts) == [1])
            #expect(dead.map(\.lastStatus) == [nil])
            #expect(dead.first?.lastError?.hasPrefix("not sent: ") == true)
            await forwarder.shutdown()
            await backend.close()
        }
    }
}

/// Targets apart: a downstream that never answers holds only its own deliveries; the healthy
/// target's are sent and recorded meanwhile, each as its answer comes.
@Suite(.timeLimit(.minutes(5))) struct IndependentTargetsTests {
    let deliveries = ForwardDeliveryTests()
    static let hanging = "https://hanging.example.com/apple"

    /// Answers 200 for the healthy target; for the hanging one, waits until cancelled.
    final class HangingDownstream: ForwardTransport {
        let hung = AwaitedCount()
        func post(url: String, headers: [(String, String)], body: [UInt8], timeout: Duration) async -> ForwardAnswer {
            guard url == IndependentTargetsTests.hanging else { return .status(200, retryAfter: nil) }
            hung.add()
            let (never, _) = AsyncStream<Void>.makeStream()
            for await _ in never {}
            return .failed(TransportFailure(.cancelled))
        }
    }

    @Test func aHangingTargetNeverDelaysAHealthyOne() async throws {
        let backend = try await deliveries.trail([ForwardDeliveryTests.hook, Self.hanging])
        let store = NotificationStore(backend: backend).started()
        let start = 1_800_000_000.0
        for i in 0..<40 { _ = try await store.append(try deliveries.record("n-\(i)", original: "7\(i % 10)", at: start + Double(i))) }
        await store.close()
        let downstream = HangingDownstream()
        let outbox = WatchedOutbox(backend)
        // Wall time stands still; the forwarder's idle waits are real (100 ms).
        let clock = ServiceClock(now: { Date(timeIntervalSince1970: start + 100) }, clock: ContinuousClock())
        let forwarder = Forwarder(
            outbox: outbox, configuration: .init(targets: [try ForwardTarget(ForwardDeliveryTests.hook), try ForwardTarget(Self.hanging)], secrets: []),
            transport: downstream, clock: clock)
        let running = Task { try await forwarder.run() }
        // Every healthy delivery is recorded while the other target's ten heads hang.
        await downstream.hung.wait(atLeast: 10)
        await outbox.delivered.wait(atLeast: 40)
        #expect(try await backend.outboxSummary().delivered == 40)
        #expect(try await backend.outboxSummary().pending == 40)
        running.cancel()
        _ = try? await running.value
        // Only the heads (one per customer) were tried; the rest wait behind them, in order.
        #expect(downstream.hung.value == 10)
        await backend.close()
    }
}

/// Whoever stored it, it is forwarded: a notification stored by a process that does not
/// forward (`--reconcile --ingest`, a scheduled backfill) is queued for every target the trail
/// has registered, and delivered by the receiver that forwards.
@Suite struct StoredAnywhereTests {
    let deliveries = ForwardDeliveryTests()

    @Test func aBackfillIntoAForwardingTrailIsForwarded() async throws {
        let backend = try await deliveries.trail()
        // The backfill's own store and receiver, as `notifications --reconcile --ingest` makes.
        let store = NotificationStore(backend: backend).started()
        let receiver = NotificationReceiver(
            sink: store, policy: .replaying(allowedBundleIDs: ["com.loki-project.loki-messenger"], appAppleID: 1_470_168_868))
        let tokens = try NotificationFixture.names().filter { $0.hasPrefix("session-pro_") }.map { try NotificationFixture.token($0) }
        let items = tokens.enumerated().map { HistoryBackfill.Item(notificationUUID: "item-\($0.offset)", signedPayload: $0.element) }
        let answers = await HistoryBackfill.ingest(items, receiver: receiver, concurrency: 4)
        await store.close()
        #expect(answers.filter { $0.outcome == .accepted }.count == tokens.count)
        #expect(try await backend.outboxSummary().pending == tokens.count)
        let downstream = ScriptedDownstream()
        let forwarder = try deliveries.forwarder(backend, downstream, SetClock(Date(timeIntervalSince1970: 1_900_000_000)))
        while try await forwarder.round().claimed > 0 {}
        #expect(Set(downstream.all.compactMap { $0.headers["webhook-id"] }).count == tokens.count)
        #expect(downstream.all.count == tokens.count)
        await backend.close()
    }
}
