import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import AppStoreAPI
import ReceiptCore

/// A local App Store Server API on loopback, for offline tests, demos and QA: production
/// under `/api/production`, sandbox under `/api/sandbox`, answered by a ``ServerAPIService``
/// (every payload signed by its ``AppleTestPKI``).
///
/// ```swift
/// let simulator = try await ServerAPISimulator.start(ServerAPIConfiguration(publicKey: key.publicKey))
/// let client = AppStoreServerAPIClient(credentials: credentials, hosts: try simulator.hosts)
/// …
/// try await simulator.stop()
/// ```
public final class ServerAPISimulator: Sendable {
    public let host: String
    public let port: Int
    public let service: ServerAPIService
    private let channel: any Channel

    /// `http://127.0.0.1:PORT/api/production`.
    public var productionURL: String { "http://\(Self.hostInURL(host)):\(port)/api/production" }
    /// `http://127.0.0.1:PORT/api/sandbox`.
    public var sandboxURL: String { "http://\(Self.hostInURL(host)):\(port)/api/sandbox" }
    /// The client's hosts for this simulator (http is accepted on loopback only).
    public var hosts: APIHosts {
        get throws(VerificationError) { try APIHosts(production: productionURL, sandbox: sandboxURL) }
    }
    /// The PKI every payload is signed with; its root is what `--root-ca` takes.
    public var pki: AppleTestPKI { service.pki }
    public var requestCount: Int { service.requestCount }

    /// Starts listening (port 0 picks a free one; ``port`` is the bound port).
    public static func start(_ configuration: ServerAPIConfiguration, script: [APIFault] = []) async throws -> ServerAPISimulator {
        let service = try ServerAPIService(configuration, script: script)
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.backlog, value: 256)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(ServerAPIHandler(service: service))
                }
            }
            .bind(host: configuration.host, port: configuration.port).get()
        return ServerAPISimulator(
            host: configuration.host, port: channel.localAddress?.port ?? configuration.port, service: service, channel: channel)
    }

    private init(host: String, port: Int, service: ServerAPIService, channel: any Channel) {
        self.host = host
        self.port = port
        self.service = service
        self.channel = channel
    }

    public func stop() async throws {
        try await channel.close()
    }

    /// Blocks until the listening socket closes.
    public func wait() async throws {
        try await channel.closeFuture.get()
    }

    static func hostInURL(_ host: String) -> String { host.contains(":") ? "[\(host)]" : host }
}

/// Reads one HTTP/1 request at a time (body capped), answers it with the service.
final class ServerAPIHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let service: ServerAPIService
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var tooLarge = false

    init(service: ServerAPIService) {
        self.service = service
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = []
            tooLarge = false
        case .body(let chunk):
            if tooLarge { return }
            if body.count + chunk.readableBytes > service.maximumBodyBytes(method: head?.method.rawValue ?? "", uri: head?.uri ?? "") {
                tooLarge = true
                body = []
            } else {
                body += chunk.readableBytesView
            }
        case .end:
            guard let head else { return }
            Self.respond(context: context, head: head, body: body, tooLarge: tooLarge, service: service)
            self.head = nil
            body = []
        }
    }

    /// Answers `head` + `body` with `service` (also used by the verifyReceipt simulator for
    /// `/api/…` paths when both share a port).
    static func respond(context: ChannelHandlerContext, head: HTTPRequestHead, body: [UInt8], tooLarge: Bool, service: ServerAPIService) {
        // The latency counts from the request's arrival, as a server's does: the time spent
        // making the answer (signing a page of transactions) is part of it, not added to it.
        let arrived = NIODeadline.now()
        let reply = service.answer(
            ServerAPIRequest(
                method: head.method.rawValue, uri: head.uri, authorization: head.headers.first(name: "Authorization"), body: body,
                bodyTooLarge: tooLarge))
        let keepAlive = head.isKeepAlive
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        let write: @Sendable (ServerAPIReply) -> Void = { reply in
            let context = bound.value
            if reply.drop {
                context.close(promise: nil)
                return
            }
            var headers = HTTPHeaders(reply.headers)
            headers.add(name: "Content-Length", value: String(reply.body.count))
            if !keepAlive { headers.add(name: "Connection", value: "close") }
            let status = HTTPResponseStatus(statusCode: reply.status)
            context.write(NIOAny(HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
            if !reply.body.isEmpty {
                var buffer = context.channel.allocator.buffer(capacity: reply.body.count)
                buffer.writeBytes(reply.body)
                context.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(buffer))), promise: nil)
            }
            context.writeAndFlush(NIOAny(HTTPServerResponsePart.end(nil))).whenComplete { _ in
                if !keepAlive { bound.value.close(promise: nil) }
            }
        }
        if let deferred = reply.deferred {
            // A control that waits on another server: answered off the event loop, written on it.
            let loop = context.eventLoop
            Task {
                let made = await deferred()
                loop.execute { write(made) }
            }
            return
        }
        let due = arrived + .nanoseconds(Int64(reply.delay * 1e9))
        if due > .now() {
            context.eventLoop.scheduleTask(deadline: due) { write(reply) }
        } else {
            write(reply)
        }
    }
}
