import ReceiptCore
import Foundation
import UntrustedText

/// One of the App Store Server API's two environments. The raw values are Apple's
/// `environment` strings.
public enum APIEnvironment: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case production = "Production"
    case sandbox = "Sandbox"

    public var description: String { rawValue }
}

/// Which environment a call goes to: one, or `auto` (production, then sandbox when
/// production answers 4040010).
public enum APIEnvironmentSelection: String, Sendable, Hashable, CaseIterable {
    case auto
    case production
    case sandbox
}

/// Where one environment of the API is reached: a base URL that request paths are appended
/// to (`https://api.storekit.apple.com`, or `http://127.0.0.1:8080/api/sandbox` for a local
/// simulator).
///
/// The URL obeys the same rule as ``VerifyEndpoint`` (and is checked by it): https, or plain
/// http on a loopback host only, so no token crosses the network in clear.
public struct APIHost: Sendable, Hashable, CustomStringConvertible {
    public let environment: APIEnvironment
    /// The base URL, without a trailing `/`.
    public let baseURL: String

    public init(_ environment: APIEnvironment, url: String) throws(VerificationError) {
        let option = environment == .production ? "--api-production-url" : "--api-sandbox-url"
        do throws(VerificationError) {
            try VerifyEndpoint.check(url, option: option)
        } catch where error.code == .insecureEndpoint {
            throw VerificationError(
                .insecureEndpoint,
                "\(option) \(SafeText.escaped(url)) must use https: plain http:// is allowed for loopback hosts only (127.0.0.0/8, ::1, localhost), since the API token would cross the network in clear")
        }
        guard !url.contains("?"), !url.contains("#") else {
            throw VerificationError(.invalidEndpoint, "\(option) \(SafeText.escaped(url)) must not have a query or a fragment")
        }
        self.environment = environment
        var base = url
        while base.hasSuffix("/") { base.removeLast() }
        baseURL = base
    }

    /// `Production https://api.storekit.apple.com`.
    public var description: String { "\(environment) \(baseURL)" }

    /// The URL of `request` on this host.
    public func url(for request: APIRequest) -> String {
        baseURL + request.pathAndQuery
    }
}

/// Where the API lives: production and sandbox.
public struct APIHosts: Sendable, Hashable {
    public var production: APIHost
    public var sandbox: APIHost

    public init(production: APIHost, sandbox: APIHost) {
        self.production = production
        self.sandbox = sandbox
    }

    /// Both URLs checked (https, or http on loopback).
    public init(production: String, sandbox: String) throws(VerificationError) {
        self.production = try APIHost(.production, url: production)
        self.sandbox = try APIHost(.sandbox, url: sandbox)
    }

    public subscript(environment: APIEnvironment) -> APIHost {
        environment == .production ? production : sandbox
    }

    public static let appleProductionURL = "https://api.storekit.apple.com"
    public static let appleSandboxURL = "https://api.storekit-sandbox.apple.com"

    /// Apple's hosts.
    public static let apple: APIHosts = {
        guard let apple = try? APIHosts(production: appleProductionURL, sandbox: appleSandboxURL) else {
            preconditionFailure("Apple's API hosts are https")
        }
        return apple
    }()
}
