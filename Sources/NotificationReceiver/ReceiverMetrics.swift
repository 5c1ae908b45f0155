import AppStoreAPI
import Foundation
import Prometheus
import ReceiptCore

/// The receiver's metrics in Prometheus text format (`GET /metrics`), through swift-prometheus:
/// notifications by type and outcome, request, verification and commit latency, redeliveries.
///
/// Label values never carry text from a request as it came: a type Apple does not document
/// counts as `other`, so hostile input can neither inject into the exposition format nor grow
/// the number of series without bound.
public final class ReceiverMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    private let requestSeconds: DurationHistogram
    private let verifySeconds: DurationHistogram
    private let commitSeconds: DurationHistogram
    private let redeliveries: Counter

    static let buckets: [Duration] = [
        .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
        .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2.5),
    ]

    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        func name(_ metric: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
            MetricNameDescriptor(namespace: "receiptdash", subsystem: "notification", metricName: metric, unitName: unit, helpText: help)
        }
        requestSeconds = registry.makeDurationHistogram(
            descriptor: name("request", "seconds", "Time from a notification request's body to its answer, commit included"),
            buckets: Self.buckets)
        verifySeconds = registry.makeDurationHistogram(
            descriptor: name("verify", "seconds", "Time to decode and verify a notification (chain, nested tokens, bundle)"),
            buckets: Self.buckets)
        commitSeconds = registry.makeDurationHistogram(
            descriptor: name("commit", "seconds", "Time until the store made a notification durable (group commit)"),
            buckets: Self.buckets)
        redeliveries = registry.makeCounter(
            descriptor: name("redeliveries", "total", "Notifications delivered again (same notificationUUID)"))
        // At zero from the start: an alert on "none stored for 30 minutes" sees the series.
        for environment in ["production", "sandbox"] {
            for source in ["receiver", "history"] { _ = storedCounter(environment: environment, source: source) }
        }
    }

    private func storedCounter(environment: String, source: String) -> Counter {
        registry.makeCounter(
            descriptor: MetricNameDescriptor(
                namespace: "receiptdash", metricName: "notifications_stored", unitName: "total",
                helpText: "Notifications stored new, by environment and source (receiver: POSTed by Apple; history: backfilled)"),
            labels: [("environment", environment), ("source", source)])
    }

    /// A notification stored new (not a redelivery). The environment label is bounded:
    /// `production`, `sandbox`, else `other`.
    func stored(environment: String?, fromHistory: Bool) {
        let label =
            switch environment?.lowercased() {
            case "production": "production"
            case "sandbox": "sandbox"
            default: "other"
            }
        storedCounter(environment: label, source: fromHistory ? "history" : "receiver").increment()
    }

    /// The receiver's TLS certificate's end of validity (`--tls-cert`), for the expiry alert.
    public func tlsCertificateExpires(at date: Date) {
        registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "receiptdash", subsystem: "tls", metricName: "certificate_expiry_timestamp", unitName: "seconds",
                helpText: "When the receiver's TLS certificate (--tls-cert) stops being valid, in Unix seconds")
        ).set(date.timeIntervalSince1970)
    }

    /// One request's end: counted by type and outcome (a refusal also by its class, every one
    /// of them: only the stored sample rows are thinned), its latency recorded.
    func finished(type: String?, outcome: ReceiveOutcome, refusal: RefusalKind?, request: Duration, verify: Duration?, commit: Duration?) {
        if let refusal {
            registry.makeCounter(
                descriptor: MetricNameDescriptor(
                    namespace: "receiptdash", subsystem: "notification", metricName: "refusals", unitName: "total",
                    helpText: "Notification requests refused, by class (too-large, not-json, signature, bundle, stale, busy, …)"),
                labels: [("reason", refusal.rawValue)]
            ).increment()
        }
        let label = type.map { NotificationExplanation.knownTypes.contains($0) ? $0 : "other" } ?? "none"
        registry.makeCounter(
            descriptor: MetricNameDescriptor(
                namespace: "receiptdash", metricName: "notifications", unitName: "total", helpText: "Notification requests by type and outcome"),
            labels: [("type", label), ("outcome", outcome.rawValue)]
        ).increment()
        requestSeconds.record(request)
        if let verify { verifySeconds.record(verify) }
        if let commit { commitSeconds.record(commit) }
    }

    /// Apple delivered a notification again: a POST of one that had a delivery already (not
    /// Apple's first POST of a backfilled one, nor a backfill's copy of one stored).
    func redelivered() {
        redeliveries.increment()
    }

    /// The exposition text.
    public func text() -> [UInt8] { registry.emitToBuffer() }
}
