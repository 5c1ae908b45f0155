import AppStoreAPI
import AppStoreClients
import AuditTrail
import Foundation
import JSONWriting
import ReceiptRendering
import UntrustedText

extension CustomerLookupService {
    /// `receiptdash lookup`: the look-up asked (the client shut down after), its result written
    /// in `format`, and recorded in `store` when one is given. False when nothing was found, the
    /// look-up failed, or it could not be recorded (said with the store's `words` for the error).
    public func lookUp(
        _ query: LookupQuery, environment: APIEnvironmentSelection, filters: LookupFilters, format: OutputFormat,
        recordIn store: (any AuditBackend)?, words: (any Error) -> String, console: Console, verbose: Bool = false
    ) async -> Bool {
        let progress = RetryProgress(console: console, verbose: verbose)
        let result = await lookUp(query, environment: environment, filters: filters) { progress.event($0) }
        progress.finish()
        try? await client.shutdown()
        LookupOutput.write(result, format: format, to: console)
        do {
            _ = try await store?.recordLookup(result, bundleID: client.credentials.bundleID, source: query.auditSource, at: Date())
        } catch {
            console.error("receiptdash: the look-up could not be recorded in \(store?.location ?? ""): \(words(error))")
            return false
        }
        return result.failure == nil && !result.transactions.isEmpty
    }
}
