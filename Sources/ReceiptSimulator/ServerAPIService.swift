import Crypto
import Foundation
import AppStoreAPI
import ReceiptCore
import RetryEngine
import Synchronization

/// A fault the API simulator injects, as Apple's service shows them in bad hours.
public enum APIFault: Sendable, Hashable {
    /// HTTP 429, errorCode 4290000, `Retry-After` this many seconds after the simulator's now,
    /// written as UNIX milliseconds (Apple's form).
    case rateLimited(retryAfterSeconds: Double)
    /// An error body, e.g. `(500, 5000001)` or `(404, 4040002)`.
    case apiError(httpStatus: Int, code: Int)
    /// An HTTP status with an empty body, e.g. 503.
    case http(Int)
    /// Close the connection without an answer.
    case drop
    /// Take the request as usual (a write takes effect), then close the connection without the
    /// answer: a write whose outcome the client cannot know. Scripted only.
    case dropAfterAnswering
    /// Take the request as usual (a write takes effect) and answer with its status, but with a
    /// body that is not JSON (a proxy's page). Scripted only.
    case garbleAnswer
}

/// How the API simulator behaves.
public struct ServerAPIConfiguration: Sendable {
    public var host: String
    public var port: Int
    /// Added to every answer, in seconds.
    public var latency: Double
    /// The share of authorised requests that get an injected fault (0…1): 429, 5000001,
    /// HTTP 503 or a dropped connection.
    public var faultRate: Double
    /// Makes the fault sequence repeatable.
    public var seed: UInt64
    /// The customers; nil serves ``ServerAPIData/demo(now:bundleID:)`` dated at start.
    public var data: ServerAPIData?
    /// The public half of the In-App Purchase key tokens must be signed with; nil accepts any
    /// ES256 signature (the claims are still checked).
    public var publicKey: P256.Signing.PublicKey?
    /// The key id tokens must name in their `kid` header; nil accepts any (Apple refuses a
    /// token whose key id is not one of the issuer's keys with 401).
    public var keyID: String?
    /// "Now": token expiry, subscription statuses, `signedDate`, `Retry-After`.
    public var clock: ServiceClock
    /// Larger request bodies get 400 (4000000).
    public var maximumBodyBytes: Int
    /// Larger Upload Image bodies (PNG bytes) get 400 (4000000); Apple's own limit is
    /// unconfirmed.
    public var maximumImageBytes: Int = 16 * 1024 * 1024
    /// Items per page (Apple: 20).
    public var pageSize: Int
    /// The PKI that signs every payload; nil makes a fresh one at start (``SimulatorPKIFolder``
    /// keeps one in a folder).
    public var pki: AppleTestPKI?
    /// Seconds after which a mass extension is complete (Apple: hours or days).
    public var massExtensionDelay: Double

    public init(
        host: String = "127.0.0.1", port: Int = 0, latency: Double = 0, faultRate: Double = 0, seed: UInt64 = 1, data: ServerAPIData? = nil,
        publicKey: P256.Signing.PublicKey? = nil, clock: ServiceClock = .system, maximumBodyBytes: Int = 64 * 1024, pageSize: Int = 20,
        pki: AppleTestPKI? = nil, massExtensionDelay: Double = 2
    ) {
        self.pki = pki
        self.massExtensionDelay = massExtensionDelay
        self.host = host
        self.port = port
        self.latency = latency
        self.faultRate = faultRate
        self.seed = seed
        self.data = data
        self.publicKey = publicKey
        self.clock = clock
        self.maximumBodyBytes = maximumBodyBytes
        self.pageSize = max(1, pageSize)
    }

    /// The public key of `--api-key-file`: a PEM public key, or a P-256 private key (PKCS#8
    /// `.p8` or SEC1) whose public half is used. Nothing of the key reaches the error.
    public static func publicKey(pem: String) throws(ServerAPISimulatorError) -> P256.Signing.PublicKey {
        if let key = try? P256.Signing.PublicKey(pemRepresentation: pem) { return key }
        if let key = try? P256.Signing.PrivateKey(pemRepresentation: pem) { return key.publicKey }
        throw ServerAPISimulatorError(.invalidKey, "the API key file is not a P-256 public or private key in PEM")
    }
}

/// One HTTP request as the API simulator sees it.
public struct ServerAPIRequest: Sendable {
    public var method: String
    /// Path and query as sent (`/api/production/inApps/v1/transactions/1?x=y`).
    public var uri: String
    /// The `Authorization` header.
    public var authorization: String?
    public var body: [UInt8]
    /// The body was larger than the configured maximum (and was not kept).
    public var bodyTooLarge: Bool

    public init(method: String, uri: String, authorization: String?, body: [UInt8] = [], bodyTooLarge: Bool = false) {
        self.method = method
        self.uri = uri
        self.authorization = authorization
        self.body = body
        self.bodyTooLarge = bodyTooLarge
    }
}

/// The simulator's answer: a status, headers and a JSON body after `delay` seconds, or a
/// dropped connection.
public struct ServerAPIReply: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]
    public var drop: Bool
    public var delay: Double
    /// Made later, off the event loop: the answer of a control that waits on another server
    /// (``ServerAPIService/controlRealtime(_:)``); the other fields are then unused.
    public var deferred: (@Sendable () async -> ServerAPIReply)?

    init(status: Int, headers: [(String, String)] = [], body: [UInt8] = [], drop: Bool = false, delay: Double = 0) {
        self.status = status
        self.headers = headers
        self.body = body
        self.drop = drop
        self.delay = delay
    }

    /// The body as JSON, when it is.
    public var json: JSONValue? { body.isEmpty ? nil : try? JSONValue.parse(body) }
}

/// The App Store Server API, answered from ``ServerAPIData`` and signed by an
/// ``AppleTestPKI``: the socket-free part of ``ServerAPISimulator`` (also served by the
/// `simulator` command beside verifyReceipt).
///
/// Paths: `/api/production/…` and `/api/sandbox/…` followed by Apple's paths, and
/// `POST /offers/verify`, which checks offer signatures (``OfferVerifier``). Tokens are
/// checked as Apple does (ES256 with the configured key, `aud` appstoreconnect-v1, `bid` of the
/// data's app, `iss`, `exp` at most 60 minutes after `iat` and not passed); otherwise 401 with
/// no body.
public final class ServerAPIService: Sendable {
    public let configuration: ServerAPIConfiguration
    public let pki: AppleTestPKI
    let store: ServerAPIStore
    private let state: Mutex<State>
    /// What the write endpoints changed (``ServerAPIActions.swift``).
    let actions = Mutex(ActionState())
    /// Retention Messaging's images, messages, defaults and realtime URLs (``RetentionContentAPI.swift``).
    public let retention = RetentionContentStore()
    /// What the writes make Apple send, while someone listens (``LiveNotifications.swift``).
    let outbox = LiveOutbox()
    /// The consumption PUTs received (``ConsumptionLog.swift``).
    let consumptionLog = Mutex(ConsumptionLog())
    /// The purchases made for refund requests (``ConsumptionRequests.swift``).
    let addedTransactions = Mutex(AddedTransactions())
    /// Retention Messaging's performance tests and realtime sender (``RetentionPerformanceTest.swift``).
    public let performanceTests = PerformanceTestBoard()
    /// What the notification sender sent, with its attempts as they happened: Get Notification
    /// History reports it beside the data's notifications.
    private let sentLog = Mutex(SentLog())

    struct SentLog {
        var index: [String: Int] = [:]
        var rows: [SentRow] = []
    }

    struct SentRow {
        let notification: OutgoingNotification
        var attempts: [JSONValue]
    }

    struct TestNotification {
        let environment: APIEnvironment
        let notification: OutgoingNotification
        /// Sent to a listener (its attempts are real), dropped (the listener was too far behind),
        /// or reported delivered (no listener: nothing to send to).
        let live: Delivery

        enum Delivery { case sent, dropped, noListener }
    }

    struct State {
        var script: [APIFault]
        var random: SplitMix64
        var requests = 0
        var faults = 0
        /// Test notification token → what was signed.
        var testNotifications: [String: TestNotification] = [:]
    }

    /// Makes the PKI, signs the notifications; `script` faults go to the first authorised
    /// requests, in order.
    public init(_ configuration: ServerAPIConfiguration, script: [APIFault] = []) throws(ServerAPISimulatorError) {
        self.configuration = configuration
        let pki: AppleTestPKI
        if let given = configuration.pki { pki = given } else { pki = try AppleTestPKI() }
        self.pki = pki
        let now = configuration.clock.now()
        store = try ServerAPIStore(configuration.data ?? .demo(now: now), signer: pki, now: now)
        state = Mutex(State(script: script, random: SplitMix64(seed: configuration.seed)))
        // The performance test calls the realtime URL set through the API.
        performanceTests.source = retention
    }

    /// The most body bytes read for a request: Upload Image takes ``ServerAPIConfiguration/maximumImageBytes``,
    /// everything else ``ServerAPIConfiguration/maximumBodyBytes``.
    public func maximumBodyBytes(method: String, uri: String) -> Int {
        method == "PUT" && uri.contains("/inApps/v1/messaging/image/")
            ? max(configuration.maximumImageBytes, configuration.maximumBodyBytes) : configuration.maximumBodyBytes
    }

    /// Requests answered so far.
    public var requestCount: Int { state.withLock { $0.requests } }
    /// Faults injected so far.
    public var faultCount: Int { state.withLock { $0.faults } }
    /// The bundle id the data is for (what `--bundle-id` must say).
    public var bundleID: String? { store.bundleID }

    // MARK: Answering

    public func answer(_ request: ServerAPIRequest) -> ServerAPIReply {
        if let reply = answerRetentionControl(request) ?? answerRealtimeControl(request) ?? answerConsumptionControl(request) { return reply }
        // Offer signatures are checked without a bearer token and without injected faults.
        if request.uri.prefix(while: { $0 != "?" }) == Self.offerVerificationPath {
            var reply = answerOfferVerification(request)
            reply.headers.append(("Date", HTTPDate.format(configuration.clock.now())))
            reply.delay += configuration.latency
            return reply
        }
        let after = state.withLock { s -> APIFault? in
            guard let first = s.script.first, first == .dropAfterAnswering || first == .garbleAnswer else { return nil }
            s.script.removeFirst()
            s.faults += 1
            return first
        }
        // A request answered and then dropped or garbled takes no other scripted fault.
        var reply = route(request, injectingFaults: after == nil)
        if after == .dropAfterAnswering { reply = ServerAPIReply(status: 0, drop: true) }
        if after == .garbleAnswer { reply.body = Array("<html><body>502 Bad Gateway</body></html>".utf8) }
        // As Apple's servers do: a client can see how far its clock is from the server's.
        if !reply.drop { reply.headers.append(("Date", HTTPDate.format(configuration.clock.now()))) }
        reply.delay += configuration.latency
        return reply
    }

    private func route(_ request: ServerAPIRequest, injectingFaults: Bool) -> ServerAPIReply {
        state.withLock { $0.requests += 1 }
        let parts = request.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let rawPath = parts.first.map(String.init) ?? ""
        let environment: APIEnvironment
        let applePath: Substring
        if rawPath.hasPrefix("/api/production/") {
            environment = .production
            applePath = rawPath.dropFirst("/api/production/".count)
        } else if rawPath.hasPrefix("/api/sandbox/") {
            environment = .sandbox
            applePath = rawPath.dropFirst("/api/sandbox/".count)
        } else {
            return ServerAPIReply(status: 404)
        }
        let now = configuration.clock.now()
        guard authorized(request.authorization, now: now) else { return ServerAPIReply(status: 401) }
        if injectingFaults, let fault = nextFault() { return reply(for: fault, now: now) }
        guard !request.bodyTooLarge else { return error(400, .generalBadRequest, "Request body too large.") }
        var segments: [String] = []
        for raw in applePath.split(separator: "/", omittingEmptySubsequences: false) {
            guard let segment = String(raw).removingPercentEncoding else { return error(400, .generalBadRequest, "Invalid request.") }
            segments.append(segment)
        }
        guard let query = Query(parts.count > 1 ? String(parts[1]) : "") else { return error(400, .generalBadRequest, "Invalid request.") }
        let nowMS = ServerAPIStore.milliseconds(now)
        let context = Context(environment: environment, now: now, nowMS: nowMS, query: query)
        if let reply = routeAction(request.method, segments, body: request.body, context) { return reply }
        if let reply = routeRetention(request.method, segments, body: request.body, context) { return reply }
        if let reply = routePerformanceTest(request.method, segments, body: request.body, context) { return reply }
        switch (request.method, segments.count, segments.first, segments.dropFirst().first) {
        case ("GET", 4, "inApps", "v1") where segments[2] == "transactions": return transactionInfo(segments[3], context)
        case ("GET", 5, "inApps", "v1") where segments[2] == "transactions" && segments[3] == "appTransactions":
            return appTransactionInfo(segments[4], context)
        case ("GET", 4, "inApps", "v2") where segments[2] == "history": return history(segments[3], context)
        case ("GET", 4, "inApps", "v1") where segments[2] == "subscriptions": return statuses(segments[3], context)
        case ("GET", 4, "inApps", "v1") where segments[2] == "lookup": return lookUpOrder(segments[3], context)
        case ("GET", 5, "inApps", "v2") where segments[2] == "refund" && segments[3] == "lookup": return refunds(segments[4], context)
        case ("POST", 4, "inApps", "v1") where segments[2] == "notifications" && segments[3] == "history":
            return notificationHistory(request.body, context)
        case ("GET", 5, "inApps", "v1") where segments[2] == "notifications" && segments[3] == "test":
            return testNotificationStatus(segments[4], context)
        default:
            return ServerAPIReply(status: 404)
        }
    }

    struct Context {
        let environment: APIEnvironment
        let now: Date
        let nowMS: Int64
        let query: Query
    }

    /// A query string: names and values percent-decoded, in order; at most 100 items.
    struct Query {
        var items: [(String, String)] = []

        init?(_ text: String) {
            for part in text.split(separator: "&") {
                let pair = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard let name = String(pair[0]).removingPercentEncoding,
                    let value = (pair.count > 1 ? String(pair[1]) : "").removingPercentEncoding
                else { return nil }
                items.append((name, value))
                if items.count > 100 { return nil }
            }
        }

        func all(_ name: String) -> [String] { items.filter { $0.0 == name }.map(\.1) }
        func first(_ name: String) -> String? { items.first { $0.0 == name }?.1 }
        /// Every item but `except`, sorted: what a revision token is bound to.
        func canonical(except: String) -> String {
            items.filter { $0.0 != except }.map { "\($0.0)=\($0.1)" }.sorted().joined(separator: "&")
        }
    }

    // MARK: Tokens

    /// Apple's checks on the bearer token.
    func authorized(_ header: String?, now: Date) -> Bool {
        guard let header, header.utf8.count <= 8192, header.lowercased().hasPrefix("bearer ") else { return false }
        let compact = header.dropFirst("bearer ".count).trimmingCharacters(in: .whitespaces)
        guard let token = try? JWSToken(compact: Array(compact.utf8), maximumDepth: 4), token.algorithm == "ES256" else { return false }
        if let keyID = configuration.keyID, token.header["kid"]?.text != keyID { return false }
        if let key = configuration.publicKey {
            guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: token.signature),
                key.isValidSignature(signature, for: Data(token.signingInput))
            else { return false }
        }
        guard case .string(APIToken.audience)? = token.payload["aud"],
            case .string(let bid)? = token.payload["bid"], !bid.isEmpty,
            case .string(let issuer)? = token.payload["iss"], !issuer.isEmpty,
            case .integer(let iat)? = token.payload["iat"], case .integer(let exp)? = token.payload["exp"]
        else { return false }
        let seconds = Int64(now.timeIntervalSince1970.rounded(.down))
        guard exp > iat, exp - iat <= Int64(APIToken.maximumLifetime), exp > seconds, iat <= seconds + 60 else { return false }
        return store.bundleIDs.isEmpty || store.bundleIDs.contains(bid)
    }

    // MARK: Faults

    private func nextFault() -> APIFault? {
        let rate = configuration.faultRate
        return state.withLock { s -> APIFault? in
            let fault: APIFault?
            if !s.script.isEmpty {
                fault = s.script.removeFirst()
            } else if rate > 0, s.random.nextDouble() < rate {
                switch s.random.next() % 4 {
                case 0: fault = .rateLimited(retryAfterSeconds: 0.2 + Double(s.random.next() % 800) / 1000)
                case 1: fault = .apiError(httpStatus: 500, code: APIErrorCode.generalInternalRetryable.rawValue)
                case 2: fault = .http(503)
                default: fault = .drop
                }
            } else {
                fault = nil
            }
            if fault != nil { s.faults += 1 }
            return fault
        }
    }

    private func reply(for fault: APIFault, now: Date) -> ServerAPIReply {
        switch fault {
        case .rateLimited(let seconds):
            var reply = error(429, .rateLimitExceeded, "Rate limit exceeded.")
            reply.headers.append(("Retry-After", String(ServerAPIStore.milliseconds(now.addingTimeInterval(seconds)))))
            return reply
        case .apiError(let status, let code): return error(status, APIErrorCode(code), "An error occurred.")
        case .http(let status): return ServerAPIReply(status: status)
        case .drop, .dropAfterAnswering, .garbleAnswer: return ServerAPIReply(status: 0, drop: true)
        }
    }

    // MARK: Answers

    func json(_ value: JSONValue) -> ServerAPIReply {
        ServerAPIReply(status: 200, headers: [("Content-Type", "application/json")], body: Array(value.compactJSON.utf8))
    }

    func error(_ status: Int, _ code: APIErrorCode, _ message: String) -> ServerAPIReply {
        ServerAPIReply(
            status: status, headers: [("Content-Type", "application/json")],
            body: Array(JSONValue.object(["errorCode": .integer(Int64(code.rawValue)), "errorMessage": .string(message)]).compactJSON.utf8))
    }

    func notFound(_ id: String) -> ServerAPIReply {
        id.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) && !id.isEmpty && id.utf8.count <= 64
            ? error(404, .transactionIDNotFound, "Transaction id not found.")
            : error(400, .invalidTransactionID, "Invalid transaction id.")
    }

    private func signedTransaction(_ row: TransactionRow, _ context: Context) -> JSONValue {
        var object = applyingActions(row, context.environment)
        object["signedDate"] = .integer(context.nowMS)
        return .string((try? pki.signJWS(payload: .object(object))) ?? "")
    }

    private func transactionInfo(_ id: String, _ context: Context) -> ServerAPIReply {
        guard let row = transactionRow(id, in: context.environment) else { return notFound(id) }
        return json(.object(["signedTransactionInfo": signedTransaction(row, context)]))
    }

    /// Get App Transaction Info: for an `appTransactionId`, or any transaction id of its
    /// customer; 4040019 when the customer has none, 4040010 when the id is unknown here.
    private func appTransactionInfo(_ id: String, _ context: Context) -> ServerAPIReply {
        guard let environment = store.environments[context.environment] else { return notFound(id) }
        let key = environment.appTransactions[id] != nil ? id : environment.row(id)?.customer
        guard let key else { return notFound(id) }
        guard var app = environment.appTransactions[key] else {
            return error(404, .appTransactionDoesNotExist, "App transaction does not exist.")
        }
        app["signedDate"] = .integer(context.nowMS)
        return json(.object(["signedAppTransactionInfo": .string((try? pki.signJWS(payload: .object(app))) ?? "")]))
    }

    private func lookUpOrder(_ orderID: String, _ context: Context) -> ServerAPIReply {
        // Apple offers no order look-up in sandbox (order ids exist only for real purchases).
        guard context.environment == .production else { return error(404, .transactionIDNotFound, "Order lookup is not available in sandbox.") }
        let environment = store.environments[.production]
        let rows = (store.orders[orderID] ?? []).compactMap { environment?.row($0) }
        guard !rows.isEmpty else { return json(.object(["status": .integer(1)])) }
        return json(.object(["status": .integer(0), "signedTransactions": .array(rows.map { signedTransaction($0, context) })]))
    }

    // MARK: Pages

    /// `revision`/`paginationToken`: the offset and what the list was asked with, so a token
    /// reused with other filters is refused.
    private func pageToken(offset: Int, binding: String) -> String {
        Base64Text.encodeURL(Array("\(offset).\(fingerprint(binding))".utf8))
    }

    private func offset(of token: String, binding: String, count: Int) -> Int? {
        guard token.utf8.count <= 256, let bytes = try? Base64Text.decode(Array(token.utf8)) else { return nil }
        let parts = String(decoding: bytes, as: UTF8.self).split(separator: ".", maxSplits: 1)
        guard parts.count == 2, let offset = Int(parts[0]), (0...count).contains(offset), parts[1] == fingerprint(binding) else { return nil }
        return offset
    }

    private func fingerprint(_ text: String) -> String {
        SHA256.hash(data: Data(text.utf8)).prefix(8).map { String(format: "%02x", $0) }.joined()
    }

    /// One page of `rows` from `token`: the items, the next token and whether more follow.
    private func page<T>(_ rows: [T], token: String?, binding: String) -> (items: ArraySlice<T>, next: String, hasMore: Bool)? {
        var start = 0
        if let token {
            guard let offset = offset(of: token, binding: binding, count: rows.count) else { return nil }
            start = offset
        }
        let end = min(rows.count, start + configuration.pageSize)
        return (rows[start..<end], pageToken(offset: end, binding: binding), end < rows.count)
    }

    private static let productTypes = [
        "AUTO_RENEWABLE": TransactionRow.autoRenewable, "NON_RENEWABLE": "Non-Renewing Subscription", "CONSUMABLE": "Consumable",
        "NON_CONSUMABLE": "Non-Consumable",
    ]

    private func history(_ id: String, _ context: Context) -> ServerAPIReply {
        guard let environment = store.environments[context.environment], let row = environment.customerRow(id) else { return notFound(id) }
        let q = context.query
        var rows = environment.customerRows(of: row)
        func number(_ name: String) -> Int64?? {
            guard let text = q.first(name) else { return .some(nil) }
            return Int64(text).map { .some($0) }
        }
        guard let start = number("startDate"), let end = number("endDate") else {
            return error(400, .generalBadRequest, "Invalid request: dates are UNIX milliseconds.")
        }
        if let start { rows = rows.filter { $0.purchaseMS >= start } }
        if let end { rows = rows.filter { $0.purchaseMS < end } }
        let products = Set(q.all("productId"))
        if !products.isEmpty { rows = rows.filter { products.contains($0.productID) } }
        let typeNames = q.all("productType")
        let types = typeNames.compactMap { Self.productTypes[$0] }
        guard types.count == typeNames.count else { return error(400, .generalBadRequest, "Invalid request: productType.") }
        if !types.isEmpty { rows = rows.filter { types.contains($0.type) } }
        let groups = Set(q.all("subscriptionGroupIdentifier"))
        if !groups.isEmpty { rows = rows.filter { $0.groupID.map(groups.contains) ?? false } }
        if let ownership = q.first("inAppOwnershipType") {
            guard ownership == "FAMILY_SHARED" || ownership == "PURCHASED" else {
                return error(400, .generalBadRequest, "Invalid request: inAppOwnershipType.")
            }
            rows = rows.filter { ($0.ownership ?? "PURCHASED") == ownership }
        }
        if let revoked = q.first("revoked") {
            guard revoked == "true" || revoked == "false" else { return error(400, .generalBadRequest, "Invalid request: revoked.") }
            rows = rows.filter { ($0.revocationMS != nil) == (revoked == "true") }
        }
        switch q.first("sort") {
        case nil, "ASCENDING": break
        case "DESCENDING": rows.reverse()
        default: return error(400, .generalBadRequest, "Invalid request: sort.")
        }
        let binding = "history|\(context.environment)|\(row.customer)|\(q.canonical(except: "revision"))"
        guard let page = page(rows, token: q.first("revision"), binding: binding) else {
            return error(400, .invalidRevision, "Invalid revision.")
        }
        var fields = appFields(context.environment)
        fields["revision"] = .string(page.next)
        fields["hasMore"] = .bool(page.hasMore)
        fields["signedTransactions"] = .array(page.items.map { signedTransaction($0, context) })
        return json(.object(fields))
    }

    private func refunds(_ id: String, _ context: Context) -> ServerAPIReply {
        guard let environment = store.environments[context.environment], let row = environment.customerRow(id) else { return notFound(id) }
        // Refunded and revoked transactions; an upgraded one carries a revocation date too,
        // and is no refund.
        let rows = environment.customerRows(of: row).filter { $0.revocationMS != nil && $0.object["isUpgraded"]?.bool != true }
            .sorted { ($0.revocationMS ?? 0, $0.id) < ($1.revocationMS ?? 0, $1.id) }
        let binding = "refund|\(context.environment)|\(row.customer)"
        guard let page = page(rows, token: context.query.first("revision"), binding: binding) else {
            return error(400, .invalidRevision, "Invalid revision.")
        }
        return json(
            .object([
                "revision": .string(page.next), "hasMore": .bool(page.hasMore),
                "signedTransactions": .array(page.items.map { signedTransaction($0, context) }),
            ]))
    }

    // MARK: Subscription statuses

    /// Apple's status (1–5) of a subscription whose latest transaction is `row`, at `nowMS`.
    static func status(_ row: TransactionRow, renewal: [String: JSONValue]?, nowMS: Int64) -> SubscriptionAPIStatus {
        if let revoked = row.revocationMS, revoked <= nowMS { return .revoked }
        if let expires = row.expiresMS, expires > nowMS { return .active }
        if let grace = renewal?["gracePeriodExpiresDate"]?.int64, grace > nowMS { return .gracePeriod }
        if renewal?["isInBillingRetryPeriod"]?.bool == true { return .billingRetry }
        return .expired
    }

    private func statuses(_ id: String, _ context: Context) -> ServerAPIReply {
        guard let environment = store.environments[context.environment], let row = environment.customerRow(id) else { return notFound(id) }
        var wanted = Set<Int>()
        for text in context.query.all("status") {
            guard let value = Int(text), SubscriptionAPIStatus(rawValue: value).isDefined else {
                return error(400, .generalBadRequest, "Invalid request: status.")
            }
            wanted.insert(value)
        }
        var latest: [String: [String: TransactionRow]] = [:]  // group → original id → latest row
        for candidate in environment.customerRows(of: row) where candidate.type == TransactionRow.autoRenewable {
            let group = candidate.groupID ?? ""
            if let seen = latest[group]?[candidate.originalID],
                (seen.expiresMS ?? seen.purchaseMS, seen.purchaseMS) > (candidate.expiresMS ?? candidate.purchaseMS, candidate.purchaseMS)
            {
                continue
            }
            latest[group, default: [:]][candidate.originalID] = candidate
        }
        var groups: [JSONValue] = []
        for group in latest.keys.sorted() {
            var last: [JSONValue] = []
            for (original, latestRow) in latest[group, default: [:]].sorted(by: { $0.key < $1.key }) {
                let (info, status) = renewalInfo(latestRow, context.environment, nowMS: context.nowMS)
                if !wanted.isEmpty, !wanted.contains(status.rawValue) { continue }
                last.append(
                    .object([
                        "status": .integer(Int64(status.rawValue)), "originalTransactionId": .string(original),
                        "signedTransactionInfo": signedTransaction(latestRow, context),
                        "signedRenewalInfo": .string((try? pki.signJWS(payload: .object(info))) ?? ""),
                    ]))
            }
            if !last.isEmpty { groups.append(.object(["subscriptionGroupIdentifier": .string(group), "lastTransactions": .array(last)])) }
        }
        var fields = appFields(context.environment)
        fields["data"] = .array(groups)
        return json(.object(fields))
    }

    /// The renewal info of the subscription whose current period is `current`, and its status,
    /// as the extensions left them (an extension moves the expiry and the renewal date).
    func renewalInfo(_ current: TransactionRow, _ environment: APIEnvironment, nowMS: Int64) -> ([String: JSONValue], SubscriptionAPIStatus) {
        let added = extensionMS(current, environment)
        var subscription = current
        subscription.expiresMS = current.expiresMS.map { $0 + added }
        var renewal = store.environments[environment]?.renewals[current.originalID]
        if added > 0, let date = renewal?["renewalDate"]?.int64 { renewal?["renewalDate"] = .integer(date + added) }
        let status = Self.status(subscription, renewal: renewal, nowMS: nowMS)
        var info = renewal ?? [
            "originalTransactionId": .string(current.originalID), "productId": .string(subscription.productID),
            "autoRenewProductId": .string(subscription.productID),
            "autoRenewStatus": .integer(status == .active ? 1 : 0), "environment": .string(environment.rawValue),
        ]
        if renewal == nil, let expires = subscription.expiresMS { info["renewalDate"] = .integer(expires) }
        info["signedDate"] = .integer(nowMS)
        return (info, status)
    }

    // MARK: Notifications

    private func notificationHistory(_ body: [UInt8], _ context: Context) -> ServerAPIReply {
        guard let value = try? JSONValue.parse(body, maximumDepth: 8), let fields = value.object,
            case .integer(let start)? = fields["startDate"], case .integer(let end)? = fields["endDate"]
        else { return error(400, .generalBadRequest, "Invalid request: startDate and endDate (UNIX milliseconds) are required.") }
        guard start <= end else { return error(400, .generalBadRequest, "Invalid request: startDate is after endDate.") }
        let days: Int64 = context.environment == .production ? 180 : 30
        guard start >= context.nowMS - days * 86_400_000 else {
            return error(400, .generalBadRequest, "Invalid request: startDate is more than \(days) days ago.")
        }
        let type = fields["notificationType"]?.text
        let subtype = fields["notificationSubtype"]?.text
        let transactionID = fields["transactionId"]?.text
        if transactionID != nil, type != nil || subtype != nil {
            return error(400, .multipleFilters, "Invalid request: notificationType and transactionId cannot be combined.")
        }
        let onlyFailures = fields["onlyFailures"]?.bool == true
        guard let environment = store.environments[context.environment] else { return ServerAPIReply(status: 500) }
        var customer: String??
        if let transactionID { customer = .some(environment.row(transactionID)?.customer) }
        let rows = notifications(environment.notifications, context.environment).filter { n in
            guard n.signedMS >= start, n.signedMS <= end else { return false }
            if let type, n.type != type { return false }
            if let subtype, n.subtype != subtype { return false }
            if let customer, customer == nil || n.customer != customer { return false }
            return !onlyFailures || n.failed
        }
        let binding = "notifications|\(context.environment)|\(value.compactJSON)"
        guard let page = page(rows, token: context.query.first("paginationToken"), binding: binding) else {
            return error(400, .invalidPaginationToken, "Invalid pagination token.")
        }
        var answer: [String: JSONValue] = [
            "hasMore": .bool(page.hasMore),
            "notificationHistory": .array(
                page.items.map { .object(["signedPayload": .string($0.signedPayload), "sendAttempts": $0.sendAttempts]) }),
        ]
        if page.hasMore { answer["paginationToken"] = .string(page.next) }
        return json(.object(answer))
    }

    /// The data's notifications with the sender's: a data notification the sender sent has its
    /// attempts (after those the data gave, if it gave any); the others follow, ordered by
    /// `signedDate` (then UUID).
    private func notifications(_ data: [HistoryNotification], _ environment: APIEnvironment) -> [HistoryNotification] {
        var live = sentLog.withLock { log in log.rows.filter { $0.notification.environment == environment } }
        guard !live.isEmpty else { return data }
        var byUUID: [String: Int] = [:]
        for (index, row) in live.enumerated() { byUUID[row.notification.notificationUUID] = index }
        var used = Set<Int>()
        let merged: [HistoryNotification] = data.map { row in
            guard let uuid = row.uuid, let index = byUUID[uuid] else { return row }
            used.insert(index)
            let attempts = (row.explicitAttempts ? row.sendAttempts.array ?? [] : []) + live[index].attempts
            return HistoryNotification(
                signedPayload: row.signedPayload, uuid: uuid, sendAttempts: .array(attempts), explicitAttempts: true, type: row.type,
                subtype: row.subtype, signedMS: row.signedMS, failed: attempts.last?["sendAttemptResult"]?.text != "SUCCESS",
                customer: row.customer)
        }
        live = live.enumerated().filter { !used.contains($0.offset) }.map(\.element)
        live.sort { ($0.notification.signedMS, $0.notification.notificationUUID) < ($1.notification.signedMS, $1.notification.notificationUUID) }
        var out: [HistoryNotification] = []
        out.reserveCapacity(merged.count + live.count)
        var i = 0
        for sent in live {
            let n = sent.notification
            while i < merged.count, merged[i].signedMS <= n.signedMS {
                out.append(merged[i])
                i += 1
            }
            out.append(
                HistoryNotification(
                    signedPayload: n.signedPayload, uuid: n.notificationUUID, sendAttempts: .array(sent.attempts), explicitAttempts: true,
                    type: n.notificationType, subtype: n.subtype, signedMS: n.signedMS,
                    failed: sent.attempts.last?["sendAttemptResult"]?.text != "SUCCESS", customer: n.customer))
        }
        out += merged[i...]
        return out
    }

    /// Records one of the sender's attempts: from its first attempt on, the notification is in
    /// Get Notification History (of its environment) with every attempt so far.
    public func recordSendAttempt(_ notification: OutgoingNotification, _ attempt: SendAttemptRecord) {
        sentLog.withLock { log in
            if let index = log.index[notification.notificationUUID] {
                log.rows[index].attempts.append(attempt.historyJSON)
            } else {
                log.index[notification.notificationUUID] = log.rows.count
                log.rows.append(SentRow(notification: notification, attempts: [attempt.historyJSON]))
            }
        }
    }

    /// Apple signs a `TEST` and sends it to the environment's URL. With a listener (the
    /// simulator's `--send-notifications`), it is sent there and its status reports the real
    /// attempts (4040008 until the first one ends, as Apple's "not ready yet"); without one, there
    /// is nothing to send to and it is reported delivered at once.
    func requestTestNotification(_ context: Context) -> ServerAPIReply {
        var payload = envelope(type: "TEST", subtype: nil, nowMS: context.nowMS)
        payload["data"] = .object(appFields(context.environment))
        guard let notification = outgoing(payload, environment: context.environment, customer: nil) else { return ServerAPIReply(status: 500) }
        let listening = outbox.isOpen
        let posted = outbox.post(.send(notification))
        // A listener that is 1000 behind drops it: reported as Apple's OTHER, never as delivered.
        let live: TestNotification.Delivery = posted ? .sent : listening ? .dropped : .noListener
        let token = "\(notification.notificationUUID)_\(context.nowMS)"
        state.withLock { s in
            if s.testNotifications.count >= 1000 { s.testNotifications.removeAll() }
            s.testNotifications[token] = TestNotification(environment: context.environment, notification: notification, live: live)
        }
        return json(.object(["testNotificationToken": .string(token)]))
    }

    private func testNotificationStatus(_ token: String, _ context: Context) -> ServerAPIReply {
        guard let test = state.withLock({ $0.testNotifications[token] }), test.environment == context.environment else {
            return error(404, .testNotificationNotFound, "Test notification not found.")
        }
        let attempts: [JSONValue]
        switch test.live {
        case .sent:
            attempts = sentLog.withLock { log in log.index[test.notification.notificationUUID].map { log.rows[$0].attempts } ?? [] }
            guard !attempts.isEmpty else { return error(404, .testNotificationNotFound, "Test notification not found.") }
        case .dropped:
            attempts = [.object(["attemptDate": .integer(test.notification.signedMS), "sendAttemptResult": .string("OTHER")])]
        case .noListener:
            attempts = [.object(["attemptDate": .integer(test.notification.signedMS), "sendAttemptResult": .string("SUCCESS")])]
        }
        return json(.object(["signedPayload": .string(test.notification.signedPayload), "sendAttempts": .array(Array(attempts.prefix(6)))]))
    }
}
