import Foundation
import AppStoreAPI
import AsyncHTTPClient
import OutboundHTTP
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization
import Testing
import TestSupport

/// A downstream on loopback that answers by path and counts the connections it was given:
/// `/ok` 204, `/retry` 429 with Retry-After 7, `/close` 200 and `connection: close`, `/huge` a
/// 1 MiB answer, `/cut` a 200 whose body stops half way with the connection, `/silent` nothing
/// at all.
final class CountingServer: Sendable {
    let connections = Atomic<Int>(0)
    let open = Atomic<Int>(0)
    let mostOpen = Atomic<Int>(0)
    let requests = Atomic<Int>(0)
    private let channel: any Channel

    var port: Int { channel.localAddress?.port ?? 0 }

    init(tls: NIOSSLContext? = nil) async throws {
        let box = Box()
        box.server = nil
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .childChannelInitializer { [box] channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls { try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls)) }
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(Answerer(server: box))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        box.server = self
    }

    func close() async throws { try await channel.close() }

    /// Lets the child handlers reach the server made after the bootstrap.
    final class Box: @unchecked Sendable {
        weak var server: CountingServer?
    }

    final class Answerer: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let server: Box
        var uri = ""

        init(server: Box) { self.server = server }

        func channelActive(context: ChannelHandlerContext) {
            if let server = server.server {
                server.connections.add(1, ordering: .relaxed)
                let now = server.open.add(1, ordering: .relaxed).newValue
                server.mostOpen.max(now, ordering: .relaxed)
            }
            context.fireChannelActive()
        }

        func channelInactive(context: ChannelHandlerContext) {
            server.server?.open.subtract(1, ordering: .relaxed)
            context.fireChannelInactive()
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head): uri = head.uri
            case .body: break
            case .end:
                server.server?.requests.add(1, ordering: .relaxed)
                var headers = HTTPHeaders()
                let status: HTTPResponseStatus
                var body = ByteBuffer()
                switch uri {
                case "/ok": status = .noContent
                case "/retry":
                    status = .tooManyRequests
                    headers.add(name: "retry-after", value: "7")
                case "/close":
                    status = .ok
                    headers.add(name: "connection", value: "close")
                case "/huge":
                    status = .ok
                    body = ByteBuffer(repeating: 0x41, count: 1 << 20)
                case "/silent": return
                case "/cut":
                    // A 200 that promises 1,000 bytes, sends 10 and drops the connection.
                    headers.add(name: "content-length", value: "1000")
                    context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
                    context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(repeating: 0x41, count: 10)))), promise: nil)
                    context.close(promise: nil)
                    return
                default: status = .notFound
                }
                headers.add(name: "content-length", value: String(body.readableBytes))
                context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
                if body.readableBytes > 0 { context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil) }
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
                if uri == "/close" { context.close(promise: nil) }
            }
        }
    }
}

/// The one client's promises for a POST whose answer is not kept: kept-alive connections, the
/// status as the answer even when the body is cut, one deadline from the call to the answer
/// (the wait for a connection included), cancellation that ends a request at once, and
/// failures classified by code.
@Suite(.timeLimit(.minutes(5))) struct BoundedPostTests {
    func url(_ port: Int, _ path: String, secure: Bool = false) -> String {
        "\(secure ? "https" : "http")://127.0.0.1:\(port)\(path)"
    }

    func post(_ client: HTTPClient, _ url: String, headers: [(String, String)] = [], seconds: Int64 = 10) async throws(TransportFailure)
        -> BoundedAnswer
    {
        try await client.postBounded(url: url, headers: headers, body: Array("{}".utf8), deadline: .now() + .seconds(seconds), answerLimit: 64 * 1024)
    }

    /// ``post`` for `#expect`, whose expansion takes untyped throws.
    func answer(_ client: HTTPClient, _ url: String, headers: [(String, String)] = [], seconds: Int64 = 10) async throws -> BoundedAnswer {
        try await post(client, url, headers: headers, seconds: seconds)
    }

    /// Runs `body` with a client that is shut down however the body ends (a client left to its
    /// deinit stops a debug process).
    func withClient(
        connections: Int = 4, roots: [NIOSSLCertificate] = [], _ body: (HTTPClient) async throws -> Void
    ) async throws {
        let client = OutboundHTTPClient.make(connectTimeout: .seconds(5), extraTrustRoots: roots, connectionsPerHost: connections)
        do {
            try await body(client)
        } catch {
            try? await client.shutdown()
            throw error
        }
        try await client.shutdown()
    }

    func failure(_ work: () async throws(TransportFailure) -> BoundedAnswer) async -> TransportFailure.Code? {
        do {
            let answer = try await work()
            Issue.record("answered \(answer.status)")
            return nil
        } catch {
            return error.code
        }
    }

    @Test func oneConnectionCarriesRequestAfterRequest() async throws {
        let server = try await CountingServer()
        try await withClient { client in
            for _ in 0..<20 {
                let answer1 = try await answer(client, url(server.port, "/ok"), headers: [("webhook-id", "x")])
                #expect(answer1 == BoundedAnswer(status: 204, retryAfter: nil, bodyComplete: true))
            }
            let answer2 = try await answer(client, url(server.port, "/retry"))
            #expect(answer2 == BoundedAnswer(status: 429, retryAfter: "7", bodyComplete: true))
            #expect(server.connections.load(ordering: .relaxed) == 1)
            #expect(server.requests.load(ordering: .relaxed) == 21)
        }
        try await server.close()
    }

    @Test func concurrentRequestsShareAtMostTheLimitOfConnections() async throws {
        let server = try await CountingServer()
        try await withClient { client in
            let target = url(server.port, "/ok")
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<200 {
                    group.addTask { try await self.answer(client, target, seconds: 20).status }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses == Array(repeating: 204, count: 200))
            #expect((1...4).contains(server.connections.load(ordering: .relaxed)))
            #expect(server.mostOpen.load(ordering: .relaxed) <= 4)
        }
        try await server.close()
    }

    @Test func theStatusIsTheAnswerWhenTheBodyIsCutOrTooLong() async throws {
        let server = try await CountingServer()
        try await withClient(connections: 1) { client in
            let answer3 = try await answer(client, url(server.port, "/cut"))
            #expect(answer3 == BoundedAnswer(status: 200, retryAfter: nil, bodyComplete: false))
            // 1 MiB offered, 64 KiB read: the status is the answer, the connection is dropped.
            let answer4 = try await answer(client, url(server.port, "/huge"))
            #expect(answer4 == BoundedAnswer(status: 200, retryAfter: nil, bodyComplete: false))
            let answer5 = try await answer(client, url(server.port, "/close"))
            #expect(answer5.status == 200)
            let answer6 = try await answer(client, url(server.port, "/ok"))
            #expect(answer6.status == 204)
            #expect(server.connections.load(ordering: .relaxed) == 4)
        }
        try await server.close()
    }

    /// The review's finding: a request queued behind a silent one on the only connection
    /// outlived its time limit. The deadline runs from the call, the wait for a connection
    /// included; cancelling the task ends a request at once.
    @Test func theDeadlineCoversTheWaitForAConnectionAndCancellationEndsARequest() async throws {
        let server = try await CountingServer()
        try await withClient(connections: 1) { client in
            let silent = url(server.port, "/silent")
            let held = Task { () async -> TransportFailure.Code? in
                await self.failure { () async throws(TransportFailure) in try await self.post(client, silent, seconds: 50) }
            }
            while server.requests.load(ordering: .relaxed) < 1 { await Task.yield() }
            // The only connection is held: this one waits for it, and its 1 s ends in the queue.
            #expect(await failure { () async throws(TransportFailure) in try await post(client, url(server.port, "/ok"), seconds: 1) } == .timeout)
            #expect(server.requests.load(ordering: .relaxed) == 1)
            held.cancel()
            #expect(await held.value == .cancelled)
        }
        try await server.close()
    }

    @Test func refusalsAndForbiddenHeadersFailByCode() async throws {
        let server = try await CountingServer()
        try await withClient(connections: 1) { client in
            #expect(await failure { () async throws(TransportFailure) in try await post(client, url(TestPorts.refusing(), "/")) } == .refused)
            // A header value with CR/LF is never sent: nothing reaches the server.
            #expect(
                await failure { () async throws(TransportFailure) in try await post(client, url(server.port, "/ok"), headers: [("webhook-id", "a\r\nb")]) }
                    == .notSent)
            #expect(server.requests.load(ordering: .relaxed) == 0)
            #expect(await failure { () async throws(TransportFailure) in try await post(client, "not a url") } == .notSent)
        }
        try await server.close()
    }

    @Test func tlsIsCheckedAgainstTheTrustRoots() async throws {
        let (ca, leaf, leafKey) = try TestPKI.tls(caName: "receiptdash outbound test CA")
        let serverTLS = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(try NIOSSLCertificate(bytes: try TestPKI.der(leaf), format: .der))],
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(leafKey.derRepresentation), format: .der)))
        let server = try await CountingServer(tls: try NIOSSLContext(configuration: serverTLS))
        try await withClient(connections: 1, roots: [try NIOSSLCertificate(bytes: try TestPKI.der(ca), format: .der)]) { trusting in
            let answer7 = try await answer(trusting, url(server.port, "/ok", secure: true))
            #expect(answer7.status == 204)
        }
        // The system's roots do not know the test CA: a TLS failure, by code.
        try await withClient(connections: 1) { doubting in
            #expect(await failure { () async throws(TransportFailure) in try await post(doubting, url(server.port, "/ok", secure: true)) } == .tls)
        }
        try await server.close()
    }
}
