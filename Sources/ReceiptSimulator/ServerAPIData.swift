import Foundation
import ReceiptCore

/// The customers the App Store Server API simulator serves: the `--api-data` file, or the
/// built-in demo customer.
///
/// The file is JSON:
/// ```json
/// {"bundleId": "com.example.app", "appAppleId": 1234567890,
///  "orders": {"MQ5X7ABCDE": ["2000000900000001"]},
///  "transactions": [{"transactionId": "2000000900000001", "originalTransactionId": "…",
///                    "productId": "…", "type": "Auto-Renewable Subscription",
///                    "purchaseDate": 1760000000000, "expiresDate": …, "environment": "Production", …}],
///  "renewals": [{"originalTransactionId": "…", "autoRenewStatus": 1, "environment": "Production", …}],
///  "appTransactions": [{"appTransactionId": "…", "receiptType": "Production", "bundleId": "…", …}],
///  "notifications": [{"notificationType": "DID_RENEW", "signedDate": …,
///                     "data": {"environment": "Production", "signedTransactionInfo": {…}},
///                     "sendAttempts": [{"attemptDate": …, "sendAttemptResult": "SUCCESS"}]}]}
/// ```
/// Transactions and renewals are JWSTransactionDecodedPayload and JWSRenewalInfoDecodedPayload
/// objects with Apple's field names and dates in UNIX milliseconds; a transaction is served
/// from the environment its `environment` names. Notifications are ResponseBodyV2DecodedPayload
/// objects; their nested `signedTransactionInfo`/`signedRenewalInfo` may be JWS strings or
/// decoded objects (signed at start). Beyond Apple's fields: top-level `bundleId` and
/// `appAppleId` (optional), and `sendAttempts` on a notification (what Get Notification History
/// reports; one success at its `signedDate` otherwise), and `deliver: false` on one that
/// Get Notification History lists but `--send-notifications` never sends (a notification a
/// receiver missed). A customer is the set of transactions of
/// one environment that share an `appTransactionId` (those without one form one customer);
/// `appTransactions` are AppTransaction payloads, served by Get App Transaction Info from the
/// environment their `receiptType` names (for that `appTransactionId`, or any transaction id
/// of its customer).
public struct ServerAPIData: Sendable {
    public var bundleID: String?
    public var appAppleID: Int64?
    public var orders: [String: [String]]
    public var transactions: [[String: JSONValue]]
    public var renewals: [[String: JSONValue]]
    public var notifications: [[String: JSONValue]]
    public var appTransactions: [[String: JSONValue]]

    public init(
        bundleID: String? = nil, appAppleID: Int64? = nil, orders: [String: [String]] = [:], transactions: [[String: JSONValue]] = [],
        renewals: [[String: JSONValue]] = [], notifications: [[String: JSONValue]] = [], appTransactions: [[String: JSONValue]] = []
    ) {
        self.appTransactions = appTransactions
        self.bundleID = bundleID
        self.appAppleID = appAppleID
        self.orders = orders
        self.transactions = transactions
        self.renewals = renewals
        self.notifications = notifications
    }

    /// Largest `--api-data` file read.
    public static let maximumFileBytes = 64 * 1024 * 1024

    /// Parses the JSON described above.
    public init(json bytes: some Collection<UInt8>) throws(ServerAPISimulatorError) {
        guard bytes.count <= Self.maximumFileBytes else {
            throw ServerAPISimulatorError(.invalidData, "the API data is larger than \(Self.maximumFileBytes) bytes")
        }
        let value: JSONValue
        do { value = try JSONValue.parse(bytes) } catch {
            throw ServerAPISimulatorError(.invalidData, "the API data is not JSON: \(error)")
        }
        guard let top = value.object else { throw ServerAPISimulatorError(.invalidData, "the API data is not a JSON object") }
        func objects(_ key: String) throws(ServerAPISimulatorError) -> [[String: JSONValue]] {
            guard let entry = top[key] else { return [] }
            guard let array = entry.array else { throw ServerAPISimulatorError(.invalidData, "\"\(key)\" is not an array") }
            var out: [[String: JSONValue]] = []
            for (index, item) in array.enumerated() {
                guard let object = item.object else {
                    throw ServerAPISimulatorError(.invalidData, "\(key)[\(index)] is not a JSON object")
                }
                out.append(object)
            }
            return out
        }
        var orders: [String: [String]] = [:]
        if let entry = top["orders"] {
            guard let map = entry.object else { throw ServerAPISimulatorError(.invalidData, "\"orders\" is not an object") }
            for (order, ids) in map {
                guard let list = ids.array, list.allSatisfy({ $0.text != nil }) else {
                    throw ServerAPISimulatorError(.invalidData, "orders[\(order.debugDescription)] is not an array of transaction ids")
                }
                orders[order] = list.compactMap(\.text)
            }
        }
        self.init(
            bundleID: top["bundleId"]?.text, appAppleID: top["appAppleId"]?.int64, orders: orders, transactions: try objects("transactions"),
            renewals: try objects("renewals"), notifications: try objects("notifications"), appTransactions: try objects("appTransactions"))
        _ = try ServerAPIStore(self, signer: nil)  // every row checked now, not at the first request
    }

    /// Reads `--api-data FILE`.
    public static func load(file: String) throws(ServerAPISimulatorError) -> ServerAPIData {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw ServerAPISimulatorError(.invalidData, "the API data file \(file) cannot be read")
        }
        return try ServerAPIData(json: data)
    }

    // MARK: The demo customer

    public static let demoBundleID = "com.example.receiptdash"
    public static let demoAppAppleID: Int64 = 1_234_567_890
    /// The demo's order id (production): the monthly subscription's first purchase.
    public static let demoOrderID = "MQ5X7ABCDE"
    /// The demo's second order id (production): the refunded consumable.
    public static let demoRefundedOrderID = "MQ5X7FGHIJ"
    /// The demo production customer's first transaction (monthly subscription, active).
    public static let demoTransactionID = "2000000900000001"
    /// A demo transaction found only in sandbox (a subscription in its grace period).
    public static let demoSandboxTransactionID = "2000000500000001"
    /// Today's payloads (production, a second customer): a monthly plan under a 12-month
    /// commitment first bought with a win-back offer, a prorated refund, a one-time offer code,
    /// and a RESCIND_CONSENT. Its order id, first transaction and app transaction id.
    public static let demoTodayOrderID = "MQ5X7KLMNO"
    public static let demoCommitmentTransactionID = "2000000900000040"
    public static let demoProratedTransactionID = "2000000900000051"
    public static let demoTodayAppTransactionID = "704000000000000003"
    /// Every kind of event (`customer`, a third production customer): an upgrade, offers,
    /// renewal preference changes, grace and billing retry, a price increase, an extension, a
    /// refund, a family revocation, a refund request; its app account token and order id; two
    /// of its notifications Apple lists but never delivered.
    public static let demoKindsAppTransactionID = "704000000000000004"
    public static let demoKindsAccountToken = "7e3fb20b-4cdb-47cc-936d-99d65f608138"
    public static let demoKindsOrderID = "MQ5X7UVWXY"
    public static let demoKindsTransactionID = "2000000900000100"

    /// A support engineer's everyday customer, dated relative to `now` (so its statuses stay
    /// the same whenever it runs). Production: a monthly subscription renewed twice and active
    /// (order ``demoOrderID``), a refunded consumable (order ``demoRefundedOrderID``), a yearly
    /// subscription that expired (auto-renew turned off). Sandbox: a monthly subscription in
    /// its billing grace period and a non-consumable. Notifications for each.
    public static func demo(now: Date, bundleID: String = demoBundleID) -> ServerAPIData {
        let nowMS = Int64((now.timeIntervalSince1970 * 1000).rounded(.down))
        let day: Int64 = 86_400_000
        func at(_ days: Int64) -> JSONValue { .integer(nowMS + days * day) }
        func transaction(
            _ id: String, original: String, product: String, type: String, purchase: Int64, expires: Int64? = nil, group: String? = nil,
            environment: String, reason: String = "PURCHASE", price: Int64, app: String, extra: [String: JSONValue] = [:]
        ) -> [String: JSONValue] {
            var t: [String: JSONValue] = [
                "transactionId": .string(id), "originalTransactionId": .string(original), "bundleId": .string(bundleID),
                "productId": .string(product), "type": .string(type), "purchaseDate": at(purchase),
                "originalPurchaseDate": at(purchase), "quantity": .integer(1), "inAppOwnershipType": .string("PURCHASED"),
                "environment": .string(environment), "transactionReason": .string(reason), "storefront": .string("USA"),
                "storefrontId": .string("143441"), "price": .integer(price), "currency": .string("USD"),
                "appTransactionId": .string(app),
            ]
            if let expires { t["expiresDate"] = at(expires) }
            if let group {
                t["subscriptionGroupIdentifier"] = .string(group)
                t["webOrderLineItemId"] = .string(String(id.dropLast(2)) + "99")
            }
            for (key, value) in extra { t[key] = value }
            return t
        }
        let prod = "704000000000000001"
        let sand = "704000000000000002"
        let monthly = "com.example.receiptdash.pro.monthly"
        let yearly = "com.example.receiptdash.archive.yearly"
        let auto = "Auto-Renewable Subscription"
        var monthly1 = transaction(
            "2000000900000001", original: "2000000900000001", product: monthly, type: auto, purchase: -75, expires: -45, group: "21000001",
            environment: "Production", price: 4990, app: prod)
        monthly1["offerType"] = .integer(1)
        monthly1["offerDiscountType"] = .string("FREE_TRIAL")
        // Today's payloads: a second production customer.
        let today = demoTodayAppTransactionID
        let plan = "com.example.receiptdash.pro.monthly12"
        let archive = "com.example.receiptdash.archive.monthly"
        func commitment(_ period: Int64) -> [String: JSONValue] {
            [
                "billingPlanType": .string("MONTHLY"),
                "commitmentInfo": .object([
                    "billingPeriodNumber": .integer(period), "totalBillingPeriods": .integer(12), "commitmentExpiresDate": at(295),
                    "commitmentPrice": .integer(47880),
                ]),
            ]
        }
        var winBack = commitment(1)
        winBack["offerType"] = .integer(4)
        winBack["offerDiscountType"] = .string("PAY_AS_YOU_GO")
        winBack["offerPeriod"] = .string("P1M")
        winBack["offerIdentifier"] = .string("winback-spring")
        let todays: [[String: JSONValue]] = [
            transaction(
                demoCommitmentTransactionID, original: demoCommitmentTransactionID, product: plan, type: auto, purchase: -65, expires: -35,
                group: "21000003", environment: "Production", reason: "PURCHASE", price: 1990, app: today, extra: winBack),
            transaction(
                "2000000900000041", original: demoCommitmentTransactionID, product: plan, type: auto, purchase: -35, expires: -5,
                group: "21000003", environment: "Production", reason: "RENEWAL", price: 3990, app: today, extra: commitment(2)),
            transaction(
                "2000000900000042", original: demoCommitmentTransactionID, product: plan, type: auto, purchase: -5, expires: 25,
                group: "21000003", environment: "Production", reason: "RENEWAL", price: 3990, app: today, extra: commitment(3)),
            transaction(
                "2000000900000050", original: "2000000900000050", product: archive, type: auto, purchase: -40, expires: -10,
                group: "21000004", environment: "Production", price: 2990, app: today),
            transaction(
                demoProratedTransactionID, original: "2000000900000050", product: archive, type: auto, purchase: -10, expires: 20,
                group: "21000004", environment: "Production", reason: "RENEWAL", price: 2990, app: today,
                extra: [
                    "revocationDate": at(-4), "revocationReason": .integer(1), "revocationType": .string("REFUND_PRORATED"),
                    "revocationPercentage": .integer(80000),
                ]),
            transaction(
                "2000000900000060", original: "2000000900000060", product: "com.example.receiptdash.lifetime", type: "Non-Consumable",
                purchase: -3, environment: "Production", price: 4990, app: today,
                extra: ["offerType": .integer(3), "offerDiscountType": .string("ONE_TIME"), "offerIdentifier": .string("WELCOME")]),
        ]
        let transactions: [[String: JSONValue]] = [
            monthly1,
            transaction(
                "2000000900000002", original: "2000000900000001", product: monthly, type: auto, purchase: -45, expires: -15,
                group: "21000001", environment: "Production", reason: "RENEWAL", price: 4990, app: prod),
            transaction(
                "2000000900000003", original: "2000000900000001", product: monthly, type: auto, purchase: -15, expires: 15,
                group: "21000001", environment: "Production", reason: "RENEWAL", price: 4990, app: prod),
            transaction(
                "2000000900000010", original: "2000000900000010", product: "com.example.receiptdash.coins100", type: "Consumable",
                purchase: -20, environment: "Production", price: 990, app: prod,
                extra: ["revocationDate": at(-18), "revocationReason": .integer(0)]),
            transaction(
                "2000000900000020", original: "2000000900000020", product: yearly, type: auto, purchase: -400, expires: -35,
                group: "21000002", environment: "Production", price: 29990, app: prod),
            transaction(
                "2000000500000001", original: "2000000500000001", product: monthly, type: auto, purchase: -32, expires: -2,
                group: "21000001", environment: "Sandbox", price: 4990, app: sand),
            transaction(
                "2000000500000005", original: "2000000500000005", product: "com.example.receiptdash.lifetime", type: "Non-Consumable",
                purchase: -10, environment: "Sandbox", price: 9990, app: sand),
        ]
        func renewal(_ original: String, product: String, environment: String, extra: [String: JSONValue]) -> [String: JSONValue] {
            var r: [String: JSONValue] = [
                "originalTransactionId": .string(original), "productId": .string(product), "autoRenewProductId": .string(product),
                "environment": .string(environment), "currency": .string("USD"),
            ]
            for (key, value) in extra { r[key] = value }
            return r
        }
        let renewals: [[String: JSONValue]] = [
            renewal(
                "2000000900000001", product: monthly, environment: "Production",
                extra: [
                    "autoRenewStatus": .integer(1), "renewalDate": at(15), "recentSubscriptionStartDate": at(-75),
                    "renewalPrice": .integer(4990),
                ]),
            renewal(
                "2000000900000020", product: yearly, environment: "Production",
                extra: [
                    "autoRenewStatus": .integer(0), "expirationIntent": .integer(1), "renewalDate": at(-35),
                    "recentSubscriptionStartDate": at(-400),
                ]),
            renewal(
                "2000000500000001", product: monthly, environment: "Sandbox",
                extra: [
                    "autoRenewStatus": .integer(1), "isInBillingRetryPeriod": .bool(true), "gracePeriodExpiresDate": at(4),
                    "expirationIntent": .integer(2), "renewalDate": at(-2), "recentSubscriptionStartDate": at(-32),
                ]),
            renewal(
                demoCommitmentTransactionID, product: plan, environment: "Production",
                extra: [
                    "autoRenewStatus": .integer(1), "renewalDate": at(25), "recentSubscriptionStartDate": at(-65), "renewalPrice": .integer(3990),
                    "renewalBillingPlanType": .string("MONTHLY"), "appTransactionId": .string(today),
                    "commitmentInfo": .object([
                        "commitmentAutoRenewStatus": .bool(false), "commitmentAutoRenewProductId": .string(plan),
                        "commitmentRenewalBillingPlanType": .string("MONTHLY"), "commitmentRenewalDate": at(295),
                        "commitmentRenewalPrice": .integer(47880),
                    ]),
                ]),
            renewal(
                "2000000900000050", product: archive, environment: "Production",
                extra: ["autoRenewStatus": .integer(0), "renewalDate": at(20), "recentSubscriptionStartDate": at(-40)]),
        ]
        let appTransactions: [[String: JSONValue]] = [
            ("Production", prod, Int64(-400)), ("Sandbox", sand, Int64(-32)), ("Production", today, Int64(-65)), ("Production", demoKindsAppTransactionID, Int64(-120)),
        ].map { environment, id, days in
            var app: [String: JSONValue] = [
                "receiptType": .string(environment), "bundleId": .string(bundleID), "applicationVersion": .string("42"),
                "originalApplicationVersion": .string("7"), "originalPurchaseDate": at(days), "appTransactionId": .string(id),
                "originalPlatform": .string("iOS"), "receiptCreationDate": at(days),
            ]
            if environment == "Production" { app["appAppleId"] = .integer(demoAppAppleID) }
            return app
        }
        func notification(
            _ uuid: String, _ type: String, _ subtype: String?, at days: Int64, environment: String, transaction: [String: JSONValue],
            attempts: [(Int64, String)] = []
        ) -> [String: JSONValue] {
            var data: [String: JSONValue] = [
                "bundleId": .string(bundleID), "environment": .string(environment), "signedTransactionInfo": .object(transaction),
            ]
            if environment == "Production" { data["appAppleId"] = .integer(demoAppAppleID) }
            var n: [String: JSONValue] = [
                "notificationType": .string(type), "notificationUUID": .string(uuid), "version": .string("2.0"),
                "signedDate": at(days), "data": .object(data),
            ]
            if let subtype { n["subtype"] = .string(subtype) }
            if !attempts.isEmpty {
                n["sendAttempts"] = .array(
                    attempts.map { .object(["attemptDate": .integer(nowMS + $0.0), "sendAttemptResult": .string($0.1)]) })
            }
            return n
        }
        let notifications: [[String: JSONValue]] = [
            notification(
                "5b1a7e1c-0001-4d7e-9c1e-5f1f0a000001", "SUBSCRIBED", "INITIAL_BUY", at: -75, environment: "Production",
                transaction: transactions[0]),
            notification(
                "5b1a7e1c-0002-4d7e-9c1e-5f1f0a000002", "DID_RENEW", nil, at: -45, environment: "Production", transaction: transactions[1]),
            notification(
                "5b1a7e1c-0003-4d7e-9c1e-5f1f0a000003", "DID_RENEW", nil, at: -15, environment: "Production", transaction: transactions[2],
                attempts: [(-15 * day, "TIMED_OUT"), (-15 * day + 3_600_000, "SUCCESS")]),
            notification(
                "5b1a7e1c-0004-4d7e-9c1e-5f1f0a000004", "REFUND", nil, at: -18, environment: "Production", transaction: transactions[3],
                attempts: [(-18 * day, "UNSUCCESSFUL_HTTP_RESPONSE_CODE")]),
            notification(
                "5b1a7e1c-0005-4d7e-9c1e-5f1f0a000005", "EXPIRED", "VOLUNTARY", at: -35, environment: "Production",
                transaction: transactions[4]),
            notification(
                "5b1a7e1c-0006-4d7e-9c1e-5f1f0a000006", "DID_FAIL_TO_RENEW", "GRACE_PERIOD", at: -2, environment: "Sandbox",
                transaction: transactions[5]),
            notification(
                "5b1a7e1c-0007-4d7e-9c1e-5f1f0a000007", "SUBSCRIBED", "RESUBSCRIBE", at: -65, environment: "Production",
                transaction: todays[0]),
            notification(
                "5b1a7e1c-0008-4d7e-9c1e-5f1f0a000008", "DID_RENEW", nil, at: -5, environment: "Production", transaction: todays[2]),
            notification(
                "5b1a7e1c-0009-4d7e-9c1e-5f1f0a000009", "REFUND", nil, at: -4, environment: "Production", transaction: todays[4]),
            [
                "notificationType": .string("RESCIND_CONSENT"), "notificationUUID": .string("5b1a7e1c-0010-4d7e-9c1e-5f1f0a000010"),
                "version": .string("2.0"), "signedDate": at(-1),
                "appData": .object([
                    "appAppleId": .integer(demoAppAppleID), "bundleId": .string(bundleID), "environment": .string("Production"),
                    "signedAppTransactionInfo": .object(appTransactions[2]),
                ]),
            ],
        ]
        // The third customer: every kind of event.
        let kinds = demoKindsAppTransactionID
        func kind(
            _ id: String, original: String, product: String, type: String = auto, purchase: Int64, expires: Int64? = nil, group: String? = nil,
            reason: String = "PURCHASE", price: Int64 = 990, extra: [String: JSONValue] = [:]
        ) -> [String: JSONValue] {
            transaction(
                id, original: original, product: product, type: type, purchase: purchase, expires: expires, group: group, environment: "Production",
                reason: reason, price: price, app: kinds, extra: extra.merging(["appAccountToken": .string(demoKindsAccountToken)]) { $1 })
        }
        let basic = "com.example.receiptdash.plan.basic"
        let premium = "com.example.receiptdash.plan.premium"
        let news = "com.example.receiptdash.news.monthly"
        let k = "20000009000001"
        let kindsRows: [[String: JSONValue]] = [
            kind(k + "00", original: k + "00", product: basic, purchase: -120, expires: -90, group: "21000005", price: 1990,
                 extra: ["offerType": .integer(1), "offerDiscountType": .string("FREE_TRIAL")]),
            kind(k + "01", original: k + "00", product: basic, purchase: -90, expires: -60, group: "21000005", reason: "RENEWAL", price: 1990,
                 extra: ["isUpgraded": .bool(true), "revocationDate": at(-70), "revocationReason": .integer(0)]),
            kind(k + "02", original: k + "00", product: premium, purchase: -70, expires: -40, group: "21000005", price: 3990),
            kind(k + "03", original: k + "00", product: premium, purchase: -40, expires: -10, group: "21000005", reason: "RENEWAL", price: 3990,
                 extra: ["offerType": .integer(2), "offerIdentifier": .string("loyal-10"), "offerDiscountType": .string("PAY_AS_YOU_GO")]),
            kind(k + "04", original: k + "00", product: premium, purchase: -10, expires: 20, group: "21000005", reason: "RENEWAL", price: 3990),
            kind(k + "10", original: k + "10", product: news, purchase: -100, expires: -70, group: "21000006", price: 490),
            kind(k + "11", original: k + "10", product: news, purchase: -70, expires: -40, group: "21000006", reason: "RENEWAL", price: 490),
            kind(k + "20", original: k + "20", product: "com.example.receiptdash.coins500", type: "Consumable", purchase: -1),
            kind(k + "21", original: k + "21", product: "com.example.receiptdash.coins100", type: "Consumable", purchase: -20,
                 extra: ["revocationDate": at(-12), "revocationReason": .integer(1)]),
            kind(k + "30", original: k + "30", product: "com.example.receiptdash.themes", type: "Non-Consumable", purchase: -50, price: 2990,
                 extra: [
                    "inAppOwnershipType": .string("FAMILY_SHARED"), "revocationDate": at(-6), "revocationType": .string("FAMILY_REVOKE"),
                    "revocationReason": .integer(0),
                 ]),
        ]
        let kindsRenewals: [[String: JSONValue]] = [
            renewal(
                k + "00", product: premium, environment: "Production",
                extra: [
                    "autoRenewStatus": .integer(0), "renewalDate": at(20), "recentSubscriptionStartDate": at(-120), "priceIncreaseStatus": .integer(0),
                    "renewalPrice": .integer(4990), "appAccountToken": .string(demoKindsAccountToken), "appTransactionId": .string(kinds),
                ]),
            renewal(
                k + "10", product: news, environment: "Production",
                extra: ["autoRenewStatus": .integer(0), "expirationIntent": .integer(2), "renewalDate": at(-40), "recentSubscriptionStartDate": at(-100)]),
        ]
        func kindNotification(_ n: Int, _ type: String, _ subtype: String?, at days: Int64, _ row: Int, deliver: Bool = true) -> [String: JSONValue] {
            var object = notification(
                "5b1a7e1c-01\(n < 10 ? "0" : "")\(n)-4d7e-9c1e-5f1f0a0001\(n < 10 ? "0" : "")\(n)", type, subtype, at: days, environment: "Production",
                transaction: kindsRows[row], attempts: deliver ? [] : [(days * day, "UNSUCCESSFUL_HTTP_RESPONSE_CODE"), (days * day + 3_600_000, "TIMED_OUT")])
            if !deliver { object["deliver"] = .bool(false) }
            return object
        }
        var kindsNotifications: [[String: JSONValue]] = [
            kindNotification(1, "SUBSCRIBED", "INITIAL_BUY", at: -120, 0),
            kindNotification(2, "DID_RENEW", nil, at: -90, 1, deliver: false),
            kindNotification(3, "DID_CHANGE_RENEWAL_PREF", "UPGRADE", at: -70, 2),
            kindNotification(4, "OFFER_REDEEMED", nil, at: -40, 3),
            kindNotification(5, "DID_CHANGE_RENEWAL_PREF", "DOWNGRADE", at: -20, 3),
            kindNotification(6, "DID_CHANGE_RENEWAL_PREF", nil, at: -19, 3),
            kindNotification(7, "DID_FAIL_TO_RENEW", "GRACE_PERIOD", at: -11, 3),
            kindNotification(8, "DID_RENEW", "BILLING_RECOVERY", at: -10, 4),
            kindNotification(9, "PRICE_INCREASE", "PENDING", at: -5, 4),
            kindNotification(10, "RENEWAL_EXTENDED", nil, at: -3, 4),
            kindNotification(11, "DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", at: -2, 4),
            kindNotification(12, "SUBSCRIBED", "INITIAL_BUY", at: -100, 5),
            kindNotification(13, "DID_RENEW", nil, at: -70, 6),
            kindNotification(14, "DID_FAIL_TO_RENEW", nil, at: -40, 6),
            kindNotification(15, "EXPIRED", "BILLING_RETRY", at: -30, 6),
            kindNotification(16, "REFUND", nil, at: -12, 8, deliver: false),
            kindNotification(17, "REVOKE", nil, at: -6, 9),
            kindNotification(18, "CONSUMPTION_REQUEST", nil, at: 0, 7),
        ]
        // The refund request came two hours ago: its answer is due within the next ten.
        kindsNotifications[17]["signedDate"] = .integer(nowMS - 2 * 3_600_000)
        return ServerAPIData(
            bundleID: bundleID, appAppleID: demoAppAppleID,
            orders: [
                demoOrderID: ["2000000900000001"], demoRefundedOrderID: ["2000000900000010"], demoTodayOrderID: [demoCommitmentTransactionID],
                demoKindsOrderID: [demoKindsTransactionID],
            ],
            transactions: transactions + todays + kindsRows, renewals: renewals + kindsRenewals, notifications: notifications + kindsNotifications,
            appTransactions: appTransactions)
    }
}
