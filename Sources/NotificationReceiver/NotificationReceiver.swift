import AuditTrail
import Crypto
import Foundation
import Logging
import PlainWords
import ReceiptCore
import ReceiptTrust
import RetryEngine
import UntrustedText

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
    /// The commit queue is full (`--max-pending`): 503 with `Retry-After`, so Apple retries.
    case busy
    /// Online checks got no answer for now: 503 with `Retry-After`, so Apple retries.
    case retryLater = "retry-later"
}

/// The receiver's answer to one request.
public struct ReceiveAnswer: Sendable, Hashable {
    public var status: Int
    public var outcome: ReceiveOutcome
    /// Why, in words, with the detail (for a refusal, the failing step: `root: …`, `bundle:
    /// …`): for the log and the refusal row, never for the client.
    public var reason: String
    public var notificationUUID: String?
    /// The verdict of an accepted notification: `valid`, `test`, `unverifiable` (V1).
    public var verdict: String?
    /// The class of refusal, nil when stored.
    public var refusal: RefusalKind?

    public init(
        status: Int, outcome: ReceiveOutcome, reason: String, notificationUUID: String? = nil, verdict: String? = nil,
        refusal: RefusalKind? = nil
    ) {
        self.status = status
        self.outcome = outcome
        self.reason = reason
        self.notificationUUID = notificationUUID
        self.verdict = verdict
        self.refusal = refusal
    }

    /// A refusal of `kind`, with its detail cut to ``ClaimText/maximumReasonBytes``.
    init(_ kind: RefusalKind, _ detail: String, uuid: String? = nil) {
        let outcome: ReceiveOutcome =
            switch kind.status {
            case 400: .badRequest
            case 413: .tooLarge
            case 503: kind == .busy ? .busy : kind == .retryLater ? .retryLater : .storeFailed
            default: .refused
            }
        self.init(
            status: kind.status, outcome: outcome, reason: ClaimText.cut(detail, to: ClaimText.maximumReasonBytes), notificationUUID: uuid,
            refusal: kind)
    }

    /// What the client is told: the class of refusal, or that it was stored.
    public var publicReason: String {
        refusal?.publicReason ?? (outcome == .redelivered ? "already stored" : "stored")
    }
}

/// App Store Server Notifications V2 (and legacy V1) receiver: verifies, deduplicates and
/// durably stores each notification before answering 200.
///
/// A V2 body is exactly `{"signedPayload": "<JWS>"}`: that one string is what is decoded,
/// verified and stored. The claims anyone can write are gated first, before any signature
/// work: the bundle id against the accepted list, the environment, and `signedDate` (not more
/// than five minutes ahead, not older than `--max-age`). Then verification is ours, step by
/// step: the JWS chain to Apple Root CA - G3 at `signedDate` (`--root-ca` roots give `test`),
/// each nested `signedTransactionInfo` / `signedRenewalInfo` on its own, then `appAppleId` and
/// the nested tokens' bundle and environment against the notification's. A V1 body (unsigned,
/// legacy) is refused unless the policy holds a shared secret its `password` matches; then it
/// is stored as `unverifiable`, its `password` never stored or logged.
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
    let health: ReceiverHealth
    /// Which refusals are logged: the first of a class, address and minute, then a count.
    let refusalLog = RefusalLogSampler()
    /// The Retention Messaging responder, when `--retention-path` serves one.
    public var retention: RetentionResponder?

    public init(
        sink: any NotificationSink, policy: ReceiverPolicy = ReceiverPolicy(), logger: Logger = Logger(label: "receiptdash.receive"),
        metrics: ReceiverMetrics = ReceiverMetrics(), now: @escaping @Sendable () -> Date = { Date() },
        healthInterval: Duration = .seconds(1)
    ) {
        health = ReceiverHealth(interval: healthInterval)
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
    ///   - peerHost: the client's address without its port (refusals are sampled per address);
    ///     derived from `peer` when nil.
    public func handle(body: [UInt8], declaredLength: Int?, truncated: Bool, peer: String?, peerHost: String? = nil) async
        -> ReceiveAnswer
    {
        let peerHost = peerHost ?? peer.map(RejectionRecord.host(of:))
        let started = ContinuousClock.now
        let receivedAt = now()
        var answer: ReceiveAnswer
        var type: String?
        var subtype: String?
        var verifyTime: Duration?
        var commitTime: Duration?
        if truncated || (declaredLength ?? 0) > policy.maximumBodySize {
            answer = ReceiveAnswer(
                .tooLarge, "the body is \(declaredLength.map { "\($0) bytes" } ?? "longer"), over the \(policy.maximumBodySize)-byte limit (--max-body)")
            await recordRejection(answer, at: receivedAt, peer: peer, peerHost: peerHost, bodySize: declaredLength, body: body)
        } else {
            let verifyStarted = ContinuousClock.now
            let judgement = await judge(body)
            verifyTime = ContinuousClock.now - verifyStarted
            switch judgement {
            case .refused(let kind, let detail, let info):
                // Claims of a token not trusted: cut before they are escaped into the log.
                type = ClaimText.cut(info?.notificationType)
                subtype = ClaimText.cut(info?.subtype)
                answer = ReceiveAnswer(kind, detail, uuid: ClaimText.cut(info?.notificationUUID))
                // The token's prefix is harmless; a V1 body's password is kept out by RejectionRecord.
                await recordRejection(answer, at: receivedAt, peer: peer, peerHost: peerHost, bodySize: body.count, body: body)
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
                        metrics.stored(environment: record.environment, fromHistory: record.peer == NotificationRecord.historyPeer)
                        answer = ReceiveAnswer(
                            status: 200, outcome: .accepted, reason: "stored", notificationUUID: record.notificationUUID,
                            verdict: record.verdict.rawValue)
                    case .redelivery(let deliveries):
                        if record.deliveriesCounted > 0, deliveries > 1 { metrics.redelivered() }
                        answer = ReceiveAnswer(
                            status: 200, outcome: .redelivered, reason: "already stored; delivery \(deliveries)",
                            notificationUUID: record.notificationUUID, verdict: record.verdict.rawValue)
                    }
                } catch {
                    answer = ReceiveAnswer(
                        error.code == .busy ? .busy : .storeFailed, "not stored, retry later: \(error.reason)",
                        uuid: record.notificationUUID)
                    answer.verdict = record.verdict.rawValue
                }
            }
        }
        let elapsed = ContinuousClock.now - started
        metrics.finished(
            type: type, outcome: answer.outcome, refusal: answer.refusal, request: elapsed, verify: verifyTime, commit: commitTime)
        // Refusals are logged as they are stored: the first of a class, address and minute,
        // then one line counting the rest once a later minute starts. A verified notification
        // not stored (503) is logged every time, as it is not a refusal row.
        let sampled = answer.refusal.flatMap { answer.status == 503 ? nil : $0 }
        let (logged, due) =
            sampled.map { refusalLog.admit(kind: $0.rawValue, host: peerHost ?? "-", at: receivedAt) }
            ?? (true, refusalLog.due(at: receivedAt))
        for summary in due {
            logger.notice(
                "refusals suppressed",
                metadata: [
                    "refusal": .string(summary.kind), "peer": .string(SafeText.escaped(summary.host)),
                    "minute": .string(AppleDate.iso8601(Date(timeIntervalSince1970: Double(summary.minute) * 60))),
                    "suppressed": .stringConvertible(summary.suppressed),
                ])
        }
        guard logged else { return answer }
        var metadata: Logger.Metadata = [
            "uuid": .string(SafeText.escaped(answer.notificationUUID ?? "-")),
            "type": .string(SafeText.escaped(type ?? "-")),
            "subtype": .string(SafeText.escaped(subtype ?? "-")),
            "outcome": .string(answer.outcome.rawValue),
            "status": .stringConvertible(answer.status),
            "latency_ms": .string(DurationText.milliseconds(elapsed)),
            "peer": .string(SafeText.escaped(peer ?? "-")),
        ]
        if let refusal = answer.refusal { metadata["refusal"] = .string(refusal.rawValue) }
        if answer.status != 200 { metadata["reason"] = .string(SafeText.escaped(answer.reason)) }
        logger.log(level: answer.status == 200 ? .info : .notice, "notification", metadata: metadata)
        return answer
    }

    private func recordRejection(
        _ answer: ReceiveAnswer, at: Date, peer: String?, peerHost: String?, bodySize: Int?, body: [UInt8]
    ) async {
        do {
            var record = RejectionRecord(
                at: at, peer: peer, reason: answer.reason, httpStatus: answer.status, bodySize: bodySize, body: body)
            record.kind = answer.refusal?.rawValue
            record.peerHost = peerHost
            try await sink.reject(record)
        } catch {
            logger.error("rejection not recorded", metadata: ["error": .string(SafeText.escaped(error.reason))])
        }
    }


    // MARK: - Verification

    enum Judgement {
        case refused(RefusalKind, String, NotificationInfo?)
        case accepted(NotificationRecord)
    }

    func judge(_ body: [UInt8]) async -> Judgement {
        switch Self.envelope(body) {
        case .failure(let refusal): return .refused(refusal.kind, refusal.detail, nil)
        case .success(.signedPayload(let token)): return await judgeV2(token)
        case .success(.other(let object)):
            guard case .success(let decoded) = ReceiptDecoder().result(body), decoded.format == .notificationV1,
                let info = decoded.notification
            else {
                return .refused(.notNotification, "no signedPayload (and not a V1 notification)", nil)
            }
            return judgeV1(decoded, info, object: object, body: body)
        }
    }

    /// What a POST body holds: `{"signedPayload": "<JWS>"}` alone, or another JSON object.
    enum Envelope {
        case signedPayload(String)
        case other([String: JSONValue])
    }

    /// A refused request's class and its detail.
    struct Refusal: Error {
        var kind: RefusalKind
        var detail: String
    }

    /// The body read as JSON, as notifications and realtime requests alike are: an object that
    /// names no key twice, and a `signedPayload` that is a string with nothing beside it.
    static func envelope(_ body: [UInt8]) -> Result<Envelope, Refusal> {
        let json: JSONValue
        // Read by the plain reader: no object of it names a key twice (that reader declines
        // such text), so the body is scanned for repeated names only when it was not.
        var readPlainly = false
        do {
            json = try JSONValue.parse(body, readPlainly: &readPlainly)
        } catch {
            return .failure(Refusal(kind: .notJSON, detail: "the body is not JSON: \((error as? ReceiptDecodingError)?.reason ?? "unreadable")"))
        }
        guard let object = json.object else { return .failure(Refusal(kind: .notNotification, detail: "the body is JSON but not an object")) }
        // A name written twice is kept once by the parser: which one a reader sees is not ours to guess.
        if !readPlainly, let name = DuplicateKeys.first(in: body) {
            return .failure(Refusal(kind: .notNotification, detail: "the body names \"\(ClaimText.cut(name))\" twice in one object"))
        }
        guard let payload = object["signedPayload"] else { return .success(.other(object)) }
        // Apple sends signedPayload alone: anything beside it is not Apple's, and is never
        // the thing verified or stored.
        guard object.count == 1 else {
            return .failure(
                Refusal(
                    kind: .notNotification,
                    detail: "the body has \(CountNoun.keyBesidesSignedPayload.count(object.count - 1)) besides signedPayload; Apple sends signedPayload alone"))
        }
        guard let token = payload.text else { return .failure(Refusal(kind: .notNotification, detail: "signedPayload is not a string")) }
        return .success(.signedPayload(token))
    }

    /// The chain of a decoded JWS judged now: trusted (Apple's root, or a `--root-ca` test
    /// root), else why not. Online checks that got no answer are `retry-later`, never refused.
    func trust(_ decoded: DecodedInput) async -> Result<TrustReport, Refusal> {
        let report = await evaluator.evaluate(decoded, options: TrustOptions(now: now(), onlineChecks: policy.onlineChecks))
        let isTestRoot = report.steps.contains { $0.kind == .root && $0.outcome == .warning }
        if report.retryable == true {
            let detail = report.steps.first { $0.kind == .onlineCheck && $0.outcome == .warning }?.reason ?? report.headline
            return .failure(Refusal(kind: .retryLater, detail: detail))
        }
        switch report.verdict {
        case .valid: return .success(report)
        case .test where isTestRoot: return .success(report)
        default:
            return .failure(Refusal(kind: .signature, detail: report.firstFailure.map { "\($0.name): \($0.reason)" } ?? report.headline))
        }
    }

    /// The one string `token` is decoded, gated, verified and, accepted, stored.
    private func judgeV2(_ token: String) async -> Judgement {
        let decoded: DecodedInput
        switch ReceiptDecoder().result(Array(token.utf8)) {
        case .success(let value): decoded = value
        case .failure(let error):
            return .refused(error.code == .limitExceeded ? .limits : .undecodable, "signedPayload: \(error.reason)", nil)
        }
        guard decoded.format == .jwsNotification, let info = decoded.notification else {
            return .refused(.undecodable, "signedPayload is a \(decoded.format.rawValue), not a V2 notification", nil)
        }
        guard let uuid = info.notificationUUID, !uuid.isEmpty else {
            return .refused(.undecodable, "the notification has no notificationUUID", info)
        }
        // What anyone can write is gated before any signature work.
        if let (kind, detail) = gate(decoded, info) { return .refused(kind, "\(kind.rawValue): \(detail)", info) }
        let report: TrustReport
        switch await trust(decoded) {
        case .success(let trusted): report = trusted
        case .failure(let refusal): return .refused(refusal.kind, refusal.detail, info)
        }
        if let (kind, detail) = consistency(decoded, info) { return .refused(kind, "\(kind.rawValue): \(detail)", info) }
        return .accepted(
            record(
                decoded, info, uuid: uuid, version: .v2, verdict: report.verdict,
                reason: report.verdict == .valid ? nil : report.headline, signedPayload: token))
    }

    private func judgeV1(_ decoded: DecodedInput, _ info: NotificationInfo, object: [String: JSONValue], body: [UInt8]) -> Judgement {
        guard let secret = policy.v1SharedSecret else {
            return .refused(
                .v1NotAccepted,
                "a V1 notification (\(ClaimText.cut(info.notificationType) ?? "no type")) while V1 is off (--accept-v1 with a shared secret takes them)",
                info)
        }
        guard let password = object["password"]?.text, secret.matchesInConstantTime(password) else {
            return .refused(
                .v1Password, object["password"] == nil ? "a V1 notification without a password" : "the V1 password is not the shared secret",
                info)
        }
        if let (kind, detail) = gate(decoded, info) { return .refused(kind, "\(kind.rawValue): \(detail)", info) }
        // The body itself is not kept (it carries the shared secret); its hash names a redelivery.
        let uuid = "v1:" + SHA256.hash(data: body).map { String(format: "%02x", $0) }.joined()
        return .accepted(
            record(
                decoded, info, uuid: uuid, version: .v1, verdict: .unverifiable,
                reason: "a V1 notification is not signed", signedPayload: nil))
    }

    /// The claims anyone can write, checked before any signature work: `notificationUUID`
    /// (a UUID), bundle id, environment, and `signedDate` against this machine's clock.
    func gate(_ decoded: DecodedInput, _ info: NotificationInfo) -> (RefusalKind, String)? {
        // V2 only: a V1 notification has none (its key is its body's hash).
        if let uuid = info.notificationUUID, UUID(uuidString: uuid) == nil {
            return (.badNotificationUUID, "notificationUUID \"\(ClaimText.cut(uuid))\" is not a UUID")
        }
        let bundle = info.bundleID
        if !policy.allowedBundleIDs.isEmpty, !(bundle.map(policy.allowedBundleIDs.contains) ?? false) {
            return (
                .bundle,
                "bundleId is \(ClaimText.cut(bundle) ?? "missing"), not one of --bundle-id \(policy.allowedBundleIDs.joined(separator: ", "))"
            )
        }
        if let refused = environmentGate(decoded) { return refused }
        return info.signedDate.flatMap { signedDateGate($0, maximumAge: policy.maximumAge, flag: "--max-age") }
    }

    /// The environment a token claims, against `--environment`.
    func environmentGate(_ decoded: DecodedInput) -> (RefusalKind, String)? {
        guard let environment = decoded.environment, policy.environments.contains(environment) else {
            let accepted = policy.environments.map(\.rawValue).sorted().joined(separator: ", ")
            return (.environment, "environment is \(ClaimText.cut(decoded.rawEnvironment) ?? "missing"); this receiver accepts \(accepted) (--environment)")
        }
        return nil
    }

    /// `signedDate` against this machine's clock: not more than the skew ahead, not older
    /// than `maximumAge` (the setting `flag` names).
    func signedDateGate(_ signed: Date, maximumAge: Duration?, flag: String) -> (RefusalKind, String)? {
        let now = now()
        if signed.timeIntervalSince(now) > DurationText.seconds(policy.maximumClockSkew) {
            return (
                .future,
                "signedDate \(AppleDate.iso8601(signed)) is ahead of this machine's clock (\(AppleDate.iso8601(now))) by more than \(Int(DurationText.seconds(policy.maximumClockSkew))) s"
            )
        }
        if let maximumAge, now.timeIntervalSince(signed) > DurationText.seconds(maximumAge) {
            return (
                .stale,
                "signedDate \(AppleDate.iso8601(signed)) is older than \(flag) (\(Int(DurationText.seconds(maximumAge))) s) (now \(AppleDate.iso8601(now)))"
            )
        }
        return nil
    }

    /// After the signature: `appAppleId`, and the nested tokens' bundle and environment
    /// against the notification's.
    func consistency(_ decoded: DecodedInput, _ info: NotificationInfo) -> (RefusalKind, String)? {
        let bundle = info.bundleID
        for transaction in decoded.transactions {
            if let inner = transaction.bundleID, let bundle, inner != bundle {
                return (.bundle, "the nested transaction's bundleId is \(ClaimText.cut(inner)), the notification's \(ClaimText.cut(bundle))")
            }
        }
        if let environment = decoded.rawEnvironment {
            let inner = decoded.nested.compactMap { $0.input.rawEnvironment }
            if let other = inner.first(where: { $0 != environment }) {
                return (.environment, "a nested token is for \(ClaimText.cut(other)), the notification for \(ClaimText.cut(environment))")
            }
        }
        if let expected = policy.appAppleID {
            if let actual = info.appAppleID {
                if actual != expected { return (.app, "appAppleId is \(actual), not --app-apple-id \(expected)") }
            } else if decoded.environment == .production {
                return (.app, "a production notification without appAppleId")
            }
        }
        return nil
    }

    private func record(
        _ decoded: DecodedInput, _ info: NotificationInfo, uuid: String, version: NotificationVersion, verdict: TrustReport.Verdict, reason: String?,
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
            productID: transaction?.productID ?? renewal?.productID, signedPayload: signedPayload,
            appAccountToken: transaction?.appAccountToken ?? renewal?.appAccountToken,
            appTransactionID: transaction?.appTransactionID ?? renewal?.appTransactionID)
    }
}
