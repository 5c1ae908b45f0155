import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization

/// A POST's answer: its status, `Retry-After` in seconds when sent, and whether the connection
/// may carry another request.
public struct KeepAliveAnswer: Sendable, Hashable {
    public var status: Int
    public var retryAfter: Double?
    public var reusable: Bool

    public init(status: Int, retryAfter: Double?, reusable: Bool) {
        (self.status, self.retryAfter, self.reusable) = (status, retryAfter, reusable)
    }
}

/// An HTTP/1.1 client for one job: many small POSTs to a few hosts, over kept-alive connections.
///
/// Why not AsyncHTTPClient: measured on the forwarding benchmark (2 cores, sender, receiver and
/// downstream together), AsyncHTTPClient's per-request machinery cost the receiver about
/// 0.28 ms of CPU per delivery, 70% of forwarding's whole cost, and the simulator's sender
/// 0.3 ms per notification. This client writes a request into a pooled connection's pipeline
/// and reads the status back, nothing else.
///
/// - **Bounded.** At most ``Configuration/connectionsPerHost`` connections per scheme, host and
///   port; more requests wait their turn. At most ``Configuration/maximumAnswerBytes`` of an
///   answer are read (the status decides), and none of it is kept.
/// - **Timed.** A connect timeout, and a limit on each request from its first byte written to
///   its answer's end.
/// - **Safe.** TLS is verified as its configuration says (never off here); redirects are not
///   followed (a 3xx is just a status); one request per connection at a time, no pipelining.
public final class KeepAliveHTTPClient: Sendable {
    public struct Configuration: Sendable {
        public var connectionsPerHost: Int
        public var connectTimeout: TimeAmount
        public var maximumAnswerBytes: Int
        /// For https endpoints.
        public var tls: TLSConfiguration

        public init(
            connectionsPerHost: Int = 16, connectTimeout: TimeAmount = .seconds(5), maximumAnswerBytes: Int = 64 * 1024,
            tls: TLSConfiguration = .makeClientConfiguration()
        ) {
            self.connectionsPerHost = max(1, connectionsPerHost)
            self.connectTimeout = connectTimeout
            self.maximumAnswerBytes = maximumAnswerBytes
            self.tls = tls
        }
    }

    public let configuration: Configuration
    private let group: any EventLoopGroup
    private let sslContext: NIOSSLContext
    private let pools = Mutex<[Origin: Pool]>([:])
    private let closed = Atomic<Bool>(false)

    public init(configuration: Configuration = Configuration(), group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) throws {
        self.configuration = configuration
        self.group = group
        sslContext = try NIOSSLContext(configuration: configuration.tls)
    }

    /// POSTs `body` with `headers` (the client adds `host`, `content-length` and keep-alive) and
    /// returns the answer's status once the answer has ended or passed its bound.
    public func post(_ endpoint: KeepAliveEndpoint, headers: [(String, String)], body: [UInt8], timeout: TimeAmount) async throws(KeepAliveHTTPError)
        -> KeepAliveAnswer
    {
        var head = HTTPRequestHead(version: .http1_1, method: .POST, uri: endpoint.target)
        head.headers.reserveCapacity(headers.count + 3)
        head.headers.add(name: "host", value: endpoint.hostHeader)
        for (name, value) in headers { head.headers.add(name: name, value: value) }
        head.headers.add(name: "content-length", value: String(body.count))
        let pool = self.pool(endpoint.origin)
        let connection = try await pool.acquire(connect: { () async throws(KeepAliveHTTPError) -> Connection in try await self.connect(endpoint.origin) })
        let channel = connection.channel
        let promise = channel.eventLoop.makePromise(of: KeepAliveAnswer.self)
        let exchange = HTTPExchange(head: head, body: ByteBuffer(bytes: body), timeout: timeout, promise: promise)
        // A connection closed before the write reached its handler (the pipeline already torn
        // down) never calls it: the write's own failure then fails the exchange, so no caller
        // waits forever. Once the handler has the exchange, its failure is the exact one.
        let written = channel.eventLoop.makePromise(of: Void.self)
        written.futureResult.whenFailure { error in
            if !exchange.taken.isSet { promise.fail(connection.failure.recorded ?? KeepAliveHTTPError.from(error)) }
        }
        channel.writeAndFlush(exchange, promise: written)
        do {
            let answer = try await promise.futureResult.get()
            pool.release(connection, reusable: answer.reusable && channel.isActive)
            return answer
        } catch {
            pool.release(connection, reusable: false)
            throw KeepAliveHTTPError.from(error)
        }
    }

    /// Closes every connection; requests waiting for one fail with ``KeepAliveHTTPError/Code/shutdown``.
    public func shutdown() async {
        closed.store(true, ordering: .relaxed)
        let all = pools.withLock { pools in
            defer { pools = [:] }
            return Array(pools.values)
        }
        for pool in all { await pool.close() }
    }

    private func pool(_ origin: Origin) -> Pool {
        pools.withLock { pools in
            if let pool = pools[origin] { return pool }
            let pool = Pool(limit: configuration.connectionsPerHost)
            pools[origin] = pool
            return pool
        }
    }

    private func connect(_ origin: Origin) async throws(KeepAliveHTTPError) -> Connection {
        if closed.load(ordering: .relaxed) { throw KeepAliveHTTPError(.shutdown) }
        let sslContext = origin.secure ? self.sslContext : nil
        let limit = configuration.maximumAnswerBytes
        let failure = Connection.FailureBox()
        // A host name is checked against the certificate; an address is sent as no SNI.
        let serverName: String? = origin.host.contains(":") || origin.host.allSatisfy({ $0.isNumber || $0 == "." }) ? nil : origin.host
        let bootstrap = ClientBootstrap(group: group)
            .connectTimeout(configuration.connectTimeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    if let sslContext {
                        try pipeline.addHandler(NIOSSLClientHandler(context: sslContext, serverHostname: serverName))
                    }
                    try pipeline.addHTTPClientHandlers(leftOverBytesStrategy: .fireError)
                    try pipeline.addHandler(HTTPExchangeHandler(maximumAnswerBytes: limit, failure: failure))
                }
            }
        do {
            return Connection(channel: try await bootstrap.connect(host: origin.host, port: origin.port).get(), failure: failure)
        } catch {
            throw KeepAliveHTTPError.from(error)
        }
    }
}

/// The connections to one origin: idle ones to reuse, a count of open ones under the limit, and
/// the requests waiting, first in, first out.
final class Pool: Sendable {
    enum Turn: Sendable {
        case use(Connection)
        case connect
        case shutdown
    }

    private struct State {
        var idle: [Connection] = []
        /// Every connection made and not yet given up, idle or busy: closed at shutdown.
        var channels: [ObjectIdentifier: Connection] = [:]
        var open = 0
        var waiting: [CheckedContinuation<Turn, Never>] = []
        var closed = false
    }

    private let limit: Int
    private let state = Mutex(State())

    init(limit: Int) {
        self.limit = limit
    }

    /// A connection of this origin: an idle one, a new one under the limit, else the next one
    /// released.
    func acquire(connect: () async throws(KeepAliveHTTPError) -> Connection) async throws(KeepAliveHTTPError) -> Connection {
        while true {
            let turn = await withCheckedContinuation { (continuation: CheckedContinuation<Turn, Never>) in
                let now = state.withLock { state -> Turn? in
                    if state.closed { return .shutdown }
                    while let connection = state.idle.popLast() {
                        if connection.channel.isActive { return .use(connection) }
                        state.channels[connection.id] = nil
                        state.open -= 1
                    }
                    if state.open < limit {
                        state.open += 1
                        return .connect
                    }
                    state.waiting.append(continuation)
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
            switch turn {
            case .use(let connection):
                if connection.channel.isActive { return connection }
                release(connection, reusable: false)
            case .connect:
                do throws(KeepAliveHTTPError) {
                    let connection = try await connect()
                    let kept = state.withLock { state -> Bool in
                        guard !state.closed else { return false }
                        state.channels[connection.id] = connection
                        return true
                    }
                    if kept { return connection }
                    connection.channel.close(promise: nil)
                    throw KeepAliveHTTPError(.shutdown)
                } catch {
                    giveUpSlot()
                    throw error
                }
            case .shutdown:
                throw KeepAliveHTTPError(.shutdown)
            }
        }
    }

    /// Hands a connection back: to the first waiting request, else to the idle list; one that
    /// cannot be reused is closed and its place given to the next waiting request.
    func release(_ connection: Connection, reusable: Bool) {
        let channel = connection.channel
        if !reusable { channel.close(promise: nil) }
        let (next, turn) = state.withLock { state -> (CheckedContinuation<Turn, Never>?, Turn) in
            if state.closed {
                if reusable { channel.close(promise: nil) }
                return (nil, .shutdown)
            }
            if !reusable { state.channels[connection.id] = nil }
            if reusable {
                if state.waiting.isEmpty {
                    state.idle.append(connection)
                    return (nil, .shutdown)
                }
                return (state.waiting.removeFirst(), .use(connection))
            }
            state.open -= 1
            guard !state.waiting.isEmpty else { return (nil, .shutdown) }
            state.open += 1
            return (state.waiting.removeFirst(), .connect)
        }
        next?.resume(returning: turn)
    }

    /// A connection that was never made frees its place.
    private func giveUpSlot() {
        let next = state.withLock { state -> CheckedContinuation<Turn, Never>? in
            state.open -= 1
            guard !state.closed, !state.waiting.isEmpty else { return nil }
            state.open += 1
            return state.waiting.removeFirst()
        }
        next?.resume(returning: .connect)
    }

    /// Closes every connection, busy ones too (their requests fail), and turns away whoever waits.
    func close() async {
        let (channels, waiting) = state.withLock { state in
            state.closed = true
            defer { (state.idle, state.channels, state.waiting) = ([], [:], []) }
            return (Array(state.channels.values), state.waiting)
        }
        for continuation in waiting { continuation.resume(returning: .shutdown) }
        for connection in channels { try? await connection.channel.close() }
    }
}

/// One kept-alive connection and what its handler saw go wrong while no request was in flight
/// (a TLS alert right after connecting): a request that then finds the connection closed is
/// told that, not just "closed".
struct Connection: Sendable {
    let channel: any Channel
    let failure: FailureBox

    var id: ObjectIdentifier { ObjectIdentifier(channel) }

    final class FailureBox: Sendable {
        private let value = Mutex<KeepAliveHTTPError?>(nil)
        func record(_ error: KeepAliveHTTPError) { value.withLock { if $0 == nil { $0 = error } } }
        var recorded: KeepAliveHTTPError? { value.withLock { $0 } }
    }
}
