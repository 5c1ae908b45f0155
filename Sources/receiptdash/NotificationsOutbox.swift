import ArgumentParser
import AuditTrail
import CommandOptions
import Foundation
import NotificationForwarder

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
        if retention && (outbox || replay || reconcile || refusals || follow || type != nil || state != nil || !enable.isEmpty) {
            throw ValidationError("--retention lists realtime requests on its own (with --since, --limit and --format).")
        }
        if consumption && (retention || outbox || replay || reconcile || refusals || follow || type != nil || state != nil || !enable.isEmpty) {
            throw ValidationError("--consumption lists refund requests on its own (with --since, --limit and --format).")
        }
        if outboxOnly && !outbox && !((retention || consumption) && state == nil && enable.isEmpty) {
            throw ValidationError("--state, --limit and --enable belong to --outbox.")
        }
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

    /// `--outbox` and `--replay`; an error is said by ``run()``, which closes the trail.
    func runOutbox(_ backend: any AuditBackend) async throws {
        let done: Bool
        if outbox && !enable.isEmpty {
            done = try await OutboxCommands.enable(enable, in: backend, console: .standard)
        } else if outbox {
            try await OutboxCommands.list(backend, state: state, limit: limit, format: format.table, now: Date(), console: .standard)
            done = true
        } else {
            // --to: this command delivers them now, round after round, until none is due.
            let configuration = try to.isEmpty ? nil : Forwarder.Configuration(
                targets: to.map { try ForwardTarget($0) }, secrets: ForwardOptions.secrets(file: forwardSecretFile),
                headers: ForwardOptions.headers(file: forwardHeaderFile), extraTrustRoots: tls.roots())
            done = try await OutboxCommands.replay(
                notificationUUIDs.isEmpty ? nil : notificationUUIDs, since: since.flatMap(TimeArgument.parse), to: configuration, in: backend,
                now: Date(), console: .standard)
        }
        if !done { throw ExitCode.failure }
    }
}
