import AsyncHTTPClient
@testable import AuditTrail
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import NIOPosix
@testable import NotificationReceiver
import AppStoreAPI
import ReceiptCore
import ReceiptTrust
import RetryEngine
import ServiceTestSupport
import Synchronization
import Testing
import TestSupport

/// The receiver as an attacker meets it: forged V1, x5c bombs, extra keys, wrong environment,
/// old or future notifications, a test notification that would shadow a genuine one, floods of
/// junk, a full queue, health floods and slow clients. Every body is real: Apple's genuine
/// notifications, tokens the simulator's test PKI signs, bombs built here.
@Suite struct ReceiverHostileTests {
    static let receivedAt = Date(timeIntervalSince1970: 1_795_000_000)
    static let silent = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

    func temporaryPath() -> String {
        TemporaryFolder("hostile").appending("audit.sqlite").path
    }

    func receiver(_ sink: any NotificationSink, _ policy: ReceiverPolicy, now: @escaping @Sendable () -> Date = { Self.receivedAt })
        -> NotificationReceiver
    {
        NotificationReceiver(sink: sink, policy: policy, logger: Self.silent, now: now)
    }

    static func v1Body() throws -> [UInt8] {
        [UInt8](try Data(contentsOf: ServiceFixture.folder.appendingPathComponent("notification-v1.json")))
    }

    static func genuine(_ name: String = "session-pro_00_DID_RENEW.jws") throws -> [UInt8] {
        NotificationFixture.body(token: try NotificationFixture.token(name))
    }


    /// An unsigned token whose header carries `entries` tiny x5c entries (the bomb of the
    /// issue: 30,000 entries, a body under 1 MiB).
    static func x5cBomb(entries: Int = 30_000, uuid: String = "b0000000-0000-4000-8000-000000000000") -> [UInt8] {
        let header = #"{"alg":"ES256","x5c":["# + Array(repeating: #""AAAA""#, count: entries).joined(separator: ",") + "]}"
        let payload = #"{"notificationType":"REFUND","notificationUUID":"\#(uuid)","signedDate":1794999000000,"data":{"bundleId":"com.loki-project.loki-messenger","environment":"Production"}}"#
        let token = Base64Text.encodeURL(Array(header.utf8)) + "." + Base64Text.encodeURL(Array(payload.utf8)) + ".AAAA"
        return NotificationFixture.body(token: token)
    }

    /// A refused body keeps a prefix only when it never mentions a password, in any case and
    /// anywhere (the scan is one pass over up to a megabyte of junk).
    @Test func aRefusedBodyKeepsNoPrefixThatMentionsAPassword() {
        func prefix(_ text: String) -> String? { RejectionRecord.safePrefix(Array(text.utf8)) }
        #expect(prefix("") == nil)
        #expect(prefix("password") == nil)
        #expect(prefix(#"{"a":1,"PaSsWoRd":"s3cret"}"#) == nil)
        #expect(prefix(String(repeating: "x", count: 1 << 20) + "PASSWORD") == nil)
        #expect(prefix("ppassword") == nil)
        #expect(prefix("passwor") == "passwor")
        #expect(prefix("pass word") == "pass word")
        #expect(prefix("p@ssword") == "p@ssword")  // '@' | 0x20 is '`', not 'a'
        #expect(RejectionRecord.safePrefix([0x50, 0xC1, 0x53, 0x53, 0x57, 0x4F, 0x52, 0x44]) != nil)  // 0xC1 is no 'a'
        let long = String(repeating: "y", count: 3000)
        #expect(prefix(long)?.utf8.count == RejectionRecord.maximumPrefix)
        // A slice (what the receiver passes for a body read in part) is read the same way.
        let bytes = Array("..password..".utf8)
        #expect(RejectionRecord.safePrefix(bytes[2...]) == nil)
        #expect(RejectionRecord.safePrefix(bytes[3...]) == "assword..")
    }

    // MARK: - V1

    @Test func v1IsRefusedByDefaultAndNothingIsStored() async throws {
        let words = Wording("receiver-hostile")
        let store = try NotificationStore(path: temporaryPath()).started()
        let answer = await receiver(store, .replaying(allowedBundleIDs: ["my.app"]))
            .handle(body: try Self.v1Body(), declaredLength: nil, truncated: false, peer: "198.51.100.1:4000")
        #expect(answer.status == 403)
        #expect(answer.refusal == .v1NotAccepted)
        #expect(
            NotificationReceiver.response(answer).status.code == 403
                && answer.publicReason
                    == "V1 notifications are not accepted")
        words.said(answer.reason)
        #expect(try await store.notifications().isEmpty)
        #expect(try await store.rejections().map(\.kind) == ["v1-not-accepted"])
        #expect(try await store.rejections().map(\.bodyPrefix) == [nil])  // it carries a password
        await store.close()
        words.check()
    }

    @Test func aForgedV1WithTheWrongPasswordIsRefused() async throws {
        let words = Wording("receiver-hostile")
        let store = try NotificationStore(path: temporaryPath()).started()
        let policy = ReceiverPolicy.replaying(allowedBundleIDs: ["my.app"], v1SharedSecret: AppStoreAPI.SharedSecret("the real secret"))
        // The fixture's password is "dummy_shared_secret"; a made-up one with no password too.
        let wrong = await receiver(store, policy).handle(body: try Self.v1Body(), declaredLength: nil, truncated: false, peer: nil)
        #expect(wrong.status == 403)
        #expect(wrong.refusal == .v1Password)
        words.said(wrong.reason)
        let forged = Array(
            #"{"notification_type":"REFUND","bid":"my.app","environment":"PROD","unified_receipt":{"status":0,"environment":"Production","latest_receipt_info":[{"transaction_id":"1","original_transaction_id":"1","product_id":"p"}]}}"#
                .utf8)
        let none = await receiver(store, policy).handle(body: forged, declaredLength: nil, truncated: false, peer: nil)
        #expect(none.status == 403)
        #expect(none.refusal == .v1Password)
        words.said(none.reason)
        #expect(try await store.notifications().isEmpty)
        // The right secret: stored as unverifiable.
        let right = await receiver(store, .replaying(allowedBundleIDs: ["my.app"], v1SharedSecret: AppStoreAPI.SharedSecret("dummy_shared_secret")))
            .handle(body: try Self.v1Body(), declaredLength: nil, truncated: false, peer: nil)
        #expect(right.status == 200)
        #expect(try await store.notifications().map(\.record.verdict) == [.unverifiable])
        await store.close()
        words.check()
    }

    @Test func sharedSecretComparisonIsExact() {
        let secret = AppStoreAPI.SharedSecret("0123456789abcdef")
        #expect(secret.matchesInConstantTime("0123456789abcdef"))
        #expect(!secret.matchesInConstantTime("0123456789abcdeF"))
        #expect(!secret.matchesInConstantTime("0123456789abcde"))
        #expect(!secret.matchesInConstantTime(""))
    }

    // MARK: - Exactly signedPayload

    @Test func onlySignedPayloadAndTheVerifiedStringIsTheStoredOne() async throws {
        let words = Wording("receiver-hostile")
        let store = try NotificationStore(path: temporaryPath()).started()
        let receiver = receiver(store, .replaying())
        let token = try NotificationFixture.token("session-pro_00_DID_RENEW.jws")
        // The decoder used to verify receipt-data and the receiver stored signedPayload.
        let confused = Array(#"{"receipt-data":"\#(token)","signedPayload":"junk"}"#.utf8)
        let answer = await receiver.handle(body: confused, declaredLength: nil, truncated: false, peer: nil)
        #expect(answer.status == 400)
        #expect(answer.refusal == .notNotification)
        words.said(answer.reason)
        let extra = Array(#"{"signedPayload":"\#(token)","x":1}"#.utf8)
        #expect(await receiver.handle(body: extra, declaredLength: nil, truncated: false, peer: nil).status == 400)
        let junk = await receiver.handle(body: Array(#"{"signedPayload":"junk"}"#.utf8), declaredLength: nil, truncated: false, peer: nil)
        #expect(junk.status == 400)
        #expect(junk.refusal == .undecodable)
        #expect(try await store.notifications().isEmpty)
        let genuine = await receiver.handle(body: try Self.genuine(), declaredLength: nil, truncated: false, peer: nil)
        #expect(genuine.status == 200)
        #expect(try await store.notifications().map(\.record.signedPayload) == [token])
        await store.close()
        words.check()
    }

    // MARK: - x5c bombs

    @Test func x5cBombsAreRefusedAtOnceAndSampled() async throws {
        let words = Wording("receiver-hostile")
        let store = try NotificationStore(path: temporaryPath()).started()
        let metrics = ReceiverMetrics()
        let receiver = NotificationReceiver(
            sink: store, policy: .replaying(), logger: Self.silent, metrics: metrics, now: { Self.receivedAt })
        let bomb = Self.x5cBomb()
        #expect(bomb.count < 1 << 20)
        let cacheBefore = receiver.evaluator.cache.heldBytes
        for n in 0..<50 {
            let answer = await receiver.handle(body: bomb, declaredLength: nil, truncated: false, peer: "203.0.113.9:\(10_000 + n)")
            #expect(answer.status == 400)
            #expect(answer.refusal == .limits)
            words.said(answer.publicReason)
        }
        // A bomb under the header limit but over the x5c count.
        let five = await receiver.handle(body: Self.x5cBomb(entries: 5), declaredLength: nil, truncated: false, peer: "203.0.113.9:9")
        #expect(five.refusal == .limits)
        words.said(five.reason)
        #expect(receiver.evaluator.cache.heldBytes == cacheBefore)
        await store.close()
        let rows = try await store.rejections()
        // 51 refusals of one class from one address in one minute: one row, counted in full.
        #expect(rows.count == 1)
        #expect(rows.first?.count == 51)
        #expect(rows.first?.kind == "limits")
        #expect(rows.first?.peer == "203.0.113.9:10000")
        let text = String(decoding: metrics.text(), as: UTF8.self)
        #expect(text.contains(#"receiptdash_notification_refusals_total{reason="limits"} 51"#))
        words.check()
    }

    // MARK: - Gates

    @Test func anotherEnvironmentIsRefused() async throws {
        let words = Wording("receiver-hostile")
        let store = try NotificationStore(path: temporaryPath()).started()
        // The default: production only. Apple's corpus here is sandbox.
        var policy = ReceiverPolicy(allowedBundleIDs: ["com.loki-project.loki-messenger"], maximumAge: nil)
        let refused = await receiver(store, policy).handle(body: try Self.genuine(), declaredLength: nil, truncated: false, peer: nil)
        #expect(refused.status == 403)
        #expect(refused.refusal == .environment)
        words.said(refused.reason)
        words.said(refused.publicReason)
        policy.environments = [.sandbox]
        let accepted = await receiver(store, policy).handle(body: try Self.genuine(), declaredLength: nil, truncated: false, peer: nil)
        #expect(accepted.status == 200)
        await store.close()
        words.check()
    }

    @Test func signedDateBounds() async throws {
        let words = Wording("receiver-hostile")
        let signer = try TestNotifications()
        let anchors = try TrustAnchors.apple.addingTestRoots([signer.pki.rootDER])
        let store = try NotificationStore(path: temporaryPath()).started()
        let policy = ReceiverPolicy(anchors: anchors, environments: [.sandbox])  // default --max-age 10d
        let receiver = receiver(store, policy)
        func post(_ uuid: String, signed: Date) async throws -> ReceiveAnswer {
            await receiver.handle(body: try signer.body(uuid: uuid, signedDate: signed), declaredLength: nil, truncated: false, peer: nil)
        }
        let future = try await post("0f000000-0000-4000-8000-00000000f001", signed: Self.receivedAt.addingTimeInterval(360))
        #expect(future.status == 403)
        #expect(future.refusal == .future)
        let skewed = try await post("0f000000-0000-4000-8000-00000000f002", signed: Self.receivedAt.addingTimeInterval(240))
        #expect(skewed.status == 200)  // within five minutes
        let stale = try await post("0f000000-0000-4000-8000-00000000f003", signed: Self.receivedAt.addingTimeInterval(-11 * 86_400))
        #expect(stale.status == 403)
        #expect(stale.refusal == .stale)
        words.said(stale.publicReason)
        let recent = try await post("0f000000-0000-4000-8000-00000000f004", signed: Self.receivedAt.addingTimeInterval(-6 * 86_400))
        #expect(recent.status == 200)
        // --max-age none: replaying a captured one.
        var replaying = policy
        replaying.maximumAge = nil
        let old = await self.receiver(store, replaying).handle(
            body: try signer.body(uuid: "0f000000-0000-4000-8000-00000000f005", signedDate: Self.receivedAt.addingTimeInterval(-400 * 86_400)),
            declaredLength: nil, truncated: false, peer: nil)
        #expect(old.status == 200)
        await store.close()
        words.check()
    }

    /// A `notificationUUID` that is not a UUID (CR/LF in it), in a notification the test root
    /// signed, is refused as every gate refuses: its class on the answer, in the metrics and on
    /// the refusal row, nothing stored. The same notification with a UUID is stored.
    @Test func aNotificationUUIDThatIsNotAUUIDIsRefused() async throws {
        let words = Wording("receiver-hostile")
        let signer = try TestNotifications()
        let anchors = try TrustAnchors.apple.addingTestRoots([signer.pki.rootDER])
        let store = try NotificationStore(path: temporaryPath()).started()
        let receiver = receiver(store, .replaying(anchors: anchors))
        let refused = await receiver.handle(
            body: try signer.body(uuid: "abc\r\ndef"), declaredLength: nil, truncated: false, peer: "192.0.2.9:4000")
        #expect(refused.status == 400)
        #expect(refused.outcome == .badRequest)
        #expect(refused.refusal == .badNotificationUUID)
        words.said(refused.publicReason)
        #expect(try await store.notifications().isEmpty)
        let rows = try await store.rejections()
        #expect(rows.map(\.kind) == ["bad-notification-uuid"])
        #expect(rows.map(\.httpStatus) == [400])
        #expect(rows.map(\.peer) == ["192.0.2.9:4000"])
        #expect(try await receiver.scrapedSamples().contains(#"receiptdash_notification_refusals_total{reason="bad-notification-uuid"} 1"#))

        let stored = await receiver.handle(
            body: try signer.body(uuid: "0f000000-0000-4000-8000-0000000000cf"), declaredLength: nil, truncated: false, peer: "192.0.2.9:4000")
        #expect(stored.outcome == .accepted)
        #expect(try await store.notifications().map(\.record.notificationUUID) == ["0f000000-0000-4000-8000-0000000000cf"])
        await store.close()
        words.check()
    }

    /// A `--root-ca` test notification claiming a genuine notification's UUID never makes
    /// the genuine delivery a redelivery: the genuine one is stored, once.
    @Test func aTestNotificationNeverShadowsAGenuineOne() async throws {
        let signer = try TestNotifications()
        let anchors = try TrustAnchors.apple.addingTestRoots([signer.pki.rootDER])
        let store = try NotificationStore(path: temporaryPath()).started()
        let receiver = receiver(store, .replaying(anchors: anchors))
        let uuid = "1a7cdc3d-9360-49c3-ae37-0423e4c6e7c7"  // session-pro_00_DID_RENEW.jws
        let test = await receiver.handle(body: try signer.body(uuid: uuid), declaredLength: nil, truncated: false, peer: nil)
        #expect(test.status == 200)
        #expect(test.verdict == "test")
        let genuine = await receiver.handle(body: try Self.genuine(), declaredLength: nil, truncated: false, peer: nil)
        #expect(genuine.outcome == .accepted)
        #expect(genuine.verdict == "valid")
        let rows = try await store.notifications()
        #expect(rows.map(\.record.verdict) == [.valid])
        #expect(rows.map(\.deliveries) == [1])
        #expect(rows.first?.record.bundleID == "com.loki-project.loki-messenger")
        // Apple delivering it again is a redelivery of the genuine row.
        let again = await receiver.handle(body: try Self.genuine(), declaredLength: nil, truncated: false, peer: nil)
        #expect(again.outcome == .redelivered)
        await store.close()
    }

    // MARK: - The trail of refusals

    @Test func refusalsAreOneRowPerClassAddressAndMinute() async throws {
        let clock = Mutex(Self.receivedAt)
        let store = try NotificationStore(path: temporaryPath()).started()
        let receiver = receiver(store, .replaying(), now: { clock.withLock { $0 } })
        for n in 0..<100 {
            _ = await receiver.handle(body: Array("junk \(n)".utf8), declaredLength: nil, truncated: false, peer: "192.0.2.1:\(5_000 + n)")
        }
        for n in 0..<7 {
            _ = await receiver.handle(body: Array("{}".utf8), declaredLength: nil, truncated: false, peer: "192.0.2.1:\(6_000 + n)")
        }
        _ = await receiver.handle(body: Array("junk".utf8), declaredLength: nil, truncated: false, peer: "192.0.2.2:7000")
        clock.withLock { $0 = $0.addingTimeInterval(60) }
        for _ in 0..<3 {
            _ = await receiver.handle(body: Array("junk".utf8), declaredLength: nil, truncated: false, peer: "192.0.2.1:8000")
        }
        await store.close()
        let rows = try await store.rejections()
        #expect(rows.map { "\($0.kind ?? "-") \($0.peer ?? "-") \($0.count)" } == [
            "not-json 192.0.2.1:5000 100", "not-a-notification 192.0.2.1:6000 7", "not-json 192.0.2.2:7000 1", "not-json 192.0.2.1:8000 3",
        ])
    }

    @Test func oldRefusalsArePrunedAndNotificationsKept() async throws {
        let path = temporaryPath()
        let first = try NotificationStore(path: path, keepRefusals: nil).started()
        let now = Date()
        for (days, peer) in [(40.0, "192.0.2.40"), (31.0, "192.0.2.31"), (2.0, "192.0.2.2")] {
            var record = RejectionRecord(
                at: now.addingTimeInterval(-days * 86_400), peer: peer, reason: "test", httpStatus: 400, bodySize: 1, body: [UInt8]())
            record.kind = "not-json"
            try await first.reject(record)
        }
        let old = await receiver(first, .replaying(), now: { now.addingTimeInterval(-90 * 86_400) })
            .handle(body: try Self.genuine(), declaredLength: nil, truncated: false, peer: nil)
        #expect(old.status == 200)
        await first.close()
        // Reopened with the default (30 days): pruned at start.
        let second = try NotificationStore(path: path).started()
        await second.close()
        #expect(try await second.rejections().map(\.peer) == ["192.0.2.2"])
        #expect(try await second.notifications().count == 1)
    }

    @Test(.timeLimit(.minutes(2))) func aFullQueueIs503WithRetryAfter() async throws {
        let store = try NotificationStore(path: temporaryPath(), startWriter: false, maximumPending: 1, keepRefusals: nil).started()
        let receiver = receiver(store, .replaying())
        let app = Application(router: receiver.router())
        try await app.test(.router) { client in
            let first = Task {
                try await client.execute(uri: "/notifications", method: .post, body: ByteBuffer(bytes: try Self.genuine())) {
                    Int($0.status.code)
                }
            }
            await store.waitUntilPending(atLeast: 1)
            try await client.execute(
                uri: "/notifications", method: .post,
                body: ByteBuffer(bytes: try Self.genuine("session-pro_03_EXPIRED_VOLUNTARY.jws"))
            ) { response in
                #expect(response.status.code == 503)
                #expect(response.headers[.retryAfter] == "10")
                #expect(ReceiverAnswerJSON(String(buffer: response.body)) == ["status": "busy", "reason": "busy: retry later"])
            }
            store.startWriting()
            #expect(try await first.value == 200)
        }
        #expect(try await store.notifications().count == 1)
        await store.close()
    }

    // MARK: - Health and metrics

    final class CountingSink: NotificationSink {
        let checks = Mutex(0)
        func append(_ record: NotificationRecord) async throws(NotificationStoreError) -> AppendOutcome { .stored }
        func reject(_ record: RejectionRecord) async throws(NotificationStoreError) {}
        func isWritable() async -> Bool {
            checks.withLock { $0 += 1 }
            return true
        }
    }

    @Test func healthAsksTheStoreAtMostOnceASecond() async throws {
        let sink = CountingSink()
        let app = Application(router: receiver(sink, .replaying()).router())
        let started = ContinuousClock.now
        try await app.test(.router) { client in
            for _ in 0..<300 {
                try await client.execute(uri: "/health", method: .get) { #expect($0.status.code == 200) }
            }
        }
        let seconds = Int(DurationText.seconds(ContinuousClock.now - started).rounded(.up))
        let checks = sink.checks.withLock { $0 }
        #expect(checks >= 1)
        #expect(checks <= seconds + 1, "\(checks) checks in \(seconds) s")
    }

    /// On real sockets: the public port serves no /metrics, the metrics listener does; slow
    /// clients are cut off after the request deadline while a genuine POST is answered.
    @Test(.timeLimit(.minutes(3))) func listenersDeadlinesAndSlowClients() async throws {
        let store = try NotificationStore(path: temporaryPath()).started()
        let receiver = receiver(store, .replaying(), now: { Date() })
        let (addresses, listening) = AsyncStream.makeStream(of: (String, String).self)
        let publicAddress = Signal<String?>(nil)
        let server = Task {
            try await receiver.run(
                // The slow clients and the genuine POST all come from 127.0.0.1: no per-address cap here.
                ReceiverListeners(
                    host: "127.0.0.1", port: 0, metrics: ("127.0.0.1", 0), maximumConnections: 512, maximumConnectionsPerAddress: 512),
                handlesSignals: false,
                onListening: { address in
                    publicAddress.update { $0 = address }
                },
                onMetricsListening: { address in
                    listening.yield(((await publicAddress.wait { $0 != nil }) ?? "", address))
                })
        }
        var iterator = addresses.makeAsyncIterator()
        let (publicPort, metricsPort) = try #require(await iterator.next())

        // 100 slow clients: each sends half a request head and then nothing.
        let group = MultiThreadedEventLoopGroup.singleton
        let host = publicPort.split(separator: ":")[0]
        let port = Int(publicPort.split(separator: ":")[1])!
        var slow: [any Channel] = []
        for _ in 0..<100 {
            let channel = try await ClientBootstrap(group: group).connect(host: String(host), port: port).get()
            // On a slow machine the server may have cut it off already: that is the point.
            try? await channel.writeAndFlush(ByteBuffer(string: "POST /notifications HTTP/1.1\r\nHost: x\r\nContent-Le")).get()
            slow.append(channel)
        }
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        var request = HTTPClientRequest(url: "http://\(publicPort)/notifications")
        request.method = .POST
        request.body = .bytes(try Self.genuine())
        let response = try await client.execute(request, timeout: .seconds(600))
        #expect(response.status.code == 200)
        let publicMetrics = try await client.execute(HTTPClientRequest(url: "http://\(publicPort)/metrics"), timeout: .seconds(600))
        #expect(publicMetrics.status.code == 404)
        let metrics = try await client.execute(HTTPClientRequest(url: "http://\(metricsPort)/metrics"), timeout: .seconds(600))
        #expect(metrics.status.code == 200)
        let text = String(buffer: try await metrics.body.collect(upTo: 1 << 20))
        #expect(text.contains(#"receiptdash_notifications_total{type="DID_RENEW",outcome="accepted"} 1"#))
        try await client.shutdown()
        // The server closes every slow one (the default deadline, 10 s; waited for within the
        // test's time limit).
        for channel in slow {
            let closed = await waitFor(channel.closeFuture) != nil
            #expect(closed)
            if !closed { try? await channel.close() }
        }
        server.cancel()
        _ = await server.result
        await store.close()
    }
}
