import AppStoreAPI
import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension TransportFailure {
    /// The kind of a failed request, by the error's type and code (never by its text): one
    /// classification for every request the product sends.
    public static func classify(_ error: any Error) -> TransportFailure {
        let detail = "\(error)"
        switch error {
        case let failure as TransportFailure:
            return failure
        case is CancellationError:
            return TransportFailure(.cancelled)
        case let error as HTTPClientError:
            switch error {
            case .cancelled, .requestStreamCancelled: return TransportFailure(.cancelled)
            case .readTimeout, .connectTimeout, .deadlineExceeded, .writeTimeout, .tlsHandshakeTimeout, .getConnectionFromPoolTimeout:
                return TransportFailure(.timeout, detail: detail)
            case .remoteConnectionClosed: return TransportFailure(.dropped, detail: detail)
            case .invalidURL, .emptyHost, .emptyScheme, .missingSocketPath, .traceRequestWithBody, .bodyLengthMismatch, .alreadyShutdown:
                return TransportFailure(.notSent, detail: detail)
            default: return TransportFailure(.other, detail: detail)
            }
        case let error as NIOSSLError:
            if case .uncleanShutdown = error { return TransportFailure(.dropped, detail: detail) }
            return TransportFailure(.tls, detail: detail)
        case is NIOSSLExtraError, is BoringSSLError:
            return TransportFailure(.tls, detail: detail)
        case let error as NIOConnectionError:
            let refused = !error.connectionErrors.isEmpty
                && error.connectionErrors.allSatisfy { ($0.error as? IOError)?.errnoCode == ECONNREFUSED }
            return TransportFailure(refused ? .refused : .other, detail: detail)
        case let error as IOError:
            switch error.errnoCode {
            case ECONNREFUSED: return TransportFailure(.refused, detail: detail)
            case ECONNRESET, EPIPE: return TransportFailure(.dropped, detail: detail)
            case ETIMEDOUT: return TransportFailure(.timeout, detail: detail)
            default: return TransportFailure(.other, detail: detail)
            }
        case let error as ChannelError:
            switch error {
            case .connectTimeout: return TransportFailure(.timeout, detail: detail)
            case .eof, .ioOnClosedChannel, .outputClosed, .alreadyClosed, .inputClosed: return TransportFailure(.dropped, detail: detail)
            default: return TransportFailure(.other, detail: detail)
            }
        case is HTTPParserError:
            return TransportFailure(.dropped, detail: detail)
        default:
            return TransportFailure(.other, detail: detail)
        }
    }
}
