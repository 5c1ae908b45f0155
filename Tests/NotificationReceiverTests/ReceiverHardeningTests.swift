import AsyncHTTPClient
@testable import AuditTrail
import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import NIOPosix
@testable import NotificationReceiver
import ReceiptCore
import ServiceTestSupport
import Synchronization
import Testing
import TestSupport

/// The receiver after its security review: unverified claims cut before they are escaped,
/// refusal log lines sampled, duplicate keys refused, log values quoted, answers that say
/// nothing of the set-up, and connections that slow readers, pipeliners and one address's
/// crowd can't hold.
@Suite struct ReceiverHardeningTests {
    static let receivedAt = Date(timeIntervalSince1970: 1_795_000_000)

    func temporaryPath() -> String {
        TemporaryFolder("hardening").appending("audit.sqlite").path
    }

    /// An unsigned token whose claims are the given ones (the gates read them before any
    /// signature work), in a `{"signedPayload": …}` body.
    static func claims(bundleID: String, environment: String = "Production", uuid: String = "c0000000-0000-4000-8000-000000000000")
        -> [UInt8]
    {
        let header = #"{"alg":"ES256","x5c":["AAAA","AAAA","AAAA"]}"#
        let payload =
            #"{"notificationType":"REFUND","notificationUUID":"\#(uuid)","signedDate":1794999000000,"data":{"bundleId":"\#(bundleID)","environment":"\#(environment)"}}"#
        let token = Base64Text.encodeURL(Array(header.utf8)) + "." + Base64Text.encodeURL(Array(payload.utf8)) + ".AAAA"
        return NotificationFixture.body(token: token)
    }

    // MARK: - Unverified claims

    @Test func aClaimIsCutOnAScalarBoundaryWithAMark() {
        #expect(ClaimText.cut("com.example.app") == "com.example.app")
        let exact = String(repeating: "a", count: 256)
        #expect(ClaimText.cut(exact) == exact)
        #expect(ClaimText.cut(exact + "a") == String(repeating: "a", count: 253) + "…")
        // "é" is two bytes: 253 bytes of room hold 126 of them, not half of the 127th.
        let cut = ClaimText.cut(String(repeating: "é", count: 200))
        #expect(cut == String(repeating: "é", count: 126) + "…")
        #expect(cut.utf8.count == 255)
        #expect(ClaimText.cut(String(repeating: "x", count: 2000), to: 1024).utf8.count == 1024)
    }

    /// The review's body: 1 MB whose bundleId is 250,000 × U+202E. Refused (403), with a log
    /// line and a refusal row of bounded size, the claim cut to 84 scalars and the mark.
    @Test func aMegabyteClaimIsRefusedWithAShortLogLineAndRow() async throws {
        let words = Wording("receiver-hardening")
        let store = try NotificationStore(path: temporaryPath()).started()
        let logs = CapturedLogs()
        let receiver = NotificationReceiver(
            sink: store, policy: .replaying(allowedBundleIDs: ["my.app"]), logger: Logger(label: "test", factory: logs.handler),
            now: { Self.receivedAt })
        let body = Self.claims(bundleID: String(repeating: "\u{202E}", count: 250_000))
        #expect(body.count > 1_000_000 && body.count <= ReceiverPolicy.defaultMaximumBodySize)
        let answer = await receiver.handle(body: body, declaredLength: body.count, truncated: false, peer: "203.0.113.7:4000")
        #expect(answer.status == 403)
        #expect(answer.refusal == .bundle)
        let claim = String(repeating: "\u{202E}", count: 84) + "…"
        #expect(claim.utf8.count == 255)
        words.said(answer.reason)
        #expect(answer.reason.utf8.count == 306)
        let line = try #require(logs.lines.withLock { $0.first })
        let logged = try #require(line.metadata["reason"]).description
        #expect(logged == "bundle: bundleId is " + String(repeating: "\\u{202e}", count: 84) + "…, not one of --bundle-id my.app")
        #expect(logged.utf8.count == 726)
        await store.close()
        let rows = try await store.rejections()
        #expect(rows.map(\.reason) == [answer.reason])
        #expect(rows.first?.reason.utf8.count == 306)
        words.check()
    }

    /// A reason is bounded whatever builds it: 1,024 bytes, the mark included.
    @Test func aRefusalReasonIsAtMostAKilobyte() {
        let answer = ReceiveAnswer(.undecodable, "signedPayload: " + String(repeating: "z", count: 740_000))
        #expect(answer.reason.utf8.count == 1024)
        #expect(answer.reason.hasSuffix("zz…"))
        #expect(answer.reason.hasPrefix("signedPayload: zzz"))
    }

    // MARK: - Sampled refusal log lines

    /// The first refusal of a class, address and minute is logged; the rest are counted, and
    /// said in one line once a later minute starts.
    @Test func refusalLogLinesAreOnePerClassAddressAndMinuteThenACount() async throws {
        let words = Wording("receiver-hardening")
        let clock = Mutex(Date(timeIntervalSince1970: 1_795_000_020))  // the start of a minute
        let logs = CapturedLogs()
        let receiver = NotificationReceiver(
            sink: RecordingSink(), policy: .replaying(), logger: Logger(label: "test", factory: logs.handler),
            now: { clock.withLock { $0 } })
        for n in 0..<100 {
            _ = await receiver.handle(body: Array("junk \(n)".utf8), declaredLength: nil, truncated: false, peer: "192.0.2.1:\(5_000 + n)")
        }
        for n in 0..<7 {
            _ = await receiver.handle(body: Array("{}".utf8), declaredLength: nil, truncated: false, peer: "192.0.2.1:\(6_000 + n)")
        }
        _ = await receiver.handle(body: Array("junk".utf8), declaredLength: nil, truncated: false, peer: "192.0.2.2:7000")
        clock.withLock { $0 = $0.addingTimeInterval(59) }  // still the same minute
        _ = await receiver.handle(body: Array("junk".utf8), declaredLength: nil, truncated: false, peer: "192.0.2.1:7001")
        func summary() -> [String] {
            logs.lines.withLock { lines in
                lines.map { line in
                    let m = line.metadata
                    return line.message == "notification"
                        ? "notification \(m["refusal"] ?? "-") \(m["peer"] ?? "-")"
                        : "\(line.message) \(m["refusal"] ?? "-") \(m["peer"] ?? "-") \(m["minute"] ?? "-") \(m["suppressed"] ?? "-")"
                }
            }
        }
        #expect(summary() == ["notification not-json 192.0.2.1:5000", "notification not-a-notification 192.0.2.1:6000", "notification not-json 192.0.2.2:7000"])
        clock.withLock { $0 = $0.addingTimeInterval(1) }  // the next minute
        _ = await receiver.handle(body: Array("junk".utf8), declaredLength: nil, truncated: false, peer: "192.0.2.1:8000")
        words.said(summary())
        #expect(logs.lines.withLock { $0.map(\.level) } == [.notice, .notice, .notice, .notice, .notice, .notice])
        // A request that is no refusal closes the minute too, and is always logged.
        clock.withLock { $0 = $0.addingTimeInterval(60) }
        _ = await receiver.handle(body: Array("junk".utf8), declaredLength: nil, truncated: false, peer: "192.0.2.1:8001")
        _ = await receiver.handle(body: Array("junk".utf8), declaredLength: nil, truncated: false, peer: "192.0.2.1:8002")
        clock.withLock { $0 = $0.addingTimeInterval(60) }
        let genuine = await receiver.handle(
            body: NotificationFixture.body(token: try NotificationFixture.token("session-pro_00_DID_RENEW.jws")), declaredLength: nil,
            truncated: false, peer: "17.0.0.1:443")
        #expect(genuine.status == 200)
        words.said(Array(summary().suffix(3)))
        words.check()
    }

    // MARK: - Duplicate keys

    @Test func duplicateKeysAreFoundAtAnyDepthAndUnescaped() {
        func first(_ text: String) -> String? { DuplicateKeys.first(in: Array(text.utf8)) }
        #expect(first(#"{"signedPayload":"a","signedPayload":"b"}"#) == "signedPayload")
        #expect(first(#"{"a":{"b":1,"c":[{"d":1,"d":2}]}}"#) == "d")
        #expect(first(#"{"a":1,"\u0061":2}"#) == "a")
        #expect(first(#"{"a\"":1,"a\\":2,"b":"a\"","c":{"a\"":3}}"#) == nil)
        #expect(first(#"[{"a":1},{"a":1}]"#) == nil)
        #expect(first(#"{"a":{"x":1},"b":{"x":1}}"#) == nil)
        #expect(first(#"{"x":"y","y":"x"}"#) == nil)
        #expect(first(#"{"k":"\\","k":1}"#) == "k")
    }

    @Test func aBodyWithADuplicateKeyIsNotANotification() async throws {
        let words = Wording("receiver-hardening")
        let store = try NotificationStore(path: temporaryPath()).started()
        let receiver = NotificationReceiver(
            sink: store, policy: .replaying(), logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }),
            now: { Self.receivedAt })
        let token = try NotificationFixture.token("session-pro_00_DID_RENEW.jws")
        for body in [
            #"{"signedPayload":"\#(token)","signedPayload":"junk"}"#, #"{"signedPayload":"junk","signedPayload":"\#(token)"}"#,
            #"{"signedPayload":"\#(token)","signed\u0050ayload":"\#(token)"}"#,
        ] {
            let answer = await receiver.handle(body: Array(body.utf8), declaredLength: nil, truncated: false, peer: nil)
            #expect(answer.status == 400)
            #expect(answer.refusal == .notNotification)
            words.said(answer.reason)
            #expect(answer.publicReason == RefusalKind.notNotification.publicReason)
        }
        // Nested: a V1-shaped body with a repeated inner key.
        let nested = await receiver.handle(
            body: Array(#"{"notification_type":"REFUND","unified_receipt":{"status":0,"status":1}}"#.utf8), declaredLength: nil,
            truncated: false, peer: nil)
        #expect(nested.refusal == .notNotification)
        words.said(nested.reason)
        #expect(try await store.notifications().isEmpty)
        let genuine = await receiver.handle(body: NotificationFixture.body(token: token), declaredLength: nil, truncated: false, peer: nil)
        #expect(genuine.status == 200)
        await store.close()
        words.check()
    }

    // MARK: - Quoted log values

    final class Lines: TextOutputStream, Sendable {
        let text = Mutex("")
        func write(_ string: String) { text.withLock { $0 += string } }
    }

    @Test func logValuesWithASpaceAnEqualsSignOrAQuoteAreQuoted() {
        let words = Wording("receiver-hardening")
        #expect(QuotedLogHandler.quoted("refused") == "refused")
        #expect(QuotedLogHandler.quoted("x refusal=none") == #""x refusal=none""#)
        #expect(QuotedLogHandler.quoted("a=b") == #""a=b""#)
        #expect(QuotedLogHandler.quoted(#"say "hi" \o/"#) == #""say \"hi\" \\o/""#)
        #expect(QuotedLogHandler.quoted(#"no\space"#) == #"no\space"#)
        #expect(QuotedLogHandler.quoted("") == "\"\"")
        let lines = Lines()
        var logger = Logger(label: "receiptdash.receive") { QuotedLogHandler(StreamLogHandler(label: $0, stream: lines, metadataProvider: nil)) }
        logger[metadataKey: "listener"] = "public port"
        logger.notice(
            "notification", metadata: ["outcome": "refused", "reason": "bundleId is x refusal=none", "status": .stringConvertible(403)])
        let line = lines.text.withLock { $0 }
        // After the timestamp.
        words.said(String(line.drop { $0 != " " }.dropFirst()))
        #expect(line.hasSuffix("\n"))
        words.check()
    }

    // MARK: - Answers

    @Test func noPublicReasonNamesAFlagOrTheProduct() {
        let words = Wording("receiver-hardening")
        for kind in RefusalKind.allCases {
            #expect(!kind.publicReason.contains("--"), "\(kind)")
            #expect(!kind.publicReason.lowercased().contains("receiptdash"), "\(kind)")
        }
        words.said(RefusalKind.v1NotAccepted.publicReason)
        words.check()
    }

    /// A server on a free loopback port; its address once it listens.
    func serve(_ receiver: NotificationReceiver, _ listeners: ReceiverListeners) async throws -> (Task<Void, any Error>, String, Int) {
        let (addresses, listening) = AsyncStream.makeStream(of: String.self)
        let server = Task { try await receiver.run(listeners, handlesSignals: false, onListening: { listening.yield($0) }) }
        var iterator = addresses.makeAsyncIterator()
        let address = try #require(await iterator.next())
        let parts = address.split(separator: ":")
        return (server, String(parts[0]), Int(parts[1])!)
    }

    /// Collects what the server sends until it closes; tells when its first bytes came.
    final class Collector: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        var bytes = ByteBuffer()
        let done: EventLoopPromise<String>
        let first: EventLoopPromise<Void>
        init(_ done: EventLoopPromise<String>, first: EventLoopPromise<Void>) {
            self.done = done
            self.first = first
        }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var chunk = unwrapInboundIn(data)
            bytes.writeBuffer(&chunk)
            first.succeed()
        }
        func channelInactive(context: ChannelHandlerContext) {
            first.fail(ChannelError.eof)
            done.succeed(String(buffer: bytes))
        }
        func errorCaught(context: ChannelHandlerContext, error: any Error) { context.close(promise: nil) }
    }

    /// Connects from `source` and sends `request`; the text the server sends until it closes.
    /// A connection the server resets at accept (the per-address cap) may fail to connect at
    /// all: then there is no channel, and nothing came back (`""`).
    func exchange(_ host: String, _ port: Int, from source: String = "127.0.0.1", _ request: String) async throws -> (
        (any Channel)?, EventLoopFuture<String>, first: EventLoopFuture<Void>
    ) {
        let done = MultiThreadedEventLoopGroup.singleton.next().makePromise(of: String.self)
        let first = done.futureResult.eventLoop.makePromise(of: Void.self)
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .bind(to: try SocketAddress(ipAddress: source, port: 0))
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(Collector(done, first: first)) }
                }
                .connect(host: host, port: port).get()
        } catch let error as NIOConnectionError where error.connectionErrors.allSatisfy({ ($0.error as? IOError)?.errnoCode == ECONNRESET }) {
            // Every promise is completed: a promise left pending would trap when freed.
            first.fail(error)
            done.succeed("")
            return (nil, done.futureResult, first.futureResult)
        }
        // A connection the server closes at accept may be closed before this write: that is
        // the refusal itself, and `done` says what came back (nothing).
        if !request.isEmpty { try? await channel.writeAndFlush(ByteBuffer(string: request)) }
        return (channel, done.futureResult, first.futureResult)
    }

    static let health = "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"

    /// `/health` answered 200 with no `Server` field (nor any product name).
    @Test(.timeLimit(.minutes(3))) func answersCarryNoServerField() async throws {
        let words = Wording("receiver-hardening")
        let receiver = NotificationReceiver(
            sink: RecordingSink(), policy: .replaying(), logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        let (server, host, port) = try await serve(receiver, ReceiverListeners(host: "127.0.0.1", port: 0))
        let (_, answer, _) = try await exchange(host, port, Self.health)
        let text = try #require(await waitFor(answer))
        #expect(text.hasPrefix("HTTP/1.1 200 OK\r\n"))
        let fields = text.components(separatedBy: "\r\n\r\n")[0].lowercased()
        #expect(!fields.contains("\r\nserver:"))
        #expect(!fields.contains("receiptdash"))
        let body = String(decoding: try Data(contentsOf: ServiceFixture.folder.appendingPathComponent("notification-v1.json")), as: UTF8.self)
        let (_, v1, _) = try await exchange(
            host, port, "POST /notifications HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body)
        let refused = try #require(await waitFor(v1))
        #expect(refused.hasPrefix("HTTP/1.1 403 Forbidden\r\n"))
        #expect(ReceiverAnswerStatus(refused.components(separatedBy: "\r\n\r\n").last ?? "", words) == "refused")
        #expect(!refused.contains("--accept-v1"))
        #expect(!refused.lowercased().contains("server:"))
        server.cancel()
        _ = await server.result
        words.check()
    }

    // MARK: - Connections

    /// Counts the reads asked of the socket.
    final class ReadCounter: ChannelOutboundHandler {
        typealias OutboundIn = Never
        var reads = 0
        func read(context: ChannelHandlerContext) {
            reads += 1
            context.read()
        }
    }

    /// Holds every write as a full socket does, until released (or the channel closes).
    final class HeldWrites: ChannelOutboundHandler {
        typealias OutboundIn = HTTPResponsePart
        var held: [EventLoopPromise<Void>?] = []
        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) { held.append(promise) }
        func release() {
            for promise in held { promise?.succeed() }
            held = []
        }
        func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
            for promise in held { promise?.fail(ChannelError.ioOnClosedChannel) }
            held = []
            context.close(mode: mode, promise: promise)
        }
    }

    /// An answer not taken by the socket within the deadline closes the connection; one taken
    /// in time does not, and the next answer gets a deadline of its own.
    @Test func anAnswerLeftUnwrittenPastTheWriteDeadlineClosesTheConnection() throws {
        let channel = EmbeddedChannel()
        let socket = HeldWrites()  // writes are held, so none is waited for
        try channel.pipeline.syncOperations.addHandler(socket)
        try channel.pipeline.syncOperations.addHandler(WriteDeadlineHandler(deadline: .seconds(10)))
        try channel.connect(to: SocketAddress(ipAddress: "17.0.0.1", port: 443)).wait()  // embedded: nothing is dialled
        channel.writeAndFlush(HTTPResponsePart.head(HTTPResponse(status: .ok)), promise: nil)
        channel.writeAndFlush(HTTPResponsePart.end(nil), promise: nil)
        channel.embeddedEventLoop.advanceTime(by: .seconds(9))
        socket.release()  // the client read it
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        #expect(channel.isActive)
        // Two answers pipelined: the first is written at 5 s, the second never.
        channel.writeAndFlush(HTTPResponsePart.end(nil), promise: nil)
        channel.embeddedEventLoop.advanceTime(by: .seconds(5))
        channel.writeAndFlush(HTTPResponsePart.end(nil), promise: nil)
        socket.held.removeFirst()?.succeed()
        channel.embeddedEventLoop.advanceTime(by: .seconds(9))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(!channel.isActive)
    }

    @Test func aChannelUnwritablePastTheWriteDeadlineIsClosed() throws {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(WriteDeadlineHandler(deadline: .seconds(10)))
        try channel.connect(to: SocketAddress(ipAddress: "17.0.0.1", port: 443)).wait()  // embedded: nothing is dialled
        // Unwritable for 9 s, then writable again: the deadline starts over.
        channel.isWritable = false
        channel.pipeline.fireChannelWritabilityChanged()
        channel.embeddedEventLoop.advanceTime(by: .seconds(9))
        channel.isWritable = true
        channel.pipeline.fireChannelWritabilityChanged()
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        #expect(channel.isActive)
        channel.isWritable = false
        channel.pipeline.fireChannelWritabilityChanged()
        channel.embeddedEventLoop.advanceTime(by: .seconds(9))
        #expect(channel.isActive)
        channel.pipeline.fireChannelWritabilityChanged()  // again unwritable: the first deadline holds
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(!channel.isActive)
    }

    @Test func pipelinedRequestsPastTheLimitAreNotRead() throws {
        let channel = EmbeddedChannel()
        let counter = ReadCounter()
        try channel.pipeline.syncOperations.addHandler(counter)
        try channel.pipeline.syncOperations.addHandler(PipelineLimitHandler(limit: 16))
        let head = HTTPRequestPart.head(HTTPRequest(method: .get, scheme: nil, authority: "x", path: "/health"))
        for _ in 0..<15 {
            try channel.writeInbound(head)
            try channel.writeInbound(HTTPRequestPart.end(nil))
        }
        channel.read()
        #expect(counter.reads == 1)
        try channel.writeInbound(head)  // the 16th unanswered
        channel.read()
        channel.read()
        #expect(counter.reads == 1)
        // One answer ends: under the limit, the held read goes to the socket (once).
        try channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .ok)))
        #expect(counter.reads == 1)
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        #expect(counter.reads == 2)
        channel.read()
        #expect(counter.reads == 3)
        // An answer handed on but not yet written to the socket still counts: the limit is of
        // answers made and not sent, not of answers the channel buffers for a client that
        // never reads.
        try channel.writeInbound(head)  // the 16th again
        channel.read()
        #expect(counter.reads == 3)
        channel.write(HTTPResponsePart.head(HTTPResponse(status: .ok)), promise: nil)
        channel.write(HTTPResponsePart.end(nil), promise: nil)
        #expect(counter.reads == 3)
        channel.flush()
        #expect(counter.reads == 4)
        _ = try channel.finish()
    }

    /// Two idle connections from 127.0.0.1 fill its cap of 2: a third from it is closed at
    /// accept, unanswered, while 127.0.0.2 is served; one closed, 127.0.0.1 is served again.
    @Test(.timeLimit(.minutes(3))) func connectionsPastThePerAddressCapAreClosedAtAccept() async throws {
        let receiver = NotificationReceiver(
            sink: RecordingSink(), policy: .replaying(), logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        let (server, host, port) = try await serve(
            receiver,
            ReceiverListeners(host: "127.0.0.1", port: 0, maximumConnectionsPerAddress: 2, idleTimeout: .seconds(120), requestDeadline: .seconds(120)))
        // Two kept-alive connections, answered once and then idle.
        let keepAlive = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
        let (kept1, _, answered1) = try await exchange(host, port, keepAlive)
        let (kept2, _, answered2) = try await exchange(host, port, keepAlive)
        let idle1 = try #require(kept1)
        let idle2 = try #require(kept2)
        #expect(await waitFor(answered1) != nil)
        #expect(await waitFor(answered2) != nil)
        // Refused: closed with nothing sent, though it asked.
        let (_, third, _) = try await exchange(host, port, Self.health)
        #expect(await waitFor(third) == "")
        let (_, other, _) = try await exchange(host, port, from: "127.0.0.2", Self.health)
        #expect(await waitFor(other)?.hasPrefix("HTTP/1.1 200 OK\r\n") == true)
        try await idle1.close()
        // The server counts the close when it sees it: a new connection is tried until served.
        var served = false
        for _ in 0..<200 where !served {
            let (_, again, _) = try await exchange(host, port, Self.health)
            served = await waitFor(again)?.hasPrefix("HTTP/1.1 200 OK\r\n") == true
        }
        #expect(served)
        try await idle2.close()
        server.cancel()
        _ = await server.result
    }

    /// `--max-connections 2`: two clients that pipeline ~660 KB of `GET /health` and never
    /// read are cut off once their answers sit unread past the write deadline (200 ms here);
    /// then a fresh `/health` is answered.
    @Test(.timeLimit(.minutes(3))) func slowReadersDoNotHoldTheConnectionSlots() async throws {
        let receiver = NotificationReceiver(
            sink: RecordingSink(), policy: .replaying(), logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        let (server, host, port) = try await serve(
            receiver,
            ReceiverListeners(
                host: "127.0.0.1", port: 0, maximumConnections: 2, idleTimeout: .seconds(300), requestDeadline: .seconds(300),
                writeTimeout: .milliseconds(200)))
        let request = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
        let flood = ByteBuffer(string: String(repeating: request, count: 660_000 / request.utf8.count))
        var readers: [any Channel] = []
        for _ in 0..<2 {
            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .channelOption(.autoRead, value: false)
                .channelOption(.socketOption(.so_rcvbuf), value: 4096)
                .connect(host: host, port: port).get()
            channel.writeAndFlush(flood, promise: nil)
            readers.append(channel)
        }
        for reader in readers {
            #expect(await waitFor(reader.closeFuture) != nil, "a slow reader still holds its slot")
        }
        let (_, answer, _) = try await exchange(host, port, Self.health)
        #expect(await waitFor(answer)?.hasPrefix("HTTP/1.1 200 OK\r\n") == true)
        server.cancel()
        _ = await server.result
    }
}

/// The value of `future` (a real socket event), nil if it fails. No timer: the test's time
/// limit bounds the wait, and its cancellation ends it with nil.
func waitFor<T: Sendable>(_ future: EventLoopFuture<T>) async -> T? {
    // nil until the future completes; then its value, or nil inside when it failed.
    let outcome = Signal<T??>(nil)
    future.whenComplete { result in outcome.update { $0 = .some(try? result.get()) } }
    return (await outcome.wait { $0 != nil }) ?? nil
}
