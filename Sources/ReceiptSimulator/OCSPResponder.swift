import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import OnlineRevocation
import ReceiptCore
import Synchronization
import SwiftASN1
import X509

/// The OCSP responder of an ``AppleTestPKI`` (RFC 6960 over HTTP POST), socket-free: the
/// intermediate signs answers about the leaf, the root answers about the intermediate, as
/// Apple's CAs do. A test or a demo revokes a certificate, or makes the responder answer
/// `tryLater`, go down, never answer, answer past 64 KiB, about another certificate, or signed
/// by a key that is not the issuer's (``Behaviour``), or answer late (``set(latency:)``). Over
/// HTTP (``OCSPResponderServer``), `POST /control?mode=down`, `?revoke=leaf` or
/// `?latency-ms=2000` changes it while it serves.
///
/// swift-certificates keeps its OCSP response types internal, so answers are written here with
/// swift-asn1 (`BasicOCSPResponse`, ECDSA P-256 SHA-256, responder by name, no nonce, as a
/// pre-signed RFC 5019 responder like Apple's).
public final class OCSPResponder: Sendable {
    /// How the responder behaves.
    public enum Behaviour: String, Sendable, Hashable, CaseIterable {
        /// Signed answers: good, or revoked for what ``revoke(_:at:reason:)`` named.
        case answering
        /// HTTP 503, no OCSP answer: as a responder that is down.
        case down
        /// OCSP status `tryLater` (3), unsigned.
        case tryLater = "try-later"
        /// Reads the request and never answers.
        case silent
        /// A good answer followed by padding, past 64 KiB in all.
        case oversized
        /// A good answer about a certificate with another serial number.
        case otherCertificate = "other-certificate"
        /// A good answer signed by a key that is not the issuer's.
        case wrongKey = "wrong-key"
    }

    private struct State {
        var pki: AppleTestPKI?
        var behaviour = Behaviour.answering
        var revoked: [[UInt8]: (at: Date, reason: Int)] = [:]
        var requests = 0
        var latency: TimeAmount = .zero
    }

    private let state = Mutex(State())
    /// How long an answer is good for (`nextUpdate` − `thisUpdate`).
    public let answersValidFor: TimeInterval

    public init(pki: AppleTestPKI? = nil, answersValidFor: TimeInterval = 3600) {
        self.answersValidFor = answersValidFor
        state.withLock { $0.pki = pki }
    }

    /// The PKI answered for (set after the responder's URL went into its certificates).
    public func serve(_ pki: AppleTestPKI) { state.withLock { $0.pki = pki } }
    public func set(_ behaviour: Behaviour) { state.withLock { $0.behaviour = behaviour } }
    /// Answers about `certificate` say revoked at `at` for CRLReason `reason` (1: keyCompromise).
    public func revoke(_ certificate: Certificate, at: Date, reason: Int = 1) {
        state.withLock { $0.revoked[Array(certificate.serialNumber.bytes)] = (at, reason) }
    }
    /// Answers wait this long before they are sent (a slow responder).
    public func set(latency: TimeAmount) { state.withLock { $0.latency = latency } }
    /// How long answers wait before they are sent.
    public var latency: TimeAmount { state.withLock { $0.latency } }
    /// Answers about the PKI's `leaf` or `intermediate` say revoked at `at`, for keyCompromise
    /// (the leaf) or cACompromise (the intermediate); false for another name or no PKI.
    @discardableResult
    public func revoke(named name: String, at: Date) -> Bool {
        guard let pki = state.withLock({ $0.pki }) else { return false }
        switch name {
        case "leaf": revoke(pki.leaf, at: at, reason: 1)
        case "intermediate": revoke(pki.intermediate, at: at, reason: 2)
        default: return false
        }
        return true
    }
    /// What the responder does now, in a line: its behaviour, its latency and what it revokes.
    public var summary: String {
        let (pki, behaviour, revoked, latency) = state.withLock { ($0.pki, $0.behaviour, $0.revoked, $0.latency) }
        let names = [("leaf", pki?.leaf), ("intermediate", pki?.intermediate)].compactMap { name, certificate in
            certificate.flatMap { revoked[Array($0.serialNumber.bytes)] } != nil ? name : nil
        }
        return "mode \(behaviour.rawValue), latency \(latency.nanoseconds / 1_000_000) ms, revoked: \(names.isEmpty ? "none" : names.joined(separator: ", "))"
    }

    /// Applies a control request's query (`mode=try-later`, `revoke=leaf`, `latency-ms=2000`,
    /// any of them), as a demo or a test changes the responder while it serves: all or none.
    /// Returns the responder's ``summary`` after the change, or the first setting not known.
    public func control(query: String, now: Date = Date()) -> Result<String, ControlError> {
        var changes: [() -> Void] = []
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            let (key, value) = (parts[0], parts.count > 1 ? parts[1] : "")
            switch key {
            case "mode":
                guard let behaviour = Behaviour(rawValue: value) else { return .failure(ControlError(setting: key, value: value)) }
                changes.append { self.set(behaviour) }
            case "revoke":
                guard ["leaf", "intermediate"].contains(value) else { return .failure(ControlError(setting: key, value: value)) }
                changes.append { self.revoke(named: value, at: now) }
            case "latency-ms":
                guard let ms = Int(value), (0...600_000).contains(ms) else { return .failure(ControlError(setting: key, value: value)) }
                changes.append { self.set(latency: .milliseconds(Int64(ms))) }
            default:
                return .failure(ControlError(setting: key, value: value))
            }
        }
        changes.forEach { $0() }
        return .success(summary)
    }

    /// A control setting or value the responder does not know.
    public struct ControlError: Error, Sendable, Equatable {
        public let setting: String
        public let value: String
    }

    /// OCSP requests received so far.
    public var requestCount: Int { state.withLock { $0.requests } }

    /// What to send back: an HTTP status and body, or nothing ever (`hang`).
    public struct Reply: Sendable {
        public var status: Int
        public var body: [UInt8]
        public var hang = false
    }

    /// Answers one DER OCSP request at `now`.
    public func answer(_ request: [UInt8], now: Date = Date()) -> Reply {
        let (pki, behaviour, revoked) = state.withLock { s in
            s.requests += 1
            return (s.pki, s.behaviour, s.revoked)
        }
        switch behaviour {
        case .down: return Reply(status: 503, body: Array("responder down".utf8))
        case .silent: return Reply(status: 0, body: [], hang: true)
        case .tryLater: return Reply(status: 200, body: Self.unsigned(status: 3))
        default: break
        }
        guard let pki, let keys = pki.authorityKeys, let certID = OCSPWire.requestedCertIDs(request)?.first,
            let serial = OCSPWire.serialNumber(ofCertID: certID)
        else {
            return Reply(status: 200, body: Self.unsigned(status: 1))  // malformedRequest
        }
        let leafSerial = Array(pki.leaf.serialNumber.bytes)
        let asksAboutLeaf = serial == leafSerial
        let signer = asksAboutLeaf ? (pki.intermediate, keys.intermediate) : (pki.root, keys.root)
        var status: OCSPWire.CertStatus = .good
        if let r = revoked[serial] { status = .revoked(at: r.at, reason: r.reason) }
        if serial != leafSerial && serial != Array(pki.intermediate.serialNumber.bytes) { status = .unknown }
        var answeredID = certID
        if behaviour == .otherCertificate { answeredID = Self.certID(certID, serial: serial.map { $0 ^ 0x5A }) }
        let key = behaviour == .wrongKey ? P256.Signing.PrivateKey() : signer.1
        guard
            var body = try? Self.signed(
                certID: answeredID, status: status, responder: signer.0.subject, key: key, now: now,
                validFor: answersValidFor)
        else { return Reply(status: 500, body: []) }
        if behaviour == .oversized { body += [UInt8](repeating: 0, count: 70 << 10) }
        return Reply(status: 200, body: body)
    }

    // MARK: - DER

    private static let basicResponseOID: ASN1ObjectIdentifier = [1, 3, 6, 1, 5, 5, 7, 48, 1, 1]
    private static let ecdsaWithSHA256: ASN1ObjectIdentifier = [1, 2, 840, 10045, 4, 3, 2]

    /// `OCSPResponse` with a status and no body.
    static func unsigned(status: UInt8) -> [UInt8] {
        var coder = DER.Serializer()
        coder.appendConstructedNode(identifier: .sequence) { coder in
            coder.appendPrimitiveNode(identifier: .enumerated) { $0.append(status) }
        }
        return coder.serializedBytes
    }

    /// The same CertID with another serial number.
    static func certID(_ der: [UInt8], serial: [UInt8]) -> [UInt8] {
        guard let node = try? DER.parse(der), case .constructed(let fields) = node.content else { return der }
        let parts = Array(fields)
        var coder = DER.Serializer()
        coder.appendConstructedNode(identifier: .sequence) { coder in
            for part in parts.prefix(3) { coder.serializeRawBytes(part.encodedBytes) }
            coder.appendPrimitiveNode(identifier: .integer) { $0.append(contentsOf: serial) }
        }
        return coder.serializedBytes
    }

    static func signed(
        certID: [UInt8], status: OCSPWire.CertStatus, responder: DistinguishedName, key: P256.Signing.PrivateKey, now: Date,
        validFor: TimeInterval
    ) throws -> [UInt8] {
        // ResponseData ::= SEQUENCE { responderID [1] EXPLICIT Name, producedAt, responses }
        var data = DER.Serializer()
        try data.appendConstructedNode(identifier: .sequence) { coder in
            try coder.serialize(responder, explicitlyTaggedWithTagNumber: 1, tagClass: .contextSpecific)
            try coder.serialize(time(now))
            try coder.appendConstructedNode(identifier: .sequence) { coder in
                try coder.appendConstructedNode(identifier: .sequence) { coder in
                    coder.serializeRawBytes(certID)
                    switch status {
                    case .good:
                        coder.appendPrimitiveNode(identifier: ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)) { _ in }
                    case .revoked(let at, let reason):
                        try coder.appendConstructedNode(identifier: ASN1Identifier(tagWithNumber: 1, tagClass: .contextSpecific)) { coder in
                            try coder.serialize(time(at))
                            if let reason {
                                coder.appendConstructedNode(identifier: ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)) { coder in
                                    coder.appendPrimitiveNode(identifier: .enumerated) { $0.append(UInt8(reason)) }
                                }
                            }
                        }
                    case .unknown:
                        coder.appendPrimitiveNode(identifier: ASN1Identifier(tagWithNumber: 2, tagClass: .contextSpecific)) { _ in }
                    }
                    try coder.serialize(time(now))
                    try coder.serialize(time(now.addingTimeInterval(validFor)), explicitlyTaggedWithTagNumber: 0, tagClass: .contextSpecific)
                }
            }
        }
        let tbs = data.serializedBytes
        let signature = try key.signature(for: tbs).derRepresentation
        var basic = DER.Serializer()
        try basic.appendConstructedNode(identifier: .sequence) { coder in
            coder.serializeRawBytes(tbs)
            try coder.appendConstructedNode(identifier: .sequence) { try $0.serialize(ecdsaWithSHA256) }
            try coder.serialize(ASN1BitString(bytes: ArraySlice(signature)))
        }
        var out = DER.Serializer()
        try out.appendConstructedNode(identifier: .sequence) { coder in
            coder.appendPrimitiveNode(identifier: .enumerated) { $0.append(0) }
            try coder.appendConstructedNode(identifier: ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)) { coder in
                try coder.appendConstructedNode(identifier: .sequence) { coder in
                    try coder.serialize(basicResponseOID)
                    try coder.serialize(ASN1OctetString(contentBytes: ArraySlice(basic.serializedBytes)))
                }
            }
        }
        return out.serializedBytes
    }

    private static func time(_ date: Date) throws -> GeneralizedTime {
        let c = utc.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        return try GeneralizedTime(
            year: c.year ?? 1970, month: c.month ?? 1, day: c.day ?? 1, hours: c.hour ?? 0, minutes: c.minute ?? 0,
            seconds: c.second ?? 0, fractionalSeconds: 0)
    }

    private static let utc: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar
    }()
}

/// An ``OCSPResponder`` on loopback over HTTP (POST, `application/ocsp-request`), port 0 by
/// default. Start it first, make the PKI with its ``url``, then ``OCSPResponder/serve(_:)``:
///
/// ```swift
/// let server = try await OCSPResponderServer.start()
/// let pki = try AppleTestPKI(ocspURL: server.url)
/// server.responder.serve(pki)
/// ```
public final class OCSPResponderServer: Sendable {
    public let responder: OCSPResponder
    public let port: Int
    private let channel: any Channel

    /// `http://127.0.0.1:PORT/ocsp`.
    public var url: String { "http://127.0.0.1:\(port)/ocsp" }

    public static func start(_ responder: OCSPResponder = OCSPResponder(), host: String = "127.0.0.1", port: Int = 0) async throws
        -> OCSPResponderServer
    {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(OCSPHandler(responder: responder))
                }
            }
            .bind(host: host, port: port).get()
        return OCSPResponderServer(responder: responder, port: channel.localAddress?.port ?? port, channel: channel)
    }

    private init(responder: OCSPResponder, port: Int, channel: any Channel) {
        self.responder = responder
        self.port = port
        self.channel = channel
    }

    public func stop() async throws { try await channel.close() }
}

/// One HTTP/1 request at a time: the body (at most 16 KiB) to the responder, its reply back.
final class OCSPHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let responder: OCSPResponder
    private var body: [UInt8] = []
    private var keepAlive = true
    private var uri = ""

    init(responder: OCSPResponder) { self.responder = responder }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            body = []
            keepAlive = head.isKeepAlive
            uri = head.uri
        case .body(let chunk):
            if body.count + chunk.readableBytes <= 16 << 10 { body += chunk.readableBytesView }
        case .end:
            var reply: OCSPResponder.Reply
            var contentType = "application/ocsp-response"
            var delay = TimeAmount.zero
            if uri == "/control" || uri.hasPrefix("/control?") {
                // A demo's or a test's change, on the responder's own loopback port.
                contentType = "text/plain; charset=utf-8"
                switch responder.control(query: uri.split(separator: "?", maxSplits: 1).dropFirst().first.map(String.init) ?? "") {
                case .success(let summary): reply = .init(status: 200, body: Array((summary + "\n").utf8))
                case .failure(let error):
                    let known = "mode=\(OCSPResponder.Behaviour.allCases.map(\.rawValue).joined(separator: "|")), revoke=leaf|intermediate, latency-ms=N"
                    reply = .init(status: 400, body: Array("unknown setting \(error.setting)=\(error.value); known: \(known)\n".utf8))
                }
            } else {
                reply = responder.answer(body)
                delay = responder.latency
            }
            body = []
            if reply.hang { return }
            var headers = HTTPHeaders([("Content-Type", contentType), ("Content-Length", String(reply.body.count))])
            if !keepAlive { headers.add(name: "Connection", value: "close") }
            let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
            let close = !keepAlive
            let send = { [reply] in
                let context = bound.value
                context.write(
                    NIOAny(HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: reply.status), headers: headers))),
                    promise: nil)
                var buffer = context.channel.allocator.buffer(capacity: reply.body.count)
                buffer.writeBytes(reply.body)
                context.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(buffer))), promise: nil)
                context.writeAndFlush(NIOAny(HTTPServerResponsePart.end(nil))).whenComplete { _ in
                    if close { bound.value.close(promise: nil) }
                }
            }
            if delay > .zero {
                context.eventLoop.assumeIsolated().scheduleTask(in: delay) { send() }
            } else {
                send()
            }
        }
    }
}
