import AppStoreClients
@testable import AuditTrail
import Foundation
import Logging
@testable import NotificationReceiver
import OnlineRevocation
import ReceiptCore
@testable import ReceiptSimulator
import ReceiptTrust
import ServiceTestSupport
import Testing
import TestSupport

/// Online checks over the network as the product asks: AsyncHTTPClient (`HTTPOCSPTransport`) to
/// the simulator's OCSP responder on loopback, to a port nobody listens on, and to a listener
/// that never answers. The rest of the OCSP tests ask the responder in process; these few, in a
/// target of their own, are the only ones where swift-certificates' fixed 10 s wall-clock
/// watchdog and a busy machine can meet.
@Suite("OCSP over HTTP, end to end") struct OCSPEndToEndTests {
    static let now = Date()
    static let uuid = "0f000000-0000-4000-8000-0000000000e2"

    /// A token of `pki` judged with online checks over HTTP, on a clock where the 5 s bound
    /// never passes.
    func judge(_ pki: AppleTestPKI) async throws -> TrustReport {
        let token = try pki.signJWS(payload: [
            "transactionId": "7100000000000002", "originalTransactionId": "7100000000000000", "productId": "pro.monthly",
            "bundleId": "com.example.ocsp", "environment": "Production", "purchaseDate": 1_790_000_000_000,
            "signedDate": 1_790_000_000_000, "type": "Auto-Renewable Subscription",
        ])
        let evaluator = TrustEvaluator(anchors: try TrustAnchors.apple.addingTestRoots([pki.rootDER]))
        let checks = OnlineChecks(transport: HTTPOCSPTransport(), timeout: .seconds(5), clock: StillClock())
        return await evaluator.evaluate(try ReceiptDecoder().decode(text: token), options: TrustOptions(now: Self.now, onlineChecks: checks))
    }

    /// Good answers about the leaf and the intermediate, posted and read over HTTP.
    @Test func goodAnswersOverHTTPPass() async throws {
        let server = try await OCSPResponderServer.start()
        let pki = try AppleTestPKI(ocspURL: server.url)
        server.responder.serve(pki)
        let report = try await judge(pki)
        try await server.stop()
        #expect(report.verdict == .test)
        #expect(report.online?.code == "ocsp-good")
        #expect(server.responder.requestCount == 2)
    }

    /// A responder URL on a port nobody listens on (a server started and stopped): refused at
    /// once, retryable, never valid nor invalid.
    @Test func aPortNobodyListensOnIsUnreachable() async throws {
        let closed = try await OCSPResponderServer.start()
        let url = closed.url
        try await closed.stop()
        let report = try await judge(try AppleTestPKI(ocspURL: url))
        #expect(report.verdict == .unverifiable)
        #expect(report.retryable == true)
        #expect(report.online?.code == "ocsp-unreachable")
        #expect(report.detail("certificate") == "leaf")
    }

    /// A real listener that accepts and never answers, a 1 s bound on the real clock, and a
    /// transport whose own backstop is an hour: the receiver answers 503 (`retry-later`), stores
    /// nothing, and the request to the responder has ended: its connection is closed.
    @Test(.timeLimit(.minutes(5))) func aSilentResponderGivesTheReceivers503AndTheRequestEnds() async throws {
        let silent = try await SilentListener.start()
        defer { Task { try? await silent.stop() } }
        let signer = try TestNotifications(ocspURL: silent.url)
        let store = try NotificationStore(
            path: TemporaryFolder("ocsp-bound").appending("audit.sqlite").path
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

extension TrustReport {
    var online: Step? { steps.first { $0.kind == .onlineCheck } }
    func detail(_ name: String) -> String? { online?.details.first { $0.name == name }?.value }
}
