import Crypto
import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import NIOSSL
import Logging
import NIOCore
import ReceiptCore
import UntrustedText

/// What the receiver checks beyond the signature.
public struct ReceiverPolicy: Sendable {
    /// Accepted `bundleId`s; empty accepts any.
    public var allowedBundleIDs: [String]
    /// The app's Apple ID, checked when given (Apple's verifier checks it for production).
    public var appAppleID: Int64?
    /// Apple's roots, plus `--root-ca` test roots (chains to those are accepted as `test`).
    public var anchors: TrustAnchors
    /// The largest body read (`--max-body`); a larger one is answered 413 without reading it all.
    public var maximumBodySize: Int

    public static let defaultMaximumBodySize = 1 << 20

    public init(
        allowedBundleIDs: [String] = [], appAppleID: Int64? = nil, anchors: TrustAnchors = .apple,
        maximumBodySize: Int = defaultMaximumBodySize
    ) {
        self.allowedBundleIDs = allowedBundleIDs
        self.appAppleID = appAppleID
        self.anchors = anchors
        self.maximumBodySize = maximumBodySize
    }
}

/// How one request ended (a stable name: logs and, later, metrics).
public enum ReceiveOutcome: String, Sendable, Hashable {
    /// Verified and durably stored: 200.
    case accepted
    /// A notificationUUID already stored: 200, counted.
    case redelivered
    /// Not JSON, no `signedPayload`, not a notification: 400.
    case badRequest = "bad-request"
    /// Signature, chain, bundle, app or environment check failed: 403.
    case refused
    /// Body over the limit: 413.
    case tooLarge = "too-large"
    /// Verified but the store could not make it durable: 503, so Apple retries.
    case storeFailed = "store-failed"
}

/// The receiver's answer to one request.
public struct ReceiveAnswer: Sendable, Hashable {
    public var status: Int
    public var outcome: ReceiveOutcome
    /// Why, in words (for a refusal, the failing step: `root: …`, `bundle: …`).
    public var reason: String
    public var notificationUUID: String?
    /// The verdict of an accepted notification: `valid`, `test`, `unverifiable` (V1).
    public var verdict: String?
}

/// App Store Server Notifications V2 (and legacy V1) receiver: verifies, deduplicates and
/// durably stores each notification before answering 200.
///
/// Verification is ours, step by step: the JWS chain to Apple Root CA - G3 at `signedDate`
/// (`--root-ca` roots give `test`), each nested `signedTransactionInfo` / `signedRenewalInfo`
/// on its own, then the bundle id against the allowed list, `appAppleId`, and the nested
/// tokens' bundle and environment against the notification's. A V1 body (unsigned, legacy) is
/// accepted as `unverifiable`; its `password` is never stored or logged.
///
/// ``handle(body:declaredLength:truncated:peer:)`` is the whole decision, independent of HTTP;
/// ``router()`` puts it behind `POST /notifications` and `GET /health`.
public struct NotificationReceiver: Sendable {
    public let sink: any NotificationSink
    public let metrics: ReceiverMetrics
    public let policy: ReceiverPolicy
    public let logger: Logger
    let evaluator: TrustEvaluator
    let now: @Sendable () -> Date

    public init(
        sink: any NotificationSink, policy: ReceiverPolicy = ReceiverPolicy(), logger: Logger = Logger(label: "receiptdash.receive"),
        metrics: ReceiverMetrics = ReceiverMetrics(), now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.metrics = metrics
        self.sink = sink
        self.policy = policy
        self.logger = logger
        self.now = now
        evaluator = TrustEvaluator(anchors: policy.anchors)
    }

    /// Judges one body and, when it is accepted, returns only after the store made it durable.
    ///
    /// - Parameters:
    ///   - body: the bytes read (at most the limit).
    ///   - declaredLength: `Content-Length`, when the client sent one.
    ///   - truncated: the body went on past the limit (it was not read further).
    ///   - peer: the client's address, for rejections and logs.
    public func handle(body: [UInt8], declaredLength: Int?, truncated: Bool, peer: String?) async -> ReceiveAnswer {
        let started = ContinuousClock.now
        let receivedAt = now()
        var answer: ReceiveAnswer
        var type: String?
        var subtype: String?
        var verifyTime: Duration?
        var commitTime: Duration?
        if truncated || (declaredLength ?? 0) > policy.maximumBodySize {
            answer = ReceiveAnswer(
                status: 413, outcome: .tooLarge,
                reason: "the body is larger than the \(policy.maximumBodySize)-byte limit (--max-body)")
            await recordRejection(answer, at: receivedAt, peer: peer, bodySize: declaredLength, body: body)
        } else {
            let verifyStarted = ContinuousClock.now
            let judgement = await judge(body)
            verifyTime = ContinuousClock.now - verifyStarted
            switch judgement {
            case .bad(let reason):
                answer = ReceiveAnswer(status: 400, outcome: .badRequest, reason: reason)
                await recordRejection(answer, at: receivedAt, peer: peer, bodySize: body.count, body: body)
            case .refused(let reason, let info):
                type = info?.notificationType
                subtype = info?.subtype
                answer = ReceiveAnswer(status: 403, outcome: .refused, reason: reason, notificationUUID: info?.notificationUUID)
                // The token's prefix is harmless; a V1 body's password is kept out by RejectionRecord.
                await recordRejection(answer, at: receivedAt, peer: peer, bodySize: body.count, body: body)
            case .accepted(var record):
                type = record.notificationType
                subtype = record.subtype
                record.receivedAt = receivedAt
                record.peer = peer
                let commitStarted = ContinuousClock.now
                defer { commitTime = ContinuousClock.now - commitStarted }
                do {
                    switch try await sink.append(record) {
                    case .stored:
                        answer = ReceiveAnswer(
                            status: 200, outcome: .accepted, reason: "stored", notificationUUID: record.notificationUUID,
                            verdict: record.verdict)
                    case .redelivery(let deliveries):
                        answer = ReceiveAnswer(
                            status: 200, outcome: .redelivered, reason: "already stored; delivery \(deliveries)",
                            notificationUUID: record.notificationUUID, verdict: record.verdict)
                    }
                } catch {
                    answer = ReceiveAnswer(
                        status: 503, outcome: .storeFailed, reason: "not stored, retry later: \(error.reason)",
                        notificationUUID: record.notificationUUID, verdict: record.verdict)
                }
            }
        }
        let elapsed = ContinuousClock.now - started
        metrics.finished(type: type, outcome: answer.outcome, request: elapsed, verify: verifyTime, commit: commitTime)
        let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        var metadata: Logger.Metadata = [
            "uuid": .string(SafeText.escaped(answer.notificationUUID ?? "-")),
            "type": .string(SafeText.escaped(type ?? "-")),
            "subtype": .string(SafeText.escaped(subtype ?? "-")),
            "outcome": .string(answer.outcome.rawValue),
            "status": .stringConvertible(answer.status),
            "latency_ms": .string(String(format: "%.2f", milliseconds)),
            "peer": .string(SafeText.escaped(peer ?? "-")),
        ]
        if answer.status != 200 { metadata["reason"] = .string(SafeText.escaped(answer.reason)) }
        logger.log(level: answer.status == 200 ? .info : .notice, "notification", metadata: metadata)
        return answer
    }

    private func recordRejection(_ answer: ReceiveAnswer, at: Date, peer: String?, bodySize: Int?, body: [UInt8]) async {
        do {
            try await sink.reject(
                RejectionRecord(at: at, peer: peer, reason: answer.reason, httpStatus: answer.status, bodySize: bodySize, body: body))
        } catch {
            logger.error("rejection not recorded", metadata: ["error": .string(SafeText.escaped(error.reason))])
        }
    }

    // MARK: - Verification

    enum Judgement {
        case bad(String)
        case refused(String, NotificationInfo?)
        case accepted(NotificationRecord)
    }

    func judge(_ body: [UInt8]) async -> Judgement {
        let json: JSONValue
        do {
            json = try JSONValue.parse(body)
        } catch {
            return .bad("the body is not JSON")
        }
        guard let object = json.object else { return .bad("the body is not a JSON object") }
        let decoded: DecodedInput
        switch ReceiptDecoder().result(body) {
        case .success(let value): decoded = value
        case .failure(let error):
            if object["signedPayload"] != nil { return .bad("signedPayload could not be decoded: \(error.reason)") }
            return .bad("no signedPayload (and not a V1 notification)")
        }
        if let payload = object["signedPayload"] {
            guard let token = payload.text else { return .bad("signedPayload is not a string") }
            guard decoded.format == .jwsNotification, let info = decoded.notification else {
                return .bad("signedPayload is a \(decoded.format.rawValue), not a V2 notification")
            }
            guard let uuid = info.notificationUUID, !uuid.isEmpty else { return .bad("the notification has no notificationUUID") }
            var report = await evaluator.evaluate(decoded, options: TrustOptions(now: now()))
            report.steps += policySteps(decoded)
            if report.steps.contains(where: { $0.outcome == .fail }) { report.verdict = .invalid }
            let isTestRoot = report.steps.contains { $0.name == "root" && $0.outcome == .warning }
            switch report.verdict {
            case .valid: break
            case .test where isTestRoot: break
            default:
                let failure = report.firstFailure.map { "\($0.name): \($0.reason)" } ?? report.headline
                return .refused(failure, info)
            }
            return .accepted(record(decoded, info, uuid: uuid, version: "2", verdict: report.verdict.rawValue,
                reason: report.verdict == .valid ? nil : report.headline, signedPayload: token))
        }
        guard decoded.format == .notificationV1, let info = decoded.notification else {
            return .bad("no signedPayload: a V2 notification is {\"signedPayload\": \"<JWS>\"}")
        }
        let steps = policySteps(decoded)
        if let failure = steps.first(where: { $0.outcome == .fail }) {
            return .refused("\(failure.name): \(failure.reason)", info)
        }
        // The body itself is not kept (it carries the shared secret); its hash names a redelivery.
        let uuid = "v1:" + SHA256.hash(data: body).map { String(format: "%02x", $0) }.joined()
        return .accepted(record(decoded, info, uuid: uuid, version: "1", verdict: TrustReport.Verdict.unverifiable.rawValue,
            reason: "a V1 notification is not signed", signedPayload: nil))
    }

    /// Bundle, app and environment steps (after the signature's, like Apple's verifier).
    func policySteps(_ decoded: DecodedInput) -> [TrustReport.Step] {
        var steps: [TrustReport.Step] = []
        let info = decoded.notification
        let bundle = info?.bundleID
        if !policy.allowedBundleIDs.isEmpty {
            let allowed = policy.allowedBundleIDs.joined(separator: ", ")
            if let bundle, policy.allowedBundleIDs.contains(bundle) {
                steps.append(.init(name: "bundle", outcome: .pass, reason: "bundleId is \(bundle), an allowed one"))
            } else {
                steps.append(
                    .init(name: "bundle", outcome: .fail, reason: "bundleId is \(bundle ?? "missing"), not one of --bundle-id \(allowed)"))
            }
        }
        for transaction in decoded.transactions {
            if let inner = transaction.bundleID, let bundle, inner != bundle {
                steps.append(
                    .init(name: "bundle", outcome: .fail, reason: "the nested transaction's bundleId is \(inner), the notification's \(bundle)"))
            }
        }
        if let expected = policy.appAppleID {
            if let actual = info?.appAppleID {
                steps.append(
                    actual == expected
                        ? .init(name: "app", outcome: .pass, reason: "appAppleId is \(actual)")
                        : .init(name: "app", outcome: .fail, reason: "appAppleId is \(actual), not --app-apple-id \(expected)"))
            } else if decoded.environment == .production {
                steps.append(.init(name: "app", outcome: .fail, reason: "a production notification without appAppleId"))
            }
        }
        if let environment = decoded.rawEnvironment {
            let inner = decoded.nested.compactMap { $0.input.rawEnvironment }
            if let other = inner.first(where: { $0 != environment }) {
                steps.append(
                    .init(name: "environment", outcome: .fail, reason: "a nested token is for \(other), the notification for \(environment)"))
            }
        }
        return steps
    }

    private func record(
        _ decoded: DecodedInput, _ info: NotificationInfo, uuid: String, version: String, verdict: String, reason: String?,
        signedPayload: String?
    ) -> NotificationRecord {
        let transaction = decoded.transactions.first ?? decoded.latestReceiptInfo.first
        let renewal = decoded.pendingRenewalInfo.first
        return NotificationRecord(
            notificationUUID: uuid, version: version, notificationType: info.notificationType, subtype: info.subtype,
            bundleID: info.bundleID, appAppleID: info.appAppleID, environment: decoded.rawEnvironment, signedDate: info.signedDate,
            receivedAt: Date(timeIntervalSince1970: 0), verdict: verdict, reason: reason,
            transactionID: transaction?.transactionID,
            originalTransactionID: transaction?.originalTransactionID ?? renewal?.originalTransactionID,
            productID: transaction?.productID ?? renewal?.productID, signedPayload: signedPayload)
    }

    // MARK: - HTTP

    /// `POST /notifications` and `GET /health`.
    public func router() -> Router<ReceiverContext> {
        let router = Router(context: ReceiverContext.self)
        router.post("/notifications") { request, context -> Response in
            let declared = request.headers[.contentLength].flatMap { Int($0) }
            var body: [UInt8] = []
            var truncated = false
            if let declared, declared > policy.maximumBodySize {
                truncated = true
            } else {
                do {
                    (body, truncated) = try await Self.read(request.body, limit: policy.maximumBodySize)
                } catch {
                    return Self.response(ReceiveAnswer(status: 400, outcome: .badRequest, reason: "the body could not be read"))
                }
            }
            // Too large: stop reading this connection, so the rest is never taken in.
            if truncated { context.channel?.close(mode: .input, promise: nil) }
            let answer = await handle(body: body, declaredLength: declared, truncated: truncated, peer: context.peer)
            return Self.response(answer, closing: truncated)
        }
        router.get("/metrics") { _, _ -> Response in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: metrics.text())))
        }
        router.get("/health") { _, _ -> Response in
            let writable = await sink.isWritable()
            return Self.response(
                ReceiveAnswer(
                    status: writable ? 200 : 503, outcome: writable ? .accepted : .storeFailed,
                    reason: writable ? "the store is writable" : "the store is not writable"))
        }
        return router
    }

    /// Reads at most `limit` bytes; stops at the first chunk that would go over (`truncated`).
    static func read(_ body: RequestBody, limit: Int) async throws -> (bytes: [UInt8], truncated: Bool) {
        var bytes: [UInt8] = []
        for try await chunk in body {
            if bytes.count + chunk.readableBytes > limit { return (bytes, true) }
            bytes += chunk.readableBytesView
        }
        return (bytes, false)
    }

    static func response(_ answer: ReceiveAnswer, closing: Bool = false) -> Response {
        var out = JSONOutput(capacity: 256)
        out.beginObject()
        out.key("status")
        out.string(answer.status == 200 ? "ok" : answer.outcome.rawValue)
        out.key("reason")
        out.string(answer.reason)
        if let uuid = answer.notificationUUID {
            out.key("notification_uuid")
            out.string(uuid)
        }
        out.endObject()
        var headers: HTTPFields = [.contentType: "application/json"]
        if closing { headers[.connection] = "close" }
        return Response(
            status: HTTPResponse.Status(code: answer.status), headers: headers,
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: out.bytes)))
    }
}

/// The receiver's request context: Hummingbird's core plus the peer's address and the channel
/// (to stop reading an oversized body).
public struct ReceiverContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?
    let channel: (any Channel)?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        channel = source.channel
    }

    /// `address:port`, or nil when unknown (in-process tests).
    var peer: String? {
        guard let remoteAddress, let ip = remoteAddress.ipAddress else { return nil }
        return remoteAddress.port.map { "\(ip):\($0)" } ?? ip
    }
}

extension NotificationReceiver {
    /// Serves until SIGTERM or SIGINT, or the task is cancelled, then stops accepting, lets
    /// requests in flight finish (Hummingbird's graceful shutdown through
    /// swift-service-lifecycle) and returns; the caller closes the store after.
    /// - Parameter onListening: called once bound, with the address (`host:port`, the real port
    ///   when 0 was asked).
    /// - Parameter tls: HTTPS (TLS 1.2 or later, as Apple requires of the public endpoint);
    ///   `nil` serves plain HTTP (loopback, or behind a reverse proxy that terminates TLS).
    /// - Parameter handlesSignals: false when the caller owns SIGTERM and SIGINT (the dashboard,
    ///   which restores the terminal first); the task's cancellation then stops the server.
    public func run(
        host: String, port: Int, tls: ReceiverTLS? = nil, handlesSignals: Bool = true,
        onListening: @escaping @Sendable (String) async -> Void
    ) async throws {
        let server: HTTPServerBuilder = try tls.map { try .tls(.http1(), tlsConfiguration: $0.configuration) } ?? .http1()
        let app = Application(
            router: router(),
            server: server,
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: "receiptdash"),
            onServerRunning: { channel in
                let address = channel.localAddress
                await onListening("\(address?.ipAddress ?? host):\(address?.port ?? port)")
            },
            logger: logger)
        try await app.runService(gracefulShutdownSignals: handlesSignals ? [.sigterm, .sigint] : [])
    }

}

/// The server side of `--tls-cert FILE --tls-key FILE` (PEM): TLS 1.2 or later, as Apple requires
/// of the endpoint it posts to.
public struct ReceiverTLS: Sendable {
    let configuration: TLSConfiguration

    public init(certificateFile: String, keyFile: String) throws(NotificationStoreError) {
        do {
            let chain = try NIOSSLCertificate.fromPEMFile(certificateFile)
            guard !chain.isEmpty else { throw NotificationStoreError(.open, "--tls-cert \(certificateFile) holds no certificate") }
            let key = try NIOSSLPrivateKey(file: keyFile, format: .pem)
            var configuration = TLSConfiguration.makeServerConfiguration(
                certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
            configuration.minimumTLSVersion = .tlsv12
            self.configuration = configuration
        } catch let error as NotificationStoreError {
            throw error
        } catch {
            throw NotificationStoreError(.open, "--tls-cert / --tls-key could not be read as PEM: \(error)")
        }
    }
}
