import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

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

/// Deliveries over AsyncHTTPClient: redirects are never followed (a 3xx is a failed attempt),
/// at most ``maximumAnswerBytes`` of an answer are read and none of it is kept, TLS is checked.
public final class HTTPForwardTransport: ForwardTransport {
    /// The most bytes of a downstream's answer read before the connection is closed.
    public static let maximumAnswerBytes = 64 * 1024
    private let client: HTTPClient

    public init(connectionsPerHost: Int = 32) {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = connectionsPerHost
        configuration.timeout.connect = .seconds(5)
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    public func post(url: String, headers: [(String, String)], body: [UInt8], timeout: Duration) async -> ForwardAnswer {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(bytes: body))
        let seconds = Int64(timeout.components.seconds)
        do {
            let response = try await client.execute(request, timeout: .seconds(max(1, seconds)))
            let retryAfter = response.headers.first(name: "retry-after").flatMap { Double($0) }
            // Read what the answer sends, up to the bound, then let go (the status decides).
            var read = 0
            do {
                for try await chunk in response.body {
                    read += chunk.readableBytes
                    if read > Self.maximumAnswerBytes { break }
                }
            } catch {}
            return .status(Int(response.status.code), retryAfter: retryAfter)
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout {
            return .failed("no answer within \(seconds) s")
        } catch {
            return .failed("could not reach it (\(Self.words(error)))")
        }
    }

    /// A failed connection in a few words: `connection refused`, `TLS: …`, else the library's
    /// own words, cut short.
    static func words(_ error: any Error) -> String {
        let text = String(describing: error)
        for (needle, words) in [
            ("Connection refused", "connection refused"), ("connectTimeout", "no connection within 5 s"),
            ("No route to host", "no route to host"), ("Network is unreachable", "network unreachable"),
            ("Name or service not known", "unknown host"), ("NIOSSL", "TLS: \(text.prefix(120))"),
            ("handshakeFailed", "TLS: \(text.prefix(120))"), ("remoteConnectionClosed", "the connection was closed"),
        ] where text.contains(needle) {
            return words
        }
        return String(text.prefix(160))
    }

    /// Releases the client's connections.
    public func shutdown() async {
        try? await client.shutdown()
    }
}
