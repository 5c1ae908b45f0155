import AuditTrail
import AuditTrailSQLite
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
@testable import NotificationReceiver
import ReceiptCore
import ReceiptSimulator
import ReceiptTrust
import RetentionRules
import ServiceTestSupport
import Testing
import TestSupport

/// The receiver answers Retention Messaging realtime requests as Apple expects: a verified one
/// by its rules and the trail's facts, recorded; a forged, stale or wrong-app one refused with
/// no offer in it.
@Suite struct RetentionResponderTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let appID: Int64 = 531_412
    static let message = "8D5A1C2E-4B6F-4E21-9A3B-5C7D9E1F2A3B"
    static let yearlyMessage = "0F1E2D3C-4B5A-4968-8776-A5B4C3D2E1F0"
    static let rulesText = """
        [[rule]]
        name = "faithful, never refunded"
        product = "com.example.monthly*"
        locale = "fr"
        refunds = "0"
        months_subscribed = ">= 6"
        answer = "alternate-product"
        message = "\(yearlyMessage)"
        alternate_product = "com.example.yearly"

        [[rule]]
        name = "english speakers"
        locale = "en"
        answer = "message"
        message = "\(message)"
        """

    struct Fixture {
        let pki: AppleTestPKI
        let store: AuditStore
        let receiver: NotificationReceiver
        let sink: RecordingSink
        let metrics: ReceiverMetrics
        let folder: TemporaryFolder

        init(appID: Int64? = RetentionResponderTests.appID) throws {
            pki = try AppleTestPKI()
            folder = TemporaryFolder("retention")
            store = try AuditStore(path: folder.path + "/trail.sqlite")
            sink = RecordingSink()
            metrics = ReceiverMetrics()
            var policy = ReceiverPolicy.replaying(appAppleID: appID, anchors: try TrustAnchors.apple.addingTestRoots([pki.rootDER]))
            policy.maximumClockSkew = .seconds(300)
            var receiver = NotificationReceiver(
                sink: sink, policy: policy, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), metrics: metrics,
                now: { RetentionResponderTests.now })
            receiver.retention = RetentionResponder(
                path: "/retention", rules: try RetentionRules.parse(RetentionResponderTests.rulesText, path: "rules.toml"), signer: nil, trail: store,
                metrics: RetentionMetrics(registry: metrics.registry))
            self.receiver = receiver
        }

        /// `{"signedPayload": …}` of a realtime request signed by `pki` (the fixture's own by default).
        func body(
            original: String = "2000000123", product: String = "com.example.monthly", locale: String = "fr-CA", app: Int64 = RetentionResponderTests.appID,
            environment: String = "Production", signed: Date = RetentionResponderTests.now, requestID: String = "3db5c98d-8acf-4e29-831e-8e1f82f9f6e9",
            by signer: AppleTestPKI? = nil
        ) throws -> [UInt8] {
            let token = try (signer ?? pki).signJWS(payload: [
                "originalTransactionId": original, "appAppleId": app, "productId": product, "userLocale": locale, "requestIdentifier": requestID,
                "environment": environment, "signedDate": Int64(signed.timeIntervalSince1970 * 1000),
            ])
            return Array("{\"signedPayload\":\"\(token)\"}".utf8)
        }

        /// What the trail knows: the customer's first notification 200 days before now.
        func seedCustomer(refund: Bool = false) async throws {
            var writes: [NotificationWrite] = [
                .notification(
                    NotificationRecord(
                        notificationUUID: "6b8f7c2a-0000-4000-8000-000000000001", version: .v2, notificationType: "SUBSCRIBED", environment: "Production",
                        signedDate: RetentionResponderTests.now.addingTimeInterval(-200 * 86_400), receivedAt: RetentionResponderTests.now,
                        verdict: .valid, transactionID: "2000000123", originalTransactionID: "2000000123", productID: "com.example.monthly"))
            ]
            if refund {
                writes.append(
                    .notification(
                        NotificationRecord(
                            notificationUUID: "6b8f7c2a-0000-4000-8000-000000000002", version: .v2, notificationType: "REFUND", environment: "Production",
                            signedDate: RetentionResponderTests.now.addingTimeInterval(-10 * 86_400), receivedAt: RetentionResponderTests.now,
                            verdict: .valid, transactionID: "2000000456", originalTransactionID: "2000000123", productID: "com.example.monthly")))
            }
            _ = try await store.writeNotifications(writes)
        }

        func approveAll() async throws {
            let items = [RetentionResponderTests.message, RetentionResponderTests.yearlyMessage].map {
                RetentionContentItem(kind: .message, identifier: $0, state: "APPROVED", observedAt: RetentionResponderTests.now)
            }
            try await store.recordRetentionContent(items, kind: .message, environment: "Production")
        }

        func post(_ body: [UInt8]) async throws -> (Int, String) {
            let app = Application(router: receiver.router())
            return try await app.test(.router) { client in
                try await client.execute(uri: "/retention", method: .post, body: ByteBuffer(bytes: body)) {
                    ($0.status.code, String(buffer: $0.body))
                }
            }
        }
    }

    @Test func aVerifiedRequestIsAnsweredByTheFirstRuleThatMatchesAndRecorded() async throws {
        let f = try Fixture()
        defer { f.folder.remove() }
        try await f.seedCustomer()
        try await f.approveAll()
        let (status, body) = try await f.post(try f.body())
        #expect(status == 200)
        #expect(body == #"{"alternateProduct":{"messageIdentifier":"0F1E2D3C-4B5A-4968-8776-A5B4C3D2E1F0","productId":"com.example.yearly"}}"#)
        let recorded = try await f.store.retentionRequests(RetentionQuery())
        #expect(recorded.count == 1)
        let r = try #require(recorded.first)
        #expect(r.result == .offered && r.rule == "faithful, never refunded" && r.answerKind == "alternate-product")
        #expect(r.requestIdentifier == "3db5c98d-8acf-4e29-831e-8e1f82f9f6e9" && r.originalTransactionID == "2000000123" && r.locale == "fr-CA")
        #expect(r.messageIdentifier == Self.yearlyMessage && r.answer == body && r.appAppleID == Self.appID && r.environment == "Production")
        let samples = try await f.receiver.scrapedSamples()
        #expect(samples.contains(#"receiptdash_retention_requests_total{result="offered"} 1"#))
        #expect(samples.contains(#"receiptdash_retention_answer_seconds_count 1"#))
        #expect(f.sink.events.isEmpty)
    }

    @Test func theTrailsFactsDecide() async throws {
        let f = try Fixture()
        defer { f.folder.remove() }
        try await f.seedCustomer(refund: true)
        try await f.approveAll()
        // Refunded once: the first rule does not match, and nothing else covers fr.
        let (status, body) = try await f.post(try f.body())
        #expect(status == 200 && body == "{}")
        // Unknown to the trail: months subscribed is not guessed, so neither.
        let (_, unknown) = try await f.post(try f.body(original: "2000000999", requestID: "3db5c98d-8acf-4e29-831e-8e1f82f9f6ea"))
        #expect(unknown == "{}")
        let (_, english) = try await f.post(try f.body(locale: "en-GB", requestID: "3db5c98d-8acf-4e29-831e-8e1f82f9f6eb"))
        #expect(english == #"{"message":{"messageIdentifier":"8D5A1C2E-4B6F-4E21-9A3B-5C7D9E1F2A3B"}}"#)
        let results = try await f.store.retentionRequests(RetentionQuery()).map(\.result)
        #expect(results == [.noMatch, .noMatch, .offered])
        let samples = try await f.receiver.scrapedSamples()
        #expect(samples.contains(#"receiptdash_retention_requests_total{result="no-match"} 2"#))
    }

    @Test func aMessageNotKnownAsApprovedIsNotNamed() async throws {
        let f = try Fixture()
        defer { f.folder.remove() }
        try await f.seedCustomer()
        try await f.store.recordRetentionContent(
            [RetentionContentItem(kind: .message, identifier: Self.yearlyMessage.lowercased(), state: "PENDING", observedAt: Self.now)], kind: .message,
            environment: "Production")
        let (status, body) = try await f.post(try f.body())
        #expect(status == 200 && body == "{}")
        let rows = try await f.store.retentionRequests(RetentionQuery())
        let r = try #require(rows.first)
        #expect(r.result == .notApproved && r.rule == "faithful, never refunded")
    }

    struct Refusal: CustomTestStringConvertible, Sendable {
        var label: String
        var kind: RefusalKind
        var testDescription: String { label }
    }

    static let refusals = [
        Refusal(label: "forged", kind: .signature), Refusal(label: "expired", kind: .stale), Refusal(label: "wrong app", kind: .app),
        Refusal(label: "sandbox at a production receiver", kind: .environment), Refusal(label: "a notification", kind: .notRealtimeRequest),
        Refusal(label: "request id not a UUID", kind: .badRequestIdentifier),
    ]

    @Test(arguments: refusals) func aRequestThatFailsACheckGetsNoOffer(_ refusal: Refusal) async throws {
        var f = try Fixture()
        defer { f.folder.remove() }
        if refusal.kind == .environment {
            var policy = f.receiver.policy
            policy.environments = [.production]
            var receiver = NotificationReceiver(sink: f.sink, policy: policy, metrics: f.metrics, now: { Self.now })
            receiver.retention = f.receiver.retention
            f = Fixture(copying: f, receiver: receiver)
        }
        try await f.seedCustomer()
        try await f.approveAll()
        let body: [UInt8]
        switch refusal.kind {
        case .signature: body = try f.body(by: try AppleTestPKI())
        case .stale: body = try f.body(signed: Self.now.addingTimeInterval(-600))
        case .app: body = try f.body(app: 1)
        case .environment: body = try f.body(environment: "Sandbox")
        case .badRequestIdentifier: body = try f.body(requestID: "not-a-uuid")
        default:
            let token = try f.pki.signJWS(payload: ["notificationType": "DID_RENEW", "notificationUUID": UUID().uuidString, "data": ["environment": "Production"]])
            body = Array("{\"signedPayload\":\"\(token)\"}".utf8)
        }
        let (status, answer) = try await f.post(body)
        #expect(status == refusal.kind.status)
        let json = try #require(ReceiverAnswerJSON(answer))
        #expect(Set(json.keys) == ["status", "reason"])
        #expect(!answer.contains("messageIdentifier"))
        #expect(try await f.store.retentionRequests(RetentionQuery()).isEmpty)
        #expect(f.sink.events == ["reject \(refusal.kind.status)"])
        let samples = try await f.receiver.scrapedSamples()
        #expect(samples.contains(#"receiptdash_retention_requests_total{result="refused"} 1"#))
    }

    @Test func aBodyOverTheLimitIsNotRead() async throws {
        let f = try Fixture()
        defer { f.folder.remove() }
        let answer = await f.receiver.handleRealtime(
            body: [], declaredLength: ReceiverPolicy.defaultMaximumBodySize + 1, truncated: true, peer: "127.0.0.1:1")
        #expect(answer.status == 413 && answer.refusal == .tooLarge)
    }
}

extension RetentionResponderTests.Fixture {
    init(copying f: Self, receiver: NotificationReceiver) {
        pki = f.pki
        store = f.store
        sink = f.sink
        metrics = f.metrics
        folder = f.folder
        self.receiver = receiver
    }
}
