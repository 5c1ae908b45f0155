import Foundation
import ReceiptCore

/// The id a customer is looked for by in the audit trail (`customer --offline`).
public enum CustomerKey: Sendable, Hashable {
    case transactionID(String)
    case originalTransactionID(String)
    /// The customer's `appTransactionId` (one per Apple Account and app).
    case appTransactionID(String)
    /// The `appAccountToken` the app set (a UUID, compared lowercased): one token may name
    /// several customers.
    case appAccountToken(String)
}

/// Which column a customer link is read by.
public enum CustomerLinkColumn: String, Sendable, Hashable, CaseIterable {
    case transactionID = "transaction_id"
    case originalTransactionID = "original_transaction_id"
    case appTransactionID = "app_transaction_id"
    case appAccountToken = "app_account_token"
}

/// What one stored row says ties ids together: a purchase or a notification seen with this
/// original transaction id, app transaction id and app account token.
public struct CustomerLink: Sendable, Hashable {
    public var originalTransactionID: String?
    public var appTransactionID: String?
    public var appAccountToken: String?

    public init(originalTransactionID: String?, appTransactionID: String?, appAccountToken: String?) {
        self.originalTransactionID = originalTransactionID
        self.appTransactionID = appTransactionID
        self.appAccountToken = appAccountToken
    }
}

/// One purchase the trail holds, with the receipt row it came in: a receipt or JWS that was
/// inspected or verified, or a transaction a look-up recorded.
public struct StoredPurchase: Sendable, Hashable {
    public var receiptID: Int64
    /// The receipt's content hash (what `history` names it by).
    public var contentHash: String
    public var format: String
    /// When the receipt was first seen.
    public var firstSeen: Date
    /// Whether it came from an App Store Server API look-up (a sighting of kind `lookup`).
    public var fromLookup: Bool
    /// The receipt's verification: state, and Apple's `status` when verifyReceipt answered.
    public var state: String
    public var verifyStatus: Int?
    public var verifiedAt: Date?
    /// The purchase, with the fields the trail keeps (``PurchaseField/audited``).
    public var purchase: Purchase

    public init(
        receiptID: Int64, contentHash: String, format: String, firstSeen: Date, fromLookup: Bool, state: String, verifyStatus: Int?,
        verifiedAt: Date?, purchase: Purchase
    ) {
        self.receiptID = receiptID
        self.contentHash = contentHash
        self.format = format
        self.firstSeen = firstSeen
        self.fromLookup = fromLookup
        self.state = state
        self.verifyStatus = verifyStatus
        self.verifiedAt = verifiedAt
        self.purchase = purchase
    }
}

/// Everything the trail holds about one customer's original transactions.
public struct StoredCustomerRecords: Sendable {
    public var originalTransactionIDs: [String]
    public var appTransactionIDs: [String]
    public var appAccountTokens: [String]
    /// Oldest first.
    public var notifications: [StoredNotification]
    public var purchases: [StoredPurchase]
    /// Oldest first.
    public var actions: [AuditAction]
    /// Whether a table held more rows than the limit (the oldest are then missing).
    public var truncated: Bool
    /// The Retention Messaging realtime requests about these original transactions, oldest first.
    public var retention: [RetentionRecord] = []

    public init(
        originalTransactionIDs: [String] = [], appTransactionIDs: [String] = [], appAccountTokens: [String] = [],
        notifications: [StoredNotification] = [], purchases: [StoredPurchase] = [], actions: [AuditAction] = [], truncated: Bool = false
    ) {
        self.originalTransactionIDs = originalTransactionIDs
        self.appTransactionIDs = appTransactionIDs
        self.appAccountTokens = appAccountTokens
        self.notifications = notifications
        self.purchases = purchases
        self.actions = actions
        self.truncated = truncated
    }

    public var isEmpty: Bool { notifications.isEmpty && purchases.isEmpty && actions.isEmpty }

    /// The products the customer's notifications and purchases name, sorted (the mass
    /// extensions of these are read with the customer's writes).
    public var productIDs: [String] {
        Array(Set(notifications.compactMap(\.record.productID) + purchases.compactMap(\.purchase.productID))).sorted()
    }
}

/// The two reads a store answers for ``customers(_:limit:)``, each in one read.
public protocol CustomerRecordSource: Sendable {
    /// The links of every purchase and notification whose column is one of `columns` and whose
    /// value is one of `values`.
    func customerLinks(_ columns: [CustomerLinkColumn], in values: [String], limit: Int) async throws -> [CustomerLink]
    /// The notifications and purchases of these original transactions or app transaction ids,
    /// and the actions of every original transaction they name (or of `transactionIDs`), at
    /// most `limit` of each, oldest first, in one snapshot.
    func customerRecords(originalTransactionIDs: [String], appTransactionIDs: [String], transactionIDs: [String], limit: Int) async throws
        -> StoredCustomerRecords
}

extension CustomerRecordSource {
    /// The customers the trail knows by `key`, each with its records: one for a transaction or
    /// app transaction id, any number for an app account token. A customer is an
    /// `appTransactionId` with every original transaction seen with it, or an original
    /// transaction seen without one. Empty when nothing matches.
    ///
    /// Two reads per customer: the links of the key, then the rows (which follow the app
    /// transaction id to the customer's other original transactions).
    public func customers(_ key: CustomerKey, limit: Int = 10_000) async throws -> [StoredCustomerRecords] {
        let (column, value) = key.column
        let columns: [CustomerLinkColumn] = column == .transactionID ? [.transactionID, .originalTransactionID] : [column]
        var groups = CustomerGroups()
        for link in try await customerLinks(columns, in: [value], limit: limit) { groups.add(link) }
        if case .originalTransactionID(let id) = key { groups.add(CustomerLink(originalTransactionID: id, appTransactionID: nil, appAccountToken: nil)) }
        var out: [StoredCustomerRecords] = []
        for group in groups.customers {
            var records = try await customerRecords(
                originalTransactionIDs: group.originals, appTransactionIDs: group.appIDs, transactionIDs: key.transactionID.map { [$0] } ?? [],
                limit: limit)
            var tokens = group.tokens
            for p in records.purchases { if let t = p.purchase.appAccountToken?.lowercased(), !tokens.contains(t) { tokens.append(t) } }
            for n in records.notifications {
                if let t = n.record.appAccountToken?.lowercased(), !tokens.contains(t) { tokens.append(t) }
            }
            records.appTransactionIDs = group.appIDs
            records.appAccountTokens = tokens
            if !records.isEmpty, let trail = self as? any RetentionTrail {
                records.retention = try await trail.retentionRequests(
                    RetentionQuery(originalTransactionIDs: records.originalTransactionIDs, limit: limit))
            }
            if !records.isEmpty { out.append(records) }
        }
        // In a fixed order: by app transaction id, then original transaction id.
        return out.sorted { ($0.appTransactionIDs.first ?? "~", $0.originalTransactionIDs.first ?? "") < ($1.appTransactionIDs.first ?? "~", $1.originalTransactionIDs.first ?? "") }
    }
}

extension CustomerKey {
    var transactionID: String? {
        if case .transactionID(let id) = self { return id }
        return nil
    }
}

extension StoredCustomerRecords {
    /// `originals`, then every other original transaction the rows name, in order.
    package static func originals(_ originals: [String], notifications: [StoredNotification], purchases: [StoredPurchase]) -> [String] {
        var seen = Set(originals)
        var out = originals
        for id in notifications.compactMap(\.record.originalTransactionID) + purchases.compactMap(\.purchase.originalTransactionID)
        where seen.insert(id).inserted {
            out.append(id)
        }
        return out
    }
}

/// Original transactions grouped into customers by the app transaction id they were seen with.
struct CustomerGroups {
    struct Group {
        var appIDs: [String] = []
        var originals: [String] = []
        var tokens: [String] = []
    }

    private var groups: [Group] = []
    private var byApp: [String: Int] = [:]
    private var byOriginal: [String: Int] = [:]

    var customers: [Group] { groups.filter { !$0.originals.isEmpty } }

    mutating func add(_ link: CustomerLink) {
        let app = link.appTransactionID.flatMap { $0.isEmpty ? nil : $0 }
        let original = link.originalTransactionID.flatMap { $0.isEmpty ? nil : $0 }
        guard app != nil || original != nil else { return }
        let index: Int
        if let app, let known = byApp[app] {
            index = known
        } else if let original, let known = byOriginal[original] {
            index = known
        } else {
            index = groups.count
            groups.append(Group())
        }
        if let app, byApp[app] == nil {
            byApp[app] = index
            groups[index].appIDs.append(app)
        }
        if let original, byOriginal[original] == nil {
            byOriginal[original] = index
            groups[index].originals.append(original)
        }
        if let token = link.appAccountToken?.lowercased(), !token.isEmpty, !groups[index].tokens.contains(token) {
            groups[index].tokens.append(token)
        }
    }
}

/// The customer ids a stored notification's `signed_payload` carries: what migration v10
/// fills in for the rows stored before it (read without a trust check: the row's verdict was
/// recorded when it arrived).
package enum NotificationCustomerIDs {
    package static func read(_ signedPayload: String) -> (appAccountToken: String?, appTransactionID: String?) {
        guard let decoded = try? ReceiptDecoder().decode(text: signedPayload) else { return (nil, nil) }
        // The decoder adds a notification's nested transaction and renewal info to these.
        let transaction = decoded.transactions.first
        let renewal = decoded.pendingRenewalInfo.first
        return (
            (transaction?.appAccountToken ?? renewal?.appAccountToken)?.lowercased(),
            transaction?.appTransactionID ?? renewal?.appTransactionID
        )
    }
}

/// What `receiptdash bench --customer-db` asks a store beside ``CustomerRecordSource``: the
/// floor to compare with (the same rows, one bare indexed SELECT per table) and the plan of
/// each query, to show no table is scanned.
package protocol CustomerQueryProbe: Sendable {
    func bareCustomerRows(originalTransactionIDs: [String]) async throws -> Int
    func customerQueryPlans(_ key: CustomerKey, originalTransactionIDs: [String], appTransactionIDs: [String]) async throws -> [String]
}

extension CustomerKey {
    /// The column the key is found by first, and its value as stored.
    package var column: (CustomerLinkColumn, String) {
        switch self {
        case .transactionID(let id): (.transactionID, id)
        case .originalTransactionID(let id): (.originalTransactionID, id)
        case .appTransactionID(let id): (.appTransactionID, id)
        case .appAccountToken(let token): (.appAccountToken, token.lowercased())
        }
    }
}
