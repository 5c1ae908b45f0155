import AppStoreClients
@testable import AuditTrail
import Foundation
import Logging
@testable import NotificationReceiver
import OnlineRevocation
import ReceiptCore
@testable import ReceiptSimulator
import RetryEngine
import ServiceTestSupport
import Testing

/// `OnlineChecks.timeout` bounds everything one input asks: a notification and its nested
/// transaction are two checks, each of two requests (the issue: a silent responder held the
/// receiver's 503 back 30 s, 5 s per request of three chains, while the log said "within 5.0
/// seconds"). Past the bound the answer is `ocsp-timeout`, retryable, and the request is over.
@Suite("A configured OCSP bound holds against a silent responder") struct OCSPBoundTests {
    static let now = Date()
    static let uuid = "0f000000-0000-4000-8000-0000000000b1"

    /// On the test clock: the notification's chain waits out the whole 5 s bound, once; its
    /// nested transaction, judged after, has none of it left and asks nothing.
    @Test func oneBoundForANotificationAndItsNestedTransaction() async throws {
        let server = try await OCSPResponderServer.start()
        defer { Task { try? await server.stop() } }
        server.responder.set(.silent)
        let signer = try TestNotifications(ocspURL: server.url)
        let clock = TestClock()
        let checks = OnlineChecks(transport: HTTPOCSPTransport(), timeout: .seconds(5), clock: clock)
        let evaluator = TrustEvaluator(anchors: try TrustAnchors.apple.addingTestRoots([signer.pki.rootDER]))
        let report = await evaluator.evaluate(
            try ReceiptDecoder().decode(text: try signer.token(uuid: Self.uuid)), options: TrustOptions(now: Self.now, onlineChecks: checks))
        #expect(report.verdict == .unverifiable)
        #expect(report.retryable == true)
        #expect(report.online?.code == "ocsp-timeout")
        #expect(report.steps.filter { $0.kind == .nested }.map(\.outcome) == [.warning])
        #expect(clock.waits == [.seconds(5)])
        #expect(clock.elapsed == .seconds(5))
    }

    /// A real listener that accepts and never answers, a 1 s bound on the real clock, and a
    /// transport whose own backstop is an hour: the receiver answers 503 (`retry-later`), stores
    /// nothing, and the request to the responder has ended: its connection is closed.
    @Test(.timeLimit(.minutes(1))) func aSilentResponderGivesTheReceivers503AndTheRequestEnds() async throws {
        let silent = try await SilentListener.start()
        defer { Task { try? await silent.stop() } }
        let signer = try TestNotifications(ocspURL: silent.url)
        let store = try NotificationStore(
            path: FileManager.default.temporaryDirectory.appendingPathComponent("ocsp-bound-\(UUID())/audit.sqlite").path
        ).started()
        var policy = ReceiverPolicy.replaying(anchors: try TrustAnchors.apple.addingTestRoots([signer.pki.rootDER]))
        policy.onlineChecks = OnlineChecks(transport: HTTPOCSPTransport(backstop: .seconds(3600)), timeout: .seconds(1))
        let receiver = NotificationReceiver(
            sink: store, policy: policy, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        let answer = await receiver.handle(
            body: try signer.body(uuid: Self.uuid), declaredLength: nil, truncated: false, peer: "17.0.0.1:443")
        #expect(answer.status == 503)
        #expect(answer.refusal == .retryLater)
        #expect(try await store.notifications().isEmpty)
        let connections = await silent.connections.wait { $0.accepted > 0 && $0.open == 0 }
        #expect(connections.accepted > 0)
        #expect(connections.open == 0)
        await store.close()
    }
}
