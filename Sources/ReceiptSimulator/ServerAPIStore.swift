import Foundation
import AppStoreAPI
import ReceiptCore

/// One transaction of the data, with the fields the endpoints select and sort on.
struct TransactionRow: Sendable {
    let object: [String: JSONValue]
    let id: String
    let originalID: String
    let productID: String
    let type: String
    let purchaseMS: Int64
    var expiresMS: Int64?
    let revocationMS: Int64?
    let groupID: String?
    let ownership: String?
    /// `appTransactionId`, or "" (the customer of every row without one).
    let customer: String

    static let autoRenewable = "Auto-Renewable Subscription"
}

/// One notification of the data, signed at start, as Notification History gives it (not the
/// `notifications` listing's `NotificationRow`).
struct HistoryNotification: Sendable {
    let signedPayload: String
    /// `notificationUUID`, when the payload has one.
    let uuid: String?
    let sendAttempts: JSONValue
    /// The data gave `sendAttempts` (otherwise one success at `signedDate` stands in for them,
    /// until the sender's own attempts replace it).
    let explicitAttempts: Bool
    let type: String?
    let subtype: String?
    let signedMS: Int64
    /// The last send attempt was not `SUCCESS`.
    let failed: Bool
    let customer: String?
    /// False for a notification `--send-notifications` never sends (`"deliver": false` in the
    /// data): Get Notification History lists it, a receiver never got it.
    var deliver = true
}

/// One environment's rows, indexed.
struct EnvironmentStore: Sendable {
    /// Sorted by purchase date, then transaction id.
    var rows: [TransactionRow] = []
    var byID: [String: Int] = [:]
    var customers: [String: [Int]] = [:]
    var renewals: [String: [String: JSONValue]] = [:]
    var notifications: [HistoryNotification] = []

    /// AppTransaction payloads by `appTransactionId`.
    var appTransactions: [String: [String: JSONValue]] = [:]

    /// The row of a transaction id, or of an original transaction id with no row of its own.
    func row(_ id: String) -> TransactionRow? {
        if let index = byID[id] { return rows[index] }
        return rows.first { $0.originalID == id }
    }

    /// ``row(_:)``, or (as the customer-wide endpoints take an `appTransactionId` for their
    /// `anyTransactionId`) the first row of the customer it names.
    func customerRow(_ id: String) -> TransactionRow? {
        if let row = row(id) { return row }
        guard !id.isEmpty, let first = customers[id]?.first else { return nil }
        return rows[first]
    }

    /// Every row of `id`'s customer, oldest first.
    func customerRows(of row: TransactionRow) -> [TransactionRow] {
        (customers[row.customer] ?? []).map { rows[$0] }
    }
}

/// The data indexed for the endpoints: checked once, at start.
struct ServerAPIStore: Sendable {
    var environments: [APIEnvironment: EnvironmentStore] = [.production: EnvironmentStore(), .sandbox: EnvironmentStore()]
    let orders: [String: [String]]
    /// Bundle ids a token's `bid` may name (empty: any).
    let bundleIDs: Set<String>
    let bundleID: String?
    let appAppleID: Int64?

    /// - Parameter signer: signs the notifications' payloads (nil: only check the data).
    init(_ data: ServerAPIData, signer: AppleTestPKI?, now: Date = Date()) throws(ServerAPISimulatorError) {
        orders = data.orders
        appAppleID = data.appAppleID
        var bundles = Set<String>()
        if let bundle = data.bundleID { bundles.insert(bundle) }
        var byEnvironment: [APIEnvironment: [TransactionRow]] = [.production: [], .sandbox: []]
        for (index, object) in data.transactions.enumerated() {
            func fail(_ why: String) -> ServerAPISimulatorError { ServerAPISimulatorError(.invalidData, "transactions[\(index)]: \(why)") }
            guard let id = object["transactionId"]?.text, !id.isEmpty else { throw fail("no transactionId") }
            guard let environment = object["environment"]?.text.flatMap(APIEnvironment.init(rawValue:)) else {
                throw fail("environment must be \"Production\" or \"Sandbox\"")
            }
            guard let purchase = object["purchaseDate"]?.int64 else { throw fail("no purchaseDate (UNIX milliseconds)") }
            if let bundle = object["bundleId"]?.text { bundles.insert(bundle) }
            byEnvironment[environment, default: []].append(
                TransactionRow(
                    object: object, id: id, originalID: object["originalTransactionId"]?.text ?? id,
                    productID: object["productId"]?.text ?? "", type: object["type"]?.text ?? "", purchaseMS: purchase,
                    expiresMS: object["expiresDate"]?.int64, revocationMS: object["revocationDate"]?.int64,
                    groupID: object["subscriptionGroupIdentifier"]?.text, ownership: object["inAppOwnershipType"]?.text,
                    customer: object["appTransactionId"]?.text ?? ""))
        }
        for (environment, rows) in byEnvironment {
            var store = EnvironmentStore()
            store.rows = rows.sorted { ($0.purchaseMS, $0.id) < ($1.purchaseMS, $1.id) }
            for (index, row) in store.rows.enumerated() {
                guard store.byID[row.id] == nil else {
                    throw ServerAPISimulatorError(.invalidData, "transaction \(row.id.debugDescription) appears twice in \(environment)")
                }
                store.byID[row.id] = index
                store.customers[row.customer, default: []].append(index)
            }
            environments[environment] = store
        }
        for (index, object) in data.renewals.enumerated() {
            guard let original = object["originalTransactionId"]?.text,
                let environment = object["environment"]?.text.flatMap(APIEnvironment.init(rawValue:))
            else {
                throw ServerAPISimulatorError(
                    .invalidData, "renewals[\(index)]: needs originalTransactionId and environment \"Production\" or \"Sandbox\"")
            }
            environments[environment]?.renewals[original] = object
        }
        for (index, object) in data.appTransactions.enumerated() {
            guard let id = object["appTransactionId"]?.text, !id.isEmpty,
                let environment = object["receiptType"]?.text.flatMap(APIEnvironment.init(rawValue:))
            else {
                throw ServerAPISimulatorError(
                    .invalidData, "appTransactions[\(index)]: needs appTransactionId and receiptType \"Production\" or \"Sandbox\"")
            }
            environments[environment]?.appTransactions[id] = object
        }
        bundleIDs = bundles
        bundleID = data.bundleID ?? bundles.sorted().first
        let nowMS = Self.milliseconds(now)
        for (index, object) in data.notifications.enumerated() {
            let row = try notification(object, index: index, signer: signer, nowMS: nowMS)
            environments[row.environment]?.notifications.append(row.row)
        }
        for environment in APIEnvironment.allCases {
            environments[environment]?.notifications.sort { $0.signedMS < $1.signedMS }
        }
    }

    private func notification(_ object: [String: JSONValue], index: Int, signer: AppleTestPKI?, nowMS: Int64) throws(ServerAPISimulatorError)
        -> (environment: APIEnvironment, row: HistoryNotification)
    {
        var payload = object
        let attempts = payload.removeValue(forKey: "sendAttempts")
        let deliver = payload.removeValue(forKey: "deliver")?.bool ?? true
        let signedMS = object["signedDate"]?.int64 ?? nowMS
        payload["signedDate"] = .integer(signedMS)
        // `data`, or `appData` (RESCIND_CONSENT), `summary`, `externalPurchaseToken`.
        let container = ["data", "appData", "summary", "externalPurchaseToken"].first { object[$0]?.object != nil } ?? "data"
        var data = object[container]?.object ?? [:]
        let environment = data["environment"]?.text.flatMap(APIEnvironment.init(rawValue:)) ?? .production
        var transactionID: String?
        var appTransactionID: String?
        for key in ["signedTransactionInfo", "signedRenewalInfo", "signedAppTransactionInfo"] {
            switch data[key] {
            case .object(var nested)?:
                if key == "signedTransactionInfo" {
                    transactionID = nested["transactionId"]?.text
                    appTransactionID = nested["appTransactionId"]?.text
                }
                if key == "signedAppTransactionInfo" { appTransactionID = nested["appTransactionId"]?.text }
                if nested["signedDate"] == nil { nested["signedDate"] = .integer(signedMS) }
                if let signer { data[key] = .string(try signer.signJWS(payload: .object(nested))) }
            case .string(let jws)? where key == "signedTransactionInfo":
                if let token = try? JWSToken(compact: Array(jws.utf8)) {
                    transactionID = token.payload["transactionId"]?.text
                    appTransactionID = token.payload["appTransactionId"]?.text
                }
            case nil, .string?: break
            default:
                throw ServerAPISimulatorError(.invalidData, "notifications[\(index)].\(container).\(key) is neither a JWS nor an object")
            }
        }
        if object[container] != nil { payload[container] = .object(data) }
        let customer = transactionID.flatMap { environments[environment]?.row($0)?.customer } ?? appTransactionID
        let sendAttempts: JSONValue
        switch attempts {
        case .array(let list)?: sendAttempts = .array(list)
        case nil: sendAttempts = .array([.object(["attemptDate": .integer(signedMS), "sendAttemptResult": .string("SUCCESS")])])
        default: throw ServerAPISimulatorError(.invalidData, "notifications[\(index)].sendAttempts is not an array")
        }
        let last = sendAttempts.array?.last?["sendAttemptResult"]?.text
        let signed = try signer.map { pki throws(ServerAPISimulatorError) in try pki.signJWS(payload: .object(payload)) } ?? ""
        return (
            environment,
            HistoryNotification(
                signedPayload: signed, uuid: object["notificationUUID"]?.text, sendAttempts: sendAttempts,
                explicitAttempts: attempts != nil, type: object["notificationType"]?.text,
                subtype: object["subtype"]?.text, signedMS: signedMS, failed: last != "SUCCESS", customer: customer, deliver: deliver)
        )
    }

    static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded(.down)) }
}
