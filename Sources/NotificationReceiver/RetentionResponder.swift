import AppStoreAPI
import AuditTrail
import Foundation
import JSONWriting
import Logging
import Prometheus
import RetryEngine
import ReceiptCore
import RetentionRules
import Synchronization
import UntrustedText

/// The Retention Messaging responder (`receive --retention-path --retention-rules`): Apple asks
/// which message to show a subscriber who taps Cancel, and is answered within its deadline
/// (700 ms) by the first rule that matches.
///
/// The request is judged as a notification is (size, JSON, `signedPayload` alone, the claims
/// anyone can write, the chain, `appAppleId`); a refusal is a refusal row and a 4xx. A request
/// that passes always gets 200: the rule's answer, or `{}` when no rule matches, the message is
/// not known to be `APPROVED`, or something of ours fails (Apple then shows the default
/// message). Each is recorded in the trail, counted and logged with its reason.
public final class RetentionResponder: Sendable {
    /// Where Apple POSTs (`--retention-path`).
    public let path: String
    public let rules: RetentionRules
    let signer: OfferSigner?
    let trail: any RetentionTrail
    let metrics: RetentionMetrics
    /// How long the content states read from the trail are used before they are read again.
    let contentRefresh: TimeInterval
    private let content = Mutex<[String: (read: Date, approved: ApprovedContent)]>([:])

    /// A realtime request signed longer ago than this is a replay: Apple sends it at once.
    public static let maximumAge = Duration.seconds(300)

    public init(
        path: String, rules: RetentionRules, signer: OfferSigner?, trail: any RetentionTrail, metrics: RetentionMetrics,
        contentRefresh: TimeInterval = 10
    ) {
        self.path = path
        self.rules = rules
        self.signer = signer
        self.trail = trail
        self.metrics = metrics
        self.contentRefresh = contentRefresh
    }

    /// The approved content of `environment`, read from the trail at most every
    /// ``contentRefresh`` seconds (a `messaging status` run shows up within it).
    func approved(_ environment: String, now: Date) async -> ApprovedContent {
        if let cached = content.withLock({ $0[environment] }), now.timeIntervalSince(cached.read) < contentRefresh, now >= cached.read {
            return cached.approved
        }
        let items = (try? await trail.retentionContent(environment: environment)) ?? []
        let approved = ApprovedContent(items)
        content.withLock { $0[environment] = (now, approved) }
        return approved
    }

    /// Picks the answer for a verified request, recording it in the trail.
    func answer(_ request: RealtimeRequest, receivedAt: Date, peer: String?, started: ContinuousClock.Instant) async -> RetentionDecision {
        let original = request.originalTransactionID ?? ""
        let environment = request.environment ?? ""
        var facts: RetentionFacts?
        var factsFault: String?
        do {
            facts = try await trail.retentionFacts(originalTransactionID: original)
        } catch {
            factsFault = "the trail could not be read (\(SafeText.escaped(String(describing: error))))"
        }
        let ask = RetentionAsk(
            originalTransactionID: original, productID: request.productID ?? "", locale: request.userLocale ?? "", environment: environment,
            facts: facts, now: receivedAt)
        var decision = rules.decide(ask, approved: await approved(environment, now: receivedAt), signer: signer, nonce: UUID(), now: receivedAt)
        if let factsFault, decision.result != .offered { decision.reason += "; \(factsFault)" }
        let latency = ContinuousClock.now - started
        let record = RetentionRecord(
            requestIdentifier: request.requestIdentifier ?? "", receivedAt: receivedAt, environment: request.environment, appAppleID: request.appAppleID,
            originalTransactionID: request.originalTransactionID, productID: request.productID, locale: request.userLocale, result: decision.result,
            reason: decision.reason, rule: decision.rule, answerKind: decision.answerKind, messageIdentifier: decision.messageID,
            answer: String(decoding: decision.body, as: UTF8.self), latencyMilliseconds: DurationText.seconds(latency) * 1000, peer: peer)
        do {
            try await trail.recordRetention(record)
        } catch {
            metrics.notRecorded()
        }
        return decision
    }
}

/// The responder's metrics, in the receiver's registry: requests by result, and the time from
/// a request's body to its answer.
public final class RetentionMetrics: Sendable {
    let registry: PrometheusCollectorRegistry
    private let answerSeconds: DurationHistogram

    /// Finer near Apple's 700 ms deadline, where the alert looks.
    static let buckets: [Duration] = [
        .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
        .milliseconds(250), .milliseconds(400), .milliseconds(500), .milliseconds(600), .milliseconds(700), .seconds(1), .seconds(2.5),
    ]
    /// The `result` label's values: the trail's results and `refused`.
    public static let results = RetentionResult.allCases.map(\.rawValue) + ["refused"]

    public init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
        answerSeconds = registry.makeDurationHistogram(
            descriptor: MetricNameDescriptor(
                namespace: "receiptdash", subsystem: "retention", metricName: "answer", unitName: "seconds",
                helpText: "Time from a Retention Messaging realtime request's body to its answer (Apple waits 700 ms)"),
            buckets: Self.buckets)
        for result in Self.results { _ = counter(result) }
        _ = unrecorded
    }

    private func counter(_ result: String) -> Counter {
        registry.makeCounter(
            descriptor: MetricNameDescriptor(
                namespace: "receiptdash", subsystem: "retention", metricName: "requests", unitName: "total",
                helpText: "Retention Messaging realtime requests by result (offered, no-match, not-approved, fault, refused)"),
            labels: [("result", result)])
    }

    private var unrecorded: Counter {
        registry.makeCounter(
            descriptor: MetricNameDescriptor(
                namespace: "receiptdash", subsystem: "retention", metricName: "unrecorded", unitName: "total",
                helpText: "Realtime requests answered whose record could not be written to the trail"))
    }

    func finished(_ result: String, after elapsed: Duration) {
        counter(result).increment()
        answerSeconds.record(elapsed)
    }

    func notRecorded() { unrecorded.increment() }
}
