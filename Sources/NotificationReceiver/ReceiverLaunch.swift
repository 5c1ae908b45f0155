import Foundation
import Logging
import AppStoreAPI
import ReceiptCore
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
