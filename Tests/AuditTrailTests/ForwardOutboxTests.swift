@testable import AuditTrail
import Foundation
import Testing
import TestSupport
import UntrustedText

/// The forwarding outbox (v11, v12) on SQLite and PostgreSQL with the same expected values:
/// queued for every registered target whose types match in the transaction that stores a
/// notification new (a redelivery queues nothing; a disabled target's wait), claimed
/// oldest first and one per target and original transaction (in order), leased so a second
/// claim passes a claimed row by until its lease ends, retried, dead-lettered, and queued again
/// by `--replay`.
@Suite(.timeLimit(.minutes(2))) struct ForwardOutboxTests {
    static let hook = "https://hooks.example.com/apple"
    /// Stored as a target, never dialled.
    static let warehouse = "http://127.0.0.1:8090/warehouse"

    /// A DID_RENEW goes to both targets (the warehouse takes DID_RENEW only), a SUBSCRIBED to
    /// the hook alone.
    func notification(_ uuid: String, original: String?, at seconds: Double, type: String = "DID_RENEW") -> NotificationRecord {
        NotificationRecord(
            notificationUUID: uuid, version: .v2, notificationType: type, bundleID: "com.example.app", environment: "Sandbox",
            receivedAt: Date(timeIntervalSince1970: seconds), verdict: .test, originalTransactionID: original,
            signedPayload: "eyJhbGciOiJFUzI1NiJ9.payload.signature")
    }

    func at(_ seconds: Double) -> Date { Date(timeIntervalSince1970: seconds) }

    @Test(arguments: BackendKind.allCases) func claimsInOrderLeasesRetriesAndDeadLetters(_ kind: BackendKind) async throws {
        let words = Wording("forward-outbox", case: "\(kind)")
        try await TestAuditDatabase.with(kind) { db in
            let store = try await db.open()
            // Nothing registered: stored, queued for nobody.
            _ = try await store.writeNotifications([.notification(notification("z0", original: "600", at: 999))])
            #expect(try await store.outboxSummary().pending == 0)
            try await store.registerForwardTargets([Self.hook], types: [], at: at(990))
            try await store.registerForwardTargets([Self.warehouse], types: ["did_renew"], at: at(991))
            #expect(
                try await store.forwardTargets() == [
                    ForwardTargetRecord(url: Self.warehouse, types: ["DID_RENEW"], registeredAt: at(991)),
                    ForwardTargetRecord(url: Self.hook, registeredAt: at(990)),
                ])
            let results = try await store.writeNotifications([
                .notification(notification("a1", original: "700", at: 1_000)),
                .notification(notification("b1", original: "800", at: 1_001, type: "SUBSCRIBED")),
                .notification(notification("a2", original: "700", at: 1_002)),
                // A redelivery queues nothing more.
                .notification(notification("a1", original: "700", at: 1_003)),
                // No original transaction: ordered by itself.
                .notification(notification("c1", original: nil, at: 1_004, type: "SUBSCRIBED")),
            ])
            #expect(results.map { try? $0.get() } == [.stored, .stored, .stored, .redelivery(deliveries: 2), .stored])
            var summary = try await store.outboxSummary()
            #expect(summary == ForwardOutboxSummary(pending: 6, oldestPendingQueuedAt: at(1_000), delivered: 0, dead: 0))

            // The heads only: a2 waits for a1 on each target.
            let first = try await store.claimDeliveries(targets: [Self.hook], now: at(2_000), leaseUntil: at(2_060), limit: 10)
            #expect(first.map(\.delivery.notificationUUID) == ["a1", "b1", "c1"])
            #expect(first.map(\.delivery.orderKey) == ["700", "800", "c1"])
            #expect(first.map(\.notification.deliveries) == [2, 1, 1])
            #expect(first.first?.notification.record.signedPayload == "eyJhbGciOiJFUzI1NiJ9.payload.signature")
            // Leased: a second claim (another receiver) gets none of them, nor a2.
            #expect(try await store.claimDeliveries(targets: [Self.hook], now: at(2_001), leaseUntil: at(2_061), limit: 10).isEmpty)
            // The other target's head is its own.
            let warehouse = try await store.claimDeliveries(targets: [Self.warehouse], now: at(2_001), leaseUntil: at(2_061), limit: 10)
            #expect(warehouse.map(\.delivery.notificationUUID) == ["a1"])

            let ids = Dictionary(uniqueKeysWithValues: first.map { ($0.delivery.notificationUUID, $0.delivery.id) })
            try await store.recordDeliveryResults([
                ForwardAttemptResult(id: try #require(ids["a1"]), next: .retry(at: at(2_100)), at: at(2_002), status: 503, error: "HTTP 503"),
                ForwardAttemptResult(id: try #require(ids["b1"]), next: .delivered, at: at(2_002), status: 200, error: nil),
                ForwardAttemptResult(id: try #require(ids["c1"]), next: .dead, at: at(2_002), status: nil, error: "no answer within 10 s"),
            ])
            // a1 is not due yet and still holds a2 back.
            #expect(try await store.claimDeliveries(targets: [Self.hook], now: at(2_050), leaseUntil: at(2_110), limit: 10).isEmpty)
            let retried = try await store.claimDeliveries(targets: [Self.hook], now: at(2_100), leaseUntil: at(2_160), limit: 10)
            #expect(retried.map(\.delivery.notificationUUID) == ["a1"])
            #expect(retried.map(\.delivery.attempts) == [1])
            // A lease that ran out (its receiver died) is claimed again: at least once.
            let again = try await store.claimDeliveries(targets: [Self.hook], now: at(2_161), leaseUntil: at(2_221), limit: 10)
            #expect(again.map(\.delivery.notificationUUID) == ["a1"])
            try await store.recordDeliveryResults([
                ForwardAttemptResult(id: try #require(ids["a1"]), next: .delivered, at: at(2_162), status: 204, error: nil)
            ])
            let next = try await store.claimDeliveries(targets: [Self.hook], now: at(2_163), leaseUntil: at(2_223), limit: 10)
            #expect(next.map(\.delivery.notificationUUID) == ["a2"])

            let dead = try await store.outbox(state: .dead, limit: 10)
            #expect(dead.map(\.notificationUUID) == ["c1"])
            words.said(dead.map(\.lastError))
            #expect(dead.map(\.completedAt) == [at(2_002)])
            let delivered = try await store.outbox(state: .delivered, limit: 10)
            // Newest first.
            #expect(delivered.map(\.notificationUUID) == ["b1", "a1"])
            #expect(delivered.map(\.lastStatus) == [200, 204])
            #expect(delivered.map(\.attempts) == [1, 2])
            summary = try await store.outboxSummary()
            #expect(summary == ForwardOutboxSummary(pending: 3, oldestPendingQueuedAt: at(1_000), delivered: 2, dead: 1))

            // --replay: the dead one and an unknown UUID; then everything since 1_001 to the warehouse.
            let replay = try await store.requeueDeliveries(notificationUUIDs: ["c1", "nope"], since: nil, targets: [Self.hook], now: at(3_000))
            #expect(replay.queued == 1)
            #expect(replay.unknown == ["nope"])
            let requeued = try await store.outbox(state: .pending, limit: 10).filter { $0.notificationUUID == "c1" }
            #expect(requeued.map(\.attempts) == [0])
            #expect(requeued.map(\.queuedAt) == [at(3_000)])
            #expect(requeued.map(\.lastError) == [nil])
            let since = try await store.requeueDeliveries(notificationUUIDs: nil, since: at(1_001), targets: [Self.warehouse], now: at(3_001))
            #expect(since.queued == 3)
            #expect(try await store.outboxSummary().pending == 6)
            // Without targets: every registered target whose types match (b1, a SUBSCRIBED: the
            // hook, where it was delivered; a2: both, already pending).
            let registered = try await store.requeueDeliveries(notificationUUIDs: ["b1", "a2"], since: nil, targets: nil, now: at(3_002))
            #expect(registered.queued == 3)
            #expect(try await store.outboxSummary() == ForwardOutboxSummary(pending: 7, oldestPendingQueuedAt: at(1_000), delivered: 1, dead: 0))

            // A disabled target's deliveries are passed by, and still queued, until it is enabled.
            try await store.disableForwardTarget(Self.warehouse, at: at(3_100), reason: "HTTP 410 Gone")
            #expect(try await store.forwardTargets().first?.disabledReason == "HTTP 410 Gone")
            _ = try await store.writeNotifications([.notification(notification("d1", original: "900", at: 3_101))])
            #expect(try await store.outbox(state: .pending, limit: 20).filter { $0.notificationUUID == "d1" }.map(\.target).sorted() == [Self.hook, Self.warehouse].sorted())
            #expect(try await store.claimDeliveries(targets: [Self.warehouse], now: at(3_200), leaseUntil: at(3_260), limit: 10).isEmpty)
            #expect(try await store.enableForwardTarget(Self.warehouse))
            #expect(try await !store.enableForwardTarget("https://unknown.example.com/"))
            // The warehouse's heads: a1 (a2 waits behind it), b1, c1 and d1.
            let heads = try await store.claimDeliveries(targets: [Self.warehouse], now: at(3_200), leaseUntil: at(3_260), limit: 10)
            #expect(heads.map(\.delivery.notificationUUID) == ["a1", "b1", "c1", "d1"])
            await store.close()
        }
        words.check()
    }

    /// The on-call view's counts: each target's deliveries by state and its oldest pending
    /// one, every registered target listed (none queued: zeros), a `--replay --to` URL too; and
    /// `notifications --outbox` lines that name the notification's type and say the last
    /// outcome once.
    @Test(arguments: BackendKind.allCases) func eachTargetsDeliveriesAreCountedAndListedWithTheirType(_ kind: BackendKind) async throws {
        let words = Wording("forward-outbox", case: "\(kind)")
        let idle = "https://idle.example.com/hook"
        try await TestAuditDatabase.with(kind) { db in
            let store = try await db.open()
            #expect(try await store.deliveriesByTarget() == [])
            try await store.registerForwardTargets([Self.hook, idle], types: [], at: at(990))
            try await store.registerForwardTargets([Self.warehouse], types: ["DID_RENEW"], at: at(991))
            var renewal = notification("a1", original: "700", at: 1_000)
            renewal.subtype = "BILLING_RECOVERY"
            _ = try await store.writeNotifications([
                .notification(renewal), .notification(notification("b1", original: "800", at: 1_001, type: "SUBSCRIBED")),
                .notification(notification("c1", original: "900", at: 1_002, type: "SUBSCRIBED")),
            ])
            // Nothing for the idle target: it takes a1 too, but is kept waiting (disabled).
            try await store.disableForwardTarget(idle, at: at(995), reason: "HTTP 410 Gone")
            let claimed = try await store.claimDeliveries(targets: [Self.hook], now: at(2_000), leaseUntil: at(2_060), limit: 10)
            let ids = Dictionary(uniqueKeysWithValues: claimed.map { ($0.delivery.notificationUUID, $0.delivery.id) })
            try await store.recordDeliveryResults([
                ForwardAttemptResult(id: try #require(ids["a1"]), next: .delivered, at: at(2_001), status: 200, error: nil),
                ForwardAttemptResult(id: try #require(ids["b1"]), next: .retry(at: at(2_100)), at: at(2_001), status: 500, error: "HTTP 500"),
                ForwardAttemptResult(id: try #require(ids["c1"]), next: .dead, at: at(2_001), status: nil, error: "no answer within 10 s"),
            ])
            _ = try await store.claimDeliveries(targets: [Self.hook], now: at(2_100), leaseUntil: at(2_160), limit: 10)
            try await store.recordDeliveryResults([
                ForwardAttemptResult(id: try #require(ids["b1"]), next: .retry(at: at(2_200)), at: at(2_101), status: 500, error: "HTTP 500")
            ])
            _ = try await store.requeueDeliveries(notificationUUIDs: ["b1"], since: nil, targets: ["https://replay.example.com/"], now: at(3_000))
            let counts = try await store.deliveriesByTarget()
            #expect(
                counts == [
                    ForwardTargetCounts(target: Self.warehouse, pending: 1, oldestPendingQueuedAt: at(1_000)),
                    ForwardTargetCounts(target: Self.hook, delivered: 1, pending: 1, dead: 1, oldestPendingQueuedAt: at(1_001)),
                    ForwardTargetCounts(target: idle, pending: 3, oldestPendingQueuedAt: at(1_000), disabledAt: at(995)),
                    ForwardTargetCounts(target: "https://replay.example.com/", pending: 1, oldestPendingQueuedAt: at(3_000)),
                ])

            let listed = try await store.outbox(state: nil, limit: 20).filter { $0.target == Self.hook }
            #expect(listed.map(\.notificationType) == ["SUBSCRIBED", "SUBSCRIBED", "DID_RENEW"])
            #expect(listed.map(\.subtype) == [nil, nil, "BILLING_RECOVERY"])
            words.said(listed.map(ForwardOutboxListing.textLine))
            let capture = ConsoleCapture()
            ForwardOutboxListing.write(listed, summary: try await store.outboxSummary(), format: .json, now: at(3_000), to: capture.console())
            let json = try #require(try JSONSerialization.jsonObject(with: Data(capture.output.utf8)) as? [String: Any])
            let first = try #require((json["deliveries"] as? [[String: Any]])?.last)
            #expect(first["notification_type"] as? String == "DID_RENEW")
            #expect(first["subtype"] as? String == "BILLING_RECOVERY")
            #expect(first["last_status"] as? Int == 200)
            await store.close()
        }
        words.check()
    }

    /// A scheduled job runs once per period whoever asks, and not beside itself: a second try
    /// while the first holds it is skipped.
    @Test(arguments: BackendKind.allCases) func aScheduledJobRunsOncePerPeriod(_ kind: BackendKind) async throws {
        try await TestAuditDatabase.with(kind) { db in
            let store = try await db.open()
            let other = try await db.open()
            #expect(try await store.runJob("reconcile-production", every: 3_600, now: { Date(timeIntervalSince1970: 10_000) }) { 1 } == 1)
            // Within the period: skipped, by the same process or another.
            #expect(try await other.runJob("reconcile-production", every: 3_600, now: { Date(timeIntervalSince1970: 12_000) }) { 2 } == nil)
            // Another job is its own.
            #expect(try await other.runJob("reconcile-sandbox", every: 3_600, now: { Date(timeIntervalSince1970: 12_000) }) { 3 } == 3)
            // Nine tenths of the period on: due again.
            #expect(try await other.runJob("reconcile-production", every: 3_600, now: { Date(timeIntervalSince1970: 13_241) }) { 4 } == 4)

            if kind == .postgres {
                // While one receiver runs it, another's try is skipped at once.
                let (entered, enter) = AsyncStream<Void>.makeStream()
                let (release, releaser) = AsyncStream<Void>.makeStream()
                let running = Task {
                    try await store.runJob("reconcile-production", every: 3_600, now: { Date(timeIntervalSince1970: 20_000) }) {
                        enter.yield()
                        for await _ in release {}
                        return 5
                    }
                }
                for await _ in entered { break }
                #expect(try await other.runJob("reconcile-production", every: 3_600, now: { Date(timeIntervalSince1970: 20_000) }) { 6 } == nil)
                releaser.finish()
                #expect(try await running.value == 5)
            }
            await other.close()
            await store.close()
        }
    }
}
