import AppStoreAPI
import Foundation

/// A downstream URL forwarding may send to: https, or plain http to a loopback address only
/// (never TLS turned off, never plain text over a network). No user or password in the URL:
/// the URL is stored in the outbox and shown by `notifications --outbox`.
public struct ForwardTarget: Sendable, Hashable, CustomStringConvertible {
    public let url: String

    public init(_ text: String) throws(ForwardError) {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            let host = components.host, !host.isEmpty
        else {
            throw ForwardError(.url, "--forward \(text.debugDescription) is not an http(s) URL with a host")
        }
        guard components.user == nil, components.password == nil else {
            throw ForwardError(.url, "--forward URLs carry no user or password (they are stored and shown); authenticate with the signature")
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
