#if canImport(Glibc)
import Glibc
#endif
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypes
import Synchronization

/// Closes a connection whose client does not read its answers: an answer still not written to
/// the socket `deadline` after it was handed to the channel (the socket's buffers full), or a
/// channel that stays unwritable for `deadline` (NIO holding more than its high watermark of
/// unsent bytes), ends the connection. A client that pipelines requests and never reads would
/// otherwise hold its connection slot for ever: the request deadline stops at a request's end,
/// and the idle timeout does not run while answers are being written.
///
/// The socket's send buffer is set to `sendBuffer` bytes (the kernel doubles it): left to
/// Linux's autotuning it grows to 4 MB, in which a client that never reads parks some 26,000
/// answers (4 MB of kernel memory per connection) before any write waits. Answers here are
/// a few hundred bytes; 8 KB holds dozens of them. Every answer parked costs a whole request's
/// work: at 64 KB, 64 slow readers from one address made the receiver answer about 5,000
/// `/health` a second that nobody read, more than its genuine traffic.
///
/// Driven by each answer's write promise, `channelWritabilityChanged` and tasks scheduled on
/// the channel's event loop (so a test drives it with an embedded loop's time).
final class WriteDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let deadline: TimeAmount
    private let sendBuffer: Int?
    /// When each answer not yet written to the socket was handed on, oldest first (writes
    /// complete in order).
    private var unwritten = CircularBuffer<NIODeadline>()
    /// The one check that looks at the oldest unwritten answer: at most one task scheduled per
    /// connection, whatever the number of answers (a task per answer made scheduling the
    /// receiver's busiest work under a flood of pipelined requests).
    private var check: Scheduled<Void>?
    /// The close that runs unless the channel becomes writable first.
    private var unwritable: Scheduled<Void>?

    /// The send buffer a connection's socket gets, in bytes.
    static let defaultSendBuffer = 8 * 1024

    /// - Parameter sendBuffer: the socket's send buffer (`SO_SNDBUF`), nil to leave it to the
    ///   kernel.
    init(deadline: TimeAmount, sendBuffer: Int? = defaultSendBuffer) {
        self.deadline = deadline
        self.sendBuffer = sendBuffer
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if let sendBuffer {
            // Not every channel is a socket (an embedded one in tests): then there is none to set.
            try? context.channel.syncOptions?.setOption(.socketOption(.so_sndbuf), value: SocketOptionValue(sendBuffer))
        }
        if context.channel.isActive && !context.channel.isWritable { unwritable = close(context.channel) }
    }

    func handlerRemoved(context: ChannelHandlerContext) { disarm() }

    func channelInactive(context: ChannelHandlerContext) {
        disarm()
        context.fireChannelInactive()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            unwritable?.cancel()
            unwritable = nil
        } else if unwritable == nil {
            unwritable = close(context.channel)
        }
        context.fireChannelWritabilityChanged()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .end = unwrapOutboundIn(data) else { return context.write(data, promise: promise) }
        // The answer's last part: written to the socket when its promise completes.
        let written = promise ?? context.eventLoop.makePromise()
        let now = context.eventLoop.now
        unwritten.append(now)
        if check == nil { arm(context.channel, at: now + deadline) }
        written.futureResult.assumeIsolated().whenComplete { [self] _ in
            if !unwritten.isEmpty { unwritten.removeFirst() }
        }
        context.write(data, promise: written)
    }

    /// At `time`: closes `channel` if its oldest unwritten answer is `deadline` old, else looks
    /// again when that answer will be; nothing when every answer was written.
    private func arm(_ channel: any Channel, at time: NIODeadline) {
        check = channel.eventLoop.assumeIsolated().scheduleTask(deadline: time) { [self] in
            check = nil
            guard let oldest = unwritten.first else { return }
            if channel.eventLoop.now - oldest >= deadline {
                channel.close(promise: nil)
            } else {
                arm(channel, at: oldest + deadline)
            }
        }
    }

    /// Closes `channel` after the deadline, unless cancelled.
    private func close(_ channel: any Channel) -> Scheduled<Void> {
        channel.eventLoop.scheduleTask(in: deadline) { channel.close(promise: nil) }
    }

    private func disarm() {
        unwritable?.cancel()
        unwritable = nil
        check?.cancel()
        check = nil
        unwritten.removeAll()
    }
}

/// Bounds the requests one connection may have read and whose answers are not yet written to
/// its socket: at `limit`, it stops asking the socket for more bytes (the `read` is held) until
/// answers reach the socket. An answer counts until its last part is written to the socket, not
/// when it is handed to the channel: a client that pipelines and never reads otherwise has
/// answers made for it until NIO's own buffer (64 KB, some 400 answers) is full, each of them a
/// whole request's work nobody reads. Hummingbird answers pipelined requests one after the other, so a client
/// that sends 660 KB of `GET /health` at once is read `limit` requests at a time, its other
/// bytes left in the kernel's buffers. (The requests of bytes already read are still passed
/// on: one read is at most NIO's largest receive buffer, 64 KB.)
final class PipelineLimitHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let limit: Int
    /// Requests whose head was read and whose answer is not yet on the socket.
    private(set) var unanswered = 0
    /// A read asked for while at the limit, to pass on once under it.
    private var heldRead = false

    init(limit: Int) {
        self.limit = limit
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) { unanswered += 1 }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .end = unwrapOutboundIn(data) else { return context.write(data, promise: promise) }
        // Written to the socket (or failed, the connection closing) when its promise completes.
        let written = promise ?? context.eventLoop.makePromise()
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        written.futureResult.assumeIsolated().whenComplete { [self] _ in
            unanswered = max(0, unanswered - 1)
            if heldRead && unanswered < limit {
                heldRead = false
                loopBound.value.read()
            }
        }
        context.write(data, promise: written)
    }

    func read(context: ChannelHandlerContext) {
        if unanswered >= limit {
            heldRead = true
        } else {
            context.read()
        }
    }
}

/// The connections open from each address, across the public listener's connections: at most
/// `limit` from one address; past it a new connection is closed as soon as it is accepted.
/// Idle kept-alive connections count, as they hold a slot of `--max-connections` too.
final class ConnectionsPerAddress: Sendable {
    let limit: Int
    private let open = Mutex<[String: Int]>([:])

    init(limit: Int) {
        self.limit = limit
    }

    /// Counts a connection from `host`, or false (not counted) when `host` has `limit` open.
    func admit(_ host: String) -> Bool {
        open.withLock { open in
            let count = open[host, default: 0]
            guard count < limit else { return false }
            open[host] = count + 1
            return true
        }
    }

    /// A connection ``admit(_:)`` counted has closed.
    func release(_ host: String) {
        open.withLock { open in
            let count = (open[host] ?? 1) - 1
            open[host] = count > 0 ? count : nil
        }
    }
}

/// A server's child channels behind the per-address cap: a connection from an address at the
/// cap is reset (SO_LINGER 0, so no FIN exchange or TIME_WAIT is spent on it) and closed before
/// any of `base`'s pipeline is built, and never reaches the server's task group. Refusing in a
/// handler of that pipeline instead built each refused connection's HTTP codec, its async
/// channel and its task first: under 2,000 sockets from one address reconnecting as soon as
/// they are cut off, that was the receiver's busiest work.
///
/// An admitted connection is counted until its channel closes, and reads small: a flood of
/// pipelined requests is decoded a few KB at a time, so the bound on pipelined requests holds
/// the socket before megabytes of requests are parsed and queued (a 12 KB notification takes a
/// few reads). Idle kept-alive connections count, as they hold a slot of `--max-connections`.
struct AddressCappedChannel<Base: ServerChildChannel>: ServerChildChannel {
    typealias Value = Base.Value

    let base: Base
    let connections: ConnectionsPerAddress

    /// Why a connection was not set up; the channel is closed already.
    struct Refused: Error {}

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        guard let host = channel.remoteAddress?.ipAddress, connections.admit(host) else {
            // A failed set-up is dropped by the server, which leaves closing to us.
            if let socket = channel as? any SocketOptionProvider {
                socket.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { _ in channel.close(promise: nil) }
            } else {
                channel.close(promise: nil)
            }
            return channel.eventLoop.makeFailedFuture(Refused())
        }
        let connections = connections
        channel.closeFuture.whenComplete { _ in connections.release(host) }
        _ = channel.setOption(ChannelOptions.maxMessagesPerRead, value: 1)
        _ = channel.setOption(
            ChannelOptions.recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 512, initial: 4096, maximum: 16_384))
        return base.setup(channel: channel, logger: logger)
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}
