import Foundation
import AppStoreAPI
import ReceiptCore
import Synchronization

/// A write the API simulator took (its request log: a dry run or a refused confirmation shows
/// here as nothing).
public struct ServerAPIWrite: Sendable, Hashable {
    public var method: String
    /// Apple's path, without the `/api/production` prefix.
    public var path: String
    public var environment: APIEnvironment
    public var body: String
}

/// A reply that ends an answer early (a refused body).
struct ReplyError: Error {
    let reply: ServerAPIReply
    init(_ reply: ServerAPIReply) { self.reply = reply }
}

/// What the actions changed, applied to every later answer (look-ups see an extension's new
/// expiry and a token set).
struct ActionState {
    /// Extensions given per subscription (environment and original transaction id): when and
    /// by how many days.
    var extensions: [String: [(atMS: Int64, days: Int)]] = [:]
    /// Answers by request identifier: the same identifier again extends once.
    var extendAnswers: [String: [UInt8]] = [:]
    var tokens: [String: String] = [:]
    var finished: Set<String> = []
    var consumption: [String: [UInt8]] = [:]
    var massRequests: [String: MassRequest] = [:]
    var writes: [ServerAPIWrite] = []
    /// Seconds each write's answer waits after the write took effect.
    var writeAnswerDelay: Double = 0
    /// Writes taken in all (``writes`` keeps the last 10,000).
    var writesTaken = 0
    /// Who waits for a number of writes taken (``ServerAPIService/whenWritesTaken(_:_:)``).
    var writeWaiters: [(count: Int, body: @Sendable () -> Void)] = []

    struct MassRequest {
        var productID: String
        var requestID: String
        var days: Int
        var createdMS: Int64
        var storefronts: [String]?
        var succeeded: Int64 = 0
        var failed: Int64 = 0
        /// Being completed (by a status query or the timer, whichever came first).
        var claimed = false
        var applied = false
    }
}

extension ServerAPIService {
    /// Every write taken so far, in order.
    public var writes: [ServerAPIWrite] { actions.withLock { $0.writes } }

    /// Holds every write's answer `seconds` after the write took effect (0: answers at once):
    /// a client stopped or killed while it waits has had its write applied without an answer.
    public func delayWriteAnswers(by seconds: Double) { actions.withLock { $0.writeAnswerDelay = seconds } }

    /// Calls `body` once `count` writes were taken, on the thread that took the last of them
    /// (at once when they already were): a test acts on the event, not after a guessed wait,
    /// and no task has to be scheduled to notice.
    public func whenWritesTaken(_ count: Int, _ body: @escaping @Sendable () -> Void) {
        let ready = actions.withLock { s -> Bool in
            if s.writesTaken >= count { return true }
            s.writeWaiters.append((count, body))
            return false
        }
        if ready { body() }
    }

    static func key(_ environment: APIEnvironment, _ id: String) -> String { "\(environment.rawValue)|\(id)" }

    /// Routes the write endpoints; nil when the path is none of them.
    func routeAction(_ method: String, _ segments: [String], body: [UInt8], _ context: Context) -> ServerAPIReply? {
        guard segments.count >= 4, segments[0] == "inApps" else { return nil }
        let reply: ServerAPIReply
        switch (method, segments.count, segments[1], segments[2]) {
        case ("PUT", 5, "v1", "subscriptions") where segments[3] == "extend": reply = extend(segments[4], body, context)
        case ("POST", 5, "v1", "subscriptions") where segments[3] == "extend" && segments[4] == "mass": reply = massExtend(body, context)
        case ("GET", 7, "v1", "subscriptions") where segments[3] == "extend" && segments[4] == "mass":
            return massExtendStatus(segments[5], segments[6], context)
        case ("PUT", 5, "v2", "transactions") where segments[3] == "consumption": reply = consumption(segments[4], body, context)
        case ("PUT", 5, "v1", "transactions") where segments[4] == "appAccountToken": reply = setToken(segments[3], body, context)
        case ("POST", 5, "v1", "transactions") where segments[4] == "finish": reply = finish(segments[3], context)
        case ("POST", 4, "v1", "notifications") where segments[3] == "test": reply = requestTestNotification(context)
        default: return nil
        }
        return recordWrite(method, segments, body: body, context, reply)
    }

    /// Logs a write that was taken (``writes``), wakes who waits for it, and holds its answer
    /// by the write answer delay.
    func recordWrite(_ method: String, _ segments: [String], body: [UInt8], _ context: Context, _ reply: ServerAPIReply) -> ServerAPIReply {
        var reply = reply
        let ready = actions.withLock { s -> [@Sendable () -> Void] in
            if s.writes.count >= 10_000 { s.writes.removeFirst(s.writes.count - 9_999) }
            s.writes.append(
                ServerAPIWrite(
                    method: method, path: "/" + segments.joined(separator: "/"), environment: context.environment,
                    body: String(decoding: body, as: UTF8.self)))
            s.writesTaken += 1
            let taken = s.writesTaken
            let ready = s.writeWaiters.filter { $0.count <= taken }.map(\.body)
            s.writeWaiters.removeAll { $0.count <= taken }
            return ready
        }
        for body in ready { body() }
        // The write took effect; its answer may be late (a client killed while it waits).
        reply.delay += actions.withLock { $0.writeAnswerDelay }
        return reply
    }

    // MARK: Extensions

    /// The latest transaction of the subscription `originalID` (the current period).
    func currentPeriod(_ originalID: String, _ environment: APIEnvironment) -> TransactionRow? {
        store.environments[environment]?.rows.filter { $0.originalID == originalID && $0.type == TransactionRow.autoRenewable }
            .max { ($0.expiresMS ?? $0.purchaseMS, $0.purchaseMS) < ($1.expiresMS ?? $1.purchaseMS, $1.purchaseMS) }
    }

    /// Milliseconds the extensions added to `row`'s period (only the current period moves).
    func extensionMS(_ row: TransactionRow, _ environment: APIEnvironment) -> Int64 {
        guard row.type == TransactionRow.autoRenewable, currentPeriod(row.originalID, environment)?.id == row.id else { return 0 }
        let days = actions.withLock { $0.extensions[Self.key(environment, row.originalID)]?.reduce(0) { $0 + $1.days } ?? 0 }
        return Int64(days) * 86_400_000
    }

    /// `row` as it stands after the actions: a later expiry, the app account token.
    func applyingActions(_ row: TransactionRow, _ environment: APIEnvironment) -> [String: JSONValue] {
        var object = row.object
        let added = extensionMS(row, environment)
        if added > 0, let expires = row.expiresMS { object["expiresDate"] = .integer(expires + added) }
        if let token = actions.withLock({ $0.tokens[Self.key(environment, row.originalID)] }) { object["appAccountToken"] = .string(token) }
        return object
    }

    /// The body's fields, or nil when it is not a JSON object.
    private func fields(_ body: [UInt8]) -> [String: JSONValue]? {
        (try? JSONValue.parse(body, maximumDepth: 8))?.object
    }

    /// An extension body's fields and its days, or Apple's refusal of the body, the days or the
    /// reason.
    private func extensionTerms(_ body: [UInt8]) -> Result<(fields: [String: JSONValue], days: Int64), ReplyError> {
        guard let fields = fields(body) else { return .failure(ReplyError(error(400, .generalBadRequest, "Invalid request."))) }
        guard case .integer(let days)? = fields["extendByDays"], (1...90).contains(days) else {
            return .failure(ReplyError(error(400, .invalidExtendByDays, "Invalid extend by days.")))
        }
        guard case .integer(let reason)? = fields["extendReasonCode"], (0...3).contains(reason) else {
            return .failure(ReplyError(error(400, .invalidExtendReasonCode, "Invalid extend reason code.")))
        }
        return .success((fields, days))
    }

    /// Whether the period `current` may be extended at `nowMS`: active (counting the extensions
    /// already given) and paid (not a free trial). Apple's two-a-year limit is counted apart.
    private func isEligible(_ current: TransactionRow, _ environment: APIEnvironment, at nowMS: Int64) -> Bool {
        var effective = current
        effective.expiresMS = current.expiresMS.map { $0 + extensionMS(current, environment) }
        let renewal = store.environments[environment]?.renewals[current.originalID]
        return Self.status(effective, renewal: renewal, nowMS: nowMS) == .active && current.object["offerDiscountType"]?.text != "FREE_TRIAL"
    }

    /// How many extensions the subscription `key` was given in the 365 days before `nowMS`.
    private static func extensionsInAYear(_ s: ActionState, _ key: String, before nowMS: Int64) -> Int {
        (s.extensions[key] ?? []).filter { $0.atMS > nowMS - 365 * 86_400_000 }.count
    }

    private func extend(_ originalID: String, _ body: [UInt8], _ context: Context) -> ServerAPIReply {
        let fields: [String: JSONValue]
        let days: Int64
        switch extensionTerms(body) {
        case .success(let terms): (fields, days) = terms
        case .failure(let refusal): return refusal.reply
        }
        guard let requestID = fields["requestIdentifier"]?.text, !requestID.isEmpty, requestID.utf8.count <= 128 else {
            return error(400, .invalidRequestIdentifier, "Invalid request identifier.")
        }
        guard !originalID.isEmpty, originalID.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            return error(400, .invalidOriginalTransactionID, "Invalid original transaction id.")
        }
        let answerKey = Self.key(context.environment, requestID)
        if let earlier = actions.withLock({ $0.extendAnswers[answerKey] }) {
            return ServerAPIReply(status: 200, headers: [("Content-Type", "application/json")], body: earlier)
        }
        guard let current = currentPeriod(originalID, context.environment) else {
            return error(404, .originalTransactionIDNotFound, "Original transaction id not found.")
        }
        if current.ownership == "FAMILY_SHARED" {
            return error(403, .familySharedSubscriptionExtensionIneligible, "Family shared subscription extension ineligible.")
        }
        let subscriptionKey = Self.key(context.environment, originalID)
        if actions.withLock({ Self.extensionsInAYear($0, subscriptionKey, before: context.nowMS) }) >= 2 {
            return error(403, .subscriptionMaxExtension, "Subscription max extension.")
        }
        guard isEligible(current, context.environment, at: context.nowMS),
            let expires = current.expiresMS.map({ $0 + extensionMS(current, context.environment) })
        else {
            return error(403, .subscriptionExtensionIneligible, "Subscription extension ineligible.")
        }
        let answer: JSONValue = .object([
            "originalTransactionId": .string(originalID),
            "webOrderLineItemId": .string(current.object["webOrderLineItemId"]?.text ?? current.id),
            "success": .bool(true), "effectiveDate": .integer(expires + days * 86_400_000),
        ])
        // Decided under one lock: the same request id sent twice at once still extends once.
        let taken: (bytes: [UInt8], isNew: Bool)? = actions.withLock { s in
            if let earlier = s.extendAnswers[answerKey] { return (earlier, false) }
            guard Self.extensionsInAYear(s, subscriptionKey, before: context.nowMS) < 2 else { return nil }
            let bytes = Array(answer.compactJSON.utf8)
            s.extensions[subscriptionKey, default: []].append((context.nowMS, Int(days)))
            s.extendAnswers[answerKey] = bytes
            return (bytes, true)
        }
        guard let (bytes, isNew) = taken else { return error(403, .subscriptionMaxExtension, "Subscription max extension.") }
        // Announced once, by the request that extended (a concurrent repeat only gets the answer).
        if isNew { announceExtension(originalID, environment: context.environment, nowMS: context.nowMS) }
        return ServerAPIReply(status: 200, headers: [("Content-Type", "application/json")], body: bytes)
    }

    private func massExtend(_ body: [UInt8], _ context: Context) -> ServerAPIReply {
        let fields: [String: JSONValue]
        let days: Int64
        switch extensionTerms(body) {
        case .success(let terms): (fields, days) = terms
        case .failure(let refusal): return refusal.reply
        }
        guard let product = fields["productId"]?.text, !product.isEmpty else { return error(400, .invalidProductID, "Invalid product id.") }
        guard let requestID = fields["requestIdentifier"]?.text, UUID(uuidString: requestID) != nil else {
            return error(400, .invalidRequestIdentifier, "Invalid request identifier.")
        }
        var storefronts: [String]?
        if let list = fields["storefrontCountryCodes"] {
            guard let codes = list.array?.compactMap(\.text), codes.count == list.array?.count else {
                return error(400, .invalidStorefrontCountryCode, "Invalid storefront country code.")
            }
            guard !codes.isEmpty else { return error(400, .invalidEmptyStorefrontCountryCodeList, "Invalid empty storefront country code list.") }
            guard codes.allSatisfy({ $0.count == 3 }) else { return error(400, .invalidStorefrontCountryCode, "Invalid storefront country code.") }
            storefronts = codes
        }
        let key = Self.key(context.environment, "\(product)|\(requestID)")
        let dueMS = context.nowMS + Int64(configuration.massExtensionDelay * 1000)
        let new = actions.withLock { s in
            guard s.massRequests[key] == nil else { return false }
            if s.massRequests.count >= 10_000, let oldest = s.massRequests.min(by: { $0.value.createdMS < $1.value.createdMS })?.key {
                s.massRequests[oldest] = nil
            }
            s.massRequests[key] = ActionState.MassRequest(
                productID: product, requestID: requestID, days: Int(days), createdMS: context.nowMS, storefronts: storefronts)
            return true
        }
        // With a listener, it completes (and is announced) when due, asked about or not.
        if new { outbox.post(.massExtensionDue(key: key, environment: context.environment, atMS: dueMS)) }
        return json(.object(["requestIdentifier": .string(requestID)]))
    }

    private func massExtendStatus(_ product: String, _ requestID: String, _ context: Context) -> ServerAPIReply {
        let key = Self.key(context.environment, "\(product)|\(requestID)")
        guard let asked = actions.withLock({ $0.massRequests[key] }) else {
            return error(404, .statusRequestNotFound, "Status request not found.")
        }
        let doneMS = asked.createdMS + Int64(configuration.massExtensionDelay * 1000)
        guard context.nowMS >= doneMS, let request = completeMassExtension(key, environment: context.environment) else {
            return json(.object(["requestIdentifier": .string(requestID), "complete": .bool(false)]))
        }
        return json(
            .object([
                "requestIdentifier": .string(requestID), "complete": .bool(true), "completeDate": .integer(doneMS),
                "succeededCount": .integer(request.succeeded), "failedCount": .integer(request.failed),
            ]))
    }

    /// Completes the mass extension `key` once its delay is over: every active, paid
    /// subscription of the product (in the storefronts asked) is extended, once, within the
    /// two-a-year limit, and the outcome announced. Nil while another caller is completing it;
    /// the request as it stands once complete.
    @discardableResult
    func completeMassExtension(_ key: String, environment: APIEnvironment) -> ActionState.MassRequest? {
        // Claimed under the lock: completed once, whoever asks first (a status query or the timer).
        guard
            let claimed: ActionState.MassRequest = actions.withLock({ s in
                guard var request = s.massRequests[key], !request.claimed else { return nil }
                request.claimed = true
                s.massRequests[key] = request
                return request
            })
        else {
            return actions.withLock { s in s.massRequests[key].flatMap { $0.applied ? $0 : nil } }
        }
        var request = claimed
        let doneMS = request.createdMS + Int64(configuration.massExtensionDelay * 1000)
        let originals = Set(
            (store.environments[environment]?.rows ?? []).filter { $0.productID == request.productID && $0.type == TransactionRow.autoRenewable }
                .map(\.originalID))
        var extended: [String] = []
        var failed: [String] = []
        for original in originals.sorted() {
            guard let current = currentPeriod(original, environment) else { continue }
            if let storefronts = request.storefronts, let storefront = current.object["storefront"]?.text, !storefronts.contains(storefront) {
                continue
            }
            let subscriptionKey = Self.key(environment, original)
            let eligible = isEligible(current, environment, at: doneMS)
            let taken = eligible && actions.withLock { s in
                guard Self.extensionsInAYear(s, subscriptionKey, before: doneMS) < 2 else { return false }
                s.extensions[subscriptionKey, default: []].append((doneMS, request.days))
                return true
            }
            if taken {
                extended.append(original)
            } else {
                failed.append(original)
            }
        }
        request.succeeded = Int64(extended.count)
        request.failed = Int64(failed.count)
        request.applied = true
        actions.withLock { $0.massRequests[key] = request }
        announceMassExtension(request, requestID: request.requestID, extended: extended, failed: failed, environment: environment, nowMS: doneMS)
        return request
    }

    // MARK: Consumption, token, finish

    /// Send Consumption Information v2: the transaction first (4000006, 4040010), then the
    /// body by Apple's rules (``ConsumptionBodyRules``), then a family member's purchase
    /// (4000185); 202 with no body. Every answer is noted (``consumptionReceived()``).
    private func consumption(_ transactionID: String, _ body: [UInt8], _ context: Context) -> ServerAPIReply {
        guard let row = transactionRow(transactionID, in: context.environment), row.id == transactionID else {
            return noteConsumption(transactionID, body, context, notFound(transactionID))
        }
        if let refusal = ConsumptionBodyRules.refusal(of: body, productType: row.type) {
            return noteConsumption(transactionID, body, context, error(400, refusal.code, refusal.message))
        }
        if row.ownership == "FAMILY_SHARED" {
            return noteConsumption(transactionID, body, context, error(400, .familyTransactionNotSupported, "Family transaction not supported."))
        }
        actions.withLock { $0.consumption[Self.key(context.environment, transactionID)] = body }
        return noteConsumption(transactionID, body, context, ServerAPIReply(status: 202))
    }

    private func setToken(_ originalID: String, _ body: [UInt8], _ context: Context) -> ServerAPIReply {
        guard let environment = store.environments[context.environment] else { return ServerAPIReply(status: 404) }
        guard let row = environment.row(originalID) else {
            return originalID.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) && !originalID.isEmpty
                ? error(404, .originalTransactionIDNotFound, "Original transaction id not found.")
                : error(400, .invalidTransactionID, "Invalid transaction id.")
        }
        guard row.originalID == originalID else {
            return error(400, .notOriginalTransactionID, "Transaction id is not an original transaction id.")
        }
        guard let token = fields(body)?["appAccountToken"]?.text, let uuid = UUID(uuidString: token) else {
            return error(400, .invalidAppAccountTokenUUID, "Invalid app account token UUID.")
        }
        actions.withLock { $0.tokens[Self.key(context.environment, originalID)] = uuid.uuidString.lowercased() }
        return ServerAPIReply(status: 200)
    }

    private func finish(_ transactionID: String, _ context: Context) -> ServerAPIReply {
        guard let row = transactionRow(transactionID, in: context.environment), row.id == transactionID else { return notFound(transactionID) }
        actions.withLock { _ = $0.finished.insert(Self.key(context.environment, row.id)) }
        return ServerAPIReply(status: 200)
    }
}
