import ArgumentParser
import Foundation
import NotificationForwarder
import RetryEngine
import UntrustedText

/// `receive --forward URL…`: where stored notifications go next, signed as Standard Webhooks.
public struct ForwardOptions: ParsableArguments {
    public init() {}

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Forward every notification stored to this URL as a signed Standard Webhook (repeatable; https, or http on loopback).",
            valueName: "url"))
    public var forward: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The signing secret (whsec_…) in this file, one a line: two while rotating (or RECEIPTDASH_FORWARD_SECRET); required with --forward.",
            valueName: "file"))
    public var forwardSecretFile: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Headers every delivery carries, one 'Name: value' a line (such as Authorization: Bearer …); mode 600, never shown.",
            valueName: "file"))
    public var forwardHeaderFile: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "One delivery's deadline in seconds, from the hand-over to the answer, the wait for a connection included.", valueName: "seconds"))
    public var forwardTimeout: Double = Forwarder.Configuration.defaultRequestTimeout.seconds

    @Option(name: .long, help: ArgumentHelp("Forward only this notification type (repeatable; default: every type).", valueName: "type"))
    public var forwardType: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp("Deliveries held in memory at once; the rest wait in the outbox on disk.", valueName: "n"))
    public var forwardMaxPending = Forwarder.Configuration.defaultMaximumPending

    public static let secretVariable = WebhookSecret.environmentVariable

    public func validate() throws {
        guard forwardMaxPending > 0 else { throw ValidationError("--forward-max-pending must be positive.") }
        guard forwardTimeout.isFinite, forwardTimeout >= 0.1, forwardTimeout <= 300 else {
            throw ValidationError("--forward-timeout takes seconds from 0.1 to 300.")
        }
        if forward.isEmpty {
            if forwardSecretFile != nil || forwardHeaderFile != nil || !forwardType.isEmpty {
                throw ValidationError("--forward-secret-file, --forward-header-file and --forward-type go with --forward URL.")
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

    public func targets() throws -> [ForwardTarget] {
        do {
            return try forward.map { (url) throws(ForwardError) in try ForwardTarget(url) }
        } catch {
            throw ValidationError(error.reason)
        }
    }

    /// The secrets, read once (a file others can read is warned about).
    public func secrets() throws -> [WebhookSecret] { try Self.secrets(file: forwardSecretFile) }

    /// The secrets in `file` (one a line), else the one in RECEIPTDASH_FORWARD_SECRET.
    public static func secrets(file: String?) throws -> [WebhookSecret] {
        do {
            return try WebhookSecret.load(file: file, environment: ProcessInfo.processInfo.environment, warn: Console.standard.warning)
        } catch {
            throw ValidationError(error.reason)
        }
    }

    /// The extra headers in `--forward-header-file`, none without it.
    public static func headers(file: String?) throws -> [(String, String)] {
        do {
            return try ForwardHeaders.load(file: file, warn: Console.standard.warning)
        } catch {
            throw ValidationError(error.reason)
        }
    }

    /// The forwarder's configuration, nil without --forward; `tls` adds trusted roots for the
    /// targets (`--ca-file`).
    public func configuration(_ tls: TLSTrustOptions) throws -> Forwarder.Configuration? {
        guard !forward.isEmpty else { return nil }
        return Forwarder.Configuration(
            targets: try targets(), secrets: try secrets(), headers: try Self.headers(file: forwardHeaderFile), maximumPending: forwardMaxPending,
            requestTimeout: .milliseconds(Int64(forwardTimeout * 1000)), extraTrustRoots: try tls.roots())
    }
}
