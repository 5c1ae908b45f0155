@testable import AppStoreClients
import Crypto
import Foundation
import LocalFiles
import NIOSSL
import AppStoreAPI
import ReceiptCore
import ReceiptSimulator
import RetryEngine
import SwiftASN1
import Testing
import X509
import TestSupport

/// The client against the simulator on loopback, one behaviour per test.
@Suite struct VerifyReceiptClientTests {
    /// The client's waits go to `clock`: no test here really sleeps.
    func withSimulator(
        script: [InjectedFault] = [], secret: AppStoreAPI.SharedSecret? = nil, clientSecret: AppStoreAPI.SharedSecret? = nil, timeout: Int64 = 5,
        clock: TestTime = TestTime(), _ body: (VerifyReceiptClient, VerifyReceiptSimulator) async throws -> Void
    ) async throws {
        let simulator = try await VerifyReceiptSimulator.start(SimulatorConfiguration(secret: secret), script: script)
        let client = VerifyReceiptClient(
            endpoints: try simulator.endpoints, secret: clientSecret, retry: quickRetry, requestTimeout: .seconds(timeout), clock: clock.clock)
        do {
            try await body(client, simulator)
        } catch {
            try? await client.shutdown()
            try? await simulator.stop()
            throw error
        }
        try await client.shutdown()
        try await simulator.stop()
    }

    func paths(_ outcome: VerificationOutcome) -> [String] {
        outcome.attempts.map { $0.url.contains("/sandbox/") ? "sandbox" : "production" }
    }

    @Test func productionReceiptIsValidFirstTime() async throws {
        try await withSimulator { client, _ in
            let outcome = await client.verify(receiptData: try ServiceFixture.receiptData("production.b64"))
            #expect(outcome.status == 0)
            #expect(paths(outcome) == ["production"])
            #expect(outcome.response?.receipt?.bundleID == "org.getpure.pure-iphone")
            #expect(outcome.response?.receipt?.inApp.count == 4)
            #expect(outcome.environment == "Production")
        }
    }

    @Test func sandboxReceiptFallsBackToSandbox() async throws {
        try await withSimulator { client, _ in
            let outcome = await client.verify(receiptData: try ServiceFixture.receiptData("sandbox-2023.der"))
            #expect(outcome.status == 0)
            #expect(outcome.attempts.map(\.status) == [21007, 0])
            #expect(paths(outcome) == ["production", "sandbox"])
            #expect(outcome.environment == "Sandbox")
        }
    }

    /// A production receipt that lands on sandbox is sent back to production (21008).
    @Test func productionReceiptSentToSandboxHopsBack() async throws {
        try await withSimulator(script: [.status(21007)]) { client, _ in
            let outcome = await client.verify(receiptData: try ServiceFixture.receiptData("production.b64"))
            #expect(outcome.attempts.map(\.status) == [21007, 21008, 0])
            #expect(paths(outcome) == ["production", "sandbox", "production"])
            #expect(outcome.status == 0)
        }
    }

    @Test(arguments: [
        InjectedFault.status(21005), .status(21009), .status(21150, isRetryable: true), .http(503), .http(429, retryAfter: 0),
        .http(500), .drop,
    ])
    func temporaryFailuresAreRetriedThenSucceed(fault: InjectedFault) async throws {
        let clock = TestTime()
        try await withSimulator(script: [fault], clock: clock) { client, simulator in
            let outcome = await client.verify(receiptData: try ServiceFixture.receiptData("production.b64"))
            #expect(outcome.status == 0, "\(fault)")
            #expect(outcome.attempts.count == 2, "\(fault)")
            #expect(outcome.attempts.first?.retryAfterSeconds != nil)
            #expect(clock.waits.count == 1)
            #expect(clock.waits.first == outcome.attempts.first?.retryAfterSeconds)
            #expect(simulator.requestCount == 2)
        }
    }

    /// Each kind of failure arrives typed: no text to parse back.
    @Test(arguments: [
        (InjectedFault.http(503), AttemptResult.http(status: 503)), (.drop, .transport(TransportFailure(.dropped))),
        (.status(21005), .apple(status: 21005)),
    ])
    func failuresAreTyped(fault: InjectedFault, expected: AttemptResult) async throws {
        try await withSimulator(script: [fault]) { client, _ in
            let outcome = await client.verify(receiptData: try ServiceFixture.receiptData("production.b64"))
            #expect(outcome.attempts.first?.result == expected, "\(outcome.attempts.first?.result.description ?? "-")")
            #expect(outcome.attempts.first?.endpoint == .production)
        }
    }

    /// `Retry-After: 3` is waited for exactly, though the policy caps computed delays at 0.05 s.
    @Test func retryAfterIsHonouredUpToTheBudget() async throws {
        let clock = TestTime()
        try await withSimulator(script: [.http(503, retryAfter: 3)], clock: clock) { client, _ in
            let outcome = await client.verify(receiptData: try ServiceFixture.receiptData("production.b64"))
            #expect(outcome.status == 0)
            #expect(outcome.attempts.first?.retryAfterSeconds == 3)
            #expect(clock.waits == [3])
        }
    }

    /// `Retry-After` as an HTTP date: the wait is the date less the clock's now (7 s).
    @Test func retryAfterAsAnHTTPDate() async throws {
        let clock = TestTime()
        try await withSimulator(script: [.httpRetryAfter(429, value: "Fri, 15 Jan 2027 08:00:07 GMT")], clock: clock) { client, _ in
            let outcome = await client.verify(receiptData: try ServiceFixture.receiptData("production.b64"))
            #expect(outcome.status == 0)
            #expect(clock.waits == [7])
        }
    }

    /// A `Retry-After` past the total budget (10 s here) ends the retries at once, saying why.
    @Test func retryAfterPastTheBudgetEndsTheRetries() async throws {
        let words = Wording("verify-receipt-client")
        let clock = TestTime()
        try await withSimulator(script: [.http(503, retryAfter: 30)], clock: clock) { client, simulator in
            let outcome = await client.verify(receiptData: try ServiceFixture.receiptData("production.b64"))
            #expect(outcome.status == nil)
            #expect(outcome.failure?.code == .retryBudgetExhausted)
            words.said(outcome.failure?.reason)
            #expect(outcome.attempts.count == 1)
            #expect(clock.waits == [])
            #expect(simulator.requestCount == 1)
        }
        words.check()
    }

    @Test(arguments: [21000, 21003, 21010, 21150])
    func permanentCodesAreNotRetried(code: Int) async throws {
        try await withSimulator(script: [.status(code, isRetryable: code == 21150 ? false : nil)]) { client, simulator in
            let outcome = await client.verify(receiptData: try ServiceFixture.receiptData("production.b64"))
            #expect(outcome.status == code)
            #expect(outcome.attempts.count == 1)
            #expect(simulator.requestCount == 1)
            #expect(outcome.explanation?.retryable == false)
        }
    }

    @Test func malformedIsRetriedOnceOnly() async throws {
        try await withSimulator(script: [.status(21002), .status(21002), .status(21002)]) { client, _ in
            let outcome = await client.verify(receiptData: try ServiceFixture.receiptData("production.b64"))
            #expect(outcome.attempts.map(\.status) == [21002, 21002])
            #expect(outcome.status == 21002)
        }
    }

    @Test func wrongSharedSecretIs21004AndNotRetried() async throws {
        try await withSimulator(secret: AppStoreAPI.SharedSecret("right-secret-abcdef"), clientSecret: AppStoreAPI.SharedSecret("wrong-secret-123456")) { client, _ in
            let outcome = await client.verify(receiptData: try ServiceFixture.receiptData("production.b64"))
            #expect(outcome.status == 21004)
            #expect(outcome.attempts.count == 1)
        }
    }

    @Test func rightSecretGetsSubscriptionFields() async throws {
        let secret = AppStoreAPI.SharedSecret("right-secret-abcdef")
        try await withSimulator(secret: secret, clientSecret: secret) { client, _ in
            let outcome = await client.verify(receiptData: try ServiceFixture.receiptData("production.b64"))
            #expect(outcome.status == 0)
            #expect(outcome.response?.latestReceiptInfo.count == 4)
            #expect(outcome.response?.pendingRenewalInfo.map(\.originalTransactionID) == ["340001196262039"])
        }
    }

    @Test func timeoutIsRetried() async throws {
        try await withSimulator(script: [.slow(2)], timeout: 1) { client, _ in
            let outcome = await client.verify(receiptData: try ServiceFixture.receiptData("production.b64"))
            #expect(outcome.attempts.first?.transportFailure?.code == .timeout, "\(outcome.attempts.first?.result.description ?? "-")")
            #expect(outcome.status == 0)
        }
    }

    /// Four retries with backoff 0.01, 0.02, 0.04, 0.05 s (±20% jitter), then a typed failure.
    @Test func retriesAreBounded() async throws {
        let words = Wording("verify-receipt-client")
        let clock = TestTime()
        try await withSimulator(script: Array(repeating: .http(503), count: 10), clock: clock) { client, simulator in
            let outcome = await client.verify(receiptData: try ServiceFixture.receiptData("production.b64"))
            #expect(outcome.status == nil)
            #expect(outcome.attempts.count == quickRetry.maximumRetries + 1)
            #expect(outcome.failure?.code == .retriesExhausted)
            words.said(outcome.failure?.reason)
            #expect(outcome.failure?.isTemporaryFailure == true)
            #expect(simulator.requestCount == 5)
            #expect(clock.waits.count == 4)
            for (wait, base) in zip(clock.waits, [0.01, 0.02, 0.04, 0.05]) { #expect(abs(wait - base) <= base * 0.2 + 1e-12, "\(wait)") }
        }
        words.check()
    }

    @Test func connectionRefused() async throws {
        let words = Wording("verify-receipt-client")
        let clock = TestTime()
        let refused = "http://127.0.0.1:\(TestPorts.refusing())/verifyReceipt"
        let client = VerifyReceiptClient(
            endpoints: try VerifyReceiptEndpoints(production: refused, sandbox: refused),
            retry: RetryPolicy(maximumRetries: 1, baseDelay: 0.01, maximumDelay: 0.01), clock: clock.clock)
        let outcome = await client.verify(receiptData: "MIIT")
        #expect(outcome.status == nil)
        #expect(outcome.attempts.count == 2)
        #expect(outcome.attempts.map { $0.transportFailure?.code } == [.refused, .refused])
        #expect(outcome.failure?.code == .retriesExhausted)
        words.said(outcome.failure?.reason)
        #expect(clock.waits.count == 1)
        try await client.shutdown()
        words.check()
    }

    /// Plain http is for loopback only: anything else is refused before a request exists.
    @Test func plainHTTPOnlyOnLoopback() throws {
        for url in ["http://127.0.0.1:8099/p", "http://127.1.2.3/p", "http://localhost:8081/p", "http://[::1]:8080/p", "https://example.com/p"] {
            #expect(throws: Never.self, "\(url)") { try VerifyEndpoint(.production, url: url) }
        }
        for url in ["http://example.com/p", "http://127.0.0.1.evil.example/p", "http://10.0.0.1/p", "http://[::2]/p", "http://128.0.0.1/p"] {
            #expect(throws: VerificationError(.insecureEndpoint, ""), "\(url)") { try VerifyEndpoint(.production, url: url) }
        }
        #expect(throws: VerificationError(.invalidEndpoint, "")) { try VerifyEndpoint(.sandbox, url: "ftp://127.0.0.1/p") }
        #expect(throws: VerificationError(.invalidEndpoint, "")) { try VerifyEndpoint(.sandbox, url: "not a url") }
    }

    // MARK: - TLS

    /// A certificate for 127.0.0.1 signed by a throwaway CA, as NIOSSL takes them.
    static func tlsMaterial() throws -> (ca: NIOSSLCertificate, chain: NIOSSLCertificate, key: NIOSSLPrivateKey) {
        let made = try TestPKI.tls()
        return (
            try NIOSSLCertificate(bytes: TestPKI.der(made.ca), format: .der),
            try NIOSSLCertificate(bytes: TestPKI.der(made.leaf), format: .der),
            try NIOSSLPrivateKey(bytes: Array(made.leafKey.derRepresentation), format: .der)
        )
    }

    @Test func tlsServerWithAnUntrustedCertificateIsRefused() async throws {
        let (ca, chain, key) = try Self.tlsMaterial()
        var configuration = SimulatorConfiguration()
        configuration.tls = TLSConfiguration.makeServerConfiguration(certificateChain: [.certificate(chain)], privateKey: .privateKey(key))
        let simulator = try await VerifyReceiptSimulator.start(configuration)
        #expect(simulator.productionURL.hasPrefix("https://127.0.0.1:"))

        let untrusting = VerifyReceiptClient(endpoints: try simulator.endpoints, retry: wallClockRetry)
        let refused = await untrusting.verify(receiptData: try ServiceFixture.receiptData("production.b64"))
        #expect(refused.status == nil)
        #expect(refused.attempts.count == 1, "a certificate failure is not retried")
        #expect(refused.failure?.code == .tls, "\(refused.failure?.reason ?? "-")")
        #expect(refused.failure?.isTemporaryFailure == false, "a certificate problem is not Apple's outage")
        #expect(simulator.requestCount == 0)
        try await untrusting.shutdown()

        let trusting = VerifyReceiptClient(endpoints: try simulator.endpoints, retry: wallClockRetry, extraTrustRoots: [ca])
        let accepted = await trusting.verify(receiptData: try ServiceFixture.receiptData("production.b64"))
        #expect(accepted.status == 0)
        try await trusting.shutdown()
        try await simulator.stop()
    }

    // MARK: - Secrets

    @Test func sharedSecretIsMaskedEverywhere() async throws {
        let secret = AppStoreAPI.SharedSecret("0123456789abcdef0123456789abcdef")
        #expect("\(secret)" == "••••…cdef")
        #expect(String(reflecting: secret) == "SharedSecret(••••…cdef)")
        // Reflection too: dump(), Mirror, and a value holding the secret.
        var dumped = ""
        dump(secret, to: &dumped)
        #expect(dumped == "▿ SharedSecret(••••…cdef)\n  - masked: \"••••…cdef\"\n")
        #expect(Mirror(reflecting: secret).children.map { "\($0.value)" } == ["••••…cdef"])
        struct Holder { var secret: AppStoreAPI.SharedSecret }
        var nested = ""
        dump(Holder(secret: secret), to: &nested)
        #expect(!nested.contains("0123456789abcdef0123456789abcdef"), "\(nested)")
        try await withSimulator(script: [.status(21005)], secret: secret, clientSecret: secret) { client, _ in
            let outcome = await client.verify(receiptData: try ServiceFixture.receiptData("production.b64"))
            #expect(outcome.status == 0)
            let everything = "\(outcome) \(outcome.attempts) \(String(describing: outcome.response))"
            #expect(!everything.contains("0123456789abcdef0123456789abcdef"))
        }
    }

    @Test func secretComesFromFileOrEnvironment() throws {
        let words = Wording("verify-receipt-client")
        let scratch = TemporaryFolder("secret")
        defer { scratch.remove() }
        let file = scratch.appending("secret")
        try Data("from-file-secret\n".utf8).write(to: file)
        // A file others may read is warned about through the caller's closure, nowhere else.
        _ = chmod(file.path, 0o644)
        var warnings: [String] = []
        #expect(try AppStoreAPI.SharedSecret.load(file: file.path, environment: [:], warn: { warnings.append($0) })?.value == "from-file-secret")
        words.said(warnings)
        _ = chmod(file.path, 0o600)
        warnings = []
        #expect(try AppStoreAPI.SharedSecret.load(file: file.path, environment: [:], warn: { warnings.append($0) })?.value == "from-file-secret")
        #expect(warnings.isEmpty)
        #expect(
            try AppStoreAPI.SharedSecret.load(file: nil, environment: ["RECEIPTDASH_SHARED_SECRET": "from-env"], warn: { _ in })?.value == "from-env")
        #expect(try AppStoreAPI.SharedSecret.load(file: nil, environment: [:], warn: { _ in }) == nil)
        #expect(throws: AppStoreAPI.SharedSecret.SecretError.self) {
            try AppStoreAPI.SharedSecret.load(file: "/nonexistent/secret", environment: [:], warn: { _ in })
        }
        words.check()
    }
}

