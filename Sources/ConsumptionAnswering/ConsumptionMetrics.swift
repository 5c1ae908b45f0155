import Prometheus

/// The consumption answers' series for `GET /metrics`: requests this receiver handled by
/// result, and the age of the oldest request still open on the trail (every receiver's).
public final class ConsumptionMetrics: Sendable {
    private let results: [ConsumptionResult: Counter]
    private let oldestOpen: Gauge
    private let openCount: Gauge

    public init(registry: PrometheusCollectorRegistry) {
        func name(_ metric: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
            MetricNameDescriptor(namespace: "receiptdash", subsystem: "consumption", metricName: metric, unitName: unit, helpText: help)
        }
        var results: [ConsumptionResult: Counter] = [:]
        for result in ConsumptionResult.allCases where result != .lost {
            results[result] = registry.makeCounter(
                descriptor: name(
                    "requests", "total",
                    "CONSUMPTION_REQUESTs this receiver handled by result: answered, no-match, no-consent, no-response, dry-run, failed, unknown, late"),
                labels: [("result", result.rawValue)])
        }
        self.results = results
        oldestOpen = registry.makeGauge(
            descriptor: name("oldest_open", "seconds", "Age of the oldest CONSUMPTION_REQUEST not answered yet, from Apple's signature (0 when none)"))
        openCount = registry.makeGauge(descriptor: name("open", "requests", "CONSUMPTION_REQUESTs not answered yet (all receivers on the trail)"))
    }

    func handled(_ result: ConsumptionResult) {
        results[result]?.increment()
    }

    func open(count: Int, oldestAge seconds: Double) {
        openCount.set(Double(count))
        oldestOpen.set(seconds)
    }
}
