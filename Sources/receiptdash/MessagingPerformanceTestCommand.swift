import AppStoreAPI
import AppStoreClients
import ArgumentParser
import CommandOptions
import Foundation
import JSONWriting
import RetryEngine
import Synchronization
import UntrustedText

/// `receiptdash messaging performance-test start|result`: Apple's Retention Messaging
/// performance test, which must pass in sandbox before production takes a realtime URL.
struct MessagingPerformanceTest: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "performance-test",
        abstract: "Run Apple's performance test of your sandbox realtime URL (it must pass before production takes one).",
        discussion: """
            Apple sends signed realtime requests to the realtime URL set for sandbox \
            (`messaging realtime-url set URL --environment sandbox`), at most maxConcurrentRequests \
            at a time, and counts an answer as a success when it is HTTP 200 with a valid body \
            within responseTimeThreshold ms (about 700). The test passes when the success rate \
            reaches successRateThreshold. Sandbox only: Apple's production host has no such endpoint.

            Exit status: 0 started, or passed (--wait, result); 1 failed, refused by Apple, or the \
            request failed; 64 usage or configuration.

            Examples:
              receiptdash messaging performance-test start --original-transaction-id 2000000500000001 --wait
              receiptdash messaging performance-test result 3f0c9a52-6a3e-4c52-9d7e-6f1d1b2a7c10 --format json
            """,
        subcommands: [PerformanceTestStart.self, PerformanceTestResult.self])
}

/// The options both subcommands take.
struct PerformanceTestOptions: ParsableArguments {
    @Option(name: .long, help: "Output format: text or json.")
    var format: OutputFormat = .text

    @Option(
        name: .long,
        help: ArgumentHelp("With --wait: seconds between asks for the result (Apple's sandbox allows one every 10 s).", valueName: "seconds"))
    var pollInterval: Double = 10

    @OptionGroup(title: "App Store Server API") var api: APIOptions

    @OptionGroup var tls: TLSTrustOptions

    func validate() throws {
        guard pollInterval.isFinite, (0.1...3600).contains(pollInterval) else {
            throw ValidationError("--poll-interval takes 0.1 to 3600 seconds.")
        }
    }
}

struct PerformanceTestStart: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "start", abstract: "Start the performance test (sandbox): prints its request id; --wait: and its verdict.")

    @Option(
        name: .long,
        help: ArgumentHelp("The original transaction id of an active auto-renewable subscription bought in sandbox.", valueName: "id"))
    var originalTransactionId: String

    @Flag(name: .long, help: "Ask for the result until it is PASS or FAIL (a progress line on standard error); exit 0 on PASS, 1 on FAIL.")
    var wait = false

    @OptionGroup var options: PerformanceTestOptions

    func validate() throws {
        let id = originalTransactionId.trimmingCharacters(in: .whitespaces)
        guard !id.isEmpty, id.utf8.count <= 64, id.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            throw ValidationError(
                "--original-transaction-id takes digits only (e.g. 2000000500000001), not \(SafeText.escaped(originalTransactionId)).")
        }
    }

    func run() async throws {
        let id = originalTransactionId.trimmingCharacters(in: .whitespaces)
        try await PerformanceTestSession(options: options).run { session in
            let started = try await session.ask(
                .initiatePerformanceTest(PerformanceTestRequest(originalTransactionId: id)), as: PerformanceTestResponse.self)
            guard let requestID = started.requestId, !requestID.isEmpty else {
                throw PerformanceTestSession.Failure(code: "invalid-response", message: "Apple's answer holds no requestId: ask again later")
            }
            guard wait else {
                session.writeStarted(requestID, config: started.config)
                return true
            }
            session.sayStarted(requestID, config: started.config)
            return try await session.finish(requestID, waiting: true)
        }
    }
}

struct PerformanceTestResult: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "result", abstract: "Get a performance test's result (sandbox): PENDING, PASS or FAIL, its rates and times.")

    @Argument(help: ArgumentHelp("The request id `performance-test start` printed.", valueName: "request-id"))
    var requestId: String

    @Flag(name: .long, help: "Ask until the result is PASS or FAIL (a progress line on standard error); exit 0 on PASS, 1 on FAIL.")
    var wait = false

    @OptionGroup var options: PerformanceTestOptions

    func validate() throws {
        let id = requestId.trimmingCharacters(in: .whitespaces)
        guard !id.isEmpty, id.utf8.count <= 128 else { throw ValidationError("The request id is empty or longer than 128 characters.") }
    }

    func run() async throws {
        let id = requestId.trimmingCharacters(in: .whitespaces)
        try await PerformanceTestSession(options: options).run { session in try await session.finish(id, waiting: wait) }
    }
}

/// One run of a `performance-test` subcommand: the client, the asks, the progress line and
/// the output. One path for `start --wait` and `result`.
struct PerformanceTestSession {
    let options: PerformanceTestOptions
    var console: Console = .standard
    private(set) var client: AppStoreServerAPIClient?
    /// The width of the progress line shown in place, to clear it.
    private let shown = ShownWidth()

    init(options: PerformanceTestOptions) {
        self.options = options
    }

    /// A failure said in words, with a code for `--format json` (the API's codes, or
    /// `invalid-response`).
    struct Failure: Error {
        var code: String
        var message: String
        var appleCode: Int?
    }

    /// Makes the client, runs `body`, says a failure; exit 0 when `body` says yes, 1 when no or
    /// on a failure, 64 for configuration.
    func run(_ body: (inout PerformanceTestSession) async throws -> Bool) async throws {
        var session = self
        let client: AppStoreServerAPIClient
        do {
            client = try options.api.makeClient(try options.api.credentials(), caFile: options.tls.caFile)
        } catch let error as APIOptionsError {
            ErrorOutput.write(code: "configuration", message: error.description, format: options.format, to: console)
            throw ExitStatus.usage
        }
        session.client = client
        let outcome: Bool
        do {
            outcome = try await body(&session)
        } catch let failure as Failure {
            session.clearProgress()
            try? await client.shutdown()
            session.writeFailure(failure)
            throw ExitStatus.failed
        } catch {
            session.clearProgress()
            try? await client.shutdown()
            throw error
        }
        try? await client.shutdown()
        if !outcome { throw ExitStatus.failed }
    }

    /// One request in sandbox, with the client's retries (said as `lookup` says them).
    func ask<Value: Decodable & Sendable>(_ request: @autoclosure () throws(APIFailure) -> APIRequest, as type: Value.Type) async throws
        -> Value
    {
        guard let client else { throw Failure(code: "configuration", message: "no client") }
        let made: APIRequest
        do throws(APIFailure) { made = try request() } catch { throw Failure(code: error.code.rawValue, message: error.reason) }
        let progress = RetryProgress(console: console, verbose: false)
        let answer = await client.send(made, in: .sandbox, as: type, onEvent: { progress.event($0) })
        progress.finish()
        switch answer.result {
        case .success(let value): return value
        case .failure(let failure): throw Failure(code: failure.code.rawValue, message: failure.reason, appleCode: failure.apiError?.rawValue)
        }
    }

    /// Asks for the result (until PASS or FAIL with `waiting`), writes it; true for PASS, and
    /// for PENDING when not waiting.
    func finish(_ requestID: String, waiting: Bool) async throws -> Bool {
        while true {
            let result = try await ask(try .performanceTestResult(requestID), as: PerformanceTestResultResponse.self)
            let status = result.status
            if !waiting || status == .pass || status == .fail || (status == nil && result.result != nil) {
                clearProgress()
                write(requestID, result)
                return status == .pass || (!waiting && status == .pending)
            }
            showProgress(Self.progressLine(result))
            try await ServiceClock.system.sleep(options.pollInterval)
        }
    }

    // MARK: Output

    /// `receiptdash: PENDING, 230 of 1000 pending, 98 % successful so far, p99 12 ms` (the
    /// request id was said at the start: the line fits 80 columns).
    static func progressLine(_ result: PerformanceTestResultResponse) -> String {
        let total = result.config?.totalRequests.map { " of \($0)" } ?? ""
        let pending = result.numPending.map { ", \($0)\(total) pending" } ?? ""
        // Before the first answer there is no rate nor time to say.
        let answered = result.numPending == nil || result.numPending.map(Int64.init) != result.config?.totalRequests
        let rate = answered ? result.successRate.map { ", \($0) % successful so far" } ?? "" : ""
        let p99 = answered ? result.responseTimes?.p99.map { ", p99 \($0) ms" } ?? "" : ""
        return "receiptdash: \(result.result ?? "unknown")\(pending)\(rate)\(p99)"
    }

    /// On a terminal, the line rewritten in place (cut to 79 columns: a line that wrapped
    /// could not be rewritten); elsewhere a line per poll.
    func showProgress(_ line: String) {
        var text = SafeText.escaped(line)
        guard console.errorIsTerminal else {
            console.error(text)
            return
        }
        if text.count > 79 { text = String(text.prefix(78)) + "…" }
        shown.set { width in
            console.errorRaw("\r" + text + String(repeating: " ", count: max(0, width - text.count)))
            return text.count
        }
    }

    func clearProgress() {
        shown.set { width in
            if width > 0 { console.errorRaw("\r" + String(repeating: " ", count: width) + "\r") }
            return 0
        }
    }

    /// `start` without `--wait`: the request id and how Apple runs the test.
    func writeStarted(_ requestID: String, config: PerformanceTestConfig?) {
        switch options.format {
        case .json:
            var out = JSONOutput(flushingTo: console)
            out.beginObject()
            out.member("request_id", requestID)
            out.key("config")
            Self.writeConfig(config, into: &out)
            out.endObject()
            out.newline()
            out.flush()
        case .text:
            var lines = ["performance test started: request id \(SafeText.escaped(requestID))"]
            lines.append(Self.configLine(config))
            lines.append("next: receiptdash messaging performance-test result \(SafeText.escaped(requestID)) --wait")
            console.output(lines.joined(separator: "\n") + "\n")
        }
    }

    /// `start --wait`: the request id on standard error before the progress line (the result
    /// follows on standard output).
    func sayStarted(_ requestID: String, config: PerformanceTestConfig?) {
        guard options.format == .text else { return }
        console.error("receiptdash: started performance test \(requestID)")
        console.error("receiptdash: \(Self.configLine(config))")
    }

    /// `requests: 100, 10 at a time, each within 700 ms, pass at 95 %`.
    static func configLine(_ config: PerformanceTestConfig?) -> String {
        func said<T>(_ value: T?) -> String { value.map { "\($0)" } ?? "unknown" }
        return "requests: \(said(config?.totalRequests)), \(said(config?.maxConcurrentRequests)) at a time, "
            + "each within \(said(config?.responseTimeThreshold)) ms, pass at \(said(config?.successRateThreshold)) %"
    }

    static func writeConfig(_ config: PerformanceTestConfig?, into out: inout JSONOutput) {
        out.beginObject()
        out.nullableMember("max_concurrent_requests", config?.maxConcurrentRequests)
        out.nullableMember("total_requests", config?.totalRequests)
        out.nullableMember("total_duration_ms", config?.totalDuration)
        out.nullableMember("response_time_threshold_ms", config?.responseTimeThreshold)
        out.nullableMember("success_rate_threshold", config?.successRateThreshold)
        out.endObject()
    }

    /// The result: text for people (every value from Apple escaped; a missing one said
    /// unknown), or JSON.
    func write(_ requestID: String, _ result: PerformanceTestResultResponse) {
        let failures = (result.failures ?? [:]).sorted { ($1.value, $0.key) < ($0.value, $1.key) }
        switch options.format {
        case .json:
            var out = JSONOutput(flushingTo: console)
            out.beginObject()
            out.member("request_id", requestID)
            out.nullableMember("result", result.result)
            out.nullableMember("target", result.target)
            out.nullableMember("success_rate", result.successRate)
            out.nullableMember("num_pending", result.numPending)
            out.key("response_times_ms")
            if let times = result.responseTimes {
                out.beginObject()
                out.nullableMember("average", times.average)
                out.nullableMember("p50", times.p50)
                out.nullableMember("p90", times.p90)
                out.nullableMember("p95", times.p95)
                out.nullableMember("p99", times.p99)
                out.endObject()
            } else {
                out.null()
            }
            out.key("failures")
            if result.failures != nil {
                out.beginObject()
                for (name, count) in failures {
                    out.key(text: name)
                    out.integer(count)
                }
                out.endObject()
            } else {
                out.null()
            }
            out.key("config")
            Self.writeConfig(result.config, into: &out)
            out.endObject()
            out.newline()
            out.flush()
        case .text:
            func said<T>(_ value: T?) -> String { value.map { SafeText.escaped("\($0)") } ?? "unknown" }
            let status = result.status
            var lines = ["performance test \(SafeText.escaped(requestID)): \(said(result.result))"]
            lines.append("target: \(said(result.target))")
            lines.append(
                "success rate: \(said(result.successRate)) % (pass at \(said(result.config?.successRateThreshold)) %), pending \(said(result.numPending))")
            lines.append(Self.configLine(result.config))
            if let t = result.responseTimes {
                lines.append("response times: average \(said(t.average)) ms, p50 \(said(t.p50)), p90 \(said(t.p90)), p95 \(said(t.p95)), p99 \(said(t.p99))")
            } else {
                lines.append("response times: unknown")
            }
            if result.failures == nil {
                lines.append("failures: unknown")
            } else {
                lines.append("failures: " + (failures.isEmpty ? "none" : failures.map { "\(SafeText.escaped($0.key)) \($0.value)" }.joined(separator: ", ")))
            }
            switch status {
            case .pass: lines.append("next: production takes a realtime URL now (messaging realtime-url set URL)")
            case .fail: lines.append("next: answer 200 with a valid body within the threshold, then start again")
            case .pending: lines.append("next: still running: receiptdash messaging performance-test result \(SafeText.escaped(requestID)) --wait")
            case nil: lines.append("note: Apple's result is none this version knows: shown as sent")
            }
            console.output(lines.joined(separator: "\n") + "\n")
        }
    }

    func writeFailure(_ failure: Failure) {
        switch options.format {
        case .json:
            var out = JSONOutput(flushingTo: console)
            out.beginObject()
            out.key("error")
            out.beginObject()
            out.member("code", failure.code)
            out.member("message", failure.message)
            out.nullableMember("apple_error_code", failure.appleCode)
            out.endObject()
            out.endObject()
            out.newline()
            out.flush()
        case .text:
            console.error("receiptdash: \(failure.message)")
        }
    }
}

/// The progress line's width, shared by the copies of a session.
private final class ShownWidth: Sendable {
    private let width = Mutex(0)

    func set(_ change: (Int) -> Int) {
        width.withLock { $0 = change($0) }
    }
}
