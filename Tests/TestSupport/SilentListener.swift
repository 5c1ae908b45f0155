import NIOCore
import NIOPosix

/// A loopback listener on a port the kernel picks that accepts every connection, reads what is
/// sent and never answers: a responder that is up but silent. It counts the connections
/// accepted and those still open, so a test can wait (no timer) until a client has really ended
/// its request.
package final class SilentListener: Sendable {
    package let port: Int
    /// Connections accepted so far, and how many of them are still open.
    package let connections: Signal<(accepted: Int, open: Int)>
    private let channel: any Channel

    package var url: String { "http://127.0.0.1:\(port)/" }

    private init(port: Int, channel: any Channel, connections: Signal<(accepted: Int, open: Int)>) {
        self.port = port
        self.channel = channel
        self.connections = connections
    }

    package static func start() async throws -> SilentListener {
        let connections = Signal((accepted: 0, open: 0))
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Counter(connections: connections))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return SilentListener(port: channel.localAddress?.port ?? 0, channel: channel, connections: connections)
    }

    package func stop() async throws {
        try await channel.close()
    }

    /// Counts a connection in when it opens and out when it closes; reads and drops the rest.
    private final class Counter: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        let connections: Signal<(accepted: Int, open: Int)>

        init(connections: Signal<(accepted: Int, open: Int)>) {
            self.connections = connections
        }

        func channelActive(context: ChannelHandlerContext) {
            connections.update {
                $0.accepted += 1
                $0.open += 1
            }
            context.fireChannelActive()
        }

        func channelInactive(context: ChannelHandlerContext) {
            connections.update { $0.open -= 1 }
            context.fireChannelInactive()
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
    }
}
