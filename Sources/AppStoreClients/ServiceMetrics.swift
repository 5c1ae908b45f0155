import Prometheus
import AppStoreAPI
import ReceiptCore

/// This process's requests to Apple, counted for `GET /metrics` beside the receiver's own
/// series: verifyReceipt attempts by environment and result, App Store Server API attempts by
/// endpoint, environment and result. The clients count into ``shared`` unless given another.
///
/// Label values are bounded: Apple statuses outside the documented ranges count as
/// `status-other`, HTTP statuses outside 100–599 as `http-other`, so an answer can never grow
/// the number of series without bound.
public final class ServiceMetrics: Sendable {
    /// The one registry of a process (the receiver's `/metrics` serves it).
    public static let shared = ServiceMetrics()

    public let registry: PrometheusCollectorRegistry

    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
    }

    /// One verifyReceipt attempt and how it ended.
    public func verifyReceiptAttempt(environment: VerifyEndpoint.Kind, result: AttemptResult) {
        let label: String
        switch result {
        case .apple(let status, _):
            switch status {
            case 0, 21_000...21_010: label = "status-\(status)"
            case 21_100...21_199: label = "status-211xx"
            default: label = "status-other"
            }
        case .http(let status): label = Self.http(status)
        case .transport(let failure): label = "transport-\(failure.code)"
        }
        counter("verifyreceipt_requests", "verifyReceipt attempts by environment and result",
            [("environment", environment.rawValue.lowercased()), ("result", label)]).increment()
    }

    /// One App Store Server API attempt and how it ended.
    public func apiAttempt(_ record: APIRequestRecord) {
        let label: String
        switch record.result {
        case .success: label = "ok"
        case .apiError(let status, _), .http(let status): label = Self.http(status)
        case .transport(let failure): label = "transport-\(failure.code)"
        }
        counter("api_requests", "App Store Server API attempts by endpoint, environment and result",
            [("endpoint", record.endpoint.rawValue), ("environment", record.environment.rawValue.lowercased()), ("result", label)])
            .increment()
    }

    private func counter(_ name: String, _ help: String, _ labels: [(String, String)]) -> Counter {
        registry.makeCounter(
            descriptor: MetricNameDescriptor(namespace: "receiptdash", metricName: name, unitName: "total", helpText: help), labels: labels)
    }

    private static func http(_ status: Int) -> String { (100...599).contains(status) ? "http-\(status)" : "http-other" }
}
