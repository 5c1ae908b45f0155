import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import AppStoreAPI
import ReceiptCore
import Synchronization

/// A fault the simulator can inject, as Apple's service shows them in bad hours.
public enum InjectedFault: Sendable, Hashable {
    /// A verifyReceipt status, e.g. 21005, or 21100–21199 with `is-retryable`.
    case status(Int, isRetryable: Bool? = nil)
    /// An HTTP error, e.g. 503, optionally with `Retry-After` seconds.
    case http(Int, retryAfter: Int? = nil)
    /// An HTTP error with this `Retry-After` header as written (an HTTP date, say).
    case httpRetryAfter(Int, value: String)
    /// Close the connection without an answer.
    case drop
    /// Answer normally, but only after this many seconds.
    case slow(Double)
}

/// How the simulator behaves.
public struct SimulatorConfiguration: Sendable {
    public var host: String
    public var port: Int
    /// Added to every answer, in seconds.
    public var latency: Double
    /// The share of requests that get an injected fault (0…1).
    public var faultRate: Double
    /// Makes the fault sequence repeatable.
    public var seed: UInt64
    /// The shared secret subscription receipts must be sent with (21004 otherwise).
    public var secret: SharedSecret?
    /// Larger request bodies get 21000.
    public var maximumBodyBytes: Int
    /// Serve HTTPS with this configuration (tests of certificate checking).
    public var tls: TLSConfiguration?

    public init(
        host: String = "127.0.0.1", port: Int = 0, latency: Double = 0, faultRate: Double = 0, seed: UInt64 = 1,
        secret: SharedSecret? = nil, maximumBodyBytes: Int = 8 * 1024 * 1024
    ) {
        self.host = host
        self.port = port
        self.latency = latency
        self.faultRate = faultRate
        self.seed = seed
        self.secret = secret
        self.maximumBodyBytes = maximumBodyBytes
        tls = nil
    }
}

/// A local App Store `verifyReceipt` on loopback, for offline tests, demos and QA: production
/// at `/production/verifyReceipt`, sandbox at `/sandbox/verifyReceipt`. It decodes the posted
/// receipt and answers as Apple would (``SimulatedResponse``), with injected faults at the
/// configured rate, repeatable with a seed.
public final class VerifyReceiptSimulator: Sendable {
    public let port: Int
    public let host: String
    public let scheme: String
    private let channel: any Channel
    let state: SimulatorState

    public var productionURL: String { "\(scheme)://\(host):\(port)/production/verifyReceipt" }
    public var sandboxURL: String { "\(scheme)://\(host):\(port)/sandbox/verifyReceipt" }
    /// The App Store Server API's base URLs, when it is served too.
    public var apiProductionURL: String { "\(scheme)://\(host):\(port)/api/production" }
    public var apiSandboxURL: String { "\(scheme)://\(host):\(port)/api/sandbox" }
    /// Where offer signatures are checked (`POST`), when the API is served too.
    public var offerVerificationURL: String { "\(scheme)://\(host):\(port)\(ServerAPIService.offerVerificationPath)" }
    /// The client's endpoints for this simulator: https, or http on loopback (the default
    /// host); plain http on another host throws `insecureEndpoint`, as it would for any URL.
    public var endpoints: VerifyReceiptEndpoints {
        get throws(VerificationError) { try VerifyReceiptEndpoints(production: productionURL, sandbox: sandboxURL) }
    }

    /// Requests answered so far, by path and by outcome.
    public var requestCount: Int { state.requests }

    /// Starts listening; `script` faults are applied to the first requests, in order. With
    /// `api`, the App Store Server API is served on the same port under `/api/production` and
    /// `/api/sandbox` (``apiProductionURL``, ``apiSandboxURL``), and offer signatures are
    /// checked at `/offers/verify` (``offerVerificationURL``).
    public static func start(
        _ configuration: SimulatorConfiguration, script: [InjectedFault] = [], api: ServerAPIService? = nil
    ) async throws -> VerifyReceiptSimulator {
        let state = SimulatorState(configuration: configuration, script: script, api: api)
        let sslContext = try configuration.tls.map { try NIOSSLContext(configuration: $0) }
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.backlog, value: 512)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let sslContext {
                        try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: sslContext))
                    }
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(SimulatorHandler(state: state))
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.bind(host: configuration.host, port: configuration.port).get()
        } catch let error as IOError where error.errnoCode == EADDRINUSE {
            throw PortInUseError(port: configuration.port, flag: "--port")
        }
        let port = channel.localAddress?.port ?? configuration.port
        return VerifyReceiptSimulator(
            port: port, host: configuration.host, scheme: configuration.tls == nil ? "http" : "https", channel: channel, state: state)
    }

    private init(port: Int, host: String, scheme: String, channel: any Channel, state: SimulatorState) {
        self.port = port
        self.host = host
        self.scheme = scheme
        self.channel = channel
        self.state = state
    }

    public func stop() async throws {
        try await channel.close()
    }

    /// Blocks until the listening socket closes.
    public func wait() async throws {
        try await channel.closeFuture.get()
    }
}

/// Shared state behind a `Mutex`: the fault script, the seeded random sequence, the count.
final class SimulatorState: Sendable {
    let configuration: SimulatorConfiguration
    /// The App Store Server API served beside verifyReceipt, if any.
    let api: ServerAPIService?
    private let state: Mutex<State>

    struct State {
        var script: [InjectedFault]
        var random: SplitMix64
        var requests = 0
    }

    init(configuration: SimulatorConfiguration, script: [InjectedFault], api: ServerAPIService? = nil) {
        self.configuration = configuration
        self.api = api
        state = Mutex(State(script: script, random: SplitMix64(seed: configuration.seed)))
    }

    var requests: Int { state.withLock { $0.requests } }

    /// The fault for the next request, if any.
    func nextFault() -> InjectedFault? {
        let rate = configuration.faultRate
        let latency = configuration.latency
        return state.withLock { s in
            s.requests += 1
            if !s.script.isEmpty { return s.script.removeFirst() }
            guard rate > 0, s.random.nextDouble() < rate else { return nil }
            switch s.random.next() % 5 {
            case 0: return .status(21005)
            case 1: return .status(21100 + Int(s.random.next() % 100), isRetryable: true)
            case 2: return .http(503)
            case 3: return .drop
            default: return .slow(latency * 2 + 0.05)
            }
        }
    }
}

/// A small, seedable generator (SplitMix64): the same seed gives the same faults.
struct SplitMix64: Sendable {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func nextDouble() -> Double { Double(next() >> 11) / Double(1 << 53) }
}

final class SimulatorHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let state: SimulatorState
    private var head: HTTPRequestHead?
    private var body: ByteBuffer?
    private var tooLarge = false

    init(state: SimulatorState) {
        self.state = state
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = context.channel.allocator.buffer(capacity: 0)
            tooLarge = false
        case .body(var chunk):
            if (body?.readableBytes ?? 0) + chunk.readableBytes > state.configuration.maximumBodyBytes {
                tooLarge = true
                body?.clear()
            } else {
                body?.writeBuffer(&chunk)
            }
        case .end:
            guard let head else { return }
            respond(context: context, head: head, body: body.map { Array($0.readableBytesView) } ?? [])
            self.head = nil
            body = nil
        }
    }

    private func respond(context: ChannelHandlerContext, head: HTTPRequestHead, body: [UInt8]) {
        let path = head.uri.split(separator: "?").first.map(String.init) ?? head.uri
        if let api = state.api, path.hasPrefix("/api/") || path == ServerAPIService.offerVerificationPath || ServerAPIService.isControlPath(path) {
            let tooLarge = tooLarge || body.count > api.maximumBodyBytes(method: head.method.rawValue, uri: head.uri)
            ServerAPIHandler.respond(context: context, head: head, body: tooLarge ? [] : body, tooLarge: tooLarge, service: api)
            return
        }
        let endpoint: SimulatedResponse.Endpoint
        switch path {
        case "/production/verifyReceipt": endpoint = .production
        case "/sandbox/verifyReceipt": endpoint = .sandbox
        default:
            send(context: context, keepAlive: head.isKeepAlive, status: .notFound, json: SimulatedResponse.status(21000), delay: 0)
            return
        }
        guard head.method == .POST, !tooLarge else {
            send(context: context, keepAlive: head.isKeepAlive, status: .ok, json: SimulatedResponse.status(21000), delay: state.configuration.latency)
            return
        }
        var delay = state.configuration.latency
        switch state.nextFault() {
        case .status(let code, let retryable)?:
            send(context: context, keepAlive: head.isKeepAlive, status: .ok, json: SimulatedResponse.status(code, isRetryable: retryable), delay: delay)
            return
        case .http(let code, let retryAfter)?:
            var headers: [(String, String)] = []
            if let retryAfter { headers.append(("Retry-After", String(retryAfter))) }
            send(
                context: context, keepAlive: head.isKeepAlive, status: HTTPResponseStatus(statusCode: code), json: .object([:]),
                delay: delay, extraHeaders: headers)
            return
        case .httpRetryAfter(let code, let value)?:
            send(
                context: context, keepAlive: head.isKeepAlive, status: HTTPResponseStatus(statusCode: code), json: .object([:]),
                delay: delay, extraHeaders: [("Retry-After", value)])
            return
        case .drop?:
            context.close(promise: nil)
            return
        case .slow(let seconds)?:
            delay += seconds
        case nil:
            break
        }
        let answer = SimulatedResponse.answer(.init(endpoint: endpoint, body: body, now: Date()), secret: state.configuration.secret)
        send(context: context, keepAlive: head.isKeepAlive, status: .ok, json: answer, delay: delay)
    }

    private func send(
        context: ChannelHandlerContext, keepAlive: Bool, status: HTTPResponseStatus, json: JSONValue, delay: Double,
        extraHeaders: [(String, String)] = []
    ) {
        let bytes = Array(json.compactJSON.utf8)
        var headers = HTTPHeaders([("Content-Type", "application/json"), ("Content-Length", String(bytes.count))])
        for (name, value) in extraHeaders { headers.add(name: name, value: value) }
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        let responseHeaders = headers
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        let write: @Sendable () -> Void = {
            let context = bound.value
            var buffer = context.channel.allocator.buffer(capacity: bytes.count)
            buffer.writeBytes(bytes)
            context.write(NIOAny(HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: status, headers: responseHeaders))), promise: nil)
            context.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(buffer))), promise: nil)
            context.writeAndFlush(NIOAny(HTTPServerResponsePart.end(nil))).whenComplete { _ in
                if !keepAlive { bound.value.close(promise: nil) }
            }
        }
        if delay > 0 {
            context.eventLoop.scheduleTask(in: .nanoseconds(Int64(delay * 1e9))) { write() }
        } else {
            write()
        }
    }
}
