import AppStoreAPI
import AuditTrail
import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import JSONWriting
import Logging
import NIOCore
import NIOSSL
import ReceiptCore
import ServiceLifecycle
import Synchronization

/// Where and how the receiver listens: the public port (`POST /notifications`, `GET /health`),
/// the metrics listener (`GET /metrics`, loopback by default), and the limits every
/// connection lives under.
public struct ReceiverListeners: Sendable {
    public var host: String
    public var port: Int
    /// HTTPS (TLS 1.2 or later); nil serves plain HTTP (loopback, or behind a TLS proxy).
    public var tls: ReceiverTLS?
    /// The metrics listener's address; nil turns it off.
    public var metrics: (host: String, port: Int)?
    /// The most connections open at once; past it, new ones wait in the listen backlog.
    public var maximumConnections: Int
    /// The most connections open at once from one address (idle ones count); past it, a new
    /// one is closed as soon as it is accepted.
    public var maximumConnectionsPerAddress: Int
    /// How long a connection may sit between requests.
    public var idleTimeout: Duration
    /// How long a request may take to arrive whole (TLS handshake, head, body).
    public var requestDeadline: Duration
    /// How long answers may wait for a client that does not read them (the connection's
    /// buffers full) before the connection is closed.
    public var writeTimeout: Duration
    /// The most requests one connection may have read and not yet answered; at it, the
    /// connection is not read until answers bring it under.
    public var maximumPipelinedRequests: Int
    /// The most connections the kernel queues for accepting (the listen backlog; the kernel
    /// caps it at `net.core.somaxconn`).
    public var backlog: Int
    /// The flags that choose the public and the metrics port: a port in use is said with them.
    public var portFlags: (port: String, metrics: String) = ("--port", "--metrics-port")

    public static let defaultMaximumConnections = 1024
    public static let defaultMaximumConnectionsPerAddress = 64
    public static let defaultWriteTimeout = Duration.seconds(10)
    public static let defaultMaximumPipelinedRequests = 16
    /// Hummingbird's 256 overflowed under 2,000 sockets reconnecting each second (closed at
    /// accept by the per-address cap): SYNs were dropped, and genuine clients waited 1-3 s.
    public static let defaultBacklog = 4096

    public init(
        host: String, port: Int, tls: ReceiverTLS? = nil, metrics: (host: String, port: Int)? = nil,
        maximumConnections: Int = defaultMaximumConnections,
        maximumConnectionsPerAddress: Int = defaultMaximumConnectionsPerAddress, idleTimeout: Duration = .seconds(30),
        requestDeadline: Duration = .seconds(10), writeTimeout: Duration = defaultWriteTimeout,
        maximumPipelinedRequests: Int = defaultMaximumPipelinedRequests, backlog: Int = defaultBacklog
    ) {
        self.host = host
        self.port = port
        self.tls = tls
        self.metrics = metrics
        self.maximumConnections = maximumConnections
        self.maximumConnectionsPerAddress = maximumConnectionsPerAddress
        self.idleTimeout = idleTimeout
        self.requestDeadline = requestDeadline
        self.writeTimeout = writeTimeout
        self.maximumPipelinedRequests = maximumPipelinedRequests
        self.backlog = backlog
    }
}

/// `GET /health`'s answer, asked of the store at most once a second whatever the request rate:
/// a flood of health checks never takes the store's write lock or a pool lease per request.
final class ReceiverHealth: Sendable {
    private struct State {
        var writable: Bool?
        var checkedAt: ContinuousClock.Instant?
        var checking = false
    }

    private let state = Mutex(State())
    let interval: Duration

    init(interval: Duration = .seconds(1)) {
        self.interval = interval
    }

    /// The last answer while it is fresh or another request is refreshing it; else a new one.
    func writable(_ check: () async -> Bool) async -> Bool {
        let now = ContinuousClock.now
        let cached = state.withLock { s -> Bool? in
            if let writable = s.writable, let at = s.checkedAt, now - at < interval { return writable }
            if s.checking, let writable = s.writable { return writable }
            s.checking = true
            return nil
        }
        if let cached { return cached }
        let writable = await check()
        state.withLock {
            $0.writable = writable
            $0.checkedAt = ContinuousClock.now
            $0.checking = false
        }
        return writable
    }
}

extension NotificationReceiver {
    /// The public port: `POST /notifications` and `GET /health`, nothing else.
    public func router() -> Router<ReceiverContext> {
        let router = Router(context: ReceiverContext.self)
        router.post("/notifications") { request, context -> Response in
            let declared = request.headers[.contentLength].flatMap { Int($0) }
            var body: [UInt8] = []
            var truncated = false
            if let declared, declared > policy.maximumBodySize {
                truncated = true
            } else {
                do {
                    (body, truncated) = try await Self.read(request.body, limit: policy.maximumBodySize)
                } catch {
                    let answer = ReceiveAnswer(.unreadable, "the body could not be read")
                    metrics.finished(type: nil, outcome: answer.outcome, refusal: .unreadable, request: .zero, verify: nil, commit: nil)
                    return Self.response(answer, closing: true)
                }
            }
            // Too large: stop reading this connection, so the rest is never taken in.
            if truncated { context.channel?.close(mode: .input, promise: nil) }
            let answer = await handle(
                body: body, declaredLength: declared, truncated: truncated, peer: context.peer, peerHost: context.peerHost)
            return Self.response(answer, closing: truncated)
        }
        if let retention {
            // Retention Messaging's realtime requests: read as a notification's body is.
            router.post(RouterPath(retention.path)) { request, context -> Response in
                let declared = request.headers[.contentLength].flatMap { Int($0) }
                var body: [UInt8] = []
                var truncated = false
                if let declared, declared > policy.maximumBodySize {
                    truncated = true
                } else {
                    do {
                        (body, truncated) = try await Self.read(request.body, limit: policy.maximumBodySize)
                    } catch {
                        truncated = true
                    }
                }
                if truncated { context.channel?.close(mode: .input, promise: nil) }
                let answer = await handleRealtime(
                    body: body, declaredLength: declared, truncated: truncated, peer: context.peer, peerHost: context.peerHost)
                var headers: HTTPFields = [.contentType: "application/json"]
                if truncated { headers[.connection] = "close" }
                return Response(
                    status: HTTPResponse.Status(code: answer.status), headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: answer.body)))
            }
        }
        // `status` and `reason` as every answer has them, the reason in words of its own (not
        // a notification's "stored"), and `store`: `writable` or `not-writable`.
        router.get("/health") { _, _ -> Response in
            let writable = await health.writable { await sink.isWritable() }
            return Self.response(
                writable
                    ? ReceiveAnswer(status: 200, outcome: .accepted, reason: "the store is writable")
                    : ReceiveAnswer(.storeFailed, "the store is not writable"),
                health: writable)
        }
        return router
    }

    /// The metrics listener: `GET /metrics` (Prometheus text).
    public func metricsRouter() -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        router.get("/metrics") { _, _ -> Response in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: metrics.text())))
        }
        return router
    }

    /// Reads at most `limit` bytes; stops at the first chunk that would go over (`truncated`).
    static func read(_ body: RequestBody, limit: Int) async throws -> (bytes: [UInt8], truncated: Bool) {
        var bytes: [UInt8] = []
        for try await chunk in body {
            if bytes.count + chunk.readableBytes > limit { return (bytes, true) }
            bytes += chunk.readableBytesView
        }
        return (bytes, false)
    }

    /// The answer as the client sees it: the outcome, and for a refusal its class only (the
    /// detail is in the log and the refusal row). 503s carry `Retry-After`.
    /// - Parameter health: `GET /health`'s answer: whether the store is writable, said in
    ///   `reason` and `store`.
    static func response(_ answer: ReceiveAnswer, closing: Bool = false, health writable: Bool? = nil) -> Response {
        var out = JSONOutput(capacity: 128)
        out.beginObject()
        out.key("status")
        out.string(answer.status == 200 ? "ok" : answer.outcome.rawValue)
        out.key("reason")
        switch writable {
        case true?: out.string("the store is writable: notifications are accepted and stored before their 200")
        case false?: out.string("the store cannot be written: notifications are answered 503 and Apple retries them")
        case nil: out.string(answer.publicReason)
        }
        if let writable {
            out.key("store")
            out.string(writable ? "writable" : "not-writable")
        }
        if answer.status == 200, let uuid = answer.notificationUUID {
            out.key("notification_uuid")
            out.string(uuid)
        }
        out.endObject()
        var headers: HTTPFields = [.contentType: "application/json"]
        if closing { headers[.connection] = "close" }
        if answer.status == 503 { headers[.retryAfter] = "10" }
        return Response(
            status: HTTPResponse.Status(code: answer.status), headers: headers,
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: out.bytes)))
    }

    /// The listeners as services (the public port first, then the metrics port), to run in the
    /// command's `ServiceGroup` after the store they write to: the group's graceful shutdown
    /// stops them first (no new connections, requests in flight finish: Hummingbird's graceful
    /// shutdown), then the store, which commits what they queued.
    /// - Parameters:
    ///   - onListening: called once the public port is bound, with `host:port` (the real port
    ///     when 0 was asked).
    ///   - onMetricsListening: the same for the metrics listener.
    public func services(
        _ listeners: ReceiverListeners,
        onListening: @escaping @Sendable (String) async -> Void,
        onMetricsListening: @escaping @Sendable (String) async -> Void = { _ in }
    ) throws -> [any Service] {
        let deadline = TimeAmount(listeners.requestDeadline)
        let writeDeadline = TimeAmount(listeners.writeTimeout)
        let pipelined = listeners.maximumPipelinedRequests
        let perAddress = ConnectionsPerAddress(limit: listeners.maximumConnectionsPerAddress)
        // The per-address cap before anything else (TLS included); then each connection's own
        // handlers: the request deadline, the bound on pipelined requests, the deadline on
        // unread answers.
        let http1 = HTTP1Channel.Configuration(
            additionalChannelHandlers: [
                RequestDeadlineHandler(deadline: deadline), PipelineLimitHandler(limit: pipelined),
                WriteDeadlineHandler(deadline: writeDeadline),
            ],
            idleTimeout: TimeAmount(listeners.idleTimeout))
        let tls = listeners.tls?.configuration
        let server = HTTPServerBuilder { responder -> any ServerChildChannel in
            let plain = HTTP1Channel(responder: responder, configuration: http1)
            guard let tls else { return AddressCappedChannel(base: plain, connections: perAddress) }
            return AddressCappedChannel(base: try TLSChannel(plain, tlsConfiguration: tls), connections: perAddress)
        }
        let app = Application(
            router: router(),
            server: server,
            configuration: ApplicationConfiguration(
                address: .hostname(listeners.host, port: listeners.port), backlog: listeners.backlog,
                availableConnectionsDelegate: MaximumAvailableConnections(listeners.maximumConnections, logger: logger)),
            onServerRunning: { channel in
                // Up to 64 connections accepted per turn of the event loop (NIO's default is
                // 4): under a storm of connections closed at accept, a genuine one waits in
                // the listen queue behind them far less.
                try? await channel.setOption(ChannelOptions.maxMessagesPerRead, value: 64)
                let address = channel.localAddress
                await onListening("\(address?.ipAddress ?? listeners.host):\(address?.port ?? listeners.port)")
            },
            logger: logger)
        var services: [any Service] = [PortNamingService(port: listeners.port, flag: listeners.portFlags.port, base: app)]
        if let metricsAddress = listeners.metrics {
            services.append(
                PortNamingService(
                    port: metricsAddress.port, flag: listeners.portFlags.metrics,
                    base: Application(
                    router: metricsRouter(),
                    server: .http1(configuration: .init(idleTimeout: TimeAmount(listeners.idleTimeout))),
                    configuration: ApplicationConfiguration(
                        address: .hostname(metricsAddress.host, port: metricsAddress.port),
                        availableConnectionsDelegate: MaximumAvailableConnections(64, logger: logger)),
                    onServerRunning: { channel in
                        let address = channel.localAddress
                        await onMetricsListening("\(address?.ipAddress ?? metricsAddress.host):\(address?.port ?? metricsAddress.port)")
                    },
                    logger: logger)))
        }
        return services
    }

    /// Serves until SIGTERM or SIGINT, or the task is cancelled, then stops accepting, lets
    /// requests in flight finish and returns: the listeners of ``services(_:onListening:onMetricsListening:)``
    /// in a group of their own, for a caller that runs its store itself (tests).
    /// - Parameter handlesSignals: false when the caller owns SIGTERM and SIGINT; the task's
    ///   cancellation then stops the server.
    public func run(
        _ listeners: ReceiverListeners, handlesSignals: Bool = true,
        onListening: @escaping @Sendable (String) async -> Void,
        onMetricsListening: @escaping @Sendable (String) async -> Void = { _ in }
    ) async throws {
        let services = try services(listeners, onListening: onListening, onMetricsListening: onMetricsListening)
        let group = ServiceGroup(
            configuration: .init(
                services: services.map { .init(service: $0) },
                gracefulShutdownSignals: handlesSignals ? [.sigterm, .sigint] : [],
                logger: logger))
        try await group.run()
    }

    /// The public port alone (no metrics listener), default limits.
    public func run(
        host: String, port: Int, tls: ReceiverTLS? = nil, handlesSignals: Bool = true,
        onListening: @escaping @Sendable (String) async -> Void
    ) async throws {
        try await run(ReceiverListeners(host: host, port: port, tls: tls), handlesSignals: handlesSignals, onListening: onListening)
    }
}

/// The receiver's request context: Hummingbird's core plus the peer's address and the channel
/// (to stop reading an oversized body).
public struct ReceiverContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?
    let channel: (any Channel)?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        channel = source.channel
    }

    /// `address:port`, or nil when unknown (in-process tests).
    var peer: String? {
        guard let remoteAddress, let ip = remoteAddress.ipAddress else { return nil }
        return remoteAddress.port.map { "\(ip):\($0)" } ?? ip
    }

    /// The address alone (refusals are sampled per address, not per connection).
    var peerHost: String? { remoteAddress?.ipAddress }
}

/// The server side of `--tls-cert FILE --tls-key FILE` (PEM): TLS 1.2 or later, as Apple requires
/// of the endpoint it posts to.
public struct ReceiverTLS: Sendable {
    let configuration: TLSConfiguration
    /// When the served (first) certificate stops being valid.
    public let expires: Date

    public init(certificateFile: String, keyFile: String) throws(NotificationStoreError) {
        do {
            let chain = try NIOSSLCertificate.fromPEMFile(certificateFile)
            guard !chain.isEmpty else { throw NotificationStoreError(.open, "--tls-cert \(certificateFile) holds no certificate") }
            let key = try NIOSSLPrivateKey(file: keyFile, format: .pem)
            var configuration = TLSConfiguration.makeServerConfiguration(
                certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
            configuration.minimumTLSVersion = .tlsv12
            self.configuration = configuration
            expires = Date(timeIntervalSince1970: TimeInterval(chain[0].notValidAfter))
        } catch let error as NotificationStoreError {
            throw error
        } catch {
            throw NotificationStoreError(.open, "--tls-cert / --tls-key could not be read as PEM: \(error)")
        }
    }
}

/// A listener whose port another process holds ends with ``PortInUseError`` (the port and the
/// flag that chooses another), not the socket library's `bind(…)` words.
struct PortNamingService: Service {
    var port: Int
    var flag: String
    var base: any Service

    func run() async throws {
        do {
            try await base.run()
        } catch let error as IOError where error.errnoCode == EADDRINUSE {
            throw PortInUseError(port: port, flag: flag)
        }
    }
}
