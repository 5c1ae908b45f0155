import AppStoreAPI
import AuditTrail
import Foundation
import Logging
import NIOSSL
import ReceiptCore
import ReceiptRendering
import RetryEngine
import ServiceLifecycle
import Synchronization

/// `receive --forward`: delivers the outbox to the team's services as Standard Webhooks, a
/// service in the receiver's group.
///
/// - **Never in Apple's way.** The store queues a row for every registered target in the
///   transaction that stores the notification, whichever process stores it; this service reads
///   the outbox on its own, so a slow or failing downstream never delays a 200.
/// - **Targets apart.** Each target has its own loop, its own deliveries in flight (at most
///   ``Configuration/maximumPending``, and no more than its connections) and its own slow-down:
///   a downstream that hangs never delays another's deliveries or their records.
/// - **A deadline per delivery.** ``Configuration/requestTimeout`` runs from the hand-over to the
///   client to the answer, the wait for a connection included; a claim's lease outlasts it by
///   ``Configuration/leaseMargin``, and each result is recorded as soon as its answer comes, so
///   no other receiver on the trail claims a delivery still in flight.
/// - **In order, at least once.** A claim takes only the oldest pending delivery of each target
///   and original transaction. A 2xx marks it delivered (even when the body after the status is
///   cut); anything else is tried again after the backoff (or a sane `Retry-After`) until
///   ``Configuration/retryWindow`` has passed since it was queued: one last attempt at the
///   window's end, then it is dead-lettered. A delivery the client refuses to send is
///   dead-lettered at once. `410 Gone` disables the target until `notifications --outbox
///   --enable URL`; `429`, `502`, `503` and `504` slow the whole target down.
public final class Forwarder: Service, Sendable {
    public struct Configuration: Sendable {
        public var targets: [ForwardTarget]
        /// Every delivery carries one `v1,` signature per secret (rotation: old and new).
        public var secrets: [WebhookSecret]
        /// Extra headers sent with every delivery (`--forward-header-file`), never shown.
        public var headers: [(String, String)]
        /// Deliveries of one target in flight at once (`--forward-max-pending`), at most its
        /// connections; the rest wait in the outbox.
        public var maximumPending: Int
        /// Connections kept to each target.
        public var connectionsPerTarget: Int
        /// One delivery's deadline, from the hand-over to the client to the answer
        /// (`--forward-timeout`).
        public var requestTimeout: Duration
        /// How much longer than ``requestTimeout`` a claim holds its row: time to record.
        public var leaseMargin: TimeInterval
        /// The backoff between attempts; its base delay is also the shortest `Retry-After`
        /// honoured (its budget is not used: the window below bounds it).
        public var backoff: RetryPolicy
        /// How long a delivery is tried before it is dead-lettered.
        public var retryWindow: TimeInterval
        /// How long to wait before looking again when nothing was due.
        public var idlePoll: Duration
        /// TLS roots trusted besides the system's (`--ca-file`: a target behind a private CA);
        /// added, never a way to turn the checks off.
        public var extraTrustRoots: [NIOSSLCertificate]

        public static let defaultMaximumPending = 256
        public static let defaultConnectionsPerTarget = 32
        public static let defaultRequestTimeout = Duration.seconds(10)
        public static let defaultRetryWindow: TimeInterval = 3 * 86_400

        public init(
            targets: [ForwardTarget], secrets: [WebhookSecret], headers: [(String, String)] = [], maximumPending: Int = defaultMaximumPending,
            connectionsPerTarget: Int = defaultConnectionsPerTarget, requestTimeout: Duration = defaultRequestTimeout, leaseMargin: TimeInterval = 10,
            backoff: RetryPolicy = RetryPolicy(maximumRetries: .max, baseDelay: 5, maximumDelay: 3600, totalBudget: .infinity, jitter: 0.2),
            retryWindow: TimeInterval = defaultRetryWindow, idlePoll: Duration = .milliseconds(100), extraTrustRoots: [NIOSSLCertificate] = []
        ) {
            self.targets = targets
            self.secrets = secrets
            self.headers = headers
            self.maximumPending = max(1, maximumPending)
            self.connectionsPerTarget = max(1, connectionsPerTarget)
            self.requestTimeout = requestTimeout
            self.leaseMargin = leaseMargin
            self.backoff = backoff
            self.retryWindow = retryWindow
            self.idlePoll = idlePoll
            self.extraTrustRoots = extraTrustRoots
        }

        /// How long a claim holds its rows: the deadline and the margin.
        public var lease: TimeInterval { requestTimeout.seconds + leaseMargin }
        /// Deliveries of one target in flight at once.
        var inFlightLimit: Int { min(maximumPending, connectionsPerTarget) }
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

        mutating func count(_ result: ForwardAttemptResult) {
            switch result.next {
            case .delivered: delivered += 1
            case .retry: retried += 1
            case .dead: dead += 1
            }
        }
    }

    public let configuration: Configuration
    private let outbox: any ForwardOutbox
    private let transport: any ForwardTransport
    private let clock: ServiceClock
    private let metrics: ForwardMetrics?
    private let logger: Logger
    private let random: @Sendable () -> Double
    private let recorder: ResultRecorder
    /// Targets slowed down (a 429, 502, 503 or 504): no claims before the date.
    private let slowedUntil = Mutex<[String: Date]>([:])

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
        recorder = ResultRecorder(outbox: outbox, logger: logger)
    }

    /// Delivers until the group shuts down: one loop per target, and the outbox's gauges every
    /// few seconds. On a graceful shutdown nothing new is claimed and what is in flight ends
    /// within its deadline.
    public func run() async throws {
        await withDiscardingTaskGroup { group in
            for target in configuration.targets {
                group.addTask { await self.deliver(to: target.url) }
            }
            group.addTask { await self.gauges() }
        }
        await transport.shutdown()
    }

    /// Releases the transport's connections (a forwarder driven by ``round()`` alone).
    public func shutdown() async { await transport.shutdown() }

    private enum Event: Sendable {
        case done
        case tick
    }

    /// One target's loop: claims as many due deliveries as it has room for, sends each as its
    /// own task and records it when it ends, and claims again as soon as one ends or, when
    /// nothing was due, after ``Configuration/idlePoll``.
    private func deliver(to target: String) async {
        let limit = configuration.inFlightLimit
        // A claim is a write transaction that reads the pending rows' heads: made for a batch
        // of free places (or when nothing is in flight, or a poll came), not for each answer.
        let batch = max(1, limit / 2)
        var lastFailureLog = -Double.infinity
        await withTaskGroup(of: Event.self) { group in
            var inFlight = 0
            var ticking = false
            var ticked = false
            while !Task.isCancelled && !Task.isShuttingDownGracefully {
                let now = clock.now()
                var idle = true
                let room = limit - inFlight
                if room > 0, inFlight == 0 || room >= batch || ticked, !slowed(target, at: now) {
                    ticked = false
                    do {
                        let claimed = try await outbox.claimDeliveries(
                            targets: [target], now: now, leaseUntil: now.addingTimeInterval(configuration.lease), limit: room)
                        for (delivery, notification) in claimed {
                            inFlight += 1
                            group.addTask {
                                await self.recorder.record(await self.attempt(delivery, notification))
                                return .done
                            }
                        }
                        idle = claimed.count < room
                    } catch {
                        if now.timeIntervalSince1970 - lastFailureLog >= 60 {
                            lastFailureLog = now.timeIntervalSince1970
                            logger.warning("forwarding could not read the outbox: \(error)")
                        }
                    }
                }
                if idle && !ticking {
                    ticking = true
                    group.addTask {
                        try? await self.clock.clock.sleep(for: self.configuration.idlePoll)
                        return .tick
                    }
                }
                switch await group.next() {
                case .done: inFlight -= 1
                case .tick: (ticking, ticked) = (false, true)
                case nil: break
                }
            }
            // Shutting down: what is in flight ends within its deadline and is recorded.
            while inFlight > 0, let event = await group.next() {
                if case .done = event { inFlight -= 1 }
            }
            group.cancelAll()
        }
    }

    private func gauges() async {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            await updateGauges()
            try? await cancelWhenGracefulShutdown { try await self.clock.clock.sleep(for: .seconds(5)) }
        }
    }

    private func slowed(_ target: String, at now: Date) -> Bool {
        slowedUntil.withLock { ($0[target] ?? .distantPast) > now }
    }

    /// Rounds one after another until none is due, or one delivers nothing (the downstream
    /// fails: the rest is left for later), then shuts the transport down: `notifications
    /// --replay --to`, which delivers from the command itself. The rounds' sums.
    public func deliverDue() async throws -> Round {
        var total = Round()
        do {
            while true {
                let round = try await self.round()
                total.claimed += round.claimed
                total.delivered += round.delivered
                total.retried += round.retried
                total.dead += round.dead
                if round.claimed == 0 || round.delivered == 0 { break }
            }
        } catch {
            await shutdown()
            throw error
        }
        await shutdown()
        return total
    }

    /// Claims what is due for every target (at most ``Configuration/maximumPending``), sends it
    /// all at once and records each result as its answer comes: what `notifications --replay
    /// --to` and tests drive.
    @discardableResult
    public func round() async throws -> Round {
        let now = clock.now()
        let targets = configuration.targets.map(\.url).filter { !slowed($0, at: now) }
        let claimed = try await outbox.claimDeliveries(
            targets: targets, now: now, leaseUntil: now.addingTimeInterval(configuration.lease), limit: configuration.maximumPending)
        var round = Round(claimed: claimed.count)
        guard !claimed.isEmpty else { return round }
        let results = await withTaskGroup(of: ForwardAttemptResult.self) { group in
            for (delivery, notification) in claimed {
                group.addTask {
                    let result = await self.attempt(delivery, notification)
                    await self.recorder.record(result)
                    return result
                }
            }
            var results: [ForwardAttemptResult] = []
            for await result in group { results.append(result) }
            return results
        }
        try recorder.throwIfFailed()
        for result in results { round.count(result) }
        return round
    }

    /// The headers of one attempt: the Standard Webhooks trio (one `v1,` signature per secret)
    /// and the configured extra headers.
    func headers(id: String, timestamp: Int64, body: [UInt8]) -> [(String, String)] {
        var headers = [
            ("content-type", "application/json"), ("user-agent", "receiptdash-forward"), ("webhook-id", id),
            ("webhook-timestamp", String(timestamp)),
        ]
        if !configuration.secrets.isEmpty {
            let signatures = configuration.secrets.map { WebhookSignature.sign(id: id, timestamp: timestamp, body: body, secret: $0) }
            headers.append(("webhook-signature", signatures.joined(separator: " ")))
        }
        return headers + configuration.headers
    }

    /// One POST of one delivery, and what to record of it.
    func attempt(_ delivery: ForwardDelivery, _ notification: StoredNotification) async -> ForwardAttemptResult {
        let body = Self.body(notification)
        let timestamp = Int64(clock.now().timeIntervalSince1970.rounded(.down))
        let answer = await transport.post(
            url: delivery.target, headers: headers(id: delivery.notificationUUID, timestamp: timestamp, body: body), body: body,
            timeout: configuration.requestTimeout)
        let at = clock.now()
        let (status, error, retryAfter): (Int?, String, String?)
        switch answer {
        case .status(let code, _) where (200...299).contains(code):
            metrics?.delivered(lag: at.timeIntervalSince(delivery.queuedAt))
            return ForwardAttemptResult(id: delivery.id, next: .delivered, at: at, status: code, error: nil)
        case .status(410, _):
            // Gone: the downstream says it takes no more. Nothing more goes to it until a person
            // enables it again; this delivery and those queued after it wait.
            await disable(delivery.target, at: at)
            (status, error, retryAfter) = (410, "HTTP 410: gone; forwarding to it is disabled (notifications --outbox --enable URL)", nil)
        case .status(let code, let after):
            (status, retryAfter) = (code, after)
            error = (300...399).contains(code) ? "HTTP \(code): a redirect, not followed" : "HTTP \(code)"
        case .failed(let failure) where failure.code == .notSent:
            // The client would not send it: no downstream saw it, and trying again cannot help.
            metrics?.deadLettered()
            return ForwardAttemptResult(id: delivery.id, next: .dead, at: at, status: nil, error: Self.words(failure, timeout: configuration.requestTimeout))
        case .failed(let failure):
            (status, error, retryAfter) = (nil, Self.words(failure, timeout: configuration.requestTimeout), nil)
        }
        guard
            let next = Self.nextAttempt(
                at: at, queuedAt: delivery.queuedAt, attempts: delivery.attempts + 1, retryAfter: retryAfter, backoff: configuration.backoff,
                window: configuration.retryWindow, random: random())
        else {
            metrics?.deadLettered()
            return ForwardAttemptResult(id: delivery.id, next: .dead, at: at, status: status, error: error)
        }
        if let status, Self.slowsTheTarget(status) {
            slowedUntil.withLock { $0[delivery.target] = max($0[delivery.target] ?? .distantPast, next) }
            metrics?.slowedDown()
        }
        metrics?.retry()
        return ForwardAttemptResult(id: delivery.id, next: .retry(at: next), at: at, status: status, error: error)
    }

    /// Statuses that say the downstream as a whole is overloaded or down: its other deliveries
    /// wait too.
    static func slowsTheTarget(_ status: Int) -> Bool { [429, 502, 503, 504].contains(status) }

    /// When to try a delivery again after its attempt number `attempts` failed at `at`, or nil
    /// to dead-letter it.
    ///
    /// The wait is the downstream's `Retry-After` (seconds or an HTTP date) when it is sane: at
    /// least the backoff's base delay and finite. Below it, negative, not a number, infinite or
    /// unreadable, it is ignored and the jittered backoff applies. A wait past the retry
    /// window's end is cut to the end, for one last attempt there; an attempt at or after the
    /// end that fails is the last.
    public static func nextAttempt(
        at: Date, queuedAt: Date, attempts: Int, retryAfter: String?, backoff: RetryPolicy, window: TimeInterval, random: Double
    ) -> Date? {
        let end = queuedAt.addingTimeInterval(window)
        guard at < end else { return nil }
        var wait = backoff.delay(forRetry: attempts, retryAfter: nil, random: random)
        if let asked = retryAfter.flatMap({ RetryAfter.seconds($0, now: at) }), asked.isFinite, asked >= backoff.baseDelay {
            wait = asked
        }
        let next = at.addingTimeInterval(wait)
        return next > end ? end : next
    }

    private func disable(_ target: String, at: Date) async {
        logger.error(
            "forwarding to \(target) is disabled: it answered 410 Gone; its deliveries wait in the outbox (notifications --outbox --enable \(target))")
        metrics?.targetDisabled()
        do {
            // Every receiver on the trail passes it by from its next claim until it is enabled.
            try await outbox.disableForwardTarget(target, at: at, reason: "HTTP 410 Gone")
        } catch {
            logger.warning("forwarding could not record that \(target) is disabled: \(error)")
            // Not recorded: this process holds it back for a minute and tries again then.
            slowedUntil.withLock { $0[target] = at.addingTimeInterval(60) }
        }
    }

    /// `10`, or `0.5`: a deadline in seconds as a person writes it.
    public static func secondsText(_ duration: Duration) -> String {
        let value = duration.seconds
        return value == value.rounded() ? String(Int64(value)) : String(format: "%.3g", value)
    }

    /// A failed attempt in a few words, by the failure's code.
    static func words(_ failure: TransportFailure, timeout: Duration) -> String {
        let detail = String(failure.detail.prefix(120))
        return switch failure.code {
        case .timeout: "no answer within \(secondsText(timeout)) s"
        case .refused: "could not reach it (connection refused)"
        case .dropped: "the connection closed before an answer"
        case .tls: "could not reach it (TLS: \(detail))"
        case .invalidResponse: "the answer was not HTTP"
        case .cancelled: "the receiver is shutting down"
        case .notSent: "not sent: \(detail)"
        case .other: "could not reach it (\(detail))"
        }
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
        if let targets = try? await outbox.forwardTargets() {
            metrics.disabledTargets(targets.filter { $0.disabledAt != nil }.count)
        }
    }
}

/// Records attempts as they end: a result that comes while a write is under way joins the next
/// write, so a burst of answers costs a few transactions, not one each, and no answer waits for
/// a round to end.
final class ResultRecorder: Sendable {
    private let outbox: any ForwardOutbox
    private let logger: Logger
    private let state = Mutex<(waiting: [ForwardAttemptResult], writing: Bool, failure: String?)>(([], false, nil))

    init(outbox: any ForwardOutbox, logger: Logger) {
        self.outbox = outbox
        self.logger = logger
    }

    /// Queues `result`; the first caller while none writes writes until nothing waits.
    func record(_ result: ForwardAttemptResult) async {
        let write = state.withLock { s -> Bool in
            s.waiting.append(result)
            guard !s.writing else { return false }
            s.writing = true
            return true
        }
        guard write else { return }
        while true {
            let batch = state.withLock { s -> [ForwardAttemptResult] in
                let batch = s.waiting
                s.waiting = []
                if batch.isEmpty { s.writing = false }
                return batch
            }
            guard !batch.isEmpty else { return }
            do {
                try await outbox.recordDeliveryResults(batch)
            } catch {
                // Not recorded: the leases end and the deliveries are tried again (at least once).
                logger.warning("forwarding could not record \(batch.count) attempts: \(error)")
                state.withLock { $0.failure = "\(error)" }
            }
        }
    }

    /// Throws (once) when a write failed since the last call.
    func throwIfFailed() throws {
        if let failure = state.withLock({ s -> String? in
            defer { s.failure = nil }
            return s.failure
        }) {
            throw AuditError(.writeFailed, "forwarding could not record its attempts: \(failure)")
        }
    }
}
