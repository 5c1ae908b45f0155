import Foundation
import RetentionRules
import Logging
import AppStoreAPI
import AuditTrail
import LocalFiles
import ReceiptCore
import RetryEngine
import ServiceLifecycle
import Synchronization
import UntrustedText

extension NotificationReceiver {
    /// Serves `receiptdash receive`: one group of `first` (the store's services, which stop
    /// last) and the listeners, ended by SIGTERM or SIGINT. Shutdown runs in reverse: the
    /// listeners stop accepting and finish what is in flight, then the store's services commit
    /// what they queued and close. The listeners' addresses are said on `console`'s standard output
    /// in a fixed order (the public one first), so a script that reads the first line gets the
    /// notifications URL.
    public func serve(
        _ listeners: ReceiverListeners, after first: [any Service], storedIn location: String, console: Console
    ) async throws {
        let scheme = listeners.tls == nil ? "http" : "https"
        if listeners.tls == nil, !Loopback.isLoopback(host: listeners.host) {
            console.errorRaw(
                "receiptdash: note: plain HTTP on \(listeners.host): Apple delivers only over HTTPS (TLS 1.2+); use --tls-cert/--tls-key or a reverse proxy that terminates TLS\n"
            )
        }
        let banner = ListenerBanner(console: console)
        let listening = try services(
            listeners,
            onListening: { address in
                banner.publicListener("receiptdash: receiving App Store Server Notifications at \(scheme)://\(address)/notifications (store: \(location))")
            },
            onMetricsListening: { address in banner.metrics("receiptdash: metrics at http://\(address)/metrics") })
        let group = ServiceGroup(
            configuration: .init(
                services: (first + listening).map { .init(service: $0) }, gracefulShutdownSignals: [.sigterm, .sigint],
                logger: Logger(label: "receiptdash.receive")))
        try await group.run()
    }
}

/// Says the listeners' addresses in a fixed order (the public one first), each at once, so a
/// script waiting for a line gets it.
final class ListenerBanner: Sendable {
    private let console: Console

    init(console: Console) {
        self.console = console
    }

    private let state = Mutex<(publicPrinted: Bool, metrics: String?)>((false, nil))

    func publicListener(_ line: String) {
        state.withLock { s in
            console.line(line)
            if let metrics = s.metrics { console.line(metrics) }
            s.publicPrinted = true
        }
    }

    func metrics(_ line: String) {
        state.withLock { s in
            if s.publicPrinted {
                console.line(line)
            } else {
                s.metrics = line
            }
        }
    }
}

/// What `receiptdash receive` runs once its arguments are read and its store is open: the write
/// queue over the store, the services that go with it (forwarding, made before the receiver
/// takes anything, and reconciliation, made with the write queue), the receiver with its TLS,
/// and the group it serves in until SIGTERM or SIGINT. Why it could not start or stopped is
/// said on the console; false is exit status 1. The store is closed however it ends.
public struct ReceiveLaunch {
    public var policy: ReceiverPolicy
    /// The listeners (their TLS is loaded from ``tls``).
    public var listeners: ReceiverListeners
    /// `--tls-cert` and `--tls-key`.
    public var tls: (certificate: String, key: String)?
    public var maximumPending: Int
    public var keepRefusals: Duration?
    /// One registry for the process: a receiver's /metrics also counts its requests to Apple.
    public var metrics: ReceiverMetrics
    /// `--retention-path` and `--retention-rules`: the realtime responder's path, its rules and
    /// the key its promotional offers are signed with.
    public var retention: (path: String, rules: RetentionRules, signer: OfferSigner?)?
    /// Services that run beside the receiver in its group, started after the store and stopped
    /// before it (the consumption answerer).
    public var services: [any Service] = []
    /// Marked by the store at each notification and refusal (the answerer waits for a quiet
    /// moment).
    public var activity: ActivityMark?

    public init(
        policy: ReceiverPolicy, listeners: ReceiverListeners, tls: (certificate: String, key: String)?, maximumPending: Int,
        keepRefusals: Duration?, metrics: ReceiverMetrics
    ) {
        self.policy = policy
        self.listeners = listeners
        self.tls = tls
        self.maximumPending = maximumPending
        self.keepRefusals = keepRefusals
        self.metrics = metrics
    }

    /// - Parameters:
    ///   - forwarding: the forwarding service, if any; its failure (registering the targets) ends
    ///     the start.
    ///   - reconciling: the reconciliation service, if any, writing through the queue; what it
    ///     throws is thrown on, the store closed.
    public func run(
        backend: any AuditBackend, console: Console, forwarding: () async throws -> (any Service)?,
        reconciling: (NotificationStore) throws -> (any Service)?
    ) async throws -> Bool {
        let store = NotificationStore(
            backend: backend, maximumPending: maximumPending, keepRefusals: keepRefusals,
            heartbeat: "\(ProcessInfo.processInfo.hostName) pid \(ProcessInfo.processInfo.processIdentifier)", activity: activity)
        // Deliveries leave from the outbox on their own: a downstream never delays Apple's 200.
        let forwarder: (any Service)?
        do {
            forwarder = try await forwarding()
        } catch {
            await backend.close()
            console.error("receiptdash: could not register the forwarding targets in the audit trail: \(error)")
            return false
        }
        var receiver = NotificationReceiver(sink: store, policy: policy, metrics: metrics)
        if let retention {
            receiver.retention = RetentionResponder(
                path: retention.path, rules: retention.rules, signer: retention.signer, trail: backend,
                metrics: RetentionMetrics(registry: metrics.registry))
        }
        var listeners = listeners
        if let tls {
            if let warning = FilePermissions.readableByOthersWarning(path: tls.key, what: "the TLS key file") { console.warning(warning) }
            do {
                let loaded = try ReceiverTLS(certificateFile: tls.certificate, keyFile: tls.key)
                metrics.tlsCertificateExpires(at: loaded.expires)
                listeners.tls = loaded
            } catch {
                await store.close()
                await backend.close()
                console.error("receiptdash: \(error.reason)")
                return false
            }
        }
        let reconciliation: (any Service)?
        do {
            reconciliation = try reconciling(store)
        } catch {
            await store.close()
            await backend.close()
            throw error
        }
        do {
            let services: [any Service] = [AuditStoreService(backend), store] + [forwarder, reconciliation].compactMap { $0 } + self.services
            try await receiver.serve(listeners, after: services, storedIn: store.location, console: console)
        } catch {
            console.error("receiptdash: \(error)")
            return false
        }
        console.line("receiptdash: stopped; store closed")
        return true
    }
}
