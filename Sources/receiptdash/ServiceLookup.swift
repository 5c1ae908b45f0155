import Dashboard
import Foundation
import ReceiptCore
import ReceiptService

/// Plugs the ReceiptService look-up engine into the dashboard (`l` / `L`), which does no
/// networking itself: the client's events become the dashboard's ``LookupEvent``s.
struct ServiceLookup: CustomerLookingUp {
    let service: CustomerLookupService
    /// The dashboard's `--db` (not when following another process's database): each look-up is
    /// recorded there as `lookup --db` records it.
    var store: (any AuditBackend)?

    func lookUp(_ query: LookupQuery, onEvent: @escaping @Sendable (LookupEvent) -> Void) async -> CustomerLookupResult {
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
                _ = try await store.recordLookup(result, bundleID: service.client.credentials.bundleID, source: Lookup.name(query), at: Date())
            } catch {
                // Shown with the answer (the Status pane lists notes): nothing is silently lost.
                result.notes.append("not recorded in the audit database \(store.location): \(AuditStores.words(error))")
            }
        }
        return result
    }

    /// The look-up the options describe, or why there is none (missing credentials, an
    /// unreadable key or root): the dashboard starts all the same and `l` says it.
    static func make(_ api: APIOptions, caFile: String?, at instant: Date, store: (any AuditBackend)?) -> Result<ServiceLookup, APIOptionsError> {
        do {
            let anchors = try api.trustAnchors()
            let credentials = try api.credentials()
            let client = try api.makeClient(credentials, caFile: caFile)
            let pipeline = ReceiptPipeline(at: instant, evaluator: TrustEvaluator(anchors: anchors))
            return .success(ServiceLookup(service: CustomerLookupService(client: client, pipeline: pipeline), store: store))
        } catch let error as APIOptionsError {
            return .failure(error)
        } catch {
            return .failure(APIOptionsError("\(error)"))
        }
    }
}
