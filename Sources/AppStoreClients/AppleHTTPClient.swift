import AsyncHTTPClient
import NIOCore
import NIOSSL

/// The one HTTP client configuration both Apple clients use: certificates always verified
/// (extra roots only added, for a local simulator over TLS), no redirects, bounded timeouts, and
/// a failed connection failing its request at once (a refused connection is known at once): the
/// retry engine decides what happens next, not the pool, which would otherwise try again until
/// the connect timeout and report a refusal as a timeout.
public enum AppleHTTPClient {
    public static func make(
        connectTimeout: TimeAmount, requestTimeout: TimeAmount, extraTrustRoots: [NIOSSLCertificate], connectionsPerHost: Int
    ) -> HTTPClient {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .fullVerification
        if !extraTrustRoots.isEmpty { tls.additionalTrustRoots = [.certificates(extraTrustRoots)] }
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.timeout = .init(connect: connectTimeout, read: requestTimeout)
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: connectionsPerHost)
        configuration.redirectConfiguration = .disallow
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }
}
