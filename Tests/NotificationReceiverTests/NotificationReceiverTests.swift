import AsyncHTTPClient
@testable import AuditTrail
import Crypto
import Foundation
import GRDB
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import NIOSSL
@testable import NotificationReceiver
import AppStoreAPI
import ReceiptCore
import ReceiptSimulator
import ReceiptTrust
import ServiceTestSupport
import SwiftASN1
import Synchronization
import Testing
import X509
import TestSupport

/// The receiver's JSON answer as a dictionary of strings (nil when it is not one).
func ReceiverAnswerJSON(_ text: String) -> [String: String]? {
    (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: String]
}

/// A receiver answer's status (a code, for the test to compare), its reason said to `words`;
/// nil (and the whole text said) when it is not `{"status": …, "reason": …}`.
func ReceiverAnswerStatus(_ text: String, _ words: Wording) -> String? {
    guard let answer = ReceiverAnswerJSON(text), Set(answer.keys) == ["status", "reason"] else {
        words.said("not a receiver answer: \(text)")
        return nil
    }
    words.said(answer["reason"])
    return answer["status"]
}

extension NotificationReceiver {
    /// The samples `GET /metrics` answers (its metrics listener's route, no socket), comments left out.
    func scrapedSamples() async throws -> Set<String> {
        let text = try await Application(router: metricsRouter()).test(.router) { client in
            try await client.execute(uri: "/metrics", method: .get) { response in
                #expect(response.status.code == 200)
                #expect(response.headers[.contentType] == "text/plain; version=0.0.4; charset=utf-8")
                return String(buffer: response.body)
            }
        }
        return Set(text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map(String.init))
    }
}

/// Records what the receiver asked of its store, in order; `append` can be held at a gate.
final class RecordingSink: NotificationSink {
    private let state = Mutex<(events: [String], gate: CheckedContinuation<Void, Never>?, gateOpen: Bool)>(([], nil, true))
    /// How many appends have waited at the closed gate.
    private let held = Signal(0)
    let failing: Bool

    init(held: Bool = false, failing: Bool = false) {
        self.failing = failing
        state.withLock { $0.gateOpen = !held }
    }

    var events: [String] { state.withLock { $0.events } }
    func add(_ event: String) { state.withLock { $0.events.append(event) } }

    /// Returns once an append waits at the closed gate (or the task is cancelled).
    func waitUntilHeld() async {
        await held.wait { $0 >= 1 }
    }

    func open() {
        let waiting = state.withLock { s -> CheckedContinuation<Void, Never>? in
            s.gateOpen = true
            defer { s.gate = nil }
            return s.gate
        }
        waiting?.resume()
    }

    func append(_ record: NotificationRecord) async throws(NotificationStoreError) -> AppendOutcome {
        add("append-start")
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let open = state.withLock { s -> Bool in
                if s.gateOpen { return true }
                s.gate = continuation
                return false
            }
            if open {
                continuation.resume()
            } else {
                held.update { $0 += 1 }
            }
        }
        if failing {
            add("commit-failed")
            throw NotificationStoreError(.database, "disk I/O error")
        }
        add("committed")
        return .stored
    }

    func reject(_ record: RejectionRecord) async throws(NotificationStoreError) { add("reject \(record.httpStatus)") }
    func isWritable() async -> Bool { !failing }
}

/// Keeps every log line (message and metadata) for inspection.
final class CapturedLogs: Sendable {
    let lines = Mutex<[(level: Logger.Level, message: String, metadata: Logger.Metadata)]>([])

    var handler: @Sendable (String) -> any LogHandler {
        { _ in Handler(logs: self) }
    }

    struct Handler: LogHandler {
        let logs: CapturedLogs
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            logs.lines.withLock { $0.append((event.level, event.message.description, event.metadata ?? [:])) }
        }
    }
}

@Suite struct NotificationReceiverTests {
    static let receivedAt = Date(timeIntervalSince1970: 1_795_000_000)

    func temporaryPath() -> String {
        TemporaryFolder("receive").appending("audit.sqlite").path
    }

    func receiver(_ sink: any NotificationSink, policy: ReceiverPolicy = .replaying()) -> NotificationReceiver {
        NotificationReceiver(
            sink: sink, policy: policy, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }),
            now: { Self.receivedAt })
    }

    /// POSTs `body` through Hummingbird's router (the real route, no socket).
    func post(_ receiver: NotificationReceiver, _ body: [UInt8], headers: HTTPFields = [:]) async throws -> (Int, String) {
        let app = Application(router: receiver.router())
        return try await app.test(.router) { client in
            try await client.execute(uri: "/notifications", method: .post, headers: headers, body: ByteBuffer(bytes: body)) {
                (Int($0.status.code), String(buffer: $0.body))
            }
        }
    }

    @Test func everyGenuineCorpusNotificationIsAcceptedAsValid() async throws {
        let store = try NotificationStore(path: temporaryPath()).started()
        let receiver = receiver(store)
        let names = try NotificationFixture.names()
        #expect(names.count == 13)
        for name in names {
            let answer = await receiver.handle(
                body: NotificationFixture.body(token: try NotificationFixture.token(name)), declaredLength: nil, truncated: false,
                peer: "17.0.0.1:443")
            #expect(answer.status == 200, "\(name): \(answer.reason)")
            #expect(answer.outcome == .accepted, "\(name)")
            #expect(answer.verdict == "valid", "\(name)")
        }
        let stored = try await store.notifications()
        #expect(stored.count == 13)
        #expect(Set(stored.map(\.record.verdict)) == [.valid])
        #expect(try await store.rejections().isEmpty)
        await store.close()
    }

    @Test func storesTheExactFieldsOfOne() async throws {
        let store = try NotificationStore(path: temporaryPath()).started()
        let token = try NotificationFixture.token("session-pro_00_DID_RENEW.jws")
        let (status, text) = try await post(
            receiver(store, policy: ReceiverPolicy.replaying(allowedBundleIDs: ["com.loki-project.loki-messenger"], appAppleID: 1_470_168_868)),
            NotificationFixture.body(token: token))
        #expect(status == 200, "\(text)")
        let rows = try await store.notifications()
        #expect(rows.count == 1)
        #expect(rows.first?.deliveries == 1)
        #expect(
            rows.first?.record
                == NotificationRecord(
                    notificationUUID: "1a7cdc3d-9360-49c3-ae37-0423e4c6e7c7", version: .v2, notificationType: "DID_RENEW", subtype: nil,
                    bundleID: "com.loki-project.loki-messenger", appAppleID: 1_470_168_868, environment: "Sandbox",
                    signedDate: Date(timeIntervalSince1970: 1_759_302_518.835), receivedAt: Self.receivedAt, verdict: .valid,
                    reason: nil, transactionID: "2000001024998954", originalTransactionID: "2000001024993299",
                    productID: "com.getsession.org.pro_sub", peer: nil, signedPayload: token, appTransactionID: "704897469903383919"))
        await store.close()
    }

    @Test func testSignedNotificationIsTestWithRootCAAndRefusedWithout() async throws {
        let signer = try TestNotifications()
        let body = try signer.body(uuid: "0f000000-0000-4000-8000-000000000001")

        let trusting = try NotificationStore(path: temporaryPath()).started()
        let anchors = try TrustAnchors.apple.addingTestRoots([signer.pki.rootDER])
        let accepted = await receiver(trusting, policy: ReceiverPolicy.replaying(anchors: anchors))
            .handle(body: body, declaredLength: nil, truncated: false, peer: nil)
        #expect(accepted.status == 200, "\(accepted.reason)")
        #expect(accepted.verdict == "test")
        #expect(try await trusting.notifications().map(\.record.verdict) == [.test])
        #expect(try await trusting.notifications().first?.record.transactionID == "7100000000000001")
        await trusting.close()

        let strict = try NotificationStore(path: temporaryPath()).started()
        let refused = await receiver(strict).handle(body: body, declaredLength: nil, truncated: false, peer: "198.51.100.7:5000")
        #expect(refused.status == 403)
        #expect(refused.outcome == .refused)
        #expect(refused.reason.hasPrefix("root: "), "\(refused.reason)")
        #expect(try await strict.notifications().isEmpty)
        let rejections = try await strict.rejections()
        #expect(rejections.map(\.httpStatus) == [403])
        #expect(rejections.first?.reason == refused.reason)
        #expect(rejections.first?.peer == "198.51.100.7:5000")
        #expect(rejections.first?.bodySize == body.count)
        #expect(rejections.first?.bodyPrefix?.utf8.count == RejectionRecord.maximumPrefix)
        await strict.close()
    }

    @Test func wrongBundleIsRefusedNamingTheBundle() async throws {
        let words = Wording("notification-receiver")
        let store = try NotificationStore(path: temporaryPath()).started()
        let (status, text) = try await post(
            receiver(store, policy: ReceiverPolicy.replaying(allowedBundleIDs: ["com.example.ours", "com.example.other"])),
            NotificationFixture.body(token: try NotificationFixture.token("session-pro_03_EXPIRED_VOLUNTARY.jws")))
        #expect(status == 403)
        // The client is told the class; the configured list stays in the refusal row.
        #expect(ReceiverAnswerStatus(text, words) == "refused")
        #expect(try await store.notifications().isEmpty)
        words.said(try await store.rejections().map(\.reason))
        await store.close()
        words.check()
    }

    @Test func wrongAppAppleIDIsRefused() async throws {
        let store = try NotificationStore(path: temporaryPath()).started()
        let answer = await receiver(store, policy: ReceiverPolicy.replaying(appAppleID: 1))
            .handle(
                body: NotificationFixture.body(token: try NotificationFixture.token("session-pro_00_DID_RENEW.jws")), declaredLength: nil,
                truncated: false, peer: nil)
        #expect(answer.status == 403)
        #expect(answer.reason == "app: appAppleId is 1470168868, not --app-apple-id 1")
        await store.close()
    }

    @Test func aRedeliveryIsOneRowWithTwoDeliveries() async throws {
        let store = try NotificationStore(path: temporaryPath()).started()
        let receiver = receiver(store)
        let body = NotificationFixture.body(token: try NotificationFixture.token("session-pro_07_DID_CHANGE_RENEWAL_PREF_DOWNGRADE.jws"))
        let first = await receiver.handle(body: body, declaredLength: nil, truncated: false, peer: nil)
        let second = await receiver.handle(body: body, declaredLength: nil, truncated: false, peer: nil)
        #expect(first.status == 200)
        #expect(second.status == 200)
        #expect(first.outcome == .accepted)
        #expect(second.outcome == .redelivered)
        let rows = try await store.notifications()
        #expect(rows.map(\.record.notificationUUID) == ["01c574dc-64b7-45d3-889a-5fdcb08fb5c0"])
        #expect(rows.map(\.deliveries) == [2])
        await store.close()
    }

    @Test func badBodiesAre400AndRecorded() async throws {
        let words = Wording("notification-receiver")
        let store = try NotificationStore(path: temporaryPath()).started()
        let receiver = receiver(store)
        let notJSON = try await post(receiver, Array("signedPayload=abc".utf8))
        #expect(notJSON.0 == 400)
        words.said(notJSON.1)
        let noPayload = try await post(receiver, Array(#"{"notificationType":"TEST"}"#.utf8))
        #expect(noPayload.0 == 400)
        #expect(ReceiverAnswerStatus(noPayload.1, words) == "bad-request")
        let notAToken = try await post(receiver, Array(#"{"signedPayload":"not.a.token"}"#.utf8))
        #expect(notAToken.0 == 400)
        #expect(try await store.rejections().map(\.httpStatus) == [400, 400, 400])
        #expect(try await store.rejections().first?.bodyPrefix == "signedPayload=abc")
        #expect(try await store.notifications().isEmpty)
        await store.close()
        words.check()
    }

    @Test func aTwoMebibyteBodyIs413() async throws {
        let store = try NotificationStore(path: temporaryPath()).started()
        let big = [UInt8](repeating: 0x20, count: 2 << 20)
        // With a Content-Length over the limit: answered before any of it is read.
        let declared = try await post(receiver(store), big, headers: [.contentLength: "\(big.count)"])
        #expect(declared.0 == 413)
        let rejections = try await store.rejections()
        #expect(rejections.map(\.httpStatus) == [413])
        #expect(rejections.map(\.bodySize) == [2 << 20])
        #expect(rejections.map(\.bodyPrefix) == [nil])  // nothing kept of a body never read
        await store.close()
    }

    @Test func aStreamedBodyIsReadOnlyUpToTheLimit() async throws {
        // A chunked body (no Content-Length): 64 KiB chunks, 2 MiB in all, limit 1 MiB.
        let chunks = (0..<32).map { _ in ByteBuffer(bytes: [UInt8](repeating: 0x20, count: 64 << 10)) }
        let pulled = Mutex(0)
        let stream = AsyncStream<ByteBuffer> { continuation in
            for chunk in chunks { continuation.yield(chunk) }
            continuation.finish()
        }.map { chunk in
            pulled.withLock { $0 += 1 }
            return chunk
        }
        let (bytes, truncated) = try await NotificationReceiver.read(RequestBody(asyncSequence: stream), limit: 1 << 20)
        #expect(truncated)
        #expect(bytes.count == 1 << 20)
        #expect(pulled.withLock { $0 } == 17)  // 16 chunks kept, the 17th went over: the other 15 never read
        let (small, whole) = try await NotificationReceiver.read(RequestBody(buffer: ByteBuffer(string: "{}")), limit: 1 << 20)
        #expect(small == Array("{}".utf8))
        #expect(!whole)
    }

    @Test func aV1BodyIsStoredWithoutItsPassword() async throws {
        let path = temporaryPath()
        let store = try NotificationStore(path: path).started()
        let body = [UInt8](try Data(contentsOf: ServiceFixture.folder.appendingPathComponent("notification-v1.json")))
        let answer = await receiver(store, policy: .replaying(v1SharedSecret: AppStoreAPI.SharedSecret("dummy_shared_secret")))
            .handle(body: body, declaredLength: nil, truncated: false, peer: nil)
        #expect(answer.status == 200, "\(answer.reason)")
        #expect(answer.verdict == "unverifiable")
        let rows = try await store.notifications()
        #expect(rows.count == 1)
        #expect(rows.first?.record.version == .v1)
        #expect(rows.first?.record.notificationType == "DID_RENEW")
        #expect(rows.first?.record.notificationUUID.hasPrefix("v1:") == true)
        #expect(rows.first?.record.signedPayload == nil)
        // Refused too (wrong bundle), a V1 body keeps no prefix: it carries the shared secret.
        let refused = await receiver(
            store, policy: .replaying(allowedBundleIDs: ["com.example.none"], v1SharedSecret: AppStoreAPI.SharedSecret("dummy_shared_secret"))
        ).handle(body: body, declaredLength: nil, truncated: false, peer: nil)
        #expect(refused.status == 403)
        #expect(try await store.rejections().map(\.bodyPrefix) == [nil])
        await store.close()
        let file = try Data(contentsOf: URL(fileURLWithPath: path)) + ((try? Data(contentsOf: URL(fileURLWithPath: path + "-wal"))) ?? Data())
        #expect(file.range(of: Data("dummy_shared_secret".utf8)) == nil)
    }

    @Test(.timeLimit(.minutes(2))) func fiftyConcurrentPostsAreAllDurableInOneGroupCommit() async throws {
        let store = try NotificationStore(path: temporaryPath(), startWriter: false, keepRefusals: nil).started()
        let signer = try TestNotifications()
        let anchors = try TrustAnchors.apple.addingTestRoots([signer.pki.rootDER])
        let bodies = try (0..<50).map { try signer.body(uuid: String(format: "0f000000-0000-4000-8000-%012d", $0)) }
        let app = Application(router: receiver(store, policy: ReceiverPolicy.replaying(anchors: anchors)).router())
        let statuses = try await app.test(.router) { client in
            try await withThrowingTaskGroup(of: Int.self) { group in
                for body in bodies {
                    group.addTask {
                        try await client.execute(uri: "/notifications", method: .post, body: ByteBuffer(bytes: body)) { Int($0.status.code) }
                    }
                }
                // Every request verified and waiting on the held writer: none answered yet.
                await store.waitUntilPending(atLeast: 50)
                #expect(store.pendingCount == 50)
                #expect(store.commitCount == 0)
                store.startWriting()
                var statuses: [Int] = []
                for try await status in group { statuses.append(status) }
                return statuses
            }
        }
        #expect(statuses == Array(repeating: 200, count: 50))
        #expect(try await store.notifications().count == 50)
        #expect(store.commitCount == 1)
        #expect(try store.synchronousMode() == 2)  // FULL: the WAL is fsynced at that one commit
        await store.close()
    }

    @Test(.timeLimit(.minutes(2))) func theAnswerWaitsForTheCommit() async throws {
        let sink = RecordingSink(held: true)
        let app = Application(router: receiver(sink).router())
        let body = NotificationFixture.body(token: try NotificationFixture.token("session-pro_00_DID_RENEW.jws"))
        try await app.test(.router) { client in
            let request = Task {
                let status = try await client.execute(uri: "/notifications", method: .post, body: ByteBuffer(bytes: body)) {
                    Int($0.status.code)
                }
                sink.add("responded \(status)")
            }
            await sink.waitUntilHeld()
            #expect(sink.events == ["append-start"])
            sink.open()
            try await request.value
        }
        #expect(sink.events == ["append-start", "committed", "responded 200"])
    }

    @Test func oneEscapedLogLinePerNotification() async throws {
        let signer = try TestNotifications()
        let logs = CapturedLogs()
        let store = try NotificationStore(path: temporaryPath()).started()
        let receiver = NotificationReceiver(
            sink: store, policy: ReceiverPolicy.replaying(anchors: try TrustAnchors.apple.addingTestRoots([signer.pki.rootDER])),
            logger: Logger(label: "test", factory: logs.handler), now: { Self.receivedAt })
        let body = try signer.body(uuid: "0f000000-0000-4000-8000-00000000001b", type: "DID_RENEW\u{1B}]0;pwned\u{07}")
        let answer = await receiver.handle(body: body, declaredLength: nil, truncated: false, peer: "192.0.2.9:1234")
        #expect(answer.status == 200)
        let lines = logs.lines.withLock { $0 }
        #expect(lines.count == 1)
        #expect(lines.first?.message == "notification")
        let metadata = lines.first?.metadata ?? [:]
        #expect(metadata["type"]?.description == "DID_RENEW\\x1b]0;pwned\\x07")
        #expect(metadata["uuid"]?.description == "0f000000-0000-4000-8000-00000000001b")
        #expect(metadata["subtype"]?.description == "-")
        #expect(metadata["outcome"]?.description == "accepted")
        #expect(metadata["peer"]?.description == "192.0.2.9:1234")
        #expect(metadata["latency_ms"] != nil)
        // The stored row keeps the text as Apple (here: the test signer) sent it; printing escapes it.
        #expect(try await store.notifications().first?.record.notificationType == "DID_RENEW\u{1B}]0;pwned\u{07}")
        await store.close()
    }

    @Test func aFailedCommitIsNever200() async throws {
        let sink = RecordingSink(failing: true)
        let (status, text) = try await post(
            receiver(sink), NotificationFixture.body(token: try NotificationFixture.token("session-pro_00_DID_RENEW.jws")))
        #expect(status == 503)
        // Generic: the store's own words stay in the log.
        #expect(ReceiverAnswerJSON(text) == ["status": "store-failed", "reason": "store unavailable: retry later"])
        #expect(sink.events == ["append-start", "commit-failed"])
    }

    @Test func healthIs200WhileWritableAnd503AfterClose() async throws {
        let store = try NotificationStore(path: temporaryPath()).started()
        // Asked afresh each time here (the default keeps an answer for a second).
        let receiver = NotificationReceiver(
            sink: store, policy: .replaying(), logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }),
            healthInterval: .zero)
        let app = Application(router: receiver.router())
        let words = Wording("receiver-health")
        @Sendable func said(_ response: TestResponse) -> String? {
            let body = try? JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: String]
            words.said(body?["reason"])
            return body?["store"]
        }
        try await app.test(.router) { client in
            try await client.execute(uri: "/health", method: .get) {
                #expect($0.status.code == 200)
                #expect(said($0) == "writable")
            }
            await store.close()
            try await client.execute(uri: "/health", method: .get) {
                #expect($0.status.code == 503)
                #expect(said($0) == "not-writable")
            }
            // And a notification after close is not acknowledged.
            try await client.execute(
                uri: "/notifications", method: .post,
                body: ByteBuffer(bytes: NotificationFixture.body(token: try NotificationFixture.token("session-pro_00_DID_RENEW.jws")))
            ) { #expect($0.status.code == 503) }
        }
        words.check()
    }

    /// `GET /metrics`: counts by type and outcome, a redelivery counted, latency histograms; a
    /// type Apple does not document is counted as `other`, never echoed into a label.
    @Test func metricsCountTypesOutcomesAndRedeliveries() async throws {
        let store = try NotificationStore(path: temporaryPath()).started()
        let receiver = receiver(store)
        let app = Application(router: receiver.router())
        let renew = NotificationFixture.body(token: try NotificationFixture.token("session-pro_00_DID_RENEW.jws"))
        try await app.test(.router) { client in
            for body in [renew, renew, Array("{\"signedPayload\": 1}".utf8), Array("not json".utf8)] {
                try await client.execute(uri: "/notifications", method: .post, body: ByteBuffer(bytes: body)) { _ in }
            }
            // Not on the public port.
            try await client.execute(uri: "/metrics", method: .get) { #expect($0.status.code == 404) }
        }
        let samples = try await receiver.scrapedSamples()
        #expect(samples.contains(#"receiptdash_notifications_total{type="DID_RENEW",outcome="accepted"} 1"#))
        #expect(samples.contains(#"receiptdash_notifications_total{type="DID_RENEW",outcome="redelivered"} 1"#))
        #expect(samples.contains(#"receiptdash_notifications_total{type="none",outcome="bad-request"} 2"#))
        #expect(samples.contains("receiptdash_notification_redeliveries_total 1"))
        #expect(samples.contains("receiptdash_notification_request_seconds_count 4"))
        #expect(samples.contains("receiptdash_notification_commit_seconds_count 2"))
        #expect(samples.contains(#"receiptdash_notification_refusals_total{reason="undecodable"} 1"#))
        #expect(samples.contains(#"receiptdash_notification_refusals_total{reason="not-json"} 1"#))
        await store.close()
    }

    @Test func unknownTypesAreCountedAsOther() {
        let metrics = ReceiverMetrics()
        metrics.finished(type: "EVIL\",x=\"1", outcome: .refused, refusal: .signature, request: .milliseconds(3), verify: .milliseconds(1), commit: nil)
        let text = String(decoding: metrics.text(), as: UTF8.self)
        #expect(text.contains(#"receiptdash_notifications_total{type="other",outcome="refused"} 1"#))
        #expect(!text.contains("EVIL"))
    }

    /// `--tls-cert/--tls-key`: the receiver on a real loopback socket serves HTTPS with the
    /// given PEM files, and a client that trusts their CA gets the notification stored.
    @Test func servesHTTPSWithTheGivenCertificate() async throws {
        let folder = TemporaryFolder("receive-tls").url
        let (ca, leaf, leafKey) = try TestPKI.tls(caName: "receiptdash receiver test CA")
        let certFile = folder.appendingPathComponent("cert.pem").path
        let keyFile = folder.appendingPathComponent("key.pem").path
        try leaf.serializeAsPEM().pemString.write(toFile: certFile, atomically: true, encoding: .utf8)
        try leafKey.pemRepresentation.write(toFile: keyFile, atomically: true, encoding: .utf8)

        let store = try NotificationStore(path: temporaryPath()).started()
        let receiver = receiver(store)
        let (addresses, listening) = AsyncStream.makeStream(of: String.self)
        let server = Task {
            try await receiver.run(host: "127.0.0.1", port: 0, tls: try ReceiverTLS(certificateFile: certFile, keyFile: keyFile)) {
                listening.yield($0)
            }
        }
        var iterator = addresses.makeAsyncIterator()
        let address = try #require(await iterator.next())

        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates([try NIOSSLCertificate(bytes: Array(ca.serializeAsPEM().derBytes), format: .der)])
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
        var request = HTTPClientRequest(url: "https://\(address)/notifications")
        request.method = .POST
        request.body = .bytes(NotificationFixture.body(token: try NotificationFixture.token("session-pro_00_DID_RENEW.jws")))
        let response = try await client.execute(request, timeout: .seconds(600))
        #expect(response.status.code == 200)
        try await client.shutdown()
        #expect(try await store.notifications().map(\.record.notificationType) == ["DID_RENEW"])
        server.cancel()
        _ = await server.result
        await store.close()

        #expect(throws: NotificationStoreError(.open, "")) {
            try ReceiverTLS(certificateFile: keyFile, keyFile: keyFile)
        }
    }
}
