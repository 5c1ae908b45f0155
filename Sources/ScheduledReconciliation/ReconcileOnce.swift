import AppStoreAPI
import AppStoreClients
import AuditTrail
import NotificationReceiver
import UntrustedText

/// `notifications --reconcile [--ingest]`: the window of Apple's Notification History asked once
/// (every page) and compared with what the store holds; with `--ingest`, each page's missing
/// notifications go through a receiver of their own as the page arrives, exactly as if Apple had
/// POSTed them, into the same store. The report goes to the console; false when anything is
/// missing (without `--ingest`), was not stored (with it), or the history failed.
public struct ReconcileOnce: Sendable {
    public var reconciler: NotificationReconciler
    public var filter: NotificationHistoryFilter
    public var environment: APIEnvironment

    public init(reconciler: NotificationReconciler, filter: NotificationHistoryFilter, environment: APIEnvironment) {
        self.reconciler = reconciler
        self.filter = filter
        self.environment = environment
    }

    /// `received`: every notificationUUID stored; `ingest`: the store and the policy a backfill
    /// is verified with (the store stays open: the caller closes it).
    /// `verbose`: a line per retry's wait (``RetryProgress``).
    public func run(
        received: Set<String>, ingest: (backend: any AuditBackend, policy: ReceiverPolicy)?, json: Bool, console: Console, verbose: Bool = false
    ) async -> Bool {
        let progress = RetryProgress(console: console, verbose: verbose)
        var into: (store: NotificationStore, receiver: NotificationReceiver)?
        if let ingest {
            let store = NotificationStore(backend: ingest.backend).started()
            into = (store, NotificationReceiver(sink: store, policy: ingest.policy))
        }
        var ingested: [NotificationReconciliation.Ingested] = []
        let report = await reconciler.reconcile(
            received: received, filter: filter, environment: environment,
            onEvent: { progress.event($0) },
            onMissing: { missing in
                if let receiver = into?.receiver { ingested += await HistoryBackfill.ingest(missing, receiver: receiver) }
            })
        progress.finish()
        guard let into else {
            report.write(json: json, to: console)
            return report.failure == nil && report.missing.isEmpty
        }
        await into.store.close()
        report.write(json: json, ingested: ingested, to: console)
        return report.failure == nil && !ingested.contains(where: { !$0.isStored })
    }
}
