import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// A request as the test server saw it.
package struct SeenRequest: Sendable {
    package var method: String
    package var uri: String
    package var headers: [(String, String)]
    package var body: [UInt8]

    package var path: String { String(uri.split(separator: "?", maxSplits: 1).first ?? "") }
    package var query: String { uri.split(separator: "?", maxSplits: 1).dropFirst().first.map(String.init) ?? "" }
    package func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
}

/// What the test server answers.
package indirect enum ScriptedResponse: Sendable {
    case json(Int, String, headers: [(String, String)] = [])
    /// A status with no body (Apple's 401).
    case empty(Int)
    /// Close the connection without an answer.
    case drop
    /// The answer, written this many milliseconds after the request ended (a slow server; the
    /// event loop's timer, never a sleep).
    case later(milliseconds: Int, ScriptedResponse)

    package static func error(_ status: Int, _ code: Int, headers: [(String, String)] = []) -> ScriptedResponse {
        .json(status, #"{"errorCode":\#(code),"errorMessage":"scripted"}"#, headers: headers)
    }
}

/// A minimal loopback HTTP/1.1 server for the API client's tests (not the API simulator): each
/// request is answered by `handler`, and every request is kept for the test to read.
package final class ScriptedServer: Sendable {
    package let port: Int
    private let channel: any Channel
    private let seen: Mutex<[SeenRequest]>

    package var baseURL: String { "http://127.0.0.1:\(port)" }
    package var requests: [SeenRequest] { seen.withLock { $0 } }

    private init(port: Int, channel: any Channel) {
        self.port = port
        self.channel = channel
        seen = Mutex([])
    }

    package static func start(_ handler: @escaping @Sendable (SeenRequest) -> ScriptedResponse) async throws -> ScriptedServer {
        let box = RequestBox()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(ScriptedHandler(box: box, handler: handler))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let server = ScriptedServer(port: channel.localAddress?.port ?? 0, channel: channel)
        box.server.withLock { $0 = server }
        return server
    }

    fileprivate func record(_ request: SeenRequest) {
        seen.withLock { $0.append(request) }
    }

    package func stop() async throws {
        try await channel.close()
    }
}

private final class RequestBox: Sendable {
    package let server = Mutex<ScriptedServer?>(nil)
}

private final class ScriptedHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    package let box: RequestBox
    package let handler: @Sendable (SeenRequest) -> ScriptedResponse
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []

    package init(box: RequestBox, handler: @escaping @Sendable (SeenRequest) -> ScriptedResponse) {
        self.box = box
        self.handler = handler
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = []
        case .body(let chunk):
            body += chunk.readableBytesView
        case .end:
            guard let head else { return }
            let request = SeenRequest(
                method: head.method.rawValue, uri: head.uri, headers: head.headers.map { ($0.name, $0.value) }, body: body)
            box.server.withLock { $0?.record(request) }
            respond(context: context, keepAlive: head.isKeepAlive, handler(request))
            self.head = nil
        }
    }

    private func respond(context: ChannelHandlerContext, keepAlive: Bool, _ response: ScriptedResponse) {
        let status: Int
        var headers: [(String, String)] = []
        var bytes: [UInt8] = []
        switch response {
        case .drop:
            context.close(promise: nil)
            return
        case .later(let milliseconds, let answer):
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            context.eventLoop.scheduleTask(in: .milliseconds(Int64(milliseconds))) {
                let (handler, context) = bound.value
                handler.respond(context: context, keepAlive: keepAlive, answer)
            }
            return
        case .empty(let code):
            status = code
        case .json(let code, let text, let extra):
            status = code
            bytes = Array(text.utf8)
            headers = [("Content-Type", "application/json")] + extra
        }
        var head = HTTPHeaders(headers)
        head.add(name: "Content-Length", value: String(bytes.count))
        if !keepAlive { head.add(name: "Connection", value: "close") }
        var buffer = context.channel.allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: status), headers: head))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        if !keepAlive { context.close(promise: nil) }
    }
}
