import AppStoreClients
import Foundation
import NIOSSL
import AppStoreAPI
import ReceiptCore
import RetryEngine

/// What `doctor` knows of the App Store Server API set-up: the settings as `lookup` reads them
/// (flags and profile already merged), the hosts and extra TLS roots.
public struct APISetup: Sendable {
    public var flags: APICredentials.Flags
    public var environment: [String: String]
    public var hosts: APIHosts
    /// Set by ``Doctor`` from its `--ca-file`.
    var extraTrustRoots: [NIOSSLCertificate] = []
    /// The largest clock difference accepted, in seconds.
    public var allowedSkew: Double
    /// Why `--api-profile` could not be read, if it could not: reported as the `api.profile`
    /// check, with the fix its code calls for, instead of the other API checks.
    public var profileError: APICredentialError?

    public init(
        flags: APICredentials.Flags, environment: [String: String], hosts: APIHosts, allowedSkew: Double = 60
    ) {
        self.flags = flags
        self.environment = environment
        self.hosts = hosts
        self.allowedSkew = allowedSkew
    }

    /// Whether any credential setting is given at all (else the API checks are skipped).
    var namesAny: Bool {
        let variables = [
            APICredentials.Variable.issuerID, APICredentials.Variable.keyID, APICredentials.Variable.privateKeyFile,
            APICredentials.Variable.bundleID,
        ]
        return [flags.issuerID, flags.keyID, flags.privateKeyFile, flags.bundleID].contains { $0 != nil }
            || variables.contains { environment[$0]?.isEmpty == false }
    }
}

/// The credential checks: the key parses, its file is private, a token is minted, each
/// environment accepts it with one cheap call, and this machine's clock agrees with Apple's.
enum APIChecks {
    /// The made-up transaction id of the cheap call: any JSON error (4040010 not found, 4000006
    /// invalid) means the token was accepted; only 401 means it was not.
    static let probeTransactionID = "0"

    static func run(_ setup: APISetup, clock: ServiceClock) async -> [DoctorCheck] {
        if let error = setup.profileError {
            let fix: String =
                switch error.code {
                case .unreadableProfile: "check the file's path and that you may read it, or create it (see receiptdash lookup --help)"
                case .unknownProfile: "name a profile the file has with --api-profile, or add its [table]"
                case .invalidProfile: "correct the setting named: text in quotes, read_only and online_checks as true or false unquoted"
                default: "check the profile's settings"
                }
            return [DoctorCheck("api.profile", .failed, error.reason, fix: fix)]
        }
        guard setup.namesAny else {
            return [
                DoctorCheck(
                    "api.credentials", .skipped, "no App Store Server API key set up (lookup and the writes need one)",
                    fix:
                        "give --issuer-id, --key-id, --private-key-file and --bundle-id (or RECEIPTDASH_API_ISSUER_ID, RECEIPTDASH_API_KEY_ID, RECEIPTDASH_API_PRIVATE_KEY_FILE, RECEIPTDASH_BUNDLE_ID, or --api-profile NAME)"
                )
            ]
        }
        var checks: [DoctorCheck] = []
        let loaded: APICredentials.Loaded
        do {
            loaded = try APICredentials.load(setup.flags, environment: setup.environment)
        } catch {
            let fix: String =
                switch error.code {
                case .missing: "set the missing settings (flags, environment or --api-profile)"
                case .unreadableKeyFile: "check the path and that you may read the file"
                default: "use the .p8 file App Store Connect gave for this key (Users and Access › Integrations › In-App Purchase)"
                }
            return [DoctorCheck("api.credentials", .failed, error.reason, fix: fix)]
        }
        let credentials = loaded.credentials
        let keyFile = (setup.flags.privateKeyFile ?? setup.environment[APICredentials.Variable.privateKeyFile] ?? "")
            .trimmingCharacters(in: .whitespacesAndNewlines)
        checks.append(
            DoctorCheck("api.credentials", .ok, "key \(credentials.keyID) (P-256) of issuer \(credentials.issuerID) for \(credentials.bundleID)"))
        checks.append(FileModeCheck.privateFile("api.key-file", path: keyFile, what: "the private key file"))

        do {
            _ = try APIToken.mint(credentials, now: clock.now())
        } catch {
            checks.append(DoctorCheck("api.token", .failed, "no token could be made: \(error.reason)"))
            return checks
        }
        checks.append(DoctorCheck("api.token", .ok, "an ES256 token is minted (valid 5 minutes, as Apple's libraries make them)"))

        // lookup's retries: a server that is starting, or a 5xx, gets the same chances.
        let client = AppStoreServerAPIClient(
            credentials: credentials, hosts: setup.hosts, retry: RetryPolicy(),
            connectTimeout: .seconds(5), requestTimeout: .seconds(10), extraTrustRoots: setup.extraTrustRoots, clock: clock)
        var skews: [(APIEnvironment, Double)] = []
        let probe: APIRequest
        do throws(APIFailure) { probe = try .transactionInfo(probeTransactionID) } catch {
            checks.append(DoctorCheck("api.production", .failed, error.reason))
            return checks
        }
        for environment in APIEnvironment.allCases {
            let answer = await client.send(probe, in: environment, as: TransactionInfoResponse.self)
            let id = "api.\(environment.rawValue.lowercased())"
            let host = setup.hosts[environment].baseURL
            if let record = answer.records.last, let date = record.serverDate {
                // The server's clock read mid-request; `Date` has whole seconds, cut down.
                let localMidpoint = clock.now().addingTimeInterval(-record.latencyMilliseconds / 2000)
                skews.append((environment, localMidpoint.timeIntervalSince(date.addingTimeInterval(0.5))))
            }
            checks.append(callCheck(id, environment: environment, host: host, answer: answer))
        }
        try? await client.shutdown()
        checks.append(clockCheck(skews, allowed: setup.allowedSkew))
        return checks
    }

    static func callCheck(_ id: String, environment: APIEnvironment, host: String, answer: APIAnswer<TransactionInfoResponse>) -> DoctorCheck {
        guard let record = answer.records.last else {
            return DoctorCheck(id, .failed, answer.failure?.reason ?? "nothing was sent")
        }
        let latency = String(format: "%.0f ms", record.latencyMilliseconds)
        switch record.result {
        case .success(let status):
            return DoctorCheck(id, .ok, "\(host) accepts the token (a made-up transaction id got HTTP \(status), \(latency))")
        case .apiError(let status, let code):
            return DoctorCheck(
                id, .ok, "\(host) accepts the token (a made-up transaction id got HTTP \(status), error \(code.rawValue), \(latency))")
        case .http(status: 401):
            return DoctorCheck(
                id, .failed, APIFailure.unauthorized(environment: environment).reason,
                fix: "check --key-id and --issuer-id against App Store Connect (Users and Access › Integrations › In-App Purchase)")
        case .http(let status):
            return DoctorCheck(
                id, .failed, "\(host) answered HTTP \(status), which the App Store Server API does not send here",
                fix: "check the host (--api-\(environment.rawValue.lowercased())-url) and any proxy between")
        case .transport(let failure):
            return DoctorCheck(
                id, .failed, "\(host) cannot be reached: \(failure.description)",
                fix: failure.code == .tls
                    ? "a proxy that inspects TLS needs its root given with --ca-file; TLS checks are never turned off"
                    : "check this machine's network, DNS and proxy settings")
        }
    }

    static func clockCheck(_ skews: [(APIEnvironment, Double)], allowed: Double) -> DoctorCheck {
        guard let (environment, skew) = skews.max(by: { abs($0.1) < abs($1.1) }) else {
            return DoctorCheck("clock", .skipped, "no server answered with a Date header to compare with")
        }
        let words = abs(skew) < 1 ? "within a second of" : "\(durationWords(abs(skew))) \(skew > 0 ? "ahead of" : "behind")"
        if abs(skew) <= allowed {
            return DoctorCheck("clock", .ok, "this machine's clock is \(words) \(environment)'s")
        }
        return DoctorCheck(
            "clock", .failed, "this machine's clock is \(words) \(environment)'s: Apple refuses tokens dated that far off (401)",
            fix: "set the clock right (e.g. enable NTP: timedatectl set-ntp true)")
    }

    static func durationWords(_ seconds: Double) -> String {
        let s = Int(seconds.rounded())
        if s < 120 { return "\(s) s" }
        if s < 7200 { return "\(Int((seconds / 60).rounded())) min" }
        return "\(Int((seconds / 3600).rounded())) h"
    }
}
