import AuditTrail
import CustomerSearch
import CustomerTimeline
import Foundation
import JSONWriting

extension BenchmarkRun {
    /// `bench --customer-db`: each key's whole offline path (the trail's reads, the story, its
    /// JSON) in turns with a bare indexed SELECT of the same rows, and the plan of every query.
    /// The store is the caller's, opened read-only; it is closed here.
    public func benchCustomer(_ store: any AuditBackend, transactionID: String?, appAccountToken: String?, runs: Int) async throws {
        guard let probe = store as? any CustomerQueryProbe else { throw BenchmarkError(.unmeasurableStore, "this store cannot be measured") }
        var keys: [(String, CustomerQuery, CustomerKey)] = []
        if let id = transactionID { keys.append(("transaction id \(id)", .transactionID(id), .transactionID(id))) }
        if let token = appAccountToken { keys.append(("app account token \(token)", .appAccountToken(token), .appAccountToken(token))) }
        let finder = CustomerFinder(store: store, lookup: nil)
        let now = Date()
        try await AuditStoreService.closing(store) {
            print("customer --offline on \(store.location), \(runs) runs each:")
            for (label, query, key) in keys {
                let found = try await store.customers(key)
                let originals = found.flatMap(\.originalTransactionIDs)
                let appIDs = found.flatMap(\.appTransactionIDs)
                let events = found.map { CustomerStory.build(CustomerInputs(at: now, stored: $0)).events.count }.reduce(0, +)
                let rows = try await probe.bareCustomerRows(originalTransactionIDs: originals)
                let timing = try await PairedTiming.measure(runs: runs) {
                    let result = await finder.find(query, at: now)
                    var out = JSONOutput()
                    CustomerJSON.render(result.stories, into: &out)
                } floor: {
                    _ = try await probe.bareCustomerRows(originalTransactionIDs: originals)
                }
                print("  \(label): \(found.count) customer(s), \(originals.count) original transaction(s), \(rows) rows, \(events) events")
                print("    \(timing.summary)")
                for plan in try await probe.customerQueryPlans(key, originalTransactionIDs: originals, appTransactionIDs: appIDs) { print("    plan \(plan)") }
            }
        }
    }
}
