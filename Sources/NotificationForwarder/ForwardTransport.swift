import Foundation
import KeepAliveHTTP
import NIOSSL

/// One POST's answer as forwarding judges it.
public enum ForwardAnswer: Sendable, Hashable {
    /// An HTTP status came back (`Retry-After` in seconds when the downstream sent one).
    case status(Int, retryAfter: Double?)
    /// No answer: the connection failed or the time ran out (in words).
    case failed(String)
}

/// Sends one delivery. ``HTTPForwardTransport`` is the network's; tests may pass their own.
public protocol ForwardTransport: Sendable {
    func post(url: String, headers: [(String, String)], body: [UInt8], timeout: Duration) async -> ForwardAnswer
    /// Releases connections; called once the forwarder is done with it.
    func shutdown() async
}

extension ForwardTransport {
    public func shutdown() async {}
}

/// Deliveries over ``KeepAliveHTTPClient`` (kept-alive connections, a few per downstream):
/// redirects are never followed (a 3xx is a failed attempt), at most ``maximumAnswerBytes`` of an
/// answer are read and none of it is kept, TLS is checked.
public final class HTTPForwardTransport: ForwardTransport {
    /// The most bytes of a downstream's answer read before the connection is closed.
    public static let maximumAnswerBytes = 64 * 1024
    private let client: KeepAliveHTTPClient

    /// Throws only when TLS cannot be set up on this machine.
    public init(connectionsPerHost: Int = 32) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        let configuration = KeepAliveHTTPClient.Configuration(
            connectionsPerHost: connectionsPerHost, connectTimeout: .seconds(5), maximumAnswerBytes: Self.maximumAnswerBytes, tls: tls)
        client = try KeepAliveHTTPClient(configuration: configuration)
    }

    public func post(url: String, headers: [(String, String)], body: [UInt8], timeout: Duration) async -> ForwardAnswer {
        let seconds = max(1, Int64(timeout.components.seconds))
        guard let endpoint = KeepAliveEndpoint(url: url) else { return .failed("not an http(s) URL with a host") }
        do {
            let answer = try await client.post(endpoint, headers: headers, body: body, timeout: .seconds(seconds))
            return .status(answer.status, retryAfter: answer.retryAfter)
        } catch {
            return .failed(Self.words(error, seconds: seconds))
        }
    }

    /// A failed attempt in a few words, by the error's code.
    static func words(_ error: KeepAliveHTTPError, seconds: Int64) -> String {
        switch error.code {
        case .timeout: "no answer within \(seconds) s"
        case .connectionRefused: "could not reach it (connection refused)"
        case .connectTimeout: "could not reach it (no connection within 5 s)"
        case .connectionClosed: "could not reach it (the connection was closed)"
        case .tls: "could not reach it (TLS: \(error.detail.prefix(120)))"
        case .invalidResponse: "the answer was not HTTP/1.1"
        case .socket: "could not reach it (\(error.detail.prefix(120)))"
        case .shutdown: "the receiver is shutting down"
        }
    }

    /// Releases the client's connections.
    public func shutdown() async {
        await client.shutdown()
    }
}
