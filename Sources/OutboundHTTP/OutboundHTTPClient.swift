import AppStoreAPI
import AsyncHTTPClient
import NIOCore
import NIOSSL

/// The one HTTP client configuration every request the product sends uses (the App Store
/// Server API, verifyReceipt, OCSP, doctor, forwarding, the simulator's sender):
///
/// - certificates always verified, TLS 1.2 at least (extra roots only added, for a local
///   simulator or a test CA);
/// - redirects never followed (a 3xx is an answer, not a new request);
/// - a failed connection fails its request at once: the caller's retry schedule decides what
///   happens next, not the pool, which would otherwise try again until the connect timeout and
///   report a refusal as a timeout;
/// - idle connections closed after a minute.
///
/// Each request's time limit is the caller's deadline (`execute(_:deadline:)`), which covers
/// the wait for a connection too.
public enum OutboundHTTPClient {
    /// - Parameters:
    ///   - readTimeout: the longest silence while reading an answer (nil: the deadline alone).
    ///   - connectionsPerHost: connections kept per host (requests beyond wait for one, within
    ///     their deadline).
    public static func make(
        connectTimeout: TimeAmount, readTimeout: TimeAmount? = nil, extraTrustRoots: [NIOSSLCertificate] = [], connectionsPerHost: Int
    ) -> HTTPClient {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .fullVerification
        tls.minimumTLSVersion = .tlsv12
        if !extraTrustRoots.isEmpty { tls.additionalTrustRoots = [.certificates(extraTrustRoots)] }
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.timeout = .init(connect: connectTimeout, read: readTimeout)
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: max(1, connectionsPerHost))
        configuration.redirectConfiguration = .disallow
        configuration.connectionPool.retryConnectionEstablishment = false
        // No spans: nothing reads them, and each request would build one.
        configuration.tracing.tracer = nil
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }
}
