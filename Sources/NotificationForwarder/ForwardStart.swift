import AuditTrail
import Foundation
import PlainWords
import ReceiptCore

extension Forwarder {
    /// What `receive --forward` starts: the forwarder, a warning for each of its targets the
    /// trail holds disabled (their deliveries wait), and the line that says what is forwarded.
    public struct Start: Sendable {
        public let forwarder: Forwarder
        public let warnings: [String]
        public let banner: String
    }

    /// Registers `configuration`'s targets in `outbox` before the first notification is taken
    /// (from then on every process that stores in that trail, this one, another receiver or a
    /// backfill, queues for them), then makes the forwarder over the HTTP transport. `types`:
    /// `--forward-type` as given (none: every type). A registration that fails is thrown.
    public static func start(
        _ configuration: Configuration, types: [String], outbox: any ForwardOutbox, metrics: ForwardMetrics, at now: Date = Date()
    ) async throws -> Start {
        let urls = configuration.targets.map(\.url)
        try await outbox.registerForwardTargets(urls, types: Set(types.map { $0.uppercased() }), at: now)
        let disabled = (try? await outbox.forwardTargets())?.filter { $0.disabledAt != nil && urls.contains($0.url) } ?? []
        let warnings = disabled.map { target in
            "forwarding to \(target.url) is disabled since \(AppleDate.iso8601(target.disabledAt ?? Date())) (\(target.disabledReason ?? "by hand")): its deliveries wait; notifications --outbox --enable \(target.url)"
        }
        let forwarder = Forwarder(
            outbox: outbox, configuration: configuration,
            transport: HTTPForwardTransport(connectionsPerHost: configuration.connectionsPerTarget, extraTrustRoots: configuration.extraTrustRoots),
            metrics: metrics)
        let named = types.isEmpty ? "every type" : types.map { $0.uppercased() }.joined(separator: ", ")
        let headers = configuration.headers.isEmpty ? "" : ", with \(configuration.headers.map(\.0).joined(separator: ", "))"
        let secrets = configuration.secrets.count
        let banner =
            "receiptdash: forwarding \(named) to \(urls.joined(separator: ", ")) (Standard Webhooks, \(CountNoun.signature.count(secrets))\(headers); \(secondsText(configuration.requestTimeout)) s a delivery)"
        return Start(forwarder: forwarder, warnings: warnings, banner: banner)
    }
}
