import AppStoreAPI
import ArgumentParser
import Foundation
import RetryEngine
import UntrustedText

/// `receive --reconcile-every 1h [--reconcile-window 7d]` and the API credentials it asks
/// Apple's Notification History with (the bundle id, app Apple id, profile and test roots are
/// the receiver's own).
public struct ReconcileOptions: ParsableArguments {
    public init() {}

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Ask Apple's Notification History this often (e.g. 1h; at start, then on schedule) and store what was missed.",
            valueName: "duration"))
    public var reconcileEvery: String?

    @Option(name: .long, help: ArgumentHelp("How far back each run looks (at most 180d; sandbox keeps 30d).", valueName: "duration"))
    public var reconcileWindow = "7d"

    @Option(name: .long, help: ArgumentHelp("Reconcile and answer refund requests: Issuer ID from App Store Connect (or RECEIPTDASH_API_ISSUER_ID).", valueName: "uuid"))
    public var issuerId: String?

    @Option(name: .long, help: ArgumentHelp("Reconcile and answer refund requests: In-App Purchase key ID (or RECEIPTDASH_API_KEY_ID).", valueName: "id"))
    public var keyId: String?

    @Option(
        name: .long,
        help: ArgumentHelp("Reconcile and answer refund requests: the key's .p8 file (or RECEIPTDASH_API_PRIVATE_KEY_FILE). Never printed or stored.", valueName: "file"))
    public var privateKeyFile: String?

    @Option(name: .long, help: ArgumentHelp("Reconcile and answer refund requests: production API base URL (https; plain http on loopback only).", valueName: "url"))
    public var apiProductionUrl: String?

    @Option(name: .long, help: ArgumentHelp("Reconcile and answer refund requests: sandbox API base URL (https; plain http on loopback only).", valueName: "url"))
    public var apiSandboxUrl: String?

    public func validate() throws {
        guard reconcileEvery != nil else {
            if reconcileWindow != "7d" { throw ValidationError("--reconcile-window goes with --reconcile-every DURATION.") }
            return
        }
        _ = try durations()
    }

    /// (every, window) in seconds.
    public func durations() throws -> (every: TimeInterval, window: TimeInterval) {
        guard let text = reconcileEvery, let every = DurationText.parse(text), every >= 60 else {
            throw ValidationError("--reconcile-every takes a duration of a minute or more, such as 1h or 30m; not \(SafeText.escaped(reconcileEvery ?? "")).")
        }
        guard let window = DurationText.parse(reconcileWindow), window >= 60 else {
            throw ValidationError("--reconcile-window takes a duration such as 7d or 12h; not \(SafeText.escaped(reconcileWindow)).")
        }
        guard window <= 180 * 86_400 else {
            throw ValidationError("--reconcile-window \(reconcileWindow) is more than 180 days: Apple's Notification History keeps 180 days.")
        }
        return (every, window)
    }

    /// Whether any of the App Store Server API's settings is given (they serve
    /// `--reconcile-every` and `--consumption-policy`).
    public var givesAPISettings: Bool {
        issuerId != nil || keyId != nil || privateKeyFile != nil || apiProductionUrl != nil || apiSandboxUrl != nil
    }

    /// The API options the reconciliation's client is made with, from these flags and the
    /// receiver's bundle id, app Apple id, profile and test roots.
    public func apiOptions(bundleID: String, appAppleID: Int64?, profile: String?, rootCA: [String]) throws -> APIOptions {
        var arguments = ["--bundle-id", bundleID]
        for (flag, value) in [
            ("--issuer-id", issuerId), ("--key-id", keyId), ("--private-key-file", privateKeyFile), ("--api-production-url", apiProductionUrl),
            ("--api-sandbox-url", apiSandboxUrl), ("--api-profile", profile), ("--app-apple-id", appAppleID.map(String.init)),
        ] {
            if let value { arguments += [flag, value] }
        }
        for root in rootCA { arguments += ["--root-ca", root] }
        return try APIOptions.parse(arguments)
    }
}
