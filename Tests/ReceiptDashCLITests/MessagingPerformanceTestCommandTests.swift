import AppStoreAPI
import Foundation
import ReceiptCore
import ReceiptSimulator
import Testing
import TestSupport
@testable import receiptdash

/// `messaging performance-test start|result` as processes against the API simulator (in this
/// process, its realtime URL set directly) and a responder in the test.
@Suite struct MessagingPerformanceTestCommandTests {
    /// The demo's sandbox subscription (in its billing grace period: still served).
    static let sandboxSubscription = "2000000500000001"
    static let message = #"{"message":{"messageIdentifier":"a1b2c3d4-e5f6-7890-a1b2-c3d4e5f67890"}}"#

    /// The simulator, a responder answering `response`, the sandbox URL pointing at it.
    func setUp(_ settings: PerformanceTestSettings, response: ScriptedResponse) async throws -> (ActionCommandsTests.Setup, ScriptedServer) {
        let setup = try await ActionCommandsTests.Setup()
        let responder = try await ScriptedServer.start { _ in response }
        setup.simulator.service.performanceTests.settings = settings
        setup.simulator.service.performanceTests.source = RealtimeURLBook([.sandbox: responder.baseURL + "/retention"])
        return (setup, responder)
    }

    /// The command (waited for off the test's own threads: the simulator's test runs on them meanwhile).
    func run(_ setup: ActionCommandsTests.Setup, _ arguments: [String]) async throws -> InspectCommandTests.Run {
        try await setup.run(["messaging", "performance-test"] + arguments)
    }

    @Test func startWaitPassesAgainstAGoodResponderAndExitsZero() async throws {
        let settings = PerformanceTestSettings(maxConcurrentRequests: 10, totalRequests: 20, totalDuration: 86_400_000, responseTimeThreshold: 600_000)
        let (setup, responder) = try await setUp(settings, response: .json(200, Self.message))
        let run = try await run(
            setup, ["start", "--original-transaction-id", Self.sandboxSubscription, "--wait", "--poll-interval", "0.1", "--format", "json"])
        #expect(run.status == 0, "\(run.stderr)")
        let json = try #require(run.json as? [String: Any])
        #expect(json["result"] as? String == "PASS")
        #expect(json["success_rate"] as? Int == 100)
        #expect(json["num_pending"] as? Int == 0)
        #expect((json["failures"] as? [String: Any])?.isEmpty == true)
        #expect(json["target"] as? String == responder.baseURL + "/retention")
        let config = try #require(json["config"] as? [String: Any])
        #expect(config["total_requests"] as? Int == 20)
        #expect(config["max_concurrent_requests"] as? Int == 10)
        #expect(config["success_rate_threshold"] as? Int == 95)
        #expect(Set((json["response_times_ms"] as? [String: Any])?.keys ?? [:].keys) == ["average", "p50", "p90", "p95", "p99"])
        #expect(responder.requests.count == 20)
        try await responder.stop()
        try await setup.stop()
    }

    @Test func startWaitFailsAgainstAResponderTaking800msAndExitsOne() async throws {
        let settings = PerformanceTestSettings(maxConcurrentRequests: 10, totalRequests: 20, totalDuration: 86_400_000, responseTimeThreshold: 700)
        let (setup, responder) = try await setUp(settings, response: .later(milliseconds: 800, .json(200, Self.message)))
        let run = try await run(
            setup, ["start", "--original-transaction-id", Self.sandboxSubscription, "--wait", "--poll-interval", "0.1", "--format", "json"])
        #expect(run.status == 1)
        let json = try #require(run.json as? [String: Any])
        #expect(json["result"] as? String == "FAIL")
        #expect(json["success_rate"] as? Int == 0)
        #expect(json["failures"] as? [String: Int] == ["TIMED_OUT": 20])
        try await responder.stop()
        try await setup.stop()
    }

    @Test func startPrintsTheRequestIdAndResultFindsIt() async throws {
        let settings = PerformanceTestSettings(maxConcurrentRequests: 5, totalRequests: 10, totalDuration: 86_400_000, responseTimeThreshold: 600_000)
        let (setup, responder) = try await setUp(settings, response: .json(200, Self.message))
        let started = try await run(setup, ["start", "--original-transaction-id", Self.sandboxSubscription, "--format", "json"])
        #expect(started.status == 0, "\(started.stderr)")
        let json = try #require(started.json as? [String: Any])
        let id = try #require(json["request_id"] as? String)
        #expect((json["config"] as? [String: Any])?["total_requests"] as? Int == 10)
        _ = await setup.simulator.service.performanceTests.completion(of: id)

        let result = try await run(setup, ["result", id])
        #expect(result.status == 0, "\(result.stderr)")
        // The verdict, then the facts, each on its line within 80 columns (the times vary).
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.allSatisfy { $0.count <= 80 }, "\(lines)")
        let words = Wording(
            "performance-test-command", matching: [(#"average [0-9]+ ms, p50 [0-9]+, p90 [0-9]+, p95 [0-9]+, p99 [0-9]+"#, "<times>")] + Wording.runVariables)
        words.said(result.stdout)
        words.check()
        try await responder.stop()
        try await setup.stop()
    }

    @Test func applesRefusalsNameTheirCodeAndExitOne() async throws {
        let (setup, responder) = try await setUp(PerformanceTestSettings(), response: .json(200, Self.message))
        func refusal(_ arguments: [String]) async throws -> (Int32, String?, Int?) {
            let run = try await run(setup, arguments + ["--format", "json"])
            let error = (run.json as? [String: Any])?["error"] as? [String: Any]
            return (run.status, error?["code"] as? String, error?["apple_error_code"] as? Int)
        }
        // A production subscription is unknown in sandbox; not a UUID; no such run.
        #expect(try await refusal(["start", "--original-transaction-id", "2000000900000001"]) == (1, "api-error", 4_000_006))
        #expect(try await refusal(["result", "not-a-uuid"]) == (1, "api-error", 4_000_212))
        #expect(try await refusal(["result", "3f0c9a52-6a3e-4c52-9d7e-6f1d1b2a7c10"]) == (1, "api-error", 4_040_018))
        // Refused before anything is sent.
        #expect(try await run(setup, ["start", "--original-transaction-id", "abc"]).status == 64)
        #expect(try await run(setup, ["start", "--original-transaction-id", "1", "--poll-interval", "0"]).status == 64)
        #expect(responder.requests.isEmpty)
        try await responder.stop()
        try await setup.stop()
    }
}

/// The progress line `--wait` rewrites: what it says at each stage of a run, within 80 columns.
@Suite struct PerformanceTestProgressLine {
    @Test func itSaysOnlyWhatIsKnownAndFitsTheTerminal() {
        let config = PerformanceTestConfig(maxConcurrentRequests: 10, totalRequests: 1000, totalDuration: 60_000, responseTimeThreshold: 700, successRateThreshold: 95)
        let first = PerformanceTestResultResponse(
            config: config, result: "PENDING", successRate: 0, numPending: 1000, responseTimes: PerformanceTestResponseTimes(p99: 0))
        let later = PerformanceTestResultResponse(
            config: config, result: "PENDING", successRate: 98, numPending: 230, responseTimes: PerformanceTestResponseTimes(p99: 12))
        let bare = PerformanceTestResultResponse(result: "PENDING")
        let lines = [first, later, bare].map(PerformanceTestSession.progressLine)
        let words = Wording("performance-test-command")
        words.said(lines)
        words.check()
        #expect(lines.allSatisfy { $0.count < 80 })
    }
}
