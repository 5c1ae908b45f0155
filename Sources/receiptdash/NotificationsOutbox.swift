import ArgumentParser
import AuditTrail
import Foundation
import NotificationForwarder
import ReceiptRendering
import UntrustedText

extension ForwardDelivery.State: ExpressibleByArgument {}

/// `notifications --outbox` and `notifications --replay`.
extension Notifications {
    func validateOutbox() throws {
        let outboxOnly = state != nil || limit != 100 || !enable.isEmpty
        let replayOnly = !to.isEmpty || forwardSecretFile != nil || forwardHeaderFile != nil || !notificationUUIDs.isEmpty
        if outbox && replay { throw ValidationError("--outbox lists and --replay queues: give one of them.") }
        if follow {
            if outbox || replay || reconcile || refusals {
                throw ValidationError("--follow streams stored notifications on its own (with --type, --bundle-id, --since or --after-id).")
            }
            if format != .text && format != .jsonl { throw ValidationError("--follow writes text or jsonl (one JSON object a line).") }
            if afterId != nil && since != nil { throw ValidationError("--follow starts from --since or --after-id, not both.") }
        } else if format == .jsonl {
            throw ValidationError("--format jsonl goes with --follow (the list is --format json).")
        } else if afterId != nil {
            throw ValidationError("--after-id belongs to --follow.")
        }
        if refusals && (outbox || replay || reconcile || type != nil) {
            throw ValidationError("--refusals lists refused requests on its own (with --since and --format).")
        }
        if (outbox || replay) && reconcile { throw ValidationError("--outbox and --replay do not go with --reconcile.") }
        if outboxOnly && !outbox { throw ValidationError("--state, --limit and --enable belong to --outbox.") }
        if replayOnly && !replay {
            throw ValidationError(
                notificationUUIDs.isEmpty
                    ? "--to, --forward-secret-file and --forward-header-file belong to --replay."
                    : "notificationUUIDs are given to --replay (notifications --replay UUID…).")
        }
        guard limit > 0 else { throw ValidationError("--limit must be positive.") }
        if replay {
            if notificationUUIDs.isEmpty && since == nil {
                throw ValidationError("--replay needs notificationUUIDs or --since TIME (every notification received since then).")
            }
            if !notificationUUIDs.isEmpty && since != nil { throw ValidationError("--replay takes notificationUUIDs or --since, not both.") }
            if type != nil { throw ValidationError("--replay takes notificationUUIDs or --since; --type filters the list only.") }
            for url in to {
                do { _ = try ForwardTarget(url) } catch { throw ValidationError(error.reason.replacingOccurrences(of: "--forward ", with: "--to ")) }
            }
            if !to.isEmpty, forwardSecretFile == nil, (ProcessInfo.processInfo.environment[ForwardOptions.secretVariable] ?? "").isEmpty {
                throw ValidationError("--replay --to signs what it sends: --forward-secret-file FILE or \(ForwardOptions.secretVariable).")
            }
            if to.isEmpty && (forwardSecretFile != nil || forwardHeaderFile != nil) {
                throw ValidationError("--forward-secret-file and --forward-header-file go with --replay --to URL (the receivers sign their own).")
            }
        }
    }

    func runOutbox(_ backend: any AuditBackend) async throws {
        if outbox && !enable.isEmpty {
            var failed = false
            for url in enable {
                if try await backend.enableForwardTarget(url) {
                    print("forwarding to \(SafeText.escaped(url)) is enabled: its waiting deliveries go out with the receivers' next claims")
                } else {
                    let known = try await backend.forwardTargets().map(\.url)
                    Standard.error(
                        "receiptdash: \(SafeText.escaped(url)) is not a registered forwarding target"
                            + (known.isEmpty ? " (none is: start receive --forward URL)" : "; registered: \(known.map(SafeText.escaped).joined(separator: ", "))"))
                    failed = true
                }
            }
            await backend.close()
            if failed { throw ExitCode.failure }
            return
        }
        if outbox {
            let deliveries = try await backend.outbox(state: state, limit: limit)
            let summary = try await backend.outboxSummary()
            ForwardOutboxListing.write(deliveries, summary: summary, format: format.table, now: Date(), to: .standard)
            await backend.close()
            return
        }
        let targets = to.isEmpty ? nil : try to.map { try ForwardTarget($0) }
        if targets == nil, try await backend.forwardTargets().isEmpty {
            await backend.close()
            Standard.error(
                "receiptdash: no forwarding target is registered in this audit trail, so there is nowhere to queue for: start receive --forward URL on it, or deliver from here with --replay --to URL")
            throw ExitCode.failure
        }
        let (queued, unknown) = try await backend.requeueDeliveries(
            notificationUUIDs: notificationUUIDs.isEmpty ? nil : notificationUUIDs, since: since.flatMap(TimeArgument.parse),
            targets: targets?.map(\.url), now: Date())
        for uuid in unknown { Standard.error("receiptdash: no notification \(SafeText.escaped(uuid)) in the store") }
        guard let targets else {
            let registered = try await backend.forwardTargets()
            let disabled = registered.filter { $0.disabledAt != nil }.map(\.url)
            let waiting = disabled.isEmpty ? "" : " (\(disabled.map(SafeText.escaped).joined(separator: ", ")) disabled: notifications --outbox --enable URL)"
            print(
                "queued \(queued) deliver\(queued == 1 ? "y" : "ies") for \(registered.count) registered target\(registered.count == 1 ? "" : "s")\(waiting); the receivers forwarding from this trail send them")
            await backend.close()
            if !unknown.isEmpty { throw ExitCode.failure }
            return
        }
        // --to: this command delivers them now, round after round, until none is due.
        let forwarder = Forwarder(
            outbox: backend,
            configuration: .init(
                targets: targets, secrets: try ForwardOptions.secrets(file: forwardSecretFile),
                headers: try ForwardOptions.headers(file: forwardHeaderFile)),
            transport: HTTPForwardTransport())
        let total = try await forwarder.deliverDue()
        let failed = total.retried > 0 ? ", \(total.retried) failed (kept pending: run again, or forward to it from a receiver)" : ""
        print("queued \(queued) deliver\(queued == 1 ? "y" : "ies") to \(targets.map(\.url).joined(separator: ", ")): \(total.delivered) delivered\(failed)")
        await backend.close()
        if !unknown.isEmpty || total.retried > 0 || total.dead > 0 { throw ExitCode.failure }
    }
}
