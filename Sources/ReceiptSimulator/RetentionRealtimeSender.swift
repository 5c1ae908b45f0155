import AppStoreAPI
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import OutboundHTTP
import ReceiptCore
import RetryEngine
import UntrustedText

/// What Apple's realtime request says (`DecodedRealtimeRequestBody`, fact sheet §2.4) besides
/// the two fields made fresh for each request (`requestIdentifier`, `signedDate`).
public struct RealtimeRequestFields: Sendable, Hashable {
    public var originalTransactionId: String
    public var appAppleId: Int64
    public var productId: String
    /// The device's locale, e.g. `en-US`.
    public var userLocale: String
    public var environment: APIEnvironment

    public init(originalTransactionId: String, appAppleId: Int64, productId: String, userLocale: String, environment: APIEnvironment) {
        self.originalTransactionId = originalTransactionId
        self.appAppleId = appAppleId
        self.productId = productId
        self.userLocale = userLocale
        self.environment = environment
    }
}

/// One realtime request signed by the simulator's test PKI, ready to POST.
public struct SignedRealtimeRequest: Sendable, Hashable {
    /// The decoded payload: the seven fields of `DecodedRealtimeRequestBody`.
    public var payload: JSONValue
    /// A fresh UUID, lowercase (as in Apple's example).
    public var requestIdentifier: String
    /// `signedDate`, UNIX milliseconds.
    public var signedMS: Int64
    /// The JWS (`x5c` leaf, intermediate, root of the test PKI).
    public var signedPayload: String
    /// The HTTP body, `{"signedPayload":"<JWS>"}` (`RealtimeRequestBody`).
    public var body: [UInt8]
}

extension AppleTestPKI {
    /// Signs a realtime request as Apple does: a fresh `requestIdentifier` (unless one is given)
    /// and `signedDate` = `now`.
    public func signRealtimeRequest(_ fields: RealtimeRequestFields, now: Date, requestIdentifier: String = UUID().uuidString.lowercased())
        throws(ServerAPISimulatorError) -> SignedRealtimeRequest
    {
        let signedMS = ServerAPIStore.milliseconds(now)
        let payload = JSONValue.object([
            "originalTransactionId": .string(fields.originalTransactionId), "appAppleId": .integer(fields.appAppleId),
            "productId": .string(fields.productId), "userLocale": .string(fields.userLocale),
            "requestIdentifier": .string(requestIdentifier), "environment": .string(fields.environment.rawValue),
            "signedDate": .integer(signedMS),
        ])
        let jws = try signJWS(payload: payload)
        let body = Array(JSONValue.object(["signedPayload": .string(jws)]).compactJSON.utf8)
        return SignedRealtimeRequest(payload: payload, requestIdentifier: requestIdentifier, signedMS: signedMS, signedPayload: jws, body: body)
    }
}

/// Which of the four answers a `RealtimeResponseBody` holds (fact sheet §2.5).
public enum RealtimeAnswerKind: String, Sendable, Hashable, CaseIterable {
    case message
    case alternateProduct
    case promotionalOffer
    case advancedCommerceInfo

    /// The kind of a 200's body, or nil when Apple would take it as an invalid response.
    ///
    /// Valid (§2.5): a JSON object holding **exactly one** of `message`, `alternateProduct`,
    /// `promotionalOffer`, `advancedCommerceInfo`, whose value is an object with a
    /// `messageIdentifier` UUID; `alternateProduct` also needs its `productId` (and a
    /// `billingPlanType`, when sent, is `BILLED_UPFRONT` or `MONTHLY`), `promotionalOffer` exactly
    /// one of `promotionalOfferSignatureV2` (a string) and `promotionalOfferSignatureV1` (an
    /// object), `advancedCommerceInfo` its `advancedCommerceData` (a string). A key sent as
    /// `null` counts as absent and other keys are ignored, as Apple's Swift library decodes the
    /// body (optional fields, unknown keys skipped).
    ///
    /// An empty object `{}` is **not** valid: §2.5 says exactly one, and §2.7 says an invalid
    /// response makes Apple show the default message, which is what a responder's "no offer"
    /// gets. Whether Apple's performance test counts `{}` as `INVALID_RESPONSE` is unconfirmed;
    /// a responder under test should answer the test's product with a rule.
    public static func of(_ body: [UInt8]) -> RealtimeAnswerKind? {
        guard let value = try? JSONValue.parse(body, maximumDepth: 16), case .object(let fields) = value else { return nil }
        let present = allCases.filter { kind in
            if case .null? = fields[kind.rawValue] { return false }
            return fields[kind.rawValue] != nil
        }
        guard present.count == 1, let kind = present.first, case .object(let answer)? = fields[kind.rawValue] else { return nil }
        guard case .string(let identifier)? = answer["messageIdentifier"], UUID(uuidString: identifier) != nil else { return nil }
        func isString(_ key: String) -> Bool {
            if case .string? = answer[key] { return true }
            return false
        }
        func given(_ key: String) -> Bool {
            if case .null? = answer[key] { return false }
            return answer[key] != nil
        }
        switch kind {
        case .message:
            return kind
        case .alternateProduct:
            guard isString("productId") else { return nil }
            if given("billingPlanType") {
                guard case .string(let plan)? = answer["billingPlanType"], ["BILLED_UPFRONT", "MONTHLY"].contains(plan) else { return nil }
            }
            return kind
        case .promotionalOffer:
            let v2 = given("promotionalOfferSignatureV2")
            let v1 = given("promotionalOfferSignatureV1")
            guard v1 != v2 else { return nil }
            if v2 { return isString("promotionalOfferSignatureV2") ? kind : nil }
            if case .object? = answer["promotionalOfferSignatureV1"] { return kind }
            return nil
        case .advancedCommerceInfo:
            return isString("advancedCommerceData") ? kind : nil
        }
    }
}

/// One realtime request's fate, measured as Apple's performance test measures it.
public struct RealtimeAttempt: Sendable, Hashable {
    /// Apple's `sendAttemptResult` name.
    public var result: SendAttemptResult
    /// The responder's HTTP status, when it answered in time.
    public var httpStatus: Int?
    /// Seconds from sending to the answer's end, or to the failure (at most the limit given,
    /// and a little more: a timed-out request stops being waited for at its limit).
    public var latency: Double
    /// The answer's body (at most ``RetentionRealtimeSender/answerLimit`` bytes) when it came
    /// whole in time; empty otherwise.
    public var body: [UInt8]
    /// What a valid answer offered (nil unless `result` is `SUCCESS`).
    public var answer: RealtimeAnswerKind?

    public init(result: SendAttemptResult, httpStatus: Int?, latency: Double, body: [UInt8] = [], answer: RealtimeAnswerKind? = nil) {
        self.result = result
        self.httpStatus = httpStatus
        self.latency = latency
        self.body = body
        self.answer = answer
    }
}

/// POSTs signed realtime requests to a responder and judges each answer as Apple does:
/// `SUCCESS` is HTTP 200 with a valid `RealtimeResponseBody` (``RealtimeAnswerKind/of(_:)``)
/// whole within the limit; over the limit it is `TIMED_OUT` (the request is dropped at the
/// limit, not waited for); another status is `UNSUCCESSFUL_HTTP_RESPONSE_CODE` (§3: anything
/// other than 200; redirects are statuses, never followed, so `CIRCULAR_REDIRECT` never
/// occurs); a 200 whose body is not valid, or larger than 1 MiB, is `INVALID_RESPONSE`; a
/// `charset` other than UTF-8 is `UNSUPPORTED_CHARSET`; the transport's failures are named as
/// the notification sender names them (refused `NO_RESPONSE`, dropped `PREMATURE_CLOSE`, TLS
/// `TLS_ISSUE`, others `SOCKET_ISSUE`).
///
/// One HTTP client (the product's outbound configuration: TLS always verified) serves every
/// request; ``shared`` is the one the simulator uses, made once per process and never shut
/// down. TLS to https responders is verified; plain http only to loopback hosts
/// (``NotificationSender/check(url:)``).
public final class RetentionRealtimeSender: Sendable {
    /// The simulator's sender (system trust roots).
    public static let shared = RetentionRealtimeSender()
    /// The most of an answer read (as Apple's library reads at most 1 MiB).
    public static let answerLimit = 1 << 20

    private let http: HTTPClient

    /// - Parameter extraTrustRoots: roots trusted besides the system's, for a responder with a
    ///   private CA (call ``shutdown()`` when done with a sender made here).
    public init(extraTrustRoots: [NIOSSLCertificate] = []) {
        // As many connections as a test may have requests in flight (`--perf-max-concurrent-requests`
        // goes to 1000), made only as needed: a request never waits for a connection, which its
        // measured time would count.
        http = OutboundHTTPClient.make(connectTimeout: .seconds(10), extraTrustRoots: extraTrustRoots, connectionsPerHost: 1000)
    }

    public func shutdown() async {
        try? await http.shutdown()
    }

    /// POSTs `request` to `url` and waits at most `limit` seconds for the whole answer.
    public func post(_ request: SignedRealtimeRequest, to url: String, limit: Double) async -> RealtimeAttempt {
        let start = ContinuousClock.now
        func elapsed() -> Double { DurationText.seconds(ContinuousClock.now - start) }
        do throws(NotificationSenderError) {
            try NotificationSender.check(url: url)
        } catch {
            return RealtimeAttempt(result: .other, httpStatus: nil, latency: 0)
        }
        let deadline = NIODeadline.now() + .nanoseconds(Int64(max(0.001, limit) * 1e9))
        var http = HTTPClientRequest(url: url)
        http.method = .POST
        http.headers.add(name: "Content-Type", value: "application/json")
        http.headers.add(name: "User-Agent", value: "receiptdash-simulator/0.1 (Retention Messaging)")
        http.body = .bytes(ByteBuffer(bytes: request.body))
        let response: HTTPClientResponse
        do {
            response = try await self.http.execute(http, deadline: deadline)
        } catch {
            let latency = elapsed()
            let result = NotificationSender.classify(TransportFailure.classify(error))
            return RealtimeAttempt(result: latency > limit && result != .other ? .timedOut : result, httpStatus: nil, latency: latency)
        }
        let status = Int(response.status.code)
        let read = await Self.collect(response.body, limit: Self.answerLimit, deadline: deadline)
        let latency = elapsed()
        // An answer read after the limit (a deadline timer that ran late on a busy machine) is
        // late all the same: the measured time decides, not which timer fired first.
        if latency > limit { return RealtimeAttempt(result: .timedOut, httpStatus: nil, latency: latency) }
        switch read {
        case .timedOut: return RealtimeAttempt(result: .timedOut, httpStatus: nil, latency: latency)
        case .cut: return RealtimeAttempt(result: .prematureClose, httpStatus: status, latency: latency)
        case .tooLarge: return RealtimeAttempt(result: status == 200 ? .invalidResponse : .unsuccessfulHTTPResponseCode, httpStatus: status, latency: latency)
        case .whole(let body):
            guard status == 200 else { return RealtimeAttempt(result: .unsuccessfulHTTPResponseCode, httpStatus: status, latency: latency, body: body) }
            if let charset = response.headers["Content-Type"].lazy.compactMap(Self.charset).first, !["utf-8", "utf8"].contains(charset) {
                return RealtimeAttempt(result: .unsupportedCharset, httpStatus: status, latency: latency, body: body)
            }
            guard let kind = RealtimeAnswerKind.of(body) else {
                return RealtimeAttempt(result: .invalidResponse, httpStatus: status, latency: latency, body: body)
            }
            return RealtimeAttempt(result: .success, httpStatus: status, latency: latency, body: body, answer: kind)
        }
    }

    /// The `charset` parameter of a `Content-Type`, lowercased; nil when none is given.
    static func charset(_ contentType: String) -> String? {
        for part in contentType.split(separator: ";").dropFirst() {
            let pair = part.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces).lowercased() == "charset" else { continue }
            return pair[1].trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\"")).lowercased()
        }
        return nil
    }

    enum Read: Sendable {
        case whole([UInt8])
        case tooLarge
        /// The connection ended the body early.
        case cut
        case timedOut
    }

    /// Reads the body until it ends, passes `limit`, fails or the deadline comes (the
    /// deadline of `execute` covers the head only).
    static func collect(_ body: HTTPClientResponse.Body, limit: Int, deadline: NIODeadline) async -> Read {
        await withTaskGroup(of: Read.self) { group in
            group.addTask {
                var bytes: [UInt8] = []
                do {
                    for try await chunk in body {
                        if bytes.count + chunk.readableBytes > limit { return .tooLarge }
                        bytes += chunk.readableBytesView
                    }
                    return .whole(bytes)
                } catch {
                    return NIODeadline.now() >= deadline ? .timedOut : .cut
                }
            }
            group.addTask {
                let left = deadline - NIODeadline.now()
                // The measured limit, not a wait for time to pass: cancelled once the body is read.
                if left.nanoseconds > 0 { try? await Task.sleep(nanoseconds: UInt64(left.nanoseconds)) }
                return .timedOut
            }
            let first = await group.next() ?? .timedOut
            group.cancelAll()
            return first
        }
    }
}

/// One realtime request sent on demand: what was signed, where it went, what came back.
public struct RealtimeExchange: Sendable, Hashable {
    public var url: String
    public var request: SignedRealtimeRequest
    public var attempt: RealtimeAttempt

    /// The control endpoint's answer: the request's payload, `sendAttemptResult`, the status,
    /// the latency in milliseconds, the kind of answer, and the answer's body (JSON as sent, or
    /// its text when it is not JSON; at most 64 KiB).
    public var json: JSONValue {
        var fields: [String: JSONValue] = [
            "url": .string(url), "request": request.payload, "sendAttemptResult": .string(attempt.result.rawValue),
            "latencyMs": .number((attempt.latency * 10_000).rounded() / 10),
        ]
        if let status = attempt.httpStatus { fields["httpStatus"] = .integer(Int64(status)) }
        if let kind = attempt.answer { fields["answer"] = .string(kind.rawValue) }
        if !attempt.body.isEmpty {
            let cut = attempt.body.prefix(64 * 1024)
            fields["body"] = (try? JSONValue.parse(cut, maximumDepth: 32)) ?? .string(String(decoding: cut, as: UTF8.self))
        }
        return .object(fields)
    }
}

extension ServerAPIService {
    /// Signs a realtime request with the simulator's PKI (a fresh `requestIdentifier`,
    /// `signedDate` the simulator's now) and POSTs it to `url` through the performance tests'
    /// sender, waiting at most `limit` seconds (default: the performance test's threshold).
    public func sendRealtimeRequest(_ fields: RealtimeRequestFields, to url: String, limit: Double? = nil) async throws(ServerAPISimulatorError)
        -> RealtimeExchange
    {
        let board = performanceTests
        let request = try pki.signRealtimeRequest(fields, now: configuration.clock.now())
        let attempt = await board.sender.post(request, to: url, limit: limit ?? Double(board.settings.responseTimeThreshold) / 1000)
        return RealtimeExchange(url: url, request: request, attempt: attempt)
    }

    /// The simulator's Retention controls (no token; on the API port): `POST /control/realtime`
    /// and `GET|POST /control/performance-test`; nil for other paths.
    func answerRealtimeControl(_ request: ServerAPIRequest) -> ServerAPIReply? {
        let parts = request.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let path = parts.first.map(String.init) ?? ""
        guard path == "/control/realtime" || path == "/control/performance-test" else { return nil }
        guard let query = Query(parts.count > 1 ? String(parts[1]) : "") else { return controlError("the query cannot be read") }
        if path == "/control/performance-test" {
            guard request.method == "GET" || request.method == "POST" else { return ServerAPIReply(status: 405) }
            return controlPerformanceTest(query)
        }
        guard request.method == "POST" else { return ServerAPIReply(status: 405) }
        return controlRealtime(query)
    }

    /// `POST /control/realtime?original-transaction-id=…[&url=…][&product-id=…][&locale=en-US]
    /// [&environment=production|sandbox][&app-apple-id=…][&timeout-ms=…]`: as a subscriber
    /// tapping Cancel Subscription makes Apple do, signs a realtime request and POSTs it to `url`
    /// (default: the realtime URL set for the environment), then answers with what the responder
    /// said and how long it took (``RealtimeExchange/json``). The product defaults to the
    /// subscription's in the simulator's data, the app to the data's `appAppleId`, the
    /// environment to production, the wait to the performance test's threshold.
    func controlRealtime(_ query: Query) -> ServerAPIReply {
        let known = ["url", "original-transaction-id", "product-id", "locale", "environment", "app-apple-id", "timeout-ms"]
        if let unknown = query.items.first(where: { !known.contains($0.0) }) {
            return controlError("unknown parameter \(Self.shown(unknown.0)): the parameters are \(known.joined(separator: ", "))")
        }
        let environment: APIEnvironment
        switch query.first("environment")?.lowercased() {
        case nil, "production": environment = .production
        case "sandbox": environment = .sandbox
        case let other?: return controlError("environment takes production or sandbox, not \(Self.shown(other))")
        }
        guard let original = query.first("original-transaction-id"), !original.isEmpty, original.utf8.count <= 64 else {
            return controlError("original-transaction-id is required: the subscription whose subscriber taps Cancel Subscription")
        }
        let subscription = currentPeriod(original, environment)
        guard let product = query.first("product-id") ?? subscription?.productID, !product.isEmpty else {
            return controlError("product-id is required: \(Self.shown(original)) is no subscription in the simulator's \(environment.rawValue) data")
        }
        let appAppleID: Int64
        if let text = query.first("app-apple-id") {
            guard let number = Int64(text), number > 0 else { return controlError("app-apple-id takes a positive number, not \(Self.shown(text))") }
            appAppleID = number
        } else if let number = store.appAppleID {
            appAppleID = number
        } else {
            return controlError("app-apple-id is required: the simulator's data names no appAppleId")
        }
        var wait: Double?
        if let text = query.first("timeout-ms") {
            guard let ms = Int(text), (1...600_000).contains(ms) else { return controlError("timeout-ms takes 1 to 600000, not \(Self.shown(text))") }
            wait = Double(ms) / 1000
        }
        let limit = wait
        guard let url = query.first("url") ?? performanceTests.source.realtimeURL(environment) else {
            return controlError("url is required: no realtime URL is set for \(environment.rawValue)")
        }
        do throws(NotificationSenderError) {
            try NotificationSender.check(url: url)
        } catch {
            return controlError(error.reason)
        }
        let fields = RealtimeRequestFields(
            originalTransactionId: original, appAppleId: appAppleID, productId: product, userLocale: query.first("locale") ?? "en-US",
            environment: environment)
        var reply = ServerAPIReply(status: 200)
        reply.deferred = { [self] in
            do throws(ServerAPISimulatorError) {
                return json(try await sendRealtimeRequest(fields, to: url, limit: limit).json)
            } catch {
                return ServerAPIReply(status: 500, headers: [("Content-Type", "application/json")], body: Array(JSONValue.object(["error": .string(error.reason)]).compactJSON.utf8))
            }
        }
        return reply
    }
}
