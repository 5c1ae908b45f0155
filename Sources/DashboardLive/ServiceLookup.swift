import AppStoreClients
import AuditTrail
import CustomerSearch
import CustomerTimeline
import Dashboard
import Foundation
import AppStoreAPI
import ReceiptCore

/// Plugs the AppStoreClients look-up engine into the dashboard (`l` / `L`), which does no
/// networking itself: the client's events become the dashboard's ``LookupEvent``s.
public struct ServiceLookup: CustomerLookingUp {
    public let service: CustomerLookupService
    /// The dashboard's `--db` (not when following another process's database): each look-up is
    /// recorded there as `lookup --db` records it.
    public var store: (any AuditBackend)?
    /// The trail the Customer view reads (notifications, writes, receipts): the one writes are
    /// recorded in, else `store`.
    public var trail: (any AuditBackend)?

    public init(service: CustomerLookupService, store: (any AuditBackend)?) {
        self.service = service
        self.store = store
        trail = store
    }

    public func lookUp(_ query: LookupQuery, onEvent: @escaping @Sendable (LookupEvent) -> Void) async -> CustomerLookupResult {
        var result = await service.lookUp(query, environment: .auto) { event in
            switch event {
            case .sending(let endpoint, let environment, let attempt):
                onEvent(.sending(endpoint: endpoint, environment: environment, attempt: attempt))
            case .retrying(let endpoint, let seconds, let until, let after):
                onEvent(.retrying(endpoint: endpoint, inSeconds: seconds, until: until, after: after))
            case .switchingToSandbox(let endpoint):
                onEvent(.switchingToSandbox(endpoint: endpoint))
            }
        }
        if let store {
            do {
                _ = try await store.recordLookup(result, bundleID: service.client.credentials.bundleID, source: query.auditSource, at: Date())
            } catch {
                // Shown with the answer (the Status pane lists notes): nothing is silently lost.
                result.notes.append("not recorded in the audit database \(store.location): \(store.words(for: error))")
            }
        }
        return result
    }

    /// The trail's rows of the customer (`customer`'s offline part): those of every original
    /// transaction and app transaction id Apple's answer names. A read that found nothing is an
    /// answer (nothing stored), not a trail not asked.
    public func storedRecords(for result: CustomerLookupResult) async -> StoredCustomerRecords? {
        guard let trail else { return nil }
        var originals: [String] = []
        var appIDs: [String] = []
        for p in result.transactions.compactMap(\.transaction) {
            if let id = p.originalTransactionID, !originals.contains(id) { originals.append(id) }
            if let id = p.appTransactionID, !appIDs.contains(id) { appIDs.append(id) }
        }
        guard !originals.isEmpty || !appIDs.isEmpty else { return nil }
        var records = try? await trail.customerRecords(originalTransactionIDs: originals, appTransactionIDs: appIDs, transactionIDs: [], limit: 10_000)
        records?.appTransactionIDs = appIDs
        return records
    }

    /// What Apple says it sent about the customer, read as `customer` reads it (one path).
    public func sentNotifications(for result: CustomerLookupResult) async -> (items: [SentNotification]?, error: String?) {
        guard result.failure == nil else { return (nil, nil) }
        let (sent, error) = await CustomerFinder.sentNotifications(service.client, result: result, at: Date(), onEvent: nil)
        return (sent.items, error)
    }
}
