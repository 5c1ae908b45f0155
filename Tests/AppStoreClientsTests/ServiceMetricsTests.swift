@testable import AppStoreClients
import APITestSupport
import Foundation
import AppStoreAPI
import ReceiptCore
import ReceiptSimulator
import RetryEngine
import ServiceTestSupport
import Testing
import TestSupport

/// `GET /metrics` of a receiver also counts the process's own requests to Apple: verifyReceipt
/// and App Store Server API attempts, with bounded labels.
@Suite struct ServiceMetricsTests {
    func lines(_ metrics: ServiceMetrics, prefix: String) -> [String] {
        String(decoding: metrics.registry.emitToBuffer(), as: UTF8.self).split(separator: "\n").map(String.init)
            .filter { $0.hasPrefix(prefix) }.sorted()
    }

    @Test func verifyReceiptAttemptsByEnvironmentAndResult() async throws {
        let metrics = ServiceMetrics()
        let simulator = try await VerifyReceiptSimulator.start(SimulatorConfiguration(), script: [.status(21005)])
        let client = VerifyReceiptClient(endpoints: try simulator.endpoints, retry: wallClockRetry, metrics: metrics)
        // Production answers 21005 (retried), then 21007: the sandbox receipt goes to sandbox.
        let outcome = await client.verify(receiptData: try ServiceFixture.receiptData("sandbox-2023.der"))
        #expect(outcome.attempts.map(\.status) == [21005, 21007, 0])
        try await client.shutdown()
        try await simulator.stop()
        #expect(
            lines(metrics, prefix: "receiptdash_verifyreceipt_requests_total{") == [
                #"receiptdash_verifyreceipt_requests_total{environment="production",result="status-21005"} 1"#,
                #"receiptdash_verifyreceipt_requests_total{environment="production",result="status-21007"} 1"#,
                #"receiptdash_verifyreceipt_requests_total{environment="sandbox",result="status-0"} 1"#,
            ])
    }

    @Test func unknownStatusesShareOneLabel() {
        let metrics = ServiceMetrics()
        for status in [21_150, 21_199, 99_999, -1] { metrics.verifyReceiptAttempt(environment: .sandbox, result: .apple(status: status)) }
        metrics.verifyReceiptAttempt(environment: .production, result: .http(status: 999))
        metrics.verifyReceiptAttempt(environment: .production, result: .transport(TransportFailure(.timeout, detail: "read timed out")))
        #expect(
            lines(metrics, prefix: "receiptdash_verifyreceipt_requests_total{") == [
                #"receiptdash_verifyreceipt_requests_total{environment="production",result="http-other"} 1"#,
                #"receiptdash_verifyreceipt_requests_total{environment="production",result="transport-timeout"} 1"#,
                #"receiptdash_verifyreceipt_requests_total{environment="sandbox",result="status-211xx"} 2"#,
                #"receiptdash_verifyreceipt_requests_total{environment="sandbox",result="status-other"} 2"#,
            ])
    }

    @Test func apiAttemptsByEndpointEnvironmentAndResult() async throws {
        let metrics = ServiceMetrics()
        let (credentials, key) = makeTestCredentials(bundleID: ServerAPIData.demoBundleID)
        let simulator = try await ServerAPISimulator.start(ServerAPIConfiguration(publicKey: key.publicKey))
        let client = AppStoreServerAPIClient(
            credentials: credentials, hosts: try simulator.hosts, retry: wallClockRetry, requestTimeout: .seconds(60), metrics: metrics)
        #expect(await client.lookUpOrder(ServerAPIData.demoOrderID).value != nil)
        // Unknown everywhere: production says 4040010, so sandbox is asked, and says it too.
        #expect(await client.transactionInfo("1999999999999999").value == nil)
        try await client.shutdown()
        try await simulator.stop()
        #expect(
            lines(metrics, prefix: "receiptdash_api_requests_total{") == [
                #"receiptdash_api_requests_total{endpoint="look-up-order-id",environment="production",result="ok"} 1"#,
                #"receiptdash_api_requests_total{endpoint="transaction-info",environment="production",result="http-404"} 1"#,
                #"receiptdash_api_requests_total{endpoint="transaction-info",environment="sandbox",result="http-404"} 1"#,
            ])
    }
}
