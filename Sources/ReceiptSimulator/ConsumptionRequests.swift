import Foundation
import AppStoreAPI
import ReceiptCore
import Synchronization

/// Why a customer asked for a refund (`data.consumptionRequestReason` of `CONSUMPTION_REQUEST`).
public enum ConsumptionRequestReason: String, Sendable, Hashable, CaseIterable {
    case unintendedPurchase = "UNINTENDED_PURCHASE"
    case fulfillmentIssue = "FULFILLMENT_ISSUE"
    case unsatisfiedWithPurchase = "UNSATISFIED_WITH_PURCHASE"
    case legal = "LEGAL"
    case other = "OTHER"
}

/// The kind of product a synthetic purchase is of: its name in a control query and Apple's
/// `type` string.
public enum SimulatedProductType: String, Sendable, Hashable, CaseIterable {
    case consumable
    case nonConsumable = "non-consumable"
    case autoRenewable = "auto-renewable"
    case nonRenewing = "non-renewing"

    /// Apple's `type` in a transaction.
    public var appleType: String {
        switch self {
        case .consumable: "Consumable"
        case .nonConsumable: "Non-Consumable"
        case .autoRenewable: TransactionRow.autoRenewable
        case .nonRenewing: "Non-Renewing Subscription"
        }
    }

    /// The product a purchase is of when none is named.
    func defaultProductID(bundleID: String) -> String {
        switch self {
        case .consumable: "\(bundleID).coins100"
        case .nonConsumable: "\(bundleID).remove_ads"
        case .autoRenewable: "\(bundleID).pro.monthly"
        case .nonRenewing: "\(bundleID).season_pass"
        }
    }
}

/// What `POST /control/consumption-request` asks for: `count` refund requests, each for a new
/// purchase made for it (or all for the existing transaction `transactionID`).
public struct ConsumptionRequestOrder: Sendable, Hashable {
    /// 1…10,000.
    public var count: Int
    public var environment: APIEnvironment
    /// Nil: the five reasons in turn.
    public var reason: ConsumptionRequestReason?
    /// Nil: the type's product in the data's app (`<bundle>.coins100`, `<bundle>.pro.monthly`, …).
    public var productID: String?
    public var productType: SimulatedProductType
    /// Three letters (`USA`).
    public var storefront: String
    /// The purchase was made this many days before now (0…3650).
    public var daysAgo: Int
    /// An existing transaction to ask about instead of new purchases.
    public var transactionID: String?

    public init(
        count: Int = 1, environment: APIEnvironment = .production, reason: ConsumptionRequestReason? = nil, productID: String? = nil,
        productType: SimulatedProductType = .consumable, storefront: String = "USA", daysAgo: Int = 0, transactionID: String? = nil
    ) {
        self.count = count
        self.environment = environment
        self.reason = reason
        self.productID = productID
        self.productType = productType
        self.storefront = storefront
        self.daysAgo = daysAgo
        self.transactionID = transactionID
    }

    static let parameters = ["count", "environment", "reason", "product-id", "product-type", "storefront", "days-ago", "transaction-id", "url"]

    /// The order a control query gives, or what is wrong with it (in words naming the parameter).
    init(query: ServerAPIService.Query) throws(ServerAPISimulatorError) {
        func refuse(_ why: String) -> ServerAPISimulatorError { ServerAPISimulatorError(.invalidOrder, why) }
        if let unknown = query.items.first(where: { !Self.parameters.contains($0.0) }) {
            throw refuse("unknown parameter \(ServerAPIService.shown(unknown.0)): the parameters are \(Self.parameters.joined(separator: ", "))")
        }
        self.init()
        if let text = query.first("count") {
            guard let number = Int(text), (1...10_000).contains(number) else { throw refuse("count takes 1 to 10000, not \(ServerAPIService.shown(text))") }
            count = number
        }
        switch query.first("environment")?.lowercased() {
        case nil, "production": environment = .production
        case "sandbox": environment = .sandbox
        case let other?: throw refuse("environment takes production or sandbox, not \(ServerAPIService.shown(other))")
        }
        if let text = query.first("reason") {
            guard let value = ConsumptionRequestReason(rawValue: text) else {
                let names = ConsumptionRequestReason.allCases.map(\.rawValue).joined(separator: ", ")
                throw refuse("reason takes one of \(names), not \(ServerAPIService.shown(text))")
            }
            reason = value
        }
        if let text = query.first("product-type") {
            guard let value = SimulatedProductType(rawValue: text) else {
                let names = SimulatedProductType.allCases.map(\.rawValue).joined(separator: ", ")
                throw refuse("product-type takes one of \(names), not \(ServerAPIService.shown(text))")
            }
            productType = value
        }
        if let text = query.first("product-id") {
            guard !text.isEmpty, text.utf8.count <= 200 else { throw refuse("product-id takes 1 to 200 characters") }
            productID = text
        }
        if let text = query.first("storefront") {
            guard text.count == 3, text.allSatisfy({ $0.isASCII && $0.isLetter }) else {
                throw refuse("storefront takes a three-letter code such as USA, not \(ServerAPIService.shown(text))")
            }
            storefront = text.uppercased()
        }
        if let text = query.first("days-ago") {
            guard let days = Int(text), (0...3650).contains(days) else { throw refuse("days-ago takes 0 to 3650, not \(ServerAPIService.shown(text))") }
            daysAgo = days
        }
        if let text = query.first("transaction-id") {
            guard !text.isEmpty, text.utf8.count <= 64 else { throw refuse("transaction-id takes 1 to 64 characters") }
            transactionID = text
        }
    }

    /// What is wrong with the order's values, in words; nil when nothing.
    var problem: String? {
        if !(1...10_000).contains(count) { return "count takes 1 to 10000, not \(count)" }
        if !(0...3650).contains(daysAgo) { return "days-ago takes 0 to 3650, not \(daysAgo)" }
        if !(storefront.count == 3 && storefront.allSatisfy({ $0.isASCII && $0.isLetter })) {
            return "storefront takes a three-letter code such as USA, not \(ServerAPIService.shown(storefront))"
        }
        if let productID, productID.isEmpty || productID.utf8.count > 200 { return "product-id takes 1 to 200 characters" }
        if transactionID != nil, productID != nil || productType != .consumable || daysAgo != 0 || storefront != "USA" {
            return "transaction-id names an existing purchase: leave out product-id, product-type, storefront and days-ago"
        }
        return nil
    }
}

/// One `CONSUMPTION_REQUEST` made: the signed notification and the purchase it asks about.
public struct ConsumptionRequestMade: Sendable, Hashable {
    public var notification: OutgoingNotification
    public var transactionID: String
    public var originalTransactionID: String
    public var productID: String
    public var reason: ConsumptionRequestReason
    /// The first attempt's result, when it was sent at once (``ServerAPIService/sendConsumptionRequests(_:to:)``);
    /// nil when it was handed to the live sender.
    public var result: SendAttemptResult?
    /// Handed to the live sender (`--send-notifications`); false when it was not (sent at once,
    /// or the sender was 1000 behind).
    public var queued: Bool

    public var notificationUUID: String { notification.notificationUUID }

    /// The control's answer for it: `notification_uuid`, `transaction_id`, … and `queued` or
    /// `send_attempt_result`.
    public var json: JSONValue {
        var fields: [String: JSONValue] = [
            "notification_uuid": .string(notification.notificationUUID), "transaction_id": .string(transactionID),
            "original_transaction_id": .string(originalTransactionID), "product_id": .string(productID),
            "environment": .string(notification.environment.rawValue), "reason": .string(reason.rawValue),
        ]
        if let result {
            fields["send_attempt_result"] = .string(result.rawValue)
        } else {
            fields["queued"] = .bool(queued)
        }
        return .object(fields)
    }
}

/// Purchases the simulator made for its refund requests, found beside the data's by the
/// look-ups and the writes; the newest 100,000 are kept.
struct AddedTransactions {
    static let limit = 100_000
    var rows: [String: TransactionRow] = [:]
    var order: [String] = []
    var orderStart = 0
    /// The serial of the next on-demand purchase (`45…` transaction ids).
    var nextSerial: Int64 = 1

    mutating func add(_ row: TransactionRow, key: String) {
        if rows.updateValue(row, forKey: key) == nil { order.append(key) }
        while rows.count > Self.limit, orderStart < order.count {
            rows[order[orderStart]] = nil
            orderStart += 1
        }
        if orderStart > Self.limit {
            order.removeFirst(orderStart)
            orderStart = 0
        }
    }
}

extension TransactionRow {
    /// The row of a transaction payload the simulator made (every field it selects on is there).
    init(made object: [String: JSONValue]) {
        let id = object["transactionId"]?.text ?? ""
        self.init(
            object: object, id: id, originalID: object["originalTransactionId"]?.text ?? id, productID: object["productId"]?.text ?? "",
            type: object["type"]?.text ?? "", purchaseMS: object["purchaseDate"]?.int64 ?? 0, expiresMS: object["expiresDate"]?.int64,
            revocationMS: object["revocationDate"]?.int64, groupID: object["subscriptionGroupIdentifier"]?.text,
            ownership: object["inAppOwnershipType"]?.text, customer: object["appTransactionId"]?.text ?? "")
    }
}

extension NotificationPlan {
    /// A new purchase as Apple's transaction payload: `type`, product, storefront, purchase
    /// date; an auto-renewable also a month's period (`expiresDate`) and its renewal info. The
    /// currency and price are given for the USA storefront only (others' are not known here).
    static func purchase(
        id: String, customer: String, type: SimulatedProductType, productID: String, storefront: String, purchaseMS: Int64,
        environment: APIEnvironment, bundleID: String, nowMS: Int64
    ) -> (transaction: [String: JSONValue], renewal: [String: JSONValue]?) {
        var transaction: [String: JSONValue] = [
            "transactionId": .string(id), "originalTransactionId": .string(id), "bundleId": .string(bundleID), "productId": .string(productID),
            "type": .string(type.appleType), "purchaseDate": .integer(purchaseMS), "originalPurchaseDate": .integer(purchaseMS),
            "quantity": .integer(1), "inAppOwnershipType": .string("PURCHASED"), "environment": .string(environment.rawValue),
            "storefront": .string(storefront), "appTransactionId": .string(customer), "signedDate": .integer(nowMS),
            "transactionReason": .string("PURCHASE"),
        ]
        if storefront == "USA" {
            transaction["storefrontId"] = .string("143441")
            transaction["currency"] = .string("USD")
            transaction["price"] = .integer(type == .autoRenewable ? 4990 : 990)
        }
        guard type == .autoRenewable else { return (transaction, nil) }
        let expires = purchaseMS + 30 * 86_400_000
        transaction["expiresDate"] = .integer(expires)
        transaction["subscriptionGroupIdentifier"] = .string("21000001")
        transaction["webOrderLineItemId"] = .string("47" + id.dropFirst(2))
        let renewal: [String: JSONValue] = [
            "originalTransactionId": .string(id), "productId": .string(productID), "autoRenewProductId": .string(productID),
            "environment": .string(environment.rawValue), "autoRenewStatus": .integer(1), "renewalDate": .integer(expires),
            "recentSubscriptionStartDate": .integer(purchaseMS), "signedDate": .integer(nowMS),
        ]
        return (transaction, renewal)
    }

    /// A `CONSUMPTION_REQUEST` about `transaction`: `data` with the app's fields, the reason,
    /// and for an auto-renewable its status (1 active, 2 expired) and renewal info.
    static func consumptionRequest(
        transaction: [String: JSONValue], renewal: [String: JSONValue]?, reason: ConsumptionRequestReason, environment: APIEnvironment,
        appFields: [String: JSONValue], nowMS: Int64
    ) -> NotificationPlan {
        var data = appFields
        data["consumptionRequestReason"] = .string(reason.rawValue)
        if transaction["type"]?.text == TransactionRow.autoRenewable {
            let active = (transaction["expiresDate"]?.int64 ?? 0) > nowMS
            data["status"] = .integer(active ? 1 : 2)
        }
        let uuid = UUID().uuidString.lowercased()
        let payload: [String: JSONValue] = [
            "notificationType": .string("CONSUMPTION_REQUEST"), "notificationUUID": .string(uuid), "version": .string("2.0"),
            "signedDate": .integer(nowMS), "data": .object(data),
        ]
        return NotificationPlan(
            uuid: uuid, environment: environment, type: "CONSUMPTION_REQUEST", subtype: nil, signedMS: nowMS,
            customer: transaction["appTransactionId"]?.text ?? "", payload: payload, transaction: transaction, renewal: renewal)
    }

    /// Whether item `index` of a generated stream is a `CONSUMPTION_REQUEST` when `basisPoints`
    /// of 10,000 are: spread evenly, exactly ⌊n × share⌋ of the first n.
    static func isConsumptionRequest(_ index: Int, basisPoints: Int) -> Bool {
        basisPoints > 0 && ((index + 1) * basisPoints) / 10_000 > (index * basisPoints) / 10_000
    }
}

extension ServerAPIService {
    /// A transaction of `environment` by id: the data's, or one the simulator made for a refund
    /// request.
    func transactionRow(_ id: String, in environment: APIEnvironment) -> TransactionRow? {
        if let row = store.environments[environment]?.row(id) { return row }
        return addedTransactions.withLock { $0.rows[Self.key(environment, id)] }
    }

    /// Keeps a purchase the simulator made, so look-ups and consumption PUTs find it.
    func addPurchase(_ transaction: [String: JSONValue], environment: APIEnvironment) {
        let row = TransactionRow(made: transaction)
        addedTransactions.withLock { $0.add(row, key: Self.key(environment, row.id)) }
    }

    /// Makes `order`'s refund requests, signed now: for each a new purchase kept in the
    /// simulator's store of the environment (so a consumption PUT for it is answered 202), or
    /// the existing `transactionID`, and a `CONSUMPTION_REQUEST` about it. Nothing is sent.
    public func makeConsumptionRequests(_ order: ConsumptionRequestOrder) throws(ServerAPISimulatorError) -> [ConsumptionRequestMade] {
        if let problem = order.problem { throw ServerAPISimulatorError(.invalidOrder, problem) }
        let environment = order.environment
        let nowMS = ServerAPIStore.milliseconds(configuration.clock.now())
        let bundleID = store.bundleID ?? ServerAPIData.demoBundleID
        var existing: (transaction: [String: JSONValue], renewal: [String: JSONValue]?)?
        if let id = order.transactionID {
            guard let row = transactionRow(id, in: environment), row.id == id else {
                throw ServerAPISimulatorError(.invalidOrder, "transaction-id \(Self.shown(id)) is no transaction in the simulator's \(environment.rawValue) data")
            }
            var transaction = applyingActions(row, environment)
            transaction["signedDate"] = .integer(nowMS)
            var renewal: [String: JSONValue]?
            if row.type == TransactionRow.autoRenewable, let current = currentPeriod(row.originalID, environment) {
                renewal = renewalInfo(current, environment, nowMS: nowMS).0
            }
            existing = (transaction, renewal)
        }
        var made: [ConsumptionRequestMade] = []
        made.reserveCapacity(order.count)
        for index in 0..<order.count {
            let reason = order.reason ?? ConsumptionRequestReason.allCases[index % ConsumptionRequestReason.allCases.count]
            let purchase: (transaction: [String: JSONValue], renewal: [String: JSONValue]?)
            if let existing {
                purchase = existing
            } else {
                let serial = nextPurchaseSerial(environment)
                let bought = NotificationPlan.purchase(
                    id: "45" + String(format: "%014lld", serial), customer: "706" + String(format: "%014lld", serial), type: order.productType,
                    productID: order.productID ?? order.productType.defaultProductID(bundleID: bundleID), storefront: order.storefront,
                    purchaseMS: nowMS - Int64(order.daysAgo) * 86_400_000, environment: environment, bundleID: bundleID, nowMS: nowMS)
                addPurchase(bought.transaction, environment: environment)
                purchase = bought
            }
            let plan = NotificationPlan.consumptionRequest(
                transaction: purchase.transaction, renewal: purchase.renewal, reason: reason, environment: environment,
                appFields: appFields(environment), nowMS: nowMS)
            let transaction = purchase.transaction
            made.append(
                ConsumptionRequestMade(
                    notification: try plan.sign(pki), transactionID: transaction["transactionId"]?.text ?? "",
                    originalTransactionID: transaction["originalTransactionId"]?.text ?? "", productID: transaction["productId"]?.text ?? "",
                    reason: reason, result: nil, queued: false))
        }
        return made
    }

    /// A serial whose `45…` transaction id is used by no transaction of `environment`.
    private func nextPurchaseSerial(_ environment: APIEnvironment) -> Int64 {
        while true {
            let serial = addedTransactions.withLock { s in
                defer { s.nextSerial += 1 }
                return s.nextSerial
            }
            if transactionRow("45" + String(format: "%014lld", serial), in: environment) == nil { return serial }
        }
    }

    /// Makes `order`'s refund requests and hands each to the live sender (`--send-notifications`),
    /// as a write's notifications are: ``ConsumptionRequestMade/queued`` says whether it took it.
    public func postConsumptionRequests(_ order: ConsumptionRequestOrder) throws(ServerAPISimulatorError) -> [ConsumptionRequestMade] {
        try makeConsumptionRequests(order).map { request in
            var request = request
            request.queued = outbox.post(.send(request.notification))
            return request
        }
    }

    /// Makes `order`'s refund requests and sends them to `url` now (once each, no retry; every
    /// attempt shows in Get Notification History), returning each with its attempt's result.
    public func sendConsumptionRequests(_ order: ConsumptionRequestOrder, to url: String) async throws -> [ConsumptionRequestMade] {
        var made = try makeConsumptionRequests(order)
        let sender = try NotificationSender(
            NotificationSenderConfiguration(url: url, concurrency: 16, retrySchedule: .none), onAttempt: sendAttemptRecorder)
        let report = await sender.send(made.map(\.notification))
        await sender.shutdown()
        let results = Dictionary(report.deliveries.map { ($0.notificationUUID, $0.attempts.last?.result ?? .other) }, uniquingKeysWith: { a, _ in a })
        for index in made.indices { made[index].result = results[made[index].notificationUUID] ?? .other }
        return made
    }

    /// The simulator's consumption controls (no token; on the API port): `GET /control/consumption`
    /// and `POST /control/consumption-request`; nil for other paths.
    func answerConsumptionControl(_ request: ServerAPIRequest) -> ServerAPIReply? {
        let parts = request.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let path = parts.first.map(String.init) ?? ""
        guard path == "/control/consumption" || path == "/control/consumption-request" else { return nil }
        guard let query = Query(parts.count > 1 ? String(parts[1]) : "") else { return controlError("the query cannot be read") }
        if path == "/control/consumption" {
            guard request.method == "GET" else { return ServerAPIReply(status: 405) }
            guard query.items.isEmpty else { return controlError("GET /control/consumption takes no parameters") }
            return controlConsumptionListing()
        }
        guard request.method == "POST" else { return ServerAPIReply(status: 405) }
        return controlConsumptionRequest(query)
    }

    /// `POST /control/consumption-request?count=N[&environment=…][&reason=…][&product-id=…]
    /// [&product-type=…][&storefront=USA][&days-ago=D][&transaction-id=…][&url=…]`: makes the
    /// refund requests (``makeConsumptionRequests(_:)``) and hands them to the live sender, or,
    /// with `url`, sends them there at once and answers once each was tried. Answers
    /// `{"requests":[{"notification_uuid":…,"transaction_id":…,…}]}`.
    func controlConsumptionRequest(_ query: Query) -> ServerAPIReply {
        let order: ConsumptionRequestOrder
        do throws(ServerAPISimulatorError) {
            order = try ConsumptionRequestOrder(query: query)
            if let problem = order.problem { throw ServerAPISimulatorError(.invalidOrder, problem) }
        } catch {
            return controlError(error.reason)
        }
        guard let url = query.first("url") else {
            guard outbox.isOpen else {
                return controlError("nothing to send to: start the simulator with --send-notifications URL, or give url=")
            }
            do throws(ServerAPISimulatorError) {
                return consumptionRequestsAnswer(try postConsumptionRequests(order))
            } catch {
                return error.code == .invalidOrder ? controlError(error.reason) : controlFailure(error.reason)
            }
        }
        do throws(NotificationSenderError) {
            try NotificationSender.check(url: url)
        } catch {
            return controlError(error.reason)
        }
        // Checked before answering later: an unknown transaction id is the caller's mistake.
        if let id = order.transactionID, transactionRow(id, in: order.environment)?.id != id {
            return controlError("transaction-id \(Self.shown(id)) is no transaction in the simulator's \(order.environment.rawValue) data")
        }
        var reply = ServerAPIReply(status: 200)
        reply.deferred = { [self] in
            do {
                return consumptionRequestsAnswer(try await sendConsumptionRequests(order, to: url))
            } catch let error as ServerAPISimulatorError {
                return controlFailure(error.reason)
            } catch {
                return controlFailure("the requests could not be sent: \(error)")
            }
        }
        return reply
    }

    /// `{"requests":[…]}` (``ConsumptionRequestMade/json``).
    func consumptionRequestsAnswer(_ made: [ConsumptionRequestMade]) -> ServerAPIReply {
        json(.object(["requests": .array(made.map(\.json))]))
    }

    /// A control request that could not be carried out: 500 `{"error": "…"}`.
    func controlFailure(_ reason: String) -> ServerAPIReply {
        ServerAPIReply(status: 500, headers: [("Content-Type", "application/json")], body: Array(JSONValue.object(["error": .string(reason)]).compactJSON.utf8))
    }
}
