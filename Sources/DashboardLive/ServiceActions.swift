import AppStoreClients
import AuditStore
import AuditTrail
import Dashboard
import Foundation
import ReceiptCore
import ReceiptWatch

/// Plugs the App Store Server API's writes into the dashboard (`x`): the extension is sent as
/// `receiptdash extend` sends it (the same request id on every retry), recorded in the audit
/// trail when there is one, and answered in a line for the Log.
public struct ServiceActions: CustomerActing {
    public let actions: CustomerActions
    /// Where writes are recorded (the dashboard's `--db`).
    public var store: (any AuditBackend)?

    public init(actions: CustomerActions, store: (any AuditBackend)?) {
        self.actions = actions
        self.store = store
    }

    public func extend(_ order: ExtendOrder) async -> ActionAnswer {
        let request: APIRequest
        do {
            request = try .extendRenewalDate(
                order.originalTransactionID, try ExtendRenewalDateBody(days: order.days, reason: order.reason, requestIdentifier: order.requestID))
        } catch let error as ActionRuleError {
            return ActionAnswer(ok: false, line: "not sent: \(error.description)")
        } catch {
            return ActionAnswer(ok: false, line: "not sent: \(error)")
        }
        let plan = ActionPlan(
            action: .extend, request: request, requestID: order.requestID, environment: order.environment,
            ids: ActionIDs(originalTransactionID: order.originalTransactionID, productID: order.productID), lines: [])
        let report = await actions.send(plan)
        var recorded = ""
        if let store {
            do {
                try await store.recordAction(AuditAction(report))
            } catch {
                recorded = "; it could not be recorded in \(store.location): \(AuditStores.words(error))"
            }
        }
        guard report.outcome == .success else {
            return ActionAnswer(ok: false, line: "extend \(order.originalTransactionID): \(report.failureText ?? "failed")\(recorded)")
        }
        let expires = report.result?.object?["effective_date"]?.text ?? "?"
        return ActionAnswer(
            ok: recorded.isEmpty, line: "extended \(order.originalTransactionID) by \(order.days) days: expires \(expires) (request id \(order.requestID))\(recorded)")
    }
}
