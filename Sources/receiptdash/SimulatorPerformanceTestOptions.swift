import ArgumentParser
import ReceiptSimulator

/// `receiptdash simulator --perf-…`: how the simulator runs Retention Messaging's performance
/// test (Apple's `PerformanceTestConfig`; `POST /control/performance-test` changes it later).
struct SimulatorPerformanceTestOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Performance test: requests in flight at most (Apple: 10).", valueName: "n"))
    var perfMaxConcurrentRequests = PerformanceTestSettings().maxConcurrentRequests

    @Option(name: .long, help: ArgumentHelp("Performance test: requests in all (Apple's example: 100).", valueName: "n"))
    var perfTotalRequests = PerformanceTestSettings().totalRequests

    @Option(name: .long, help: ArgumentHelp("Performance test: no request is sent after this many ms (60000).", valueName: "ms"))
    var perfTotalDurationMs = PerformanceTestSettings().totalDuration

    @Option(name: .long, help: ArgumentHelp("Performance test: a slower answer is TIMED_OUT (Apple: 700).", valueName: "ms"))
    var perfResponseTimeThresholdMs = PerformanceTestSettings().responseTimeThreshold

    @Option(name: .long, help: ArgumentHelp("Performance test: the percentage of successes that passes (95).", valueName: "percent"))
    var perfSuccessRateThreshold = PerformanceTestSettings().successRateThreshold

    var settings: PerformanceTestSettings {
        PerformanceTestSettings(
            maxConcurrentRequests: perfMaxConcurrentRequests, totalRequests: perfTotalRequests, totalDuration: perfTotalDurationMs,
            responseTimeThreshold: perfResponseTimeThresholdMs, successRateThreshold: perfSuccessRateThreshold)
    }
}
