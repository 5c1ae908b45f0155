import AppStoreClients
import AsyncHTTPClient
@testable import AuditTrail
import Foundation
import Logging
import NIOCore
import NIOPosix
@testable import NotificationReceiver
import OnlineRevocation
import ReceiptRendering
import ReceiptCore
@testable import ReceiptSimulator
import ReceiptTrust
import RetryEngine
import ServiceTestSupport
import Testing
import TestSupport

/// The simulator's PKI and its OCSP responder, asked in process (``InProcessOCSPTransport``):
/// an answer comes at once, so no check is late because the machine is busy. The HTTP path
/// itself is tested once, end to end, in OCSPEndToEndTests.
struct OCSPBench {
    let responder: OCSPResponder
    let pki: AppleTestPKI
    let evaluator: TrustEvaluator
    /// The tests' "now" (online checks judge the chain and the answers at it).
    static let now = Date()
    /// The responder URL the certificates name (asked in process: nothing listens there).
    static let url = "http://ocsp.receiptdash.invalid/ocsp"

    static func start() async throws -> OCSPBench {
        let responder = OCSPResponder()
        let pki = try AppleTestPKI(ocspURL: url)
        responder.serve(pki)
        return OCSPBench(responder: responder, pki: pki, evaluator: TrustEvaluator(anchors: try TrustAnchors.apple.addingTestRoots([pki.rootDER])))
    }

    func decoded() throws -> DecodedInput {
        let token = try pki.signJWS(payload: [
            "transactionId": "7100000000000001", "originalTransactionId": "7100000000000000", "productId": "pro.monthly",
            "bundleId": "com.example.ocsp", "environment": "Production", "purchaseDate": 1_790_000_000_000,
            "signedDate": 1_790_000_000_000, "type": "Auto-Renewable Subscription",
        ])
        return try ReceiptDecoder().decode(text: token)
    }

    /// Checks whose timeout never fires unless a test gives a clock that moves: an answer is
    /// never late because the machine is busy.
    func checks(timeout: Duration = .seconds(5), clock: any Clock<Duration> = StillClock()) -> OnlineChecks {
        OnlineChecks(transport: InProcessOCSPTransport(responder), timeout: timeout, clock: clock)
    }

    func judge(_ checks: OnlineChecks?) async throws -> TrustReport {
        await evaluator.evaluate(try decoded(), options: TrustOptions(now: Self.now, onlineChecks: checks))
    }
}

extension TrustReport {
    var online: Step? { steps.first { $0.kind == .onlineCheck } }
    func detail(_ name: String) -> String? { online?.details.first { $0.name == name }?.value }
}

@Suite("Online checks: OCSP about the JWS leaf and intermediate") struct OnlineChecksTests {
    @Test func goodAnswersPassAndAreKeptUntilNextUpdate() async throws {
        let bench = try await OCSPBench.start()
        let checks = bench.checks()
        let report = try await bench.judge(checks)
        // The simulator's root is a --root-ca test root: a clean chain is `test`.
        #expect(report.verdict == .test)
        #expect(report.retryable == false)
        #expect(report.online?.outcome == .pass)
        #expect(report.online?.code == "ocsp-good")
        #expect(report.validationTime == OCSPBench.now)
        #expect(report.validationTimeSource == "now, online checks")
        // One request about the leaf, one about the intermediate.
        #expect(bench.responder.requestCount == 2)
        #expect(checks.cachedCount == (responses: 2, chains: 1))

        // Warm: the chain's result is kept until the answers' nextUpdate (an hour).
        let again = try await bench.judge(checks)
        #expect(again.online?.code == "ocsp-good")
        #expect(bench.responder.requestCount == 2)
        #expect(checks.fetchCount == 2)

        let json = InspectJSON.trust(report)
        #expect(json["retryable"] == .bool(false))
        #expect(json["verdict"] == .string("test"))
    }

    @Test func aRevokedLeafIsInvalidWithWhenAndWhy() async throws {
        let bench = try await OCSPBench.start()
        bench.responder.revoke(bench.pki.leaf, at: Date(timeIntervalSince1970: 1_785_000_000), reason: 1)
        let report = try await bench.judge(bench.checks())
        #expect(report.verdict == .invalid)
        #expect(report.retryable == false)
        #expect(report.online?.outcome == .fail)
        #expect(report.online?.code == "ocsp-revoked")
        #expect(report.detail("certificate") == "leaf")
        #expect(report.detail("revoked_at") == "2026-07-25T17:20:00Z")
        #expect(report.detail("revocation_reason") == "keyCompromise")
        #expect(report.detail("serial") != nil)
        // The leaf's revocation ends the check: the intermediate is not asked about.
        #expect(bench.responder.requestCount == 1)
        #expect(report.firstFailure?.kind == .onlineCheck)
    }

    @Test func aRevokedIntermediateIsInvalid() async throws {
        let bench = try await OCSPBench.start()
        bench.responder.revoke(bench.pki.intermediate, at: Date(timeIntervalSince1970: 1_780_000_000), reason: 2)
        let report = try await bench.judge(bench.checks())
        #expect(report.verdict == .invalid)
        #expect(report.online?.code == "ocsp-revoked")
        #expect(report.detail("certificate") == "intermediate")
        #expect(report.detail("revocation_reason") == "cACompromise")
        #expect(report.detail("revoked_at") == "2026-05-28T20:26:40Z")
        #expect(bench.responder.requestCount == 2)
    }

    @Test func anUnreachableResponderIsRetryableNeverValidNorInvalid() async throws {
        // A responder that is down (HTTP 503); a port nobody listens on is tested end to end.
        let bench = try await OCSPBench.start()
        bench.responder.set(.down)
        let checks = bench.checks()
        let report = try await bench.judge(checks)
        #expect(report.verdict == .unverifiable)
        #expect(report.retryable == true)
        #expect(report.online?.outcome == .warning)
        #expect(report.online?.code == "ocsp-unreachable")
        #expect(report.detail("certificate") == "leaf")
        let json = InspectJSON.trust(report)
        #expect(json["retryable"] == .bool(true))
        #expect(json["verdict"] == .string("unverifiable"))
        // Nothing retryable is kept: the next token asks again.
        #expect(checks.cachedCount == (responses: 0, chains: 0))
        _ = try await bench.judge(checks)
        #expect(checks.fetchCount == 4)
    }

    @Test func tryLaterIsRetryable() async throws {
        let words = Wording("online-checks")
        let bench = try await OCSPBench.start()
        bench.responder.set(.tryLater)
        let checks = bench.checks()
        let report = try await bench.judge(checks)
        #expect(report.verdict == .unverifiable)
        #expect(report.retryable == true)
        #expect(report.online?.code == "ocsp-try-later")
        words.said(report.headline)

        // Once the responder answers again, the same checks pass.
        bench.responder.set(.answering)
        let later = try await bench.judge(checks)
        #expect(later.verdict == .test)
        #expect(later.retryable == false)
        words.check()
    }

    @Test func aResponderThatNeverAnswersTimesOutOnTheInjectedClock() async throws {
        let bench = try await OCSPBench.start()
        bench.responder.set(.silent)
        // The test clock's sleeps return at once: the timeout fires before the silent
        // responder could answer, without the test waiting five seconds.
        let clock = TestClock()
        let report = try await bench.judge(bench.checks(timeout: .seconds(5), clock: clock))
        #expect(report.verdict == .unverifiable)
        #expect(report.retryable == true)
        #expect(report.online?.code == "ocsp-timeout")
        // One 5-second bound for the whole check, waited once.
        #expect(clock.waits == [.seconds(5)])
    }

    @Test func anAnswerPast64KiBIsNotRead() async throws {
        let bench = try await OCSPBench.start()
        bench.responder.set(.oversized)
        let report = try await bench.judge(bench.checks())
        #expect(report.verdict == .unverifiable)
        #expect(report.retryable == true)
        #expect(report.online?.code == "ocsp-too-large")
    }

    @Test func anAnswerAboutAnotherCertificateIsRejected() async throws {
        let bench = try await OCSPBench.start()
        bench.responder.set(.otherCertificate)
        let checks = bench.checks()
        let report = try await bench.judge(checks)
        #expect(report.verdict == .invalid)
        #expect(report.retryable == false)
        #expect(report.online?.code == "ocsp-other-certificate")
        #expect(report.detail("certificate") == "leaf")
        #expect(checks.cachedCount == (responses: 0, chains: 0))
    }

    @Test func anAnswerSignedByAnotherKeyIsRejected() async throws {
        let bench = try await OCSPBench.start()
        bench.responder.set(.wrongKey)
        let report = try await bench.judge(bench.checks())
        #expect(report.verdict == .invalid)
        #expect(report.retryable == false)
        #expect(report.online?.code == "ocsp-response-rejected")
        #expect(report.detail("certificate") == "leaf")
    }

    @Test func aChainNamingNoResponderIsNotAskedAbout() async throws {
        let bench = try await OCSPBench.start()
        // The same responder, but certificates without Authority Information Access.
        let plain = try AppleTestPKI()
        let token = try plain.signJWS(payload: ["transactionId": "1", "bundleId": "com.example.ocsp", "signedDate": 1_790_000_000_000])
        let evaluator = TrustEvaluator(anchors: try TrustAnchors.apple.addingTestRoots([plain.rootDER]))
        let checks = bench.checks()
        let report = await evaluator.evaluate(
            try ReceiptDecoder().decode(text: token), options: TrustOptions(now: OCSPBench.now, onlineChecks: checks))
        #expect(report.verdict == .test)
        #expect(report.retryable == false)
        #expect(report.online?.outcome == .warning)
        #expect(report.online?.code == "ocsp-no-responder")
        #expect(checks.fetchCount == 0)
    }

    @Test func withoutOnlineChecksNothingGoesToTheNetwork() async throws {
        let bench = try await OCSPBench.start()
        let report = try await bench.judge(nil)
        #expect(bench.responder.requestCount == 0)
        #expect(report.verdict == .test)
        #expect(report.retryable == nil)
        #expect(report.online == nil)
        #expect(report.steps.allSatisfy { $0.code == nil })
        // Judged at signedDate, as before.
        #expect(report.validationTimeSource == "signedDate")
        #expect(report.validationTime == Date(timeIntervalSince1970: 1_790_000_000))
        let json = InspectJSON.trust(report)
        #expect(json["retryable"] == nil)
        #expect(InspectJSON.encode(json).contains("\"code\"") == false)
    }

    @Test func theReceiverAnswers503WithRetryAfterWhenTheCheckIsRetryable() async throws {
        let bench = try await OCSPBench.start()
        let path = TemporaryFolder("ocsp").appending("audit.sqlite").path
        let store = try NotificationStore(path: path).started()
        var policy = ReceiverPolicy.replaying(anchors: try TrustAnchors.apple.addingTestRoots([bench.pki.rootDER]))
        policy.onlineChecks = bench.checks()
        let receiver = NotificationReceiver(
            sink: store, policy: policy, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        let (addresses, listening) = AsyncStream.makeStream(of: String.self)
        let task = Task { try await receiver.run(host: "127.0.0.1", port: 0) { listening.yield($0) } }
        var iterator = addresses.makeAsyncIterator()
        let address = try #require(await iterator.next())

        func post(_ uuid: String) async throws -> HTTPClientResponse {
            let millis = 1_790_000_000_000
            let token = try bench.pki.signJWS(payload: [
                "notificationType": "DID_RENEW", "notificationUUID": uuid, "version": "2.0", "signedDate": millis,
                "data": ["bundleId": "com.example.ocsp", "environment": "Sandbox", "appAppleId": 42, "status": 1] as [String: Any],
            ])
            var request = HTTPClientRequest(url: "http://\(address)/notifications")
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: NotificationFixture.body(token: token)))
            return try await HTTPClient.shared.execute(request, timeout: .seconds(600))
        }

        bench.responder.set(.tryLater)
        let busy = try await post("0b0c0d0e-0000-4000-8000-000000000001")
        #expect(busy.status.code == 503)
        #expect(busy.headers.first(name: "Retry-After") == "10")
        let body = try await busy.body.collect(upTo: 4096)
        let answer = try JSONValue.parse(Array(body.readableBytesView))
        #expect(answer["status"] == .string("retry-later"))

        // Apple's retry, once the responder answers: stored.
        bench.responder.set(.answering)
        let stored = try await post("0b0c0d0e-0000-4000-8000-000000000001")
        #expect(stored.status.code == 200)

        task.cancel()
        _ = await task.result
        await store.close()
    }
}
