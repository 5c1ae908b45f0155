import LocalFiles
import ReceiptCore
import Crypto
import Foundation

/// Why App Store Server API credentials could not be had. Equality compares only the
/// ``Code``; ``reason`` never contains key material.
public struct APICredentialError: CodedError {
    public enum Code: String, CaseIterable, CodedErrorCode {
        /// Settings are missing (the reason names each, with its flag and variable).
        case missing
        /// The private key file cannot be read.
        case unreadableKeyFile = "unreadable-key-file"
        /// The file is not a P-256 private key in PEM (PKCS#8 `.p8`, or SEC1).
        case invalidKey = "invalid-key"
        /// The app Apple id is not a positive integer.
        case invalidAppAppleID = "invalid-app-apple-id"
        /// A token lifetime outside (0, 60 minutes].
        case invalidLifetime = "invalid-lifetime"
        /// Signing the token failed.
        case signingFailed = "signing-failed"
        /// The API profile file cannot be read, or is not UTF-8.
        case unreadableProfile = "unreadable-profile"
        /// The API profile file is not valid TOML, or a setting has the wrong type.
        case invalidProfile = "invalid-profile"
        /// The API profile file has no table of the name asked for.
        case unknownProfile = "unknown-profile"
    }

    public let code: Code
    public let reason: String

    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }
}

/// The ES256 private key of an In-App Purchase key (the `.p8` file from App Store Connect).
///
/// Every representation is masked (`P-256 private key, public SHA-256 1a2b3c4d…`): the
/// description, the debug description and the reflection (`dump()`, `Mirror`, what a test
/// failure or debugger prints) show only a fingerprint of the public half. Neither the PEM
/// text nor the scalar is kept as a string anywhere; only ``APIToken`` signs with it.
public struct APIPrivateKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    let key: P256.Signing.PrivateKey

    /// From PEM: PKCS#8 (`-----BEGIN PRIVATE KEY-----`, Apple's `.p8`) or SEC1.
    public init(pemRepresentation pem: String) throws(APICredentialError) {
        do {
            key = try P256.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            // The library's error is not shown: nothing of the key's text may reach a message.
            throw APICredentialError(.invalidKey, "the private key is not an ECDSA P-256 private key in PEM (an App Store Connect .p8 file)")
        }
    }

    public init(_ key: P256.Signing.PrivateKey) {
        self.key = key
    }

    /// From a PEM file's bytes (PKCS#8 or SEC1), without making a string of them: the base64
    /// between the armour lines is decoded into DER, which is cleared once the key is made.
    init(pem: [UInt8]) throws(APICredentialError) {
        var body: [UInt8] = []
        body.reserveCapacity(pem.count)
        defer { SecretBytes.clear(&body) }
        var inside = false
        for line in pem.split(separator: 0x0A, omittingEmptySubsequences: true) {
            if line.starts(with: Array("-----BEGIN".utf8)) { inside = true; continue }
            if line.starts(with: Array("-----END".utf8)) { break }
            if inside { for byte in line where byte != 0x0D && byte != 0x20 && byte != 0x09 { body.append(byte) } }
        }
        var der = (try? Base64Text.decode(body, what: "the private key")) ?? []
        defer { SecretBytes.clear(&der) }
        guard inside, !der.isEmpty, let key = try? P256.Signing.PrivateKey(derRepresentation: der) else {
            // The library's error is not shown: nothing of the key's text may reach a message.
            throw APICredentialError(.invalidKey, "the private key is not an ECDSA P-256 private key in PEM (an App Store Connect .p8 file)")
        }
        self.key = key
    }

    /// The public half (what Apple holds).
    public var publicKey: P256.Signing.PublicKey { key.publicKey }

    /// The first 8 bytes of SHA-256 over the public key (X9.63), in hex: tells keys apart
    /// without revealing anything secret.
    public var fingerprint: String {
        SHA256.hash(data: key.publicKey.x963Representation).prefix(8).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    public var description: String { "P-256 private key, public SHA-256 \(fingerprint)…" }
    public var debugDescription: String { "APIPrivateKey(\(description))" }
    /// One masked child: `dump()` and `Mirror` never reach the key.
    public var customMirror: Mirror { Mirror(self, children: ["masked": description], displayStyle: .struct) }
}

/// Who calls the App Store Server API: issuer id, key id and private key of an In-App
/// Purchase key, the app's bundle id and (optionally) its Apple id.
///
/// Loaded from flags, else the environment (``load(_:environment:)``). Its representations
/// mask the key (see ``APIPrivateKey``).
public struct APICredentials: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var issuerID: String
    public var keyID: String
    public var privateKey: APIPrivateKey
    public var bundleID: String
    public var appAppleID: Int64?

    public init(issuerID: String, keyID: String, privateKey: APIPrivateKey, bundleID: String, appAppleID: Int64? = nil) {
        self.issuerID = issuerID
        self.keyID = keyID
        self.privateKey = privateKey
        self.bundleID = bundleID
        self.appAppleID = appAppleID
    }

    /// The settings as given on the command line (nil when not given).
    public struct Flags: Sendable, Hashable {
        public var issuerID: String?
        public var keyID: String?
        public var privateKeyFile: String?
        public var bundleID: String?
        public var appAppleID: String?

        public init(
            issuerID: String? = nil, keyID: String? = nil, privateKeyFile: String? = nil, bundleID: String? = nil, appAppleID: String? = nil
        ) {
            self.issuerID = issuerID
            self.keyID = keyID
            self.privateKeyFile = privateKeyFile
            self.bundleID = bundleID
            self.appAppleID = appAppleID
        }
    }

    /// The environment variables read when a flag is absent.
    public enum Variable {
        public static let issuerID = "RECEIPTDASH_API_ISSUER_ID"
        public static let keyID = "RECEIPTDASH_API_KEY_ID"
        public static let privateKeyFile = "RECEIPTDASH_API_PRIVATE_KEY_FILE"
        public static let bundleID = "RECEIPTDASH_BUNDLE_ID"
        public static let appAppleID = "RECEIPTDASH_APP_APPLE_ID"
    }

    /// Credentials and what the operator should hear about them (a key file others can read).
    public struct Loaded: Sendable {
        public var credentials: APICredentials
        public var warnings: [String]
    }

    /// Each setting from its flag, else its environment variable. Fails with `missing` naming
    /// every absent setting (flag and variable), so the operator learns all at once.
    public static func load(_ flags: Flags, environment: [String: String]) throws(APICredentialError) -> Loaded {
        func pick(_ flag: String?, _ variable: String) -> String? {
            let value = (flag ?? environment[variable])?.trimmingCharacters(in: .whitespacesAndNewlines)
            return value?.isEmpty == false ? value : nil
        }
        let issuer = pick(flags.issuerID, Variable.issuerID)
        let keyID = pick(flags.keyID, Variable.keyID)
        let keyFile = pick(flags.privateKeyFile, Variable.privateKeyFile)
        let bundle = pick(flags.bundleID, Variable.bundleID)
        var missing: [String] = []
        if issuer == nil { missing.append("--issuer-id or \(Variable.issuerID)") }
        if keyID == nil { missing.append("--key-id or \(Variable.keyID)") }
        if keyFile == nil { missing.append("--private-key-file or \(Variable.privateKeyFile)") }
        if bundle == nil { missing.append("--bundle-id or \(Variable.bundleID)") }
        guard let issuer, let keyID, let keyFile, let bundle else {
            throw APICredentialError(
                .missing,
                "the App Store Server API needs an In-App Purchase key from App Store Connect (Users and Access › Integrations); missing: "
                    + missing.joined(separator: "; "))
        }
        var appAppleID: Int64?
        if let text = pick(flags.appAppleID, Variable.appAppleID) {
            guard let value = Int64(text), value > 0 else {
                throw APICredentialError(.invalidAppAppleID, "the app Apple id must be a positive integer")
            }
            appAppleID = value
        }
        let (key, warnings) = try loadKey(file: keyFile)
        return Loaded(
            credentials: APICredentials(issuerID: issuer, keyID: keyID, privateKey: key, bundleID: bundle, appAppleID: appAppleID),
            warnings: warnings)
    }

    /// Reads the `.p8` file; warns when its group or others may read it. The file's bytes and
    /// the key's DER are overwritten with zeros once the key is made: only the key object
    /// (BoringSSL's, which clears its scalar when freed) holds the secret afterwards.
    public static func loadKey(file: String) throws(APICredentialError) -> (APIPrivateKey, warnings: [String]) {
        guard var data = FileManager.default.contents(atPath: file) else {
            throw APICredentialError(.unreadableKeyFile, "the private key file \(file) cannot be read")
        }
        var pem = [UInt8](data)
        SecretBytes.clear(&data)
        defer { SecretBytes.clear(&pem) }
        let key = try APIPrivateKey(pem: pem)
        let warnings = FilePermissions.readableByOthersWarning(path: file, what: "the private key file").map { [$0] } ?? []
        return (key, warnings)
    }

    /// Issuer, key id and bundle id; the key masked.
    public var description: String {
        "issuer \(issuerID), key \(keyID), bundle \(bundleID)" + (appAppleID.map { ", app \($0)" } ?? "") + ", \(privateKey)"
    }

    public var debugDescription: String { "APICredentials(\(description))" }

    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "issuerID": issuerID, "keyID": keyID, "privateKey": privateKey.description, "bundleID": bundleID,
                "appAppleID": appAppleID as Any,
            ], displayStyle: .struct)
    }
}

/// Overwrites secret bytes with zeros before their storage is let go (a volatile write per
/// byte, so the optimiser cannot drop it as a dead store).
public enum SecretBytes {
    public static func clear(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            for i in buffer.indices { volatileZero(base + i) }
        }
    }

    public static func clear(_ data: inout Data) {
        data.withUnsafeMutableBytes { raw in
            guard let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return }
            for i in 0..<raw.count { volatileZero(base + i) }
        }
    }

    @inline(never)
    static func volatileZero(_ pointer: UnsafeMutablePointer<UInt8>) {
        pointer.pointee = 0
    }
}
