import AppStoreAPI
import AppStoreClients
import AuditTrail
import CustomerTimeline
import Foundation
import ReceiptCore

/// What `customer` is asked to find a customer by.
public enum CustomerQuery: Sendable, Hashable {
    case transactionID(String)
    case originalTransactionID(String)
    /// The App Store invoice's order ID: the API alone knows it.
    case orderID(String)
    case appTransactionID(String)
    /// The trail alone knows it: every notification, look-up and receipt indexes its token.
    case appAccountToken(String)

    /// How the query is said in "no customer with …".
    public var words: String {
        switch self {
        case .transactionID(let id): "transaction id \(id)"
        case .originalTransactionID(let id): "original transaction id \(id)"
        case .orderID(let id): "order id \(id)"
        case .appTransactionID(let id): "app transaction id \(id)"
        case .appAccountToken(let token): "app account token \(token)"
        }
    }

    /// The trail's key for it; nil for an order id.
    var key: CustomerKey? {
        switch self {
        case .transactionID(let id): .transactionID(id)
        case .originalTransactionID(let id): .originalTransactionID(id)
        case .appTransactionID(let id): .appTransactionID(id)
        case .appAccountToken(let token): .appAccountToken(token)
        case .orderID: nil
        }
    }
}

/// The stories found, or where it looked when none was.
public struct CustomerSearchResult: Sendable {
    public var stories: [CustomerStory]
    /// "no customer with …" and where it looked, when nothing was found.
    public var notFound: String?
    /// Whether the API or the trail failed (the stories hold what the rest gave).
    public var failed: Bool
}

/// Finds a customer in the API and the audit trail and tells the story: the API's look-up
/// (history, statuses, refunds, the app transaction) and what Apple says it sent, merged with
/// the trail's notifications, writes and receipts. Offline (no ``lookup``) it reads the trail
/// alone.
public struct CustomerFinder: Sendable {
    public var store: (any AuditBackend)?
    public var lookup: CustomerLookupService?
    public var environment: APIEnvironmentSelection
    public var filters: LookupFilters
    /// The most rows of each table read for one customer.
    public var limit = 10_000

    public init(
        store: (any AuditBackend)?, lookup: CustomerLookupService?, environment: APIEnvironmentSelection = .auto,
        filters: LookupFilters = LookupFilters()
    ) {
        self.store = store
        self.lookup = lookup
        self.environment = environment
        self.filters = filters
    }

    /// Customers the trail knows only by a token write Apple took whose body carries the token
    /// asked about (a write names no token column): what Apple confirmed is known to the trail
    /// at once. Writes by transaction, original or app transaction id are found with the
    /// purchases and notifications (``CustomerRecordSource/customers(_:limit:)``).
    static func customersFromWrites(_ query: CustomerQuery, store: any AuditBackend, known: [StoredCustomerRecords], limit: Int) async throws
        -> [StoredCustomerRecords]
    {
        guard case .appAccountToken(let token) = query else { return [] }
        let wanted = token.lowercased()
        let writes = try await store.actions(AuditActionQuery(limit: limit)).filter { action in
            guard action.action == APIAction.appAccountToken.rawValue, action.result == "success", let body = action.requestBody,
                let sent = (try? JSONValue.parse(Array(body.utf8)))?["appAccountToken"]?.text
            else { return false }
            return sent.lowercased() == wanted
        }
        var seen = Set(known.flatMap(\.originalTransactionIDs))
        var found: [StoredCustomerRecords] = []
        for write in writes.reversed() {
            guard let original = write.originalTransactionID, !seen.contains(original) else { continue }
            for var records in try await store.customers(.originalTransactionID(original), limit: limit) {
                if !records.appAccountTokens.contains(wanted) { records.appAccountTokens.append(wanted) }
                seen.formUnion(records.originalTransactionIDs)
                found.append(records)
            }
        }
        return found
    }

    /// - Parameter pointInTime: `at` was chosen (`--at`): the stories are as of it.
    public func find(_ query: CustomerQuery, at: Date, pointInTime: Bool = false, onEvent: (@Sendable (APIClientEvent) -> Void)? = nil) async -> CustomerSearchResult {
        var storeError: String?
        var stored: [StoredCustomerRecords]? = nil
        if let store, let key = query.key {
            do {
                stored = try await store.customers(key, limit: limit)
                stored = (stored ?? []) + (try await Self.customersFromWrites(query, store: store, known: stored ?? [], limit: limit))
            } catch {
                storeError = "the audit trail could not be read: \(store.words(for: error))"
            }
        }
        guard let lookup else {
            let found = stored ?? []
            if found.isEmpty {
                let place = store.map { "the audit trail \($0.location)" } ?? "no audit trail"
                return CustomerSearchResult(
                    stories: [], notFound: "no customer with \(query.words) in \(place)" + (storeError.map { " (\($0))" } ?? ""),
                    failed: storeError != nil)
            }
            return CustomerSearchResult(
                stories: found.map { CustomerStory.build(CustomerInputs(at: at, pointInTime: pointInTime, stored: $0, storeError: storeError)) }, notFound: nil, failed: false)
        }

        // With the API: one look-up per customer (a token may name several; the trail says
        // which original transaction each has).
        var asks: [(LookupQuery, StoredCustomerRecords?)] = []
        switch query {
        case .transactionID(let id), .originalTransactionID(let id): asks = [(.transactionID(id), stored?.first)]
        case .appTransactionID(let id): asks = [(.appTransactionID(id), stored?.first)]
        case .orderID(let id): asks = [(.orderID(id), nil)]
        case .appAccountToken:
            asks = (stored ?? []).compactMap { records in records.originalTransactionIDs.first.map { (.transactionID($0), records) } }
        }
        if asks.isEmpty {
            let place = store.map { "the audit trail \($0.location)" } ?? "no audit trail (--db)"
            return CustomerSearchResult(
                stories: [], notFound: "no customer with \(query.words) in \(place): Apple's API is not searched by app account token",
                failed: storeError != nil)
        }
        var stories: [CustomerStory] = []
        var failed = storeError != nil
        for (ask, records) in asks {
            let result = await lookup.lookUp(ask, environment: environment, filters: filters, onEvent: onEvent)
            if result.failure != nil { failed = true }
            var records = records
            var trailError = storeError
            // Originals Apple knows that the trail's search did not reach (an order id, a
            // customer the trail knows by another original transaction).
            let apiOriginals = Self.unique(result.transactions.compactMap { $0.transaction?.originalTransactionID })
            let missing = apiOriginals.filter { !(records?.originalTransactionIDs.contains($0) ?? false) }
            if let store, !missing.isEmpty {
                do {
                    let extra = try await store.customerRecords(originalTransactionIDs: missing, appTransactionIDs: [], transactionIDs: [], limit: limit)
                    records = Self.merge(records, extra)
                } catch {
                    trailError = "the audit trail could not be read: \(store.words(for: error))"
                    failed = true
                }
            }
            if store != nil && records == nil && trailError == nil { records = StoredCustomerRecords() }
            let (sent, sentError) = await Self.sentNotifications(lookup.client, result: result, at: at, onEvent: onEvent)
            var withSent = result
            withSent.records += sent.records
            stories.append(
                CustomerStory.build(CustomerInputs(at: at, pointInTime: pointInTime, lookup: withSent, sent: sent.items, sentError: sentError, stored: records, storeError: trailError)))
        }
        if stories.allSatisfy({ $0.events.isEmpty }) && stories.allSatisfy({ $0.subscriptions.isEmpty && $0.products.isEmpty }) {
            let place = store.map { " and the audit trail \($0.location)" } ?? ""
            let why = stories.first.flatMap { $0.sources.first?.errors.first }.map { " (\($0))" } ?? ""
            return CustomerSearchResult(stories: stories, notFound: "no customer with \(query.words) in the App Store Server API\(place)\(why)", failed: failed)
        }
        return CustomerSearchResult(stories: stories, notFound: nil, failed: failed)
    }

    /// Get Notification History for the customer (any transaction id of theirs), over the
    /// window Apple keeps (180 days in production, 30 in sandbox), less an hour so the start
    /// is still inside it when Apple reads it. Read a page at a time: what is kept of each
    /// notification is its ``SentNotification`` (no payload), and of each UUID one string, so
    /// that a notification listed twice is told once.
    public static func sentNotifications(
        _ client: AppStoreServerAPIClient, result: CustomerLookupResult, at: Date, onEvent: (@Sendable (APIClientEvent) -> Void)?
    ) async -> (sent: (items: [SentNotification]?, records: [APIRequestRecord]), error: String?) {
        guard let environment = result.environment, let id = result.transactions.lazy.compactMap({ $0.transaction?.transactionID }).first else {
            return ((nil, []), nil)
        }
        let days: Double = environment == .production ? 180 : 30
        let filter = NotificationHistoryFilter(startDate: at.addingTimeInterval(-days * 86_400 + 3_600), endDate: at, transactionID: id)
        let decoder = ReceiptDecoder()
        var sent: [SentNotification] = []
        var seen = Set<String>()
        let answer = await client.notificationHistory(filter, environment: environment, onEvent: onEvent) { page in
            for item in page.notificationHistory {
                guard let decoded = try? decoder.decode(text: item.signedPayload), let n = decoded.notification, let uuid = n.notificationUUID,
                    seen.insert(uuid).inserted
                else { continue }
                let transaction = decoded.transactions.first
                sent.append(
                    SentNotification(
                        notificationUUID: uuid, notificationType: n.notificationType, subtype: n.subtype, signedDate: n.signedDate,
                        transactionID: transaction?.transactionID, originalTransactionID: transaction?.originalTransactionID,
                        attempts: item.sendAttempts.map { $0.sendAttemptResult ?? "?" }))
            }
        }
        if let failure = answer.failure {
            return ((nil, answer.records), "Apple's notification history could not be read: \(failure.reason)")
        }
        return ((sent, answer.records), nil)
    }

    static func merge(_ a: StoredCustomerRecords?, _ b: StoredCustomerRecords) -> StoredCustomerRecords {
        guard var merged = a else { return b }
        merged.originalTransactionIDs = unique(merged.originalTransactionIDs + b.originalTransactionIDs)
        merged.appTransactionIDs = unique(merged.appTransactionIDs + b.appTransactionIDs)
        merged.appAccountTokens = unique(merged.appAccountTokens + b.appAccountTokens)
        merged.notifications += b.notifications
        merged.purchases += b.purchases
        merged.actions += b.actions
        merged.truncated = merged.truncated || b.truncated
        return merged
    }

    static func unique(_ list: [String]) -> [String] {
        var seen = Set<String>()
        return list.filter { seen.insert($0).inserted }
    }
}
