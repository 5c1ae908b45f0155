import AuditTrail
import AppStoreAPI
import ConsumptionPolicy
import Foundation
import ReceiptCore

extension ConsumptionFacts {
    /// The facts of a stored request: the transaction its signed payload carries (as the
    /// receiver verified it before storing), else the ids the trail kept, and the refunds the
    /// trail holds for the customer (nil when it cannot tell). The receiver, `policy explain`
    /// and the dry run read them here alike.
    public init(request: ConsumptionRequestRecord, signedPayload: String?, refunds: Int?, decoder: ReceiptDecoder = ReceiptDecoder()) {
        self.init(transactionID: request.transactionID)
        originalTransactionID = request.originalTransactionID
        productID = request.productID
        environment = request.environment
        customerRefunds = refunds
        guard let payload = signedPayload, let decoded = try? decoder.decode(text: payload) else { return }
        reason = decoded.notification?.consumptionRequestReason
        let purchase = decoded.transactions.first { $0.transactionID == request.transactionID } ?? decoded.transactions.first
        guard let purchase else { return }
        productID = purchase.productID ?? productID
        originalTransactionID = purchase.originalTransactionID ?? originalTransactionID
        if let type = purchase.productType, type != .unknown {
            productType = type.rawValue
        } else {
            productType = purchase.productTypeAsSent?.text
        }
        purchaseDate = purchase.purchaseDate
        expiresDate = purchase.expiresDate
        storefront = purchase.storefront
        environment = purchase.environment ?? environment
    }
}

extension ConsumptionQueue where Self: RetentionTrail {
    /// Refunds the trail holds for the customer of `originalTransactionID` (purchases refunded
    /// and `REFUND` notifications, by transaction), as Retention Messaging's rules count them;
    /// nil when the trail knows nothing of the customer or cannot be read.
    public func customerRefunds(originalTransactionID: String?) async -> Int? {
        guard let id = originalTransactionID, let facts = try? await retentionFacts(originalTransactionID: id), facts.known else { return nil }
        return facts.refunds
    }
}

extension ConsumptionPolicies {
    /// The facts of a stored request and what this file decides for it at `now`: what the
    /// receiver acts on, and what `policy explain` says, read the one way. The customer's
    /// refunds are read from the trail when a policy matches on them, or when `everyFact` is
    /// asked (`policy explain` shows them); the decision is the same either way.
    public func decide(
        _ request: ConsumptionRequestRecord, trail: any AuditBackend, now: Date, everyFact: Bool = false, decoder: ReceiptDecoder = ReceiptDecoder()
    ) async -> (facts: ConsumptionFacts, decision: ConsumptionDecision) {
        let refunds =
            everyFact || matchesOnCustomerRefunds ? await trail.customerRefunds(originalTransactionID: request.originalTransactionID) : nil
        let facts = ConsumptionFacts(request: request, signedPayload: request.signedPayload, refunds: refunds, decoder: decoder)
        return (facts, decide(facts, now: now))
    }
}
