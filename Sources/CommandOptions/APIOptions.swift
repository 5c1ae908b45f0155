import AppStoreClients
import ArgumentParser
import Foundation
import OutboundHTTP
import AppStoreAPI
import LocalFiles
import ReceiptCore
import ReceiptTrust
import UntrustedText

/// The options every command that talks to the App Store Server API takes: credentials (flags,
/// else the environment), hosts and test-data anchors. Extra TLS roots (`--ca-file`) are the
/// command's own option, since the dashboard shares one with its verifyReceipt options.
public struct APIOptions: ParsableArguments {
    public init() {}

    @Option(name: .long, help: ArgumentHelp("Issuer ID from App Store Connect (or RECEIPTDASH_API_ISSUER_ID).", valueName: "uuid"))
    public var issuerId: String?

    @Option(name: .long, help: ArgumentHelp("In-App Purchase key ID (or RECEIPTDASH_API_KEY_ID).", valueName: "id"))
    public var keyId: String?

    @Option(
        name: .long,
        help: ArgumentHelp("The key's .p8 file, PKCS#8 PEM (or RECEIPTDASH_API_PRIVATE_KEY_FILE). Never printed or stored.", valueName: "file"))
    public var privateKeyFile: String?

    @Option(name: .long, help: ArgumentHelp("The app's bundle ID (or RECEIPTDASH_BUNDLE_ID).", valueName: "id"))
    public var bundleId: String?

    @Option(name: .long, help: ArgumentHelp("The app's Apple ID, a number (or RECEIPTDASH_APP_APPLE_ID).", valueName: "id"))
    public var appAppleId: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Settings from this table of $XDG_CONFIG_HOME/receiptdash/api.toml (flags win over it, it wins over the environment). Keys: \(APIProfile.keysListed).",
            valueName: "name"))
    public var apiProfile: String?

    @Option(
        name: .long,
        help: ArgumentHelp("Production API base URL (https; plain http on loopback only; default \(APIHosts.appleProductionURL)).", valueName: "url"))
    public var apiProductionUrl: String?

    @Option(
        name: .long,
        help: ArgumentHelp("Sandbox API base URL (https; plain http on loopback only; default \(APIHosts.appleSandboxURL)).", valueName: "url"))
    public var apiSandboxUrl: String?

    @OptionGroup public var roots: RootCAOption
    public var rootCa: [String] { roots.rootCa }

    public func validate() throws {
        // A profile that cannot be read is said when the command reads it (the same usage
        // error), and doctor reports it as a check with its fix.
        if apiProfile != nil, (try? profile()) == nil { return }
        _ = try hosts()
    }

    /// Both hosts (flag, else profile, else Apple's), checked: a usage error (exit 64) before
    /// anything is sent.
    public func hosts() throws -> APIHosts {
        let profile = try self.profile()
        do {
            return try APIHosts(
                production: apiProductionUrl ?? profile?.productionURL ?? APIHosts.appleProductionURL,
                sandbox: apiSandboxUrl ?? profile?.sandboxURL ?? APIHosts.appleSandboxURL)
        } catch {
            throw ValidationError(error.reason)
        }
    }

    /// The `--api-profile` table, when one is named, or why it cannot be used (by code).
    public func loadProfile() throws(APICredentialError) -> APIProfile? {
        guard let apiProfile else { return nil }
        let environment = ProcessInfo.processInfo.environment
        return try APIProfile.load(apiProfile, path: APIProfile.defaultPath(environment: environment), environment: environment)
    }

    /// The `--api-profile` table, when one is named; a file that cannot be used is a usage
    /// error.
    public func profile() throws -> APIProfile? {
        do {
            return try loadProfile()
        } catch {
            throw ValidationError(error.reason)
        }
    }

    /// The credentials, from the flags or the environment; what to configure when some are
    /// missing. Warnings (a key file others can read) go to standard error.
    public func credentials() throws -> APICredentials {
        let flags = try credentialFlags()
        do {
            let loaded = try APICredentials.load(flags, environment: ProcessInfo.processInfo.environment)
            for warning in loaded.warnings { Console.standard.error("receiptdash: warning: \(warning)") }
            return loaded.credentials
        } catch {
            throw APIOptionsError(error.reason)
        }
    }

    /// The settings the flags name, filled from `--api-profile` (the environment is read later).
    public func credentialFlags() throws -> APICredentials.Flags {
        let flags = APICredentials.Flags(
            issuerID: issuerId, keyID: keyId, privateKeyFile: privateKeyFile, bundleID: bundleId, appAppleID: appAppleId)
        return try profile()?.filling(flags) ?? flags
    }

    /// Whether any credential is given (flag or variable): when none is, the dashboard's `l`
    /// lists every setting rather than the loader's error.
    public var namesCredentials: Bool {
        let variables = ["RECEIPTDASH_API_ISSUER_ID", "RECEIPTDASH_API_KEY_ID", "RECEIPTDASH_API_PRIVATE_KEY_FILE", "RECEIPTDASH_BUNDLE_ID"]
        let environment = ProcessInfo.processInfo.environment
        return [issuerId, keyId, privateKeyFile, bundleId].contains { $0 != nil } || variables.contains { environment[$0] != nil }
            || !rootCa.isEmpty
    }

    /// Apple's roots plus every `--root-ca` as a test anchor.
    public func trustAnchors() throws -> TrustAnchors {
        do {
            return try TrustAnchors.apple(testRootFiles: rootCa)
        } catch {
            throw APIOptionsError(error.description)
        }
    }

    /// The client for `credentials`; `caFile` adds trusted TLS roots (`--ca-file`, else the
    /// profile's `root_ca`).
    public func makeClient(_ credentials: APICredentials, caFile: String?) throws -> AppStoreServerAPIClient {
        let hosts = try hosts()
        let caFile = try caFile ?? profile()?.caFile
        do {
            return AppStoreServerAPIClient(
                credentials: credentials, hosts: hosts, extraTrustRoots: try caFile.map { try OutboundHTTPClient.loadTrustRoots(file: $0) } ?? [])
        } catch {
            throw APIOptionsError(String(describing: error))
        }
    }
}

/// A configuration problem found before anything was sent (credentials, a key file, a CA
/// file): printed in words, exit 64 (``ExitStatus/usage``) from every command.
public struct APIOptionsError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
