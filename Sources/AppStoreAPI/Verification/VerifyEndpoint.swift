import ReceiptCore
import Foundation
import UntrustedText

/// An error in the verification model: a ``Code`` compared by tests and programs, and a
/// ``reason`` in words for people. Equality compares only the code (as swift-certificates'
/// `CertificateError` does), so the wording can improve without breaking anyone.
public struct VerificationError: CodedError {
    public enum Code: String, CaseIterable, CodedErrorCode {
        /// A plain `http://` URL whose host is not loopback: the shared secret would cross the
        /// network in clear.
        case insecureEndpoint = "insecure endpoint"
        /// Not a URL, or a scheme other than https/http.
        case invalidEndpoint = "invalid endpoint"
    }

    public let code: Code
    public let reason: String

    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }
}

/// One of Apple's two verifyReceipt services, and where it is reached.
///
/// An endpoint is `https://`, or plain `http://` on a loopback host only (127.0.0.0/8, `::1`,
/// `localhost`: the local simulator); anything else is refused when the value is made, so no
/// request (and no shared secret) can go out in clear.
public struct VerifyEndpoint: Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case production = "Production"
        case sandbox = "Sandbox"
    }

    public let kind: Kind
    /// The URL as given (already checked).
    public let url: String

    public init(_ kind: Kind, url: String) throws(VerificationError) {
        try Self.check(url, option: kind == .production ? "--production-url" : "--sandbox-url")
        self.kind = kind
        self.url = url
    }

    /// `Production` or `Sandbox`.
    public var description: String { kind.rawValue }

    /// Throws unless `url` is https, or http on a loopback host. `option` names the setting in
    /// the message.
    public static func check(_ url: String, option: String) throws(VerificationError) {
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(), let host = parsed.host, !host.isEmpty else {
            throw VerificationError(.invalidEndpoint, "\(option) \(SafeText.escaped(url)) is not an http(s) URL with a host")
        }
        switch scheme {
        case "https": return
        case "http":
            guard Loopback.isLoopback(host: host) else {
                throw VerificationError(
                    .insecureEndpoint,
                    "\(option) \(SafeText.escaped(url)) must use https: plain http:// is allowed for loopback hosts only (127.0.0.0/8, ::1, localhost), since the shared secret would cross the network in clear")
            }
        default:
            throw VerificationError(.invalidEndpoint, "\(option) \(SafeText.escaped(url)) must use https")
        }
    }
}

/// Where verifyReceipt lives: production and sandbox.
public struct VerifyReceiptEndpoints: Sendable, Hashable {
    public var production: VerifyEndpoint
    public var sandbox: VerifyEndpoint

    public init(production: VerifyEndpoint, sandbox: VerifyEndpoint) {
        self.production = production
        self.sandbox = sandbox
    }

    /// Both URLs checked (https, or http on loopback).
    public init(production: String, sandbox: String) throws(VerificationError) {
        self.production = try VerifyEndpoint(.production, url: production)
        self.sandbox = try VerifyEndpoint(.sandbox, url: sandbox)
    }

    public subscript(kind: VerifyEndpoint.Kind) -> VerifyEndpoint {
        kind == .production ? production : sandbox
    }

    public static let appleProductionURL = "https://buy.itunes.apple.com/verifyReceipt"
    public static let appleSandboxURL = "https://sandbox.itunes.apple.com/verifyReceipt"

    /// Apple's servers.
    public static let apple: VerifyReceiptEndpoints = {
        // Both are https: the check cannot fail.
        guard let apple = try? VerifyReceiptEndpoints(production: appleProductionURL, sandbox: appleSandboxURL) else {
            preconditionFailure("Apple's verifyReceipt URLs are https")
        }
        return apple
    }()
}
