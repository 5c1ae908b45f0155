import Foundation

/// Where a request goes: scheme, host, port and the path with its query, parsed once.
public struct KeepAliveEndpoint: Sendable, Hashable {
    public var secure: Bool
    public var host: String
    public var port: Int
    /// The path and query as sent on the request line (`/` when the URL has none).
    public var target: String

    /// The connection this endpoint shares with others: scheme, host and port.
    var origin: Origin { Origin(secure: secure, host: host, port: port) }

    /// The `Host` header's value: the port only when it is not the scheme's own.
    var hostHeader: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return port == (secure ? 443 : 80) ? name : "\(name):\(port)"
    }

    /// Parses an http or https URL with a host; nil for anything else.
    public init?(url: String) {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty,
            components.user == nil, components.password == nil
        else { return nil }
        secure = scheme == "https"
        self.host = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        port = components.port ?? (secure ? 443 : 80)
        guard (1...65_535).contains(port) else { return nil }
        let path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        target = components.percentEncodedQuery.map { "\(path)?\($0)" } ?? path
    }
}

/// Scheme, host and port: what one pool of connections serves.
struct Origin: Hashable, Sendable {
    var secure: Bool
    var host: String
    var port: Int
}
