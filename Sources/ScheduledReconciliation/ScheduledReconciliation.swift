import AppStoreAPI
import AppStoreClients
import AuditTrail
import Foundation
import Logging
import NotificationReceiver
import Prometheus
import RetryEngine
import ServiceLifecycle
import UntrustedText

/// `receive --reconcile-every 1h [--reconcile-window 7d]`: a service in the receiver's group that
/// asks Apple's Notification History for the window, once at start and then on schedule, and
/// backfills what the store missed through the receiver (verified exactly as a POST). On one
/// PostgreSQL, a run holds the job (``ScheduledJobs``): a second receiver skips it instead of
/// backfilling the same window again. One log line per run, and metrics.
public final class ScheduledReconciliation: Service, Sendable {
    public struct Configuration: Sendable {
        public var every: TimeInterval
        public var window: TimeInterval
        public var environments: [APIEnvironment]

        public init(every: TimeInterval, window: TimeInterval, environments: [APIEnvironment]) {
            self.every = every
            self.window = window
            self.environments = environments
        }

        /// How far back Apple's history goes: 180 days in production, 30 in sandbox.
        public static func historyLimit(_ environment: APIEnvironment) -> TimeInterval {
            environment == .production ? 180 * 86_400 : 30 * 86_400
        }
    }

    /// One environment's run.
    public struct Run: Sendable, Hashable {
        public enum Result: String, Sendable, Hashable {
            case ok, failed, skipped
        }

        public var environment: APIEnvironment
        public var result: Result
        public var sent = 0
        public var missing = 0
        public var recovered = 0
        /// Why it failed, in words.
        public var failure: String?
    }

    public let configuration: Configuration
    private let jobs: any ScheduledJobs
    private let stored: @Sendable () async throws -> Set<String>
    private let reconciler: NotificationReconciler
    private let receiver: NotificationReceiver
    private let clock: ServiceClock
    private let metrics: ReconcileMetrics?
    private let logger: Logger

    public init(
        configuration: Configuration, backend: any AuditBackend, reconciler: NotificationReconciler, receiver: NotificationReceiver,
        clock: ServiceClock = .system, metrics: ReconcileMetrics? = nil, logger: Logger = Logger(label: "receiptdash.reconcile")
    ) {
        self.configuration = configuration
        self.jobs = backend
        self.stored = { try await backend.notificationUUIDs() }
        self.reconciler = reconciler
        self.receiver = receiver
        self.clock = clock
        self.metrics = metrics
        self.logger = logger
    }

    public func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            for run in await runOnce() { log(run) }
            do {
                try await cancelWhenGracefulShutdown { try await self.clock.sleep(self.configuration.every) }
            } catch {
                break
            }
        }
        try? await reconciler.client.shutdown()
    }

    /// One run for each environment, now.
    public func runOnce() async -> [Run] {
        var runs: [Run] = []
        for environment in configuration.environments {
            let run: Run
            do {
                run = try await jobs.runJob("reconcile-\(environment.rawValue.lowercased())", every: configuration.every, now: clock.now) {
                    await self.reconcile(environment)
                } ?? Run(environment: environment, result: .skipped)
            } catch {
                run = Run(environment: environment, result: .failed, failure: "the audit store: \(error)")
            }
            metrics?.ran(run)
            runs.append(run)
        }
        return runs
    }

    private func reconcile(_ environment: APIEnvironment) async -> Run {
        let end = clock.now()
        let start = end.addingTimeInterval(-min(configuration.window, Configuration.historyLimit(environment) - 3600))
        let have: Set<String>
        do {
            have = try await stored()
        } catch {
            return Run(environment: environment, result: .failed, failure: "could not read the store: \(error)")
        }
        // Each page's missing ones are taken in as the page arrives; what is kept of them is
        // counts and the first one not stored.
        var recovered = 0
        var notStored = 0
        var firstNotStored: NotificationReconciliation.Ingested?
        let report = await reconciler.reconcile(
            received: have, filter: NotificationHistoryFilter(startDate: start, endDate: end), environment: environment,
            onMissing: { missing in
                for ingested in await HistoryBackfill.ingest(missing, receiver: self.receiver) {
                    if ingested.outcome == ReceiveOutcome.accepted.rawValue { recovered += 1 }
                    if !ingested.isStored {
                        notStored += 1
                        firstNotStored = firstNotStored ?? ingested
                    }
                }
            })
        var run = Run(environment: environment, result: .ok, sent: report.sent, missing: report.missing.count, recovered: recovered)
        if let failure = report.failure {
            run.result = .failed
            run.failure = "Apple's Notification History: \(failure.reason)"
        } else if let first = firstNotStored {
            run.result = .failed
            run.failure = "\(notStored) could not be stored (\(first.outcome): \(first.reason))"
        }
        return run
    }

    private func log(_ run: Run) {
        let environment = run.environment.rawValue.lowercased()
        switch run.result {
        case .skipped:
            logger.info("reconcile \(environment): skipped, another receiver ran it within the last \(Int(configuration.every / 60)) min")
        case .ok:
            logger.info(
                "reconcile \(environment): Apple sent \(run.sent) in the last \(Int(configuration.window / 3600)) h, \(run.missing) missing, \(run.recovered) recovered")
        case .failed:
            // The failure may quote a payload's claims (a refusal's reason): escaped.
            logger.warning("reconcile \(environment) failed: \(SafeText.escaped(run.failure ?? "unknown")) (\(run.recovered) recovered before it)")
        }
    }
}

/// `receiptdash_reconcile_runs_total{result}` (ok, failed, skipped) and
/// `receiptdash_reconcile_recovered_total`, at zero from the start.
public final class ReconcileMetrics: Sendable {
    private let runs: [ScheduledReconciliation.Run.Result: Counter]
    private let recovered: Counter

    public init(registry: PrometheusCollectorRegistry) {
        var runs: [ScheduledReconciliation.Run.Result: Counter] = [:]
        for result in [ScheduledReconciliation.Run.Result.ok, .failed, .skipped] {
            runs[result] = registry.makeCounter(
                descriptor: MetricNameDescriptor(
                    namespace: "receiptdash", subsystem: "reconcile", metricName: "runs", unitName: "total",
                    helpText: "Scheduled reconciliations by result (ok, failed, skipped: another receiver ran it)"),
                labels: [("result", result.rawValue)])
        }
        self.runs = runs
        recovered = registry.makeCounter(
            descriptor: MetricNameDescriptor(
                namespace: "receiptdash", subsystem: "reconcile", metricName: "recovered", unitName: "total",
                helpText: "Notifications Apple's history held that the store lacked, backfilled by scheduled reconciliation"))
    }

    func ran(_ run: ScheduledReconciliation.Run) {
        runs[run.result]?.increment()
        recovered.increment(by: Int64(run.recovered))
    }
}

extension ScheduledReconciliation {
    /// `receive --reconcile-every`'s service: Notification History for each of `environments`
    /// asked with `client`, backfilled into the receiver's write queue through a receiver of its
    /// own with the receiver's policy, save its age limit (`--max-age` is for live deliveries, a
    /// replayed old POST; Apple's history holds notifications signed up to 180 days ago). The
    /// line that says so goes to the console; `every` and `window` as typed are in it.
    public static func receiving(
        every: (seconds: TimeInterval, text: String), window: (seconds: TimeInterval, text: String), environments: [APIEnvironment],
        client: AppStoreServerAPIClient, backend: any AuditBackend, store: NotificationStore, policy: ReceiverPolicy,
        metrics: ReceiverMetrics, console: Console
    ) -> ScheduledReconciliation {
        console.error(
            "receiptdash: reconciling \(environments.map { $0.rawValue.lowercased() }.joined(separator: " and ")) with Apple's Notification History every \(every.text), over the last \(window.text)")
        var backfill = policy
        backfill.maximumAge = nil
        return ScheduledReconciliation(
            configuration: .init(every: every.seconds, window: window.seconds, environments: environments), backend: backend,
            reconciler: NotificationReconciler(client: client), receiver: NotificationReceiver(sink: store, policy: backfill, metrics: metrics),
            metrics: ReconcileMetrics(registry: ServiceMetrics.shared.registry))
    }
}
