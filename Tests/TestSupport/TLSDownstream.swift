import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization
import X509

/// A downstream on loopback served over TLS with a certificate for 127.0.0.1 that a throwaway CA
/// signed (no system trusts it): the CA is in ``caFile`` (PEM), for `--ca-file`. Every request
/// is answered `status` with no body. What happened is a value a test waits on (never a sleep):
/// the requests served, and the handshakes a client refused (it did not trust the certificate).
package final class TLSDownstream: Sendable {
    package let port: Int
    package let caFile: String
    package let seen = Signal<(requests: Int, refused: Int)>((0, 0))
    private let channel: Mutex<(any Channel)?>

    package func url(_ path: String) -> String { "https://127.0.0.1:\(port)\(path)" }

    private init(port: Int, caFile: String, channel: any Channel) {
        self.port = port
        self.caFile = caFile
        self.channel = Mutex(channel)
    }

    /// Serves on a free port; the CA's PEM is written to `folder`/ca.pem.
    package static func start(folder: URL, status: Int = 200) async throws -> TLSDownstream {
        let (ca, leaf, leafKey) = try TestPKI.tls(caName: "receiptdash downstream test CA")
        let caFile = folder.appendingPathComponent("ca.pem").path
        try Data(try ca.serializeAsPEM().pemString.utf8).write(to: URL(fileURLWithPath: caFile))
        let tls = try NIOSSLContext(
            configuration: .makeServerConfiguration(
                certificateChain: [.certificate(try NIOSSLCertificate(bytes: try TestPKI.der(leaf), format: .der))],
                privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(leafKey.derRepresentation), format: .der))))
        let box = Mutex<TLSDownstream?>(nil)
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls))
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(Answerer(status: status) { request in
                        box.withLock { $0 }?.seen.update { seen in
                            if request { seen.requests += 1 } else { seen.refused += 1 }
                        }
                    })
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let server = TLSDownstream(port: channel.localAddress?.port ?? 0, caFile: caFile, channel: channel)
        box.withLock { $0 = server }
        return server
    }

    package func stop() async throws {
        try await channel.withLock { $0 }?.close()
    }

    /// Answers each request `status`; a connection that fails before its first request (the
    /// client refused the handshake) is counted as refused.
    private final class Answerer: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let status: Int
        let counted: @Sendable (_ request: Bool) -> Void
        var served = false

        init(status: Int, counted: @escaping @Sendable (_ request: Bool) -> Void) {
            self.status = status
            self.counted = counted
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard case .end = unwrapInboundIn(data) else { return }
            served = true
            var headers = HTTPHeaders()
            headers.add(name: "Content-Length", value: "0")
            context.write(
                wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: status), headers: headers))),
                promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            counted(true)
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            if !served, error is NIOSSLError {
                served = true
                counted(false)
            }
            context.close(promise: nil)
        }
    }
}
