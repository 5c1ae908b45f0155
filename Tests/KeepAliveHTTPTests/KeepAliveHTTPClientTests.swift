import Foundation
import KeepAliveHTTP
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import ServiceTestSupport
import Synchronization
import Testing

/// A downstream on loopback that answers by path and counts the connections it was given:
/// `/ok` 204, `/retry` 429 with Retry-After 7, `/close` 200 and `connection: close`, `/huge` a
/// 1 MiB answer, `/silent` nothing at all.
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

/// The client's promises: kept-alive connections up to a limit per host, answers read only to a
/// bound, time limits, refusals and TLS failures by code, and a shutdown that lets nobody wait.
@Suite(.timeLimit(.minutes(1))) struct KeepAliveHTTPClientTests {
    func endpoint(_ port: Int, _ path: String, secure: Bool = false) throws -> KeepAliveEndpoint {
        try #require(KeepAliveEndpoint(url: "\(secure ? "https" : "http")://127.0.0.1:\(port)\(path)"))
    }

    @Test func oneConnectionCarriesRequestAfterRequest() async throws {
        let server = try await CountingServer()
        let client = try KeepAliveHTTPClient()
        for _ in 0..<20 {
            let answer = try await client.post(try endpoint(server.port, "/ok"), headers: [("webhook-id", "x")], body: Array("{}".utf8), timeout: .seconds(10))
            #expect(answer == KeepAliveAnswer(status: 204, retryAfter: nil, reusable: true))
        }
        #expect(try await client.post(try endpoint(server.port, "/retry"), headers: [], body: [], timeout: .seconds(10))
            == KeepAliveAnswer(status: 429, retryAfter: 7, reusable: true))
        #expect(server.connections.load(ordering: .relaxed) == 1)
        #expect(server.requests.load(ordering: .relaxed) == 21)
        await client.shutdown()
        try await server.close()
    }

    @Test func concurrentRequestsShareAtMostTheLimitOfConnections() async throws {
        let server = try await CountingServer()
        let client = try KeepAliveHTTPClient(configuration: .init(connectionsPerHost: 4))
        let target = try endpoint(server.port, "/ok")
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<200 {
                group.addTask { try await client.post(target, headers: [], body: Array(repeating: 0x7B, count: 512), timeout: .seconds(20)).status }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses == Array(repeating: 204, count: 200))
        #expect((1...4).contains(server.connections.load(ordering: .relaxed)))
        #expect(server.mostOpen.load(ordering: .relaxed) <= 4)
        await client.shutdown()
        try await server.close()
    }

    @Test func anAnswerThatClosesOrRunsPastTheBoundIsNotReused() async throws {
        let server = try await CountingServer()
        let client = try KeepAliveHTTPClient(configuration: .init(connectionsPerHost: 1, maximumAnswerBytes: 1024))
        #expect(try await client.post(try endpoint(server.port, "/close"), headers: [], body: [], timeout: .seconds(10))
            == KeepAliveAnswer(status: 200, retryAfter: nil, reusable: false))
        // 1 MiB offered, 1 KiB read: the status is the answer, the connection is dropped.
        #expect(try await client.post(try endpoint(server.port, "/huge"), headers: [], body: [], timeout: .seconds(10))
            == KeepAliveAnswer(status: 200, retryAfter: nil, reusable: false))
        #expect(try await client.post(try endpoint(server.port, "/ok"), headers: [], body: [], timeout: .seconds(10)).status == 204)
        #expect(server.connections.load(ordering: .relaxed) == 3)
        await client.shutdown()
        try await server.close()
    }

    @Test func silenceRefusalAndShutdownFailByCode() async throws {
        let server = try await CountingServer()
        let client = try KeepAliveHTTPClient(configuration: .init(connectionsPerHost: 1))
        await #expect(throws: KeepAliveHTTPError(.timeout, "no answer within the time limit")) {
            try await client.post(try endpoint(server.port, "/silent"), headers: [], body: [], timeout: .milliseconds(300))
        }
        // Port 1 on loopback: nothing listens there.
        do {
            _ = try await client.post(try endpoint(1, "/"), headers: [], body: [], timeout: .seconds(5))
            Issue.record("a closed port answered")
        } catch let error as KeepAliveHTTPError {
            #expect(error.code == .connectionRefused)
        }
        // One connection, held by a silent request: the second waits, and shutdown ends both.
        let first = Task { try await client.post(try endpoint(server.port, "/silent"), headers: [], body: [], timeout: .seconds(50)) }
        while server.requests.load(ordering: .relaxed) < 2 { await Task.yield() }
        let second = Task { try await client.post(try endpoint(server.port, "/ok"), headers: [], body: [], timeout: .seconds(50)) }
        await client.shutdown()
        for task in [first, second] {
            do {
                _ = try await task.value
                Issue.record("a request outlived shutdown")
            } catch let error as KeepAliveHTTPError {
                #expect([.connectionClosed, .shutdown].contains(error.code))
            }
        }
        try await server.close()
    }

    @Test func tlsIsCheckedAgainstTheTrustRoots() async throws {
        let (ca, leaf, leafKey) = try TestTLS.make(caName: "receiptdash keep-alive test CA")
        let serverTLS = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(try NIOSSLCertificate(bytes: try TestTLS.der(leaf), format: .der))],
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(leafKey.derRepresentation), format: .der)))
        let server = try await CountingServer(tls: try NIOSSLContext(configuration: serverTLS))
        var trusting = TLSConfiguration.makeClientConfiguration()
        trusting.trustRoots = .certificates([try NIOSSLCertificate(bytes: try TestTLS.der(ca), format: .der)])
        let client = try KeepAliveHTTPClient(configuration: .init(tls: trusting))
        #expect(try await client.post(try endpoint(server.port, "/ok", secure: true), headers: [], body: [], timeout: .seconds(10)).status == 204)
        await client.shutdown()
        // The system's roots do not know the test CA: a TLS failure, by code.
        let doubting = try KeepAliveHTTPClient()
        do {
            _ = try await doubting.post(try endpoint(server.port, "/ok", secure: true), headers: [], body: [], timeout: .seconds(10))
            Issue.record("an unknown CA was trusted")
        } catch let error as KeepAliveHTTPError {
            #expect(error.code == .tls, "\(error.detail)")
        }
        await doubting.shutdown()
        try await server.close()
    }

    @Test func endpointsAreParsedOnce() throws {
        let secure = try #require(KeepAliveEndpoint(url: "https://hooks.example.com/apple?team=a"))
        #expect(secure.secure && secure.host == "hooks.example.com" && secure.port == 443 && secure.target == "/apple?team=a")
        let loopback = try #require(KeepAliveEndpoint(url: "http://[::1]:8080"))
        #expect(!loopback.secure && loopback.host == "::1" && loopback.port == 8080 && loopback.target == "/")
        for bad in ["ftp://example.com/", "http://user:pw@example.com/", "https:///nohost", "not a url", "http://example.com:0/"] {
            #expect(KeepAliveEndpoint(url: bad) == nil, "\(bad)")
        }
    }
}
