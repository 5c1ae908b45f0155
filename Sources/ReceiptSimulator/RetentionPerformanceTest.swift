import AppStoreAPI
import Foundation
import ReceiptCore
import Synchronization

/// How the simulator runs Apple's performance test (`PerformanceTestConfig`, fact sheet §3).
/// The defaults are the values of Apple's library example, with Apple's documented 700 ms
/// deadline as the threshold (the example's JSON says 500).
public struct PerformanceTestSettings: Sendable, Hashable {
    /// Requests in flight at most.
    public var maxConcurrentRequests: Int
    /// Requests in the test.
    public var totalRequests: Int
    /// Milliseconds from the start after which no request is sent.
    public var totalDuration: Int
    /// Milliseconds an answer may take; a slower one is `TIMED_OUT`.
    public var responseTimeThreshold: Int
    /// Percentage of successes needed to pass.
    public var successRateThreshold: Int

    public init(
        maxConcurrentRequests: Int = 10, totalRequests: Int = 100, totalDuration: Int = 60_000, responseTimeThreshold: Int = 700,
        successRateThreshold: Int = 95
    ) {
        self.maxConcurrentRequests = maxConcurrentRequests
        self.totalRequests = totalRequests
        self.totalDuration = totalDuration
        self.responseTimeThreshold = responseTimeThreshold
        self.successRateThreshold = successRateThreshold
    }

    /// Each setting: its name in the control endpoint's query (and, after `--perf-`, its flag),
    /// its range, and where it is kept.
    public static var fields: [(name: String, range: ClosedRange<Int>, key: WritableKeyPath<PerformanceTestSettings, Int>)] {
        [
            ("max-concurrent-requests", 1...1000, \.maxConcurrentRequests),
            ("total-requests", 1...1_000_000, \.totalRequests),
            ("total-duration-ms", 1...86_400_000, \.totalDuration),
            ("response-time-threshold-ms", 1...600_000, \.responseTimeThreshold),
            ("success-rate-threshold", 0...100, \.successRateThreshold),
        ]
    }

    /// The first setting out of its range: its flag without dashes and the words naming it;
    /// nil when all are in range.
    public var problem: (setting: String, reason: String)? {
        for field in Self.fields where !field.range.contains(self[keyPath: field.key]) {
            return ("perf-\(field.name)", "--perf-\(field.name) must be between \(field.range.lowerBound) and \(field.range.upperBound).")
        }
        return nil
    }

    /// Apple's `PerformanceTestConfig` object.
    public var config: JSONValue {
        .object([
            "maxConcurrentRequests": .integer(Int64(maxConcurrentRequests)), "totalRequests": .integer(Int64(totalRequests)),
            "totalDuration": .integer(Int64(totalDuration)), "responseTimeThreshold": .integer(Int64(responseTimeThreshold)),
            "successRateThreshold": .integer(Int64(successRateThreshold)),
        ])
    }
}

/// Where the simulator reads the realtime URL each environment has, and whom it tells that a
/// sandbox performance test passed (after which production takes a realtime URL). The
/// simulator's Retention store implements it; ``RealtimeURLBook`` keeps both in memory.
public protocol RealtimeURLSource: Sendable {
    /// The realtime URL configured for `environment`; nil when none is.
    func realtimeURL(_ environment: APIEnvironment) -> String?
    /// A sandbox performance test against `target` passed.
    func performanceTestPassed(target: String)
}

/// Realtime URLs and passed tests, in memory (used until a store is connected).
public final class RealtimeURLBook: RealtimeURLSource {
    private let state = Mutex<(urls: [APIEnvironment: String], passed: [String])>(([:], []))

    public init(_ urls: [APIEnvironment: String] = [:]) {
        state.withLock { $0.urls = urls }
    }

    public func realtimeURL(_ environment: APIEnvironment) -> String? { state.withLock { $0.urls[environment] } }
    public func set(_ url: String?, for environment: APIEnvironment) { state.withLock { $0.urls[environment] = url } }
    public func performanceTestPassed(target: String) { state.withLock { $0.passed.append(target) } }
    /// The targets of the passed tests, in order.
    public var passedTargets: [String] { state.withLock { $0.passed } }
}

/// One run's counts as they stand.
struct PerformanceTestTally: Sendable {
    let requestID: String
    let settings: PerformanceTestSettings
    let target: String
    var finished = 0
    var successes = 0
    var failures: [SendAttemptResult: Int] = [:]
    /// Seconds, of every request that was sent and ended.
    var latencies: [Double] = []
    var done = false

    var status: String {
        guard done else { return "PENDING" }
        return successRate >= settings.successRateThreshold ? "PASS" : "FAIL"
    }

    /// Whole percent, rounded down (95.9 % does not reach 96): of every request once the run
    /// ended, of those that ended while it runs (0 before the first).
    var successRate: Int {
        let base = done ? settings.totalRequests : finished
        return base == 0 ? 0 : successes * 100 / base
    }

    /// Apple's `PerformanceTestResultResponse`.
    var result: JSONValue {
        let sorted = latencies.sorted()
        func ms(_ seconds: Double) -> JSONValue { .integer(Int64((seconds * 1000).rounded())) }
        func percentile(_ p: Double) -> JSONValue {
            guard !sorted.isEmpty else { return .integer(0) }
            let rank = Int((p * Double(sorted.count)).rounded(.up)) - 1
            return ms(sorted[min(max(rank, 0), sorted.count - 1)])
        }
        let average = sorted.isEmpty ? 0 : sorted.reduce(0, +) / Double(sorted.count)
        return .object([
            "config": settings.config, "target": .string(target), "result": .string(status), "successRate": .integer(Int64(successRate)),
            "numPending": .integer(Int64(settings.totalRequests - finished)),
            "responseTimes": .object([
                "average": ms(average), "p50": percentile(0.50), "p90": percentile(0.90), "p95": percentile(0.95), "p99": percentile(0.99),
            ]),
            "failures": .object(Dictionary(uniqueKeysWithValues: failures.map { ($0.key.rawValue, .integer(Int64($0.value))) })),
        ])
    }
}

/// The performance tests of one simulator: the settings, the runs (the last 100), the realtime
/// URL source and the HTTP sender they use. Held by ``ServerAPIService/performanceTests``.
public final class PerformanceTestBoard: Sendable {
    struct State {
        var settings = PerformanceTestSettings()
        var source: any RealtimeURLSource = RealtimeURLBook()
        var sender = RetentionRealtimeSender.shared
        var runs: [String: PerformanceTestTally] = [:]
        var tasks: [String: Task<Void, Never>] = [:]
        var order: [String] = []
        var running: String?
    }

    let state = Mutex(State())

    public init() {}

    /// The settings later runs take (a running one keeps its own).
    public var settings: PerformanceTestSettings {
        get { state.withLock { $0.settings } }
        set { state.withLock { $0.settings = newValue } }
    }

    /// Where realtime URLs are read and passed tests are told.
    public var source: any RealtimeURLSource {
        get { state.withLock { $0.source } }
        set { state.withLock { $0.source = newValue } }
    }

    /// The sender realtime requests go through (``RetentionRealtimeSender/shared`` unless set:
    /// one with extra trust roots, which its maker shuts down).
    public var sender: RetentionRealtimeSender {
        get { state.withLock { $0.sender } }
        set { state.withLock { $0.sender = newValue } }
    }

    /// Waits until the run `requestID` ended and returns its result document; nil for an
    /// unknown id. What tests await instead of sleeping.
    public func completion(of requestID: String) async -> JSONValue? {
        let key = requestID.lowercased()
        guard let task = state.withLock({ $0.tasks[key] }) else { return state.withLock { $0.runs[key]?.result } }
        await task.value
        return state.withLock { $0.runs[key]?.result }
    }

    /// Stops the running test, if any: its requests in flight end as `OTHER`, those not sent
    /// count as `OTHER`, and it ends (FAIL, unless enough had succeeded). For a simulator that
    /// stops, and tests.
    public func cancelRunning() {
        state.withLock { s in s.running.flatMap { s.tasks[$0] } }?.cancel()
    }

    /// The result document of `requestID` as it stands (ids compared case-insensitively).
    public func result(of requestID: String) -> JSONValue? {
        state.withLock { $0.runs[requestID.lowercased()]?.result }
    }

    /// Starts a run unless one is running: its id, or nil.
    func begin(target: String, _ body: @escaping @Sendable (_ requestID: String, _ settings: PerformanceTestSettings) async -> Void)
        -> (id: String, settings: PerformanceTestSettings)?
    {
        state.withLock { s -> (String, PerformanceTestSettings)? in
            guard s.running == nil else { return nil }
            let id = UUID().uuidString.lowercased()
            let settings = s.settings
            s.running = id
            s.runs[id] = PerformanceTestTally(requestID: id, settings: settings, target: target)
            s.order.append(id)
            if s.order.count > 100, let oldest = s.order.first(where: { $0 != id }) {
                s.order.removeAll { $0 == oldest }
                s.runs[oldest] = nil
                s.tasks[oldest] = nil
            }
            s.tasks[id] = Task { await body(id, settings) }
            return (id, settings)
        }
    }

    func record(_ requestID: String, _ attempt: RealtimeAttempt, sent: Bool = true) {
        state.withLock { s in
            guard var run = s.runs[requestID] else { return }
            run.finished += 1
            if attempt.result == .success { run.successes += 1 } else { run.failures[attempt.result, default: 0] += 1 }
            if sent { run.latencies.append(attempt.latency) }
            s.runs[requestID] = run
        }
    }

    /// Ends the run: PASS or FAIL, and the source is told of a pass.
    func end(_ requestID: String) {
        let passed = state.withLock { s -> (source: any RealtimeURLSource, target: String)? in
            guard var run = s.runs[requestID] else { return nil }
            run.done = true
            s.runs[requestID] = run
            if s.running == requestID { s.running = nil }
            return run.status == "PASS" ? (s.source, run.target) : nil
        }
        if let passed { passed.source.performanceTestPassed(target: passed.target) }
    }
}

extension ServerAPIService {
    /// Initiate Performance Test and Get Performance Test Results (sandbox only; production
    /// has no such path: 404); nil for other paths.
    func routePerformanceTest(_ method: String, _ segments: [String], body: [UInt8], _ context: Context) -> ServerAPIReply? {
        guard segments.count >= 4, segments[0] == "inApps", segments[1] == "v1", segments[2] == "messaging", segments[3] == "performanceTest"
        else { return nil }
        guard context.environment == .sandbox else { return ServerAPIReply(status: 404) }
        switch (method, segments.count) {
        case ("POST", 4): return startPerformanceTest(body, context)
        case ("GET", 6) where segments[4] == "result": return performanceTestResult(segments[5])
        default: return ServerAPIReply(status: 404)
        }
    }

    /// Checks the request as Apple does (fact sheet §1.2, §3), then answers `{config, requestId}`
    /// and runs the test in the background.
    ///
    /// Refusals, in order: a body without an `originalTransactionId` string 4000211; an id
    /// that is not digits, or unknown in sandbox, 4000006; an `appTransactionId` 4000048; a
    /// transaction id that is not the original one 4000187; a Family Sharing purchase 4000185;
    /// not an auto-renewable subscription, or not active, 4000211; no sandbox realtime URL 404
    /// 4040021; a run still going 4000213. Unconfirmed choices: a subscription in its billing
    /// grace period counts as active (its subscriber keeps the service), and the codes for an
    /// unknown id, an inactive subscription and a missing URL are the closest Apple defines.
    func startPerformanceTest(_ body: [UInt8], _ context: Context) -> ServerAPIReply {
        guard let fields = (try? JSONValue.parse(body, maximumDepth: 8))?.object, case .string(let id)? = fields["originalTransactionId"],
            !id.isEmpty
        else { return error(400, .invalidPerformanceTestRequest, "Invalid request.") }
        guard id.utf8.count <= 64, id.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let environment = store.environments[.sandbox] else {
            return error(400, .invalidTransactionID, "Invalid transaction id.")
        }
        if environment.byID[id] == nil, environment.appTransactions[id] != nil || environment.customers[id] != nil {
            return error(400, .appTransactionIDNotSupported, "Invalid request. App transactions aren't supported by this endpoint.")
        }
        guard let row = environment.row(id) else { return error(400, .invalidTransactionID, "Invalid transaction id.") }
        guard row.originalID == id else {
            return error(400, .notOriginalTransactionID, "Invalid request. The transaction ID provided is not an original transaction ID.")
        }
        if row.ownership == "FAMILY_SHARED" {
            return error(400, .familyTransactionNotSupported, "Invalid request. Family Sharing transactions aren't supported by this endpoint.")
        }
        guard row.type == TransactionRow.autoRenewable, let current = currentPeriod(id, .sandbox) else {
            return error(400, .invalidPerformanceTestRequest, "Invalid request. The transaction is not an auto-renewable subscription.")
        }
        let status = renewalInfo(current, .sandbox, nowMS: context.nowMS).1
        guard status == .active || status == .gracePeriod else {
            return error(400, .invalidPerformanceTestRequest, "Invalid request. The subscription is not active.")
        }
        guard let appAppleID = store.appAppleID else {
            return error(400, .invalidPerformanceTestRequest, "Invalid request. The simulator's data names no appAppleId.")
        }
        let board = performanceTests
        guard let target = board.source.realtimeURL(.sandbox) else {
            return error(404, .realtimeURLNotFound, "Realtime URL not found.")
        }
        let request = RealtimeRequestFields(
            originalTransactionId: id, appAppleId: appAppleID, productId: current.productID, userLocale: "en-US", environment: .sandbox)
        let pki = self.pki
        let clock = configuration.clock
        let sender = board.sender
        let started = board.begin(target: target) { requestID, settings in
            await Self.runPerformanceTest(requestID, settings, target: target, request: request, board: board, sender: sender) {
                () throws(ServerAPISimulatorError) -> SignedRealtimeRequest in try pki.signRealtimeRequest(request, now: clock.now())
            }
        }
        guard let started else { return error(400, .existingPerformanceTestRun, "Invalid request. Existing performance test run.") }
        return json(.object(["config": started.settings.config, "requestId": .string(started.id)]))
    }

    /// Sends `settings.totalRequests` requests with at most `maxConcurrentRequests` in flight,
    /// as fast as answers come; none is sent after `totalDuration` (those left count as `OTHER`:
    /// what Apple does with them is unconfirmed). Each is timed from its POST to the end of its
    /// answer, in real time: it measures a real server.
    static func runPerformanceTest(
        _ requestID: String, _ settings: PerformanceTestSettings, target: String, request: RealtimeRequestFields, board: PerformanceTestBoard,
        sender: RetentionRealtimeSender, sign: @escaping @Sendable () throws(ServerAPISimulatorError) -> SignedRealtimeRequest
    ) async {
        let slots = Slots(settings.maxConcurrentRequests)
        let end = ContinuousClock.now + .milliseconds(settings.totalDuration)
        let limit = Double(settings.responseTimeThreshold) / 1000
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<settings.totalRequests {
                await slots.acquire()
                guard !Task.isCancelled, ContinuousClock.now < end else {
                    slots.release()
                    for _ in index..<settings.totalRequests { board.record(requestID, RealtimeAttempt(result: .other, httpStatus: nil, latency: 0), sent: false) }
                    break
                }
                group.addTask {
                    let attempt: RealtimeAttempt
                    do throws(ServerAPISimulatorError) {
                        attempt = await sender.post(try sign(), to: target, limit: limit)
                    } catch {
                        attempt = RealtimeAttempt(result: .other, httpStatus: nil, latency: 0)
                    }
                    slots.release()
                    board.record(requestID, attempt)
                }
            }
        }
        board.end(requestID)
    }

    /// Get Performance Test Results: 4000212 for an id that is not a UUID, 404 4040018 for one
    /// the simulator did not give.
    func performanceTestResult(_ requestID: String) -> ServerAPIReply {
        guard UUID(uuidString: requestID) != nil else { return error(400, .invalidPerformanceTestRequestID, "Invalid request id.") }
        guard let result = performanceTests.result(of: requestID) else {
            return error(404, .performanceTestRunNotFound, "Performance test run not found.")
        }
        return json(result)
    }

    /// `GET|POST /control/performance-test?total-requests=1000&…`: the settings later runs take
    /// (``PerformanceTestSettings/fields`` names them); answers `{"config": …}`.
    func controlPerformanceTest(_ query: Query) -> ServerAPIReply {
        var settings = performanceTests.settings
        for (name, value) in query.items {
            guard let field = PerformanceTestSettings.fields.first(where: { $0.name == name }) else {
                let known = PerformanceTestSettings.fields.map(\.name).joined(separator: ", ")
                return controlError("unknown setting \(Self.shown(name)): the settings are \(known)")
            }
            guard let number = Int(value), field.range.contains(number) else {
                return controlError("\(name) takes a whole number from \(field.range.lowerBound) to \(field.range.upperBound), not \(Self.shown(value))")
            }
            settings[keyPath: field.key] = number
        }
        performanceTests.settings = settings
        return json(.object(["config": settings.config]))
    }

    /// A control request's refusal: 400 `{"error": "…"}`.
    func controlError(_ reason: String) -> ServerAPIReply {
        ServerAPIReply(status: 400, headers: [("Content-Type", "application/json")], body: Array(JSONValue.object(["error": .string(reason)]).compactJSON.utf8))
    }

    /// Text from a request, escaped and cut for an answer.
    static func shown(_ text: String) -> String {
        "\"" + String(text.prefix(100)).unicodeScalars.map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F ? String($0) : "?" }.joined() + "\""
    }
}
