import AppStoreAPI
import Foundation

/// A downstream URL forwarding may send to: https, or plain http to a loopback address only
/// (never TLS turned off, never plain text over a network). No user, password or query string
/// in the URL: the URL is stored in the outbox and shown by `notifications --outbox` and the
/// start banner, so a token belongs in `--forward-header-file`.
public struct ForwardTarget: Sendable, Hashable, CustomStringConvertible {
    public let url: String

    public init(_ text: String) throws(ForwardError) {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            let host = components.host, !host.isEmpty
        else {
            throw ForwardError(.url, "--forward \(text.debugDescription) is not an http(s) URL with a host")
        }
        guard components.user == nil, components.password == nil else {
            throw ForwardError(
                .url,
                "--forward URLs carry no user or password (they are stored and shown): put credentials in --forward-header-file FILE (a line such as Authorization: Bearer …, mode 600)")
        }
        guard components.percentEncodedQuery == nil else {
            throw ForwardError(
                .url,
                "--forward URLs carry no query string (they are stored and shown, and a token there leaks): put it in --forward-header-file FILE (a line such as Authorization: Bearer …, mode 600)")
        }
        switch scheme {
        case "https": break
        case "http":
            guard Loopback.isLoopback(host: host) else {
                throw ForwardError(.url, "--forward \(host) over plain http: use https (plain http only to a loopback address)")
            }
        default:
            throw ForwardError(.url, "--forward takes an https URL (or http to loopback), not \(scheme):")
        }
        guard components.fragment == nil else { throw ForwardError(.url, "--forward URLs have no #fragment") }
        url = text
    }

    public var description: String { url }
}
