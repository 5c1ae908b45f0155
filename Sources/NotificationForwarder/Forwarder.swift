import AuditTrail
import Foundation
import Logging
import ReceiptCore
import ReceiptRendering
import RetryEngine
import ServiceLifecycle

/// `receive --forward`: delivers the outbox to the team's services as Standard Webhooks, a
/// service in the receiver's group.
///
/// - **Never in Apple's way.** The receiver only queues a row in the transaction that stores
///   the notification; this service reads the outbox on its own, so a slow or failing downstream
///   never delays a 200.
/// - **Bounded.** At most ``Configuration/maximumPending`` deliveries are held in memory at once
///   (`--forward-max-pending`); the rest wait in the outbox on disk.
/// - **In order, at least once.** A claim takes only the oldest pending delivery of each target
///   and original transaction, and leases it: another receiver on the same PostgreSQL passes it
///   by. A 2xx marks it delivered; anything else is tried again with the retry engine's backoff
///   until ``Configuration/retryWindow`` (three days) has passed since it was queued, then it is
///   dead-lettered. A crash between a send and its record sends it again once the lease ends.
public final class Forwarder: Service, Sendable {
    public struct Configuration: Sendable {
        public var targets: [ForwardTarget]
        public var secret: WebhookSecret?
        /// Deliveries held in memory at once (`--forward-max-pending`).
        public var maximumPending: Int
        /// One attempt's limit, connection to answer.
        public var requestTimeout: Duration
        /// The backoff between attempts (its budget is not used: the window below bounds it).
        public var backoff: RetryPolicy
        /// How long a delivery is tried before it is dead-lettered.
        public var retryWindow: TimeInterval
        /// How long a claim holds its rows: longer than an attempt can take.
        public var lease: TimeInterval
        /// How long to wait before looking again when nothing was due.
        public var idlePoll: Duration

        public static let defaultMaximumPending = 256
        public static let defaultRetryWindow: TimeInterval = 3 * 86_400

        public init(
            targets: [ForwardTarget], secret: WebhookSecret?, maximumPending: Int = defaultMaximumPending,
            requestTimeout: Duration = .seconds(10),
            backoff: RetryPolicy = RetryPolicy(maximumRetries: .max, baseDelay: 5, maximumDelay: 3600, totalBudget: .infinity, jitter: 0.2),
            retryWindow: TimeInterval = defaultRetryWindow, lease: TimeInterval = 60, idlePoll: Duration = .milliseconds(100)
        ) {
            self.targets = targets
            self.secret = secret
            self.maximumPending = max(1, maximumPending)
            self.requestTimeout = requestTimeout
            self.backoff = backoff
            self.retryWindow = retryWindow
            self.lease = lease
            self.idlePoll = idlePoll
        }
    }

    /// What one round did.
    public struct Round: Sendable, Hashable {
        public var claimed = 0
        public var delivered = 0
        public var retried = 0
        public var dead = 0

        public init(claimed: Int = 0, delivered: Int = 0, retried: Int = 0, dead: Int = 0) {
            (self.claimed, self.delivered, self.retried, self.dead) = (claimed, delivered, retried, dead)
        }
    }

    public let configuration: Configuration
    private let outbox: any ForwardOutbox
    private let transport: any ForwardTransport
    private let clock: ServiceClock
    private let metrics: ForwardMetrics?
    private let logger: Logger
    private let random: @Sendable () -> Double

    public init(
        outbox: any ForwardOutbox, configuration: Configuration, transport: any ForwardTransport, clock: ServiceClock = .system,
        metrics: ForwardMetrics? = nil, logger: Logger = Logger(label: "receiptdash.forward"),
        random: @escaping @Sendable () -> Double = { Double.random(in: 0...1) }
    ) {
        self.outbox = outbox
        self.configuration = configuration
        self.transport = transport
        self.clock = clock
        self.metrics = metrics
        self.logger = logger
        self.random = random
    }

    /// Delivers until the group shuts down: rounds back to back while there is work, a short
    /// wait when there is none; the outbox's gauges every few seconds.
    public func run() async throws {
        await deliver()
        await transport.shutdown()
    }

    /// Releases the transport's connections (a forwarder driven by ``round()`` alone).
    public func shutdown() async { await transport.shutdown() }

    private func deliver() async {
        var lastGauge = -Double.infinity
        var lastFailureLog = -Double.infinity
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            let now = clock.now().timeIntervalSince1970
            if now - lastGauge >= 5 {
                lastGauge = now
                await updateGauges()
            }
            let round: Round
            do {
                round = try await self.round()
            } catch {
                if now - lastFailureLog >= 60 {
                    lastFailureLog = now
                    logger.warning("forwarding could not read the outbox: \(error)")
                }
                try? await cancelWhenGracefulShutdown { try await self.clock.clock.sleep(for: .seconds(1)) }
                continue
            }
            if round.dead > 0 { logger.error("forwarding dead-lettered \(round.dead) deliveries (see notifications --outbox --state dead)") }
            if round.claimed == 0 {
                try? await cancelWhenGracefulShutdown { try await self.clock.clock.sleep(for: self.configuration.idlePoll) }
            }
        }
    }

    /// Claims what is due, sends it (all at once, at most ``Configuration/maximumPending``), and
    /// records how each attempt ended in one transaction.
    @discardableResult
    public func round() async throws -> Round {
        let now = clock.now()
        let claimed = try await outbox.claimDeliveries(
            targets: configuration.targets.map(\.url), now: now, leaseUntil: now.addingTimeInterval(configuration.lease),
            limit: configuration.maximumPending)
        var round = Round(claimed: claimed.count)
        guard !claimed.isEmpty else { return round }
        let results = await withTaskGroup(of: ForwardAttemptResult.self) { group in
            for (delivery, notification) in claimed {
                group.addTask { await self.attempt(delivery, notification) }
            }
            var results: [ForwardAttemptResult] = []
            for await result in group { results.append(result) }
            return results
        }
        try await outbox.recordDeliveryResults(results)
        for result in results {
            switch result.next {
            case .delivered: round.delivered += 1
            case .retry: round.retried += 1
            case .dead: round.dead += 1
            }
        }
        return round
    }

    /// One POST of one delivery, and what to record of it.
    func attempt(_ delivery: ForwardDelivery, _ notification: StoredNotification) async -> ForwardAttemptResult {
        let body = Self.body(notification)
        let timestamp = Int64(clock.now().timeIntervalSince1970.rounded(.down))
        var headers = [
            ("content-type", "application/json"), ("user-agent", "receiptdash-forward"),
            ("webhook-id", delivery.notificationUUID), ("webhook-timestamp", String(timestamp)),
        ]
        if let secret = configuration.secret {
            headers.append(("webhook-signature", WebhookSignature.sign(id: delivery.notificationUUID, timestamp: timestamp, body: body, secret: secret)))
        }
        let answer = await transport.post(url: delivery.target, headers: headers, body: body, timeout: configuration.requestTimeout)
        let at = clock.now()
        let (status, error, retryAfter): (Int?, String?, Double?)
        switch answer {
        case .status(let code, _) where (200...299).contains(code):
            metrics?.delivered(lag: at.timeIntervalSince(delivery.queuedAt))
            return ForwardAttemptResult(id: delivery.id, next: .delivered, at: at, status: code, error: nil)
        case .status(let code, let after):
            (status, retryAfter) = (code, after)
            error = (300...399).contains(code) ? "HTTP \(code): a redirect, not followed" : "HTTP \(code)"
        case .failed(let words):
            (status, error, retryAfter) = (nil, words, nil)
        }
        let wait = configuration.backoff.delay(forRetry: delivery.attempts + 1, retryAfter: retryAfter, random: random())
        let next = at.addingTimeInterval(wait)
        if next.timeIntervalSince(delivery.queuedAt) > configuration.retryWindow {
            metrics?.deadLettered()
            return ForwardAttemptResult(id: delivery.id, next: .dead, at: at, status: status, error: error)
        }
        metrics?.retry()
        return ForwardAttemptResult(id: delivery.id, next: .retry(at: next), at: at, status: status, error: error)
    }

    /// The JSON a downstream gets for a stored notification.
    public static func body(_ notification: StoredNotification) -> [UInt8] {
        let record = notification.record
        let decoded = record.signedPayload.flatMap { try? ReceiptDecoder().decode(text: $0) }
        let row = record.listingRow(deliveries: notification.deliveries, decoded: decoded)
        return ForwardedNotificationJSON.body(row, decoded: decoded, signedPayload: record.signedPayload)
    }

    private func updateGauges() async {
        guard let metrics, let pending = try? await outbox.pendingDeliveries() else { return }
        let age = pending.oldestQueuedAt.map { max(0, clock.now().timeIntervalSince($0)) } ?? 0
        metrics.outbox(pending: pending.count, oldestAge: age)
    }
}
