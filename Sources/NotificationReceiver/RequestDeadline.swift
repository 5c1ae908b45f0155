import NIOCore
import NIOHTTPTypes

/// Closes a connection whose request does not arrive whole in time: a new connection must
/// deliver its first request (TLS handshake, head and body) within `deadline` of opening, and
/// a kept-alive one its next request within `deadline` of that request's first byte. Between
/// requests Hummingbird's idle timeout applies. Slow clients that trickle bytes to hold a
/// socket (slow-loris) are cut off after `deadline`, whatever their pace.
///
/// Sits after the HTTP decoder, where it sees a request end, and puts a small watcher of raw
/// bytes at the head of the pipeline, where it sees a request begin before its head is whole.
final class RequestDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private enum State {
        /// Reading a request: the deadline runs.
        case reading
        /// The request is whole; the answer is being made.
        case answering
        /// Between requests: the idle timeout applies.
        case idle
    }

    private let deadline: TimeAmount
    private var state = State.reading
    private var timer: Scheduled<Void>?
    private var armed = false

    init(deadline: TimeAmount) {
        self.deadline = deadline
    }

    func handlerAdded(context: ChannelHandlerContext) {
        try? context.pipeline.syncOperations.addHandler(FirstByteWatcher(owner: self), position: .first)
        if context.channel.isActive { arm(context.channel) }
    }

    func handlerRemoved(context: ChannelHandlerContext) { disarm() }

    func channelActive(context: ChannelHandlerContext) {
        if state == .reading && !armed { arm(context.channel) }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        disarm()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            if state == .idle {
                state = .reading
                arm(context.channel)
            }
        case .body: break
        case .end:
            state = .answering
            disarm()
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data), state == .answering { state = .idle }
        context.write(data, promise: promise)
    }

    /// Bytes arrived off the socket (before any decoding).
    fileprivate func bytesArrived(_ channel: any Channel) {
        guard state == .idle else { return }
        state = .reading
        arm(channel)
    }

    private func arm(_ channel: any Channel) {
        timer?.cancel()
        armed = true
        timer = channel.eventLoop.scheduleTask(in: deadline) { channel.close(promise: nil) }
    }

    private func disarm() {
        timer?.cancel()
        timer = nil
        armed = false
    }
}

/// Tells its owner that bytes arrived, and passes them on untouched.
private final class FirstByteWatcher: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private weak var owner: RequestDeadlineHandler?

    init(owner: RequestDeadlineHandler) {
        self.owner = owner
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        owner?.bytesArrived(context.channel)
        context.fireChannelRead(data)
    }
}
