import AppStoreAPI
import AsyncHTTPClient
import NIOCore
import NIOSSL
import OutboundHTTP
import RetryEngine

/// One POST's answer as forwarding judges it.
public enum ForwardAnswer: Sendable, Hashable {
    /// An HTTP status came back (with `Retry-After` as sent, unparsed). The status is the
    /// answer even when the body after it was cut.
    case status(Int, retryAfter: String?)
    /// No status: the connection failed, the deadline passed, or the client refused to send
    /// (`not-sent`), by code.
    case failed(TransportFailure)
}

/// Sends one delivery. ``HTTPForwardTransport`` is the network's; tests may pass their own.
public protocol ForwardTransport: Sendable {
    /// One POST. `timeout` is the delivery's deadline, from this call to the answer's status:
    /// the wait for a connection included. Cancelling the task ends the request.
    func post(url: String, headers: [(String, String)], body: [UInt8], timeout: Duration) async -> ForwardAnswer
    /// Releases connections; called once the forwarder is done with it.
    func shutdown() async
}

extension ForwardTransport {
    public func shutdown() async {}
}

/// Deliveries over the product's one HTTP client (``OutboundHTTPClient``: AsyncHTTPClient,
/// kept-alive connections, a few per downstream): redirects are never followed (a 3xx is a
/// failed attempt), at most ``maximumAnswerBytes`` of an answer are read and none of it is
/// kept, TLS is checked.
public final class HTTPForwardTransport: ForwardTransport {
    /// The most bytes of a downstream's answer read before the connection is closed.
    public static let maximumAnswerBytes = 64 * 1024
    private let client: HTTPClient

    /// - Parameters:
    ///   - connectionsPerHost: connections kept to each downstream; a delivery beyond them waits
    ///     for one within its deadline.
    ///   - extraTrustRoots: TLS roots trusted besides the system's (`--ca-file`).
    public init(connectionsPerHost: Int = Forwarder.Configuration.defaultConnectionsPerTarget, extraTrustRoots: [NIOSSLCertificate] = []) {
        client = OutboundHTTPClient.make(connectTimeout: .seconds(5), extraTrustRoots: extraTrustRoots, connectionsPerHost: connectionsPerHost)
    }

    public func post(url: String, headers: [(String, String)], body: [UInt8], timeout: Duration) async -> ForwardAnswer {
        let deadline = NIODeadline.now() + .nanoseconds(Int64(timeout.seconds * 1e9))
        do {
            let answer = try await client.postBounded(url: url, headers: headers, body: body, deadline: deadline, answerLimit: Self.maximumAnswerBytes)
            return .status(answer.status, retryAfter: answer.retryAfter)
        } catch {
            return .failed(error)
        }
    }

    /// Releases the client's connections.
    public func shutdown() async {
        try? await client.shutdown()
    }
}
