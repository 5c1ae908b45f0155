import ArgumentParser
import AuditTrail
import Foundation
import LocalFiles
import NotificationForwarder
import UntrustedText

/// `receive --forward URL…`: where stored notifications go next, signed as Standard Webhooks.
struct ForwardOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Forward every notification stored to this URL as a signed Standard Webhook (repeatable; https, or http on loopback).",
            valueName: "url"))
    var forward: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp("The signing secret (whsec_…) in this file (or RECEIPTDASH_FORWARD_SECRET); required with --forward.", valueName: "file"))
    var forwardSecretFile: String?

    @Option(name: .long, help: ArgumentHelp("Forward only this notification type (repeatable; default: every type).", valueName: "type"))
    var forwardType: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp("Deliveries held in memory at once; the rest wait in the outbox on disk.", valueName: "n"))
    var forwardMaxPending = Forwarder.Configuration.defaultMaximumPending

    static let secretVariable = "RECEIPTDASH_FORWARD_SECRET"

    func validate() throws {
        guard forwardMaxPending > 0 else { throw ValidationError("--forward-max-pending must be positive.") }
        if forward.isEmpty {
            if forwardSecretFile != nil || !forwardType.isEmpty {
                throw ValidationError("--forward-secret-file and --forward-type go with --forward URL.")
            }
            return
        }
        _ = try targets()
        for type in forwardType where type.isEmpty || !type.utf8.allSatisfy({ $0 == 0x5F || (0x41...0x5A).contains($0 & ~0x20) }) {
            throw ValidationError("--forward-type takes a notification type such as DID_RENEW; not \(SafeText.escaped(type)).")
        }
        if forwardSecretFile == nil, (ProcessInfo.processInfo.environment[Self.secretVariable] ?? "").isEmpty {
            throw ValidationError(
                "--forward needs a signing secret: --forward-secret-file FILE or \(Self.secretVariable). Make one with: echo \"whsec_$(openssl rand -base64 32)\" > forward.secret; chmod 600 forward.secret")
        }
    }

    func targets() throws -> [ForwardTarget] {
        do {
            return try forward.map { (url) throws(ForwardError) in try ForwardTarget(url) }
        } catch {
            throw ValidationError(error.reason)
        }
    }

    /// The route the store queues by, nil without --forward.
    func route() throws -> ForwardRoute? {
        forward.isEmpty ? nil : ForwardRoute(targets: try targets().map(\.url), types: Set(forwardType))
    }

    /// The secret, read once (a file others can read is warned about).
    func secret() throws -> WebhookSecret { try Self.secret(file: forwardSecretFile) }

    /// The secret in `file`, else in RECEIPTDASH_FORWARD_SECRET.
    static func secret(file forwardSecretFile: String?) throws -> WebhookSecret {
        let text: String
        if let forwardSecretFile {
            if let warning = FilePermissions.readableByOthersWarning(path: forwardSecretFile, what: "the forwarding secret file") {
                Standard.warning(warning)
            }
            guard let data = FileManager.default.contents(atPath: forwardSecretFile), let read = String(data: data, encoding: .utf8) else {
                throw ValidationError("cannot read the forwarding secret file \(forwardSecretFile)")
            }
            text = read
        } else {
            text = ProcessInfo.processInfo.environment[secretVariable] ?? ""
        }
        do {
            return try WebhookSecret(text)
        } catch {
            throw ValidationError(error.reason)
        }
    }

    /// The forwarder's configuration, nil without --forward.
    func configuration() throws -> Forwarder.Configuration? {
        guard !forward.isEmpty else { return nil }
        return Forwarder.Configuration(targets: try targets(), secret: try secret(), maximumPending: forwardMaxPending)
    }
}
