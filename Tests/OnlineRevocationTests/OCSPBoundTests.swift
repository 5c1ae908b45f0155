import AppStoreClients
@testable import AuditTrail
import Foundation
import Logging
@testable import NotificationReceiver
import OnlineRevocation
import ReceiptCore
@testable import ReceiptSimulator
import ReceiptTrust
import RetryEngine
import ServiceTestSupport
import Testing

/// `OnlineChecks.timeout` bounds everything one input asks: a notification and its nested
/// transaction are two checks, each of two requests (the issue: a silent responder held the
/// receiver's 503 back 30 s, 5 s per request of three chains, while the log said "within 5.0
/// seconds"). Past the bound the answer is `ocsp-timeout`, retryable, and the request is over.
/// The same over HTTP to a real silent listener is in OCSPEndToEndTests.
@Suite("A configured OCSP bound holds against a silent responder") struct OCSPBoundTests {
    static let now = Date()
    static let uuid = "0f000000-0000-4000-8000-0000000000b1"

    /// On the test clock: the notification's chain waits out the whole 5 s bound, once; its
    /// nested transaction, judged after, has none of it left and asks nothing.
    @Test func oneBoundForANotificationAndItsNestedTransaction() async throws {
        let responder = OCSPResponder()
        responder.set(.silent)
        let signer = try TestNotifications(ocspURL: OCSPBench.url)
        let clock = TestClock()
        let checks = OnlineChecks(transport: InProcessOCSPTransport(responder), timeout: .seconds(5), clock: clock)
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
}
