import AuditTrail
import Foundation
import JSONWriting
import LocalFiles
import PlainWords
import UntrustedText

/// `notifications --outbox` and `notifications --replay`: forwarding's outbox listed, a target
/// enabled again, notifications queued again for the registered targets or delivered from here
/// (`--replay --to`). Each says what it did on the console and returns false when the command
/// failed (exit status 1); the trail stays open (the caller closes it).
public enum OutboxCommands {
    /// `--outbox --enable URL…`: forwards to each registered target again; false when one is not
    /// registered (the registered ones are named).
    public static func enable(_ urls: [String], in outbox: any ForwardOutbox, console: Console) async throws -> Bool {
        var enabled = true
        for url in urls {
            if try await outbox.enableForwardTarget(url) {
                console.line("forwarding to \(SafeText.escaped(url)) is enabled: its waiting deliveries go out with the receivers' next claims")
            } else {
                let known = try await outbox.forwardTargets().map(\.url)
                console.error(
                    "receiptdash: \(SafeText.escaped(url)) is not a registered forwarding target"
                        + (known.isEmpty ? " (none is: start receive --forward URL)" : "; registered: \(known.map(SafeText.escaped).joined(separator: ", "))"))
                enabled = false
            }
        }
        return enabled
    }

    /// `--outbox`: the deliveries (newest first) and the summary.
    public static func list(
        _ outbox: any ForwardOutbox, state: ForwardDelivery.State?, limit: Int, format: TableFormat, now: Date, console: Console
    ) async throws {
        let deliveries = try await outbox.outbox(state: state, limit: limit)
        ForwardOutboxListing.write(deliveries, summary: try await outbox.outboxSummary(), format: format, now: now, to: console)
    }

    /// `--replay`: the notifications named (or received since `since`) queued again, for every
    /// registered target, or with `to` (a configuration of `--to` targets) for those, delivered
    /// from here round after round until none is due (over `transport`, by default the HTTP
    /// one). False when a notification is unknown, no target is registered, or a delivery failed.
    public static func replay(
        _ uuids: [String]?, since: Date?, to configuration: Forwarder.Configuration?, in outbox: any ForwardOutbox,
        transport: (any ForwardTransport)? = nil, now: Date, console: Console
    ) async throws -> Bool {
        let targets = configuration?.targets
        if targets == nil, try await outbox.forwardTargets().isEmpty {
            console.error(
                "receiptdash: no forwarding target is registered in this audit trail, so there is nowhere to queue for: start receive --forward URL on it, or deliver from here with --replay --to URL")
            return false
        }
        let (queued, unknown) = try await outbox.requeueDeliveries(notificationUUIDs: uuids, since: since, targets: targets?.map(\.url), now: now)
        for uuid in unknown { console.error("receiptdash: no notification \(SafeText.escaped(uuid)) in the store") }
        guard let configuration, let targets else {
            let registered = try await outbox.forwardTargets()
            let disabled = registered.filter { $0.disabledAt != nil }.map(\.url)
            let waiting = disabled.isEmpty ? "" : " (\(disabled.map(SafeText.escaped).joined(separator: ", ")) disabled: notifications --outbox --enable URL)"
            console.line(
                "queued \(CountNoun.delivery.count(queued)) for \(CountNoun.registeredTarget.count(registered.count))\(waiting); the receivers forwarding from this trail send them")
            return unknown.isEmpty
        }
        let forwarder = Forwarder(
            outbox: outbox, configuration: configuration, transport: transport ?? HTTPForwardTransport(extraTrustRoots: configuration.extraTrustRoots))
        let total = try await forwarder.deliverDue()
        let failed = total.retried > 0 ? ", \(total.retried) failed (kept pending: run again, or forward to it from a receiver)" : ""
        console.line("queued \(CountNoun.delivery.count(queued)) to \(targets.map(\.url).joined(separator: ", ")): \(total.delivered) delivered\(failed)")
        return unknown.isEmpty && total.retried == 0 && total.dead == 0
    }
}

extension WebhookSecret {
    /// The environment variable a signing secret may be given in.
    public static let environmentVariable = "RECEIPTDASH_FORWARD_SECRET"

    /// The secrets in `file` (one a line: two while rotating; a file others can read is warned
    /// about), else the one in RECEIPTDASH_FORWARD_SECRET.
    public static func load(file: String?, environment: [String: String], warn: (String) -> Void) throws(ForwardError) -> [WebhookSecret] {
        let text: String
        if let file {
            if let warning = FilePermissions.readableByOthersWarning(path: file, what: "the forwarding secret file") { warn(warning) }
            guard let data = FileManager.default.contents(atPath: file), let read = String(data: data, encoding: .utf8) else {
                throw ForwardError(.secret, "cannot read the forwarding secret file \(file)")
            }
            text = read
        } else {
            text = environment[environmentVariable] ?? ""
        }
        do {
            return file == nil ? [try WebhookSecret(text)] : try WebhookSecret.all(text)
        } catch {
            throw ForwardError(.secret, "the forwarding secret\(file == nil ? "" : " file") cannot be used: \(error.reason)")
        }
    }
}

extension ForwardHeaders {
    /// The extra headers in `file` (`--forward-header-file`; a file others can read is warned
    /// about), none without one.
    public static func load(file: String?, warn: (String) -> Void) throws(ForwardError) -> [(String, String)] {
        guard let file else { return [] }
        if let warning = FilePermissions.readableByOthersWarning(path: file, what: "the forwarding header file") { warn(warning) }
        guard let data = FileManager.default.contents(atPath: file), let text = String(data: data, encoding: .utf8) else {
            throw ForwardError(.header, "cannot read the forwarding header file \(file)")
        }
        do {
            return try ForwardHeaders(text).fields
        } catch {
            throw ForwardError(.header, "the forwarding header file \(file) cannot be used: \(error.reason)")
        }
    }
}
