import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// Why a POST got no whole answer, by code: callers decide on the code, never the words.
public struct KeepAliveHTTPError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// Nothing accepted the connection (ECONNREFUSED).
        case connectionRefused
        /// No connection within the connect timeout.
        case connectTimeout
        /// No whole answer within the request's time limit.
        case timeout
        /// The connection ended before the answer did.
        case connectionClosed
        /// The TLS handshake or record layer failed (certificate, hostname, protocol).
        case tls
        /// The answer was not HTTP/1.1 the parser could read.
        case invalidResponse
        /// Any other socket failure (no route, unreachable, unknown host…).
        case socket
        /// The client was shut down.
        case shutdown
    }

    public var code: Code
    /// The underlying library's words, short, for a log line.
    public var detail: String

    public init(_ code: Code, _ detail: String = "") {
        self.code = code
        self.detail = detail
    }

    public var description: String { detail.isEmpty ? code.rawValue : "\(code.rawValue): \(detail)" }

    /// The code for an error NIO, NIOSSL or the HTTP parser raised.
    static func from(_ error: any Error) -> KeepAliveHTTPError {
        if let error = error as? KeepAliveHTTPError { return error }
        let detail = String(String(describing: error).prefix(160))
        switch error {
        case let error as NIOConnectionError:
            let refused = !error.connectionErrors.isEmpty
                && error.connectionErrors.allSatisfy { ($0.error as? IOError)?.errnoCode == ECONNREFUSED }
            if refused { return KeepAliveHTTPError(.connectionRefused, detail) }
            if error.connectionErrors.contains(where: { if case .connectTimeout = $0.error as? ChannelError { true } else { false } }) {
                return KeepAliveHTTPError(.connectTimeout, detail)
            }
            return KeepAliveHTTPError(.socket, detail)
        case let error as ChannelError:
            switch error {
            case .connectTimeout: return KeepAliveHTTPError(.connectTimeout, detail)
            case .eof, .ioOnClosedChannel, .outputClosed, .alreadyClosed, .inputClosed: return KeepAliveHTTPError(.connectionClosed, detail)
            default: return KeepAliveHTTPError(.socket, detail)
            }
        case let error as IOError:
            switch error.errnoCode {
            case ECONNREFUSED: return KeepAliveHTTPError(.connectionRefused, detail)
            case ECONNRESET, EPIPE: return KeepAliveHTTPError(.connectionClosed, detail)
            case ETIMEDOUT: return KeepAliveHTTPError(.timeout, detail)
            default: return KeepAliveHTTPError(.socket, detail)
            }
        case let error as NIOSSLError:
            if case .uncleanShutdown = error { return KeepAliveHTTPError(.connectionClosed, detail) }
            return KeepAliveHTTPError(.tls, detail)
        case is NIOSSLExtraError, is BoringSSLError:
            return KeepAliveHTTPError(.tls, detail)
        case is HTTPParserError:
            return KeepAliveHTTPError(.invalidResponse, detail)
        default:
            return KeepAliveHTTPError(.socket, detail)
        }
    }
}
