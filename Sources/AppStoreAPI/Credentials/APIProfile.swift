import Foundation
import PlainWords
import ReceiptCore
import TOMLKit

/// Named App Store Server API settings, one TOML table per app, so a support engineer sets
/// several apps up once and then says `--api-profile NAME`:
///
/// ```toml
/// # $XDG_CONFIG_HOME/receiptdash/api.toml (default ~/.config/receiptdash/api.toml)
/// [photos]
/// issuer_id = "57246542-96fe-1a63-e053-0824d011072a"
/// key_id = "2X9R4HXF34"
/// private_key_file = "~/keys/SubscriptionKey_2X9R4HXF34.p8"
/// bundle_id = "com.example.photos"
/// app_apple_id = 1234567890          # optional
/// api_production_url = "…"           # optional, as --api-production-url
/// api_sandbox_url = "…"              # optional
/// root_ca = "~/certs/proxy-root.pem"  # optional, as --ca-file: extra TLS roots for Apple's API
/// read_only = true                   # optional: refuse every write to Apple (extend, …)
/// online_checks = true               # optional, as --online-checks
/// ```
///
/// A key not in ``keys`` is an error that lists them, with the file and line: a typo
/// (`private_key_flie`) is named where it is, not met later as a setting missing.
///
/// The private key itself never goes in the file: only the path of its `.p8` (a key pasted
/// into the profile is refused, so it is not copied around with the configuration).
public struct APIProfile: Sendable, Hashable {
    public var name: String
    public var issuerID: String?
    public var keyID: String?
    public var privateKeyFile: String?
    public var bundleID: String?
    public var appAppleID: String?
    public var productionURL: String?
    public var sandboxURL: String?
    /// `read_only = true`: the commands that write to Apple refuse to.
    public var readOnly = false
    /// `online_checks = true`: as `--online-checks` (OCSP about each JWS chain).
    public var onlineChecks = false
    /// `root_ca` (or `ca_file`): extra trusted TLS roots for Apple's API, as `--ca-file` (which
    /// wins over it). Not a test-data anchor: that is `--root-ca`.
    public var caFile: String?

    /// Every key a profile table may hold, in the order the docs list them.
    public static let keys = [
        "issuer_id", "key_id", "private_key_file", "bundle_id", "app_apple_id", "api_production_url", "api_sandbox_url", "root_ca",
        "ca_file", "read_only", "online_checks",
    ]

    /// The keys in words, for errors and `--help`.
    public static var keysListed: String { keys.joined(separator: ", ") }

    /// The file profiles are read from: `$XDG_CONFIG_HOME/receiptdash/api.toml`, or
    /// `~/.config/receiptdash/api.toml`.
    public static func defaultPath(environment: [String: String]) -> String {
        let base = environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? ((environment["HOME"] ?? NSHomeDirectory()) + "/.config")
        return base + "/receiptdash/api.toml"
    }

    /// Reads profile `name` from the TOML file at `path`.
    public static func load(_ name: String, path: String, environment: [String: String] = [:]) throws(APICredentialError) -> APIProfile {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw APICredentialError(
                .unreadableProfile,
                "--api-profile \(name): \(path) cannot be read; create it with one [\(name)] table of these keys: \(keysListed) (docs/lookup-and-actions.md, Profiles)")
        }
        guard let text = String(validating: [UInt8](data), as: UTF8.self) else {
            throw APICredentialError(.unreadableProfile, "\(path) is not UTF-8 text")
        }
        let root: TOMLTable
        do {
            root = try TOMLTable(string: text)
        } catch let error as TOMLParseError {
            throw APICredentialError(
                .invalidProfile, "\(path) line \(error.source.begin.line), column \(error.source.begin.column): \(error.description)")
        } catch {
            throw APICredentialError(.invalidProfile, "\(path) is not valid TOML: \(error)")
        }
        guard let table = root[name]?.table else {
            let known = root.keys.sorted()
            throw APICredentialError(
                .unknownProfile,
                "\(path) has no [\(name)] profile" + (known.isEmpty ? "" : "; it has: " + known.joined(separator: ", ")))
        }
        // "PATH line N [NAME]": where a key of this table is, when the text says.
        func place(_ key: String) -> String {
            ProfileLines.line(of: key, inTable: name, text: text).map { "\(path) line \($0) [\(name)]" } ?? "\(path) [\(name)]"
        }
        if table.contains(key: "private_key") {
            throw APICredentialError(
                .invalidKey,
                "\(place("private_key")) holds a private key: keep the key in its .p8 file (chmod 600) and name it with private_key_file")
        }
        for key in table.keys.sorted() where !keys.contains(key) {
            let guess = NearestWord.closest(to: key, in: keys).map { " (did you mean \($0)?)" } ?? ""
            throw APICredentialError(.invalidProfile, "\(place(key)): no setting \(key)\(guess); the keys are \(keysListed)")
        }
        func setting(_ key: String) throws(APICredentialError) -> String? {
            guard let value = table[key] else { return nil }
            if let string = value.string { return string }
            if let number = value.int { return String(number) }
            throw APICredentialError(.invalidProfile, "\(place(key)) \(key) must be a string")
        }
        let home = environment["HOME"] ?? NSHomeDirectory()
        var profile = APIProfile(
            name: name, issuerID: try setting("issuer_id"), keyID: try setting("key_id"),
            privateKeyFile: try setting("private_key_file").map { $0.hasPrefix("~/") ? home + $0.dropFirst(1) : $0 },
            bundleID: try setting("bundle_id"), appAppleID: try setting("app_apple_id"),
            productionURL: try setting("api_production_url"), sandboxURL: try setting("api_sandbox_url"))
        if let value = table["read_only"] {
            guard let flag = value.bool else { throw APICredentialError(.invalidProfile, "\(place("read_only")) read_only must be true or false") }
            profile.readOnly = flag
        }
        if let value = table["online_checks"] {
            guard let flag = value.bool else { throw APICredentialError(.invalidProfile, "\(place("online_checks")) online_checks must be true or false") }
            profile.onlineChecks = flag
        }
        if table.contains(key: "root_ca") && table.contains(key: "ca_file") {
            throw APICredentialError(.invalidProfile, "\(place("ca_file")) has root_ca and ca_file, which are the same setting: keep one")
        }
        var caFile = try setting("root_ca")
        if caFile == nil { caFile = try setting("ca_file") }
        profile.caFile = caFile.map { $0.hasPrefix("~/") ? home + $0.dropFirst(1) : $0 }
        return profile
    }

    /// Flags given on the command line win; the profile fills the rest (and the environment
    /// what neither gives, in ``APICredentials/load(_:environment:)``).
    public func filling(_ flags: APICredentials.Flags) -> APICredentials.Flags {
        APICredentials.Flags(
            issuerID: flags.issuerID ?? issuerID, keyID: flags.keyID ?? keyID,
            privateKeyFile: flags.privateKeyFile ?? privateKeyFile, bundleID: flags.bundleID ?? bundleID,
            appAppleID: flags.appAppleID ?? appAppleID)
    }
}

extension APIProfile {
    /// The bundle ids a receiver accepts: `flags`, else RECEIPTDASH_BUNDLE_ID, else the bundle
    /// id of the profile `name` (read from its default file); none found: empty.
    public static func bundleIDs(_ flags: [String], profile name: String?, environment: [String: String]) throws(APICredentialError) -> [String] {
        if !flags.isEmpty { return flags }
        if let value = environment["RECEIPTDASH_BUNDLE_ID"], !value.isEmpty { return [value] }
        guard let name else { return [] }
        return try load(name, path: defaultPath(environment: environment), environment: environment).bundleID.map { [$0] } ?? []
    }

    /// Why writes to Apple are refused, if they are: `--read-only` (`flag`), RECEIPTDASH_READ_ONLY
    /// set (and not 0), or the profile's `read_only = true` (`profile` read only when it matters).
    public static func readOnlyReason<E: Error>(
        flag: Bool, environment: [String: String], profile name: String?, _ profile: () throws(E) -> APIProfile?
    ) throws(E) -> String? {
        if flag { return "--read-only" }
        if environment["RECEIPTDASH_READ_ONLY"].map({ !$0.isEmpty && $0 != "0" }) == true { return "RECEIPTDASH_READ_ONLY is set" }
        if try profile()?.readOnly == true { return "the profile \(name ?? "") says read_only = true" }
        return nil
    }
}
