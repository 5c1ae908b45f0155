import Prometheus

/// Forwarding's series for `GET /metrics`: the outbox's depth and the age of its oldest pending
/// delivery, deliveries by result (`delivered`, `retry`, `dead`), and the lag from a
/// notification's storing to its delivery. Labels carry nothing a downstream sent.
public final class ForwardMetrics: Sendable {
    private let pending: Gauge
    private let oldestAge: Gauge
    private let delivered: Counter
    private let retried: Counter
    private let dead: Counter
    private let lag: DurationHistogram
    private let disabled: Gauge
    private let disabledEvents: Counter
    private let slowed: Counter

    public init(registry: PrometheusCollectorRegistry) {
        func name(_ metric: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
            MetricNameDescriptor(namespace: "receiptdash", subsystem: "forward", metricName: metric, unitName: unit, helpText: help)
        }
        pending = registry.makeGauge(descriptor: name("pending", "deliveries", "Deliveries waiting in the outbox (all receivers on the store)"))
        oldestAge = registry.makeGauge(
            descriptor: name("oldest_pending_age", "seconds", "Age of the oldest pending delivery in the outbox (0 when none)"))
        func deliveries(_ result: String) -> Counter {
            registry.makeCounter(
                descriptor: name("deliveries", "total", "Delivery attempts by result: delivered, retry (failed, tried again later), dead"),
                labels: [("result", result)])
        }
        disabled = registry.makeGauge(
            descriptor: name("targets_disabled", "", "Forwarding targets disabled after a 410 Gone (notifications --outbox --enable URL)"))
        disabledEvents = registry.makeCounter(
            descriptor: name("target_disabled", "total", "Times this receiver disabled a forwarding target on a 410 Gone"))
        slowed = registry.makeCounter(
            descriptor: name("target_slowed", "total", "Times a target's deliveries were all held back after a 429, 502, 503 or 504"))
        delivered = deliveries("delivered")
        retried = deliveries("retry")
        dead = deliveries("dead")
        lag = registry.makeDurationHistogram(
            descriptor: name("delivery", "seconds", "Time from a notification's storing to its delivery downstream"),
            buckets: [
                .milliseconds(10), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(5),
                .seconds(30), .seconds(300), .seconds(3600),
            ])
    }

    func outbox(pending count: Int, oldestAge seconds: Double) {
        pending.set(Double(count))
        oldestAge.set(seconds)
    }

    func delivered(lag seconds: Double) {
        delivered.increment()
        lag.record(.milliseconds(Int64(max(0, seconds) * 1000)))
    }

    func retry() { retried.increment() }
    func slowedDown() { slowed.increment() }
    func targetDisabled() { disabledEvents.increment() }
    func disabledTargets(_ count: Int) { disabled.set(Double(count)) }
    func deadLettered() { dead.increment() }
}
