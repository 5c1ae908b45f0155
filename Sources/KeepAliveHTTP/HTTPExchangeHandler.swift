import NIOCore
import NIOHTTP1
import Synchronization

/// One request and the promise of its answer, written into a connection's pipeline.
struct HTTPExchange: Sendable {
    var head: HTTPRequestHead
    var body: ByteBuffer
    var timeout: TimeAmount
    var promise: EventLoopPromise<KeepAliveAnswer>
    /// Set when the handler takes the exchange: from then on it alone fails the promise.
    let taken = Flag()

    final class Flag: Sendable {
        private let value = Atomic<Bool>(false)
        func set() { value.store(true, ordering: .releasing) }
        var isSet: Bool { value.load(ordering: .acquiring) }
    }
}

/// The last handler of a keep-alive connection: sends one ``HTTPExchange`` at a time and fulfils
/// its promise with the answer's status and `Retry-After`. The answer's body is counted, never
/// kept; past the bound the connection is closed and the status already read is the answer.
/// A connection that ends, fails or runs out of time fails the exchange in flight.
final class HTTPExchangeHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = HTTPExchange
    typealias OutboundOut = HTTPClientRequestPart

    private let maximumAnswerBytes: Int
    private let failure: Connection.FailureBox
    private var pending: EventLoopPromise<KeepAliveAnswer>?
    private var timeout: Scheduled<Void>?
    private var answer = KeepAliveAnswer(status: 0, retryAfter: nil, reusable: true)
    private var bodyBytes = 0
    private var discarding = false

    init(maximumAnswerBytes: Int, failure: Connection.FailureBox) {
        self.maximumAnswerBytes = maximumAnswerBytes
        self.failure = failure
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let exchange = unwrapOutboundIn(data)
        exchange.taken.set()
        guard pending == nil, context.channel.isActive else {
            // One exchange at a time; the pool never writes a second one, but say so if it did.
            exchange.promise.fail(
                pending == nil ? failure.recorded ?? KeepAliveHTTPError(.connectionClosed, "the connection is closed")
                    : KeepAliveHTTPError(.connectionClosed, "a request is in flight"))
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        pending = exchange.promise
        answer = KeepAliveAnswer(status: 0, retryAfter: nil, reusable: true)
        bodyBytes = 0
        discarding = false
        timeout = context.eventLoop.assumeIsolated().scheduleTask(in: exchange.timeout) { [self] in
            fail(context: context, KeepAliveHTTPError(.timeout, "no answer within the time limit"))
        }
        context.write(wrapOutboundOut(.head(exchange.head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(exchange.body))), promise: nil)
        context.write(wrapOutboundOut(.end(nil)), promise: promise)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard pending != nil else { return }
        switch unwrapInboundIn(data) {
        case .head(let head):
            // 1xx answers are interim: the real one follows.
            if (100...199).contains(head.status.code) { return }
            answer.status = Int(head.status.code)
            answer.retryAfter = head.headers.first(name: "retry-after").flatMap { Double($0.trimmingCharacters(in: .whitespaces)) }
            answer.reusable = head.isKeepAlive
        case .body(let part):
            guard answer.status != 0, !discarding else { return }
            bodyBytes += part.readableBytes
            if bodyBytes > maximumAnswerBytes {
                // Enough: the status decides. The connection cannot be reused mid-answer.
                discarding = true
                answer.reusable = false
                succeed()
                context.close(promise: nil)
            }
        case .end:
            guard answer.status != 0, !discarding else { return }
            succeed()
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(context: context, KeepAliveHTTPError(.connectionClosed, "the connection closed before the answer ended"))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let error = KeepAliveHTTPError.from(error)
        failure.record(error)
        fail(context: context, error)
    }

    private func succeed() {
        timeout?.cancel()
        timeout = nil
        let promise = pending
        pending = nil
        promise?.succeed(answer)
    }

    private func fail(context: ChannelHandlerContext, _ error: KeepAliveHTTPError) {
        timeout?.cancel()
        timeout = nil
        let promise = pending
        pending = nil
        promise?.fail(error)
        context.close(promise: nil)
    }
}
