import AuditTrail
import Foundation
import Logging
import ReceiptCore
import ReceiptTrust
import RetentionRules
import RetryEngine
import UntrustedText

/// How the receiver answers a Retention Messaging realtime request: judged as a notification
/// is, then answered by the responder's rules.
public struct RealtimeAnswer: Sendable, Hashable {
    public var status: Int
    /// The body sent: the rules' answer (200), or the refusal's class (4xx).
    public var body: [UInt8]
    /// `offered`, `no-match`, `not-approved`, `fault`, or `refused`.
    public var result: String
    /// Why, in words, for the log (never for the client).
    public var reason: String
    public var refusal: RefusalKind?
}

extension NotificationReceiver {
    /// Judges one realtime request body and answers it (within Apple's deadline: no step waits
    /// on anything slower than the trail's indexed reads).
    public func handleRealtime(body: [UInt8], declaredLength: Int?, truncated: Bool, peer: String?, peerHost: String? = nil) async -> RealtimeAnswer {
        let peerHost = peerHost ?? peer.map(RejectionRecord.host(of:))
        let started = ContinuousClock.now
        let receivedAt = now()
        let answer: RealtimeAnswer
        var request: RealtimeRequest?
        if truncated || (declaredLength ?? 0) > policy.maximumBodySize {
            answer = await refuseRealtime(
                .tooLarge, "the body is \(declaredLength.map { "\($0) bytes" } ?? "longer"), over the \(policy.maximumBodySize)-byte limit (--max-body)",
                at: receivedAt, peer: peer, peerHost: peerHost, body: body)
        } else {
            switch await judgeRealtime(body) {
            case .refused(let kind, let detail):
                answer = await refuseRealtime(kind, detail, at: receivedAt, peer: peer, peerHost: peerHost, body: body)
            case .accepted(let accepted):
                request = accepted
                if let retention {
                    let decision = await retention.answer(accepted, receivedAt: receivedAt, peer: peer, started: started)
                    answer = RealtimeAnswer(status: 200, body: decision.body, result: decision.result.rawValue, reason: decision.reason)
                } else {
                    answer = RealtimeAnswer(status: 200, body: RetentionDecision.emptyBody, result: RetentionResult.fault.rawValue, reason: "no responder")
                }
            }
        }
        let elapsed = ContinuousClock.now - started
        retention?.metrics.finished(answer.result, after: elapsed)
        var metadata: Logger.Metadata = [
            "request": .string(SafeText.escaped(ClaimText.cut(request?.requestIdentifier) ?? "-")),
            "result": .string(answer.result),
            "status": .stringConvertible(answer.status),
            "latency_ms": .string(DurationText.milliseconds(elapsed)),
            "peer": .string(SafeText.escaped(peer ?? "-")),
            "reason": .string(SafeText.escaped(answer.reason)),
        ]
        if let request {
            metadata["original_transaction_id"] = .string(SafeText.escaped(ClaimText.cut(request.originalTransactionID) ?? "-"))
            metadata["product"] = .string(SafeText.escaped(ClaimText.cut(request.productID) ?? "-"))
            metadata["locale"] = .string(SafeText.escaped(ClaimText.cut(request.userLocale) ?? "-"))
        }
        if let refusal = answer.refusal { metadata["refusal"] = .string(refusal.rawValue) }
        // Refusals are sampled as a notification's are: the first of a class, address and minute.
        if answer.refusal == nil || refusalLog.admit(kind: "realtime-" + (answer.refusal?.rawValue ?? ""), host: peerHost ?? "-", at: receivedAt).log {
            logger.log(level: answer.result == "offered" ? .info : .notice, "realtime request", metadata: metadata)
        }
        return answer
    }

    private func refuseRealtime(_ kind: RefusalKind, _ detail: String, at: Date, peer: String?, peerHost: String?, body: [UInt8]) async -> RealtimeAnswer {
        let refusal = ReceiveAnswer(kind, "realtime request: " + detail)
        do {
            var record = RejectionRecord(at: at, peer: peer, reason: refusal.reason, httpStatus: refusal.status, bodySize: body.count, body: body)
            record.kind = kind.rawValue
            record.peerHost = peerHost
            try await sink.reject(record)
        } catch {
            logger.error("rejection not recorded", metadata: ["error": .string(SafeText.escaped(error.reason))])
        }
        let response = Array(JSONValue.object(["status": .string(refusal.outcome.rawValue), "reason": .string(kind.publicReason)]).compactJSON.utf8)
        return RealtimeAnswer(status: kind.status, body: response, result: "refused", reason: refusal.reason, refusal: kind)
    }

    enum RealtimeJudgement {
        case refused(RefusalKind, String)
        case accepted(RealtimeRequest)
    }

    /// The body is `{"signedPayload": "<JWS>"}` and nothing else; the JWS a realtime request
    /// whose claims pass the gates, whose chain is Apple's (or a `--root-ca` root), and whose
    /// `appAppleId` is this app's.
    func judgeRealtime(_ body: [UInt8]) async -> RealtimeJudgement {
        let token: String
        switch Self.envelope(body) {
        case .failure(let refusal): return .refused(refusal.kind, refusal.detail)
        case .success(.other): return .refused(.notNotification, "the body has no signedPayload")
        case .success(.signedPayload(let text)): token = text
        }
        let decoded: DecodedInput
        switch ReceiptDecoder().result(Array(token.utf8)) {
        case .success(let value): decoded = value
        case .failure(let error): return .refused(error.code == .limitExceeded ? .limits : .undecodable, "signedPayload: \(error.reason)")
        }
        guard decoded.format == .realtimeRequest, let request = decoded.realtimeRequest else {
            return .refused(.notRealtimeRequest, "signedPayload is a \(decoded.format.rawValue), not a realtime request")
        }
        // What anyone can write, before any signature work.
        guard let id = request.requestIdentifier, UUID(uuidString: id) != nil else {
            return .refused(.badRequestIdentifier, "requestIdentifier \"\(ClaimText.cut(request.requestIdentifier) ?? "missing")\" is not a UUID")
        }
        if let refused = environmentGate(decoded) { return .refused(refused.0, "\(refused.0.rawValue): \(refused.1)") }
        guard let signed = request.signedDate else { return .refused(.stale, "stale: the realtime request has no signedDate") }
        let maximumAge = [policy.maximumAge ?? RetentionResponder.maximumAge, RetentionResponder.maximumAge].min()!
        if let refused = signedDateGate(signed, maximumAge: maximumAge, flag: "a realtime request's maximum age") {
            return .refused(refused.0, "\(refused.0.rawValue): \(refused.1)")
        }
        guard request.originalTransactionID?.isEmpty == false, request.productID?.isEmpty == false, request.userLocale?.isEmpty == false else {
            return .refused(.notRealtimeRequest, "the realtime request lacks originalTransactionId, productId or userLocale")
        }
        if case .failure(let refusal) = await trust(decoded) { return .refused(refusal.kind, refusal.detail) }
        // Apple: check appAppleId equals yours, and do not answer if it differs.
        guard let expected = policy.appAppleID else { return .refused(.app, "app: no --app-apple-id to check appAppleId against") }
        guard request.appAppleID == expected else {
            return .refused(.app, "app: appAppleId is \(request.appAppleID.map(String.init) ?? "missing"), not --app-apple-id \(expected)")
        }
        return .accepted(request)
    }
}
