import AppStoreClients
import AuditStore
import AuditTrail
import Dashboard
import Foundation
import ReceiptCore
import ReceiptWatch

/// Plugs the App Store Server API's writes into the dashboard (`x`, `c`, `a`): each is sent as
/// the command line sends it (the same request id on every retry), recorded in the audit trail
/// when there is one, and answered in a line for the Log.
public struct ServiceActions: CustomerActing {
    public let actions: CustomerActions
    /// Where writes are recorded (the dashboard's `--db`).
    public var store: (any AuditBackend)?

    public init(actions: CustomerActions, store: (any AuditBackend)?) {
        self.actions = actions
        self.store = store
    }

    public func extend(_ order: ExtendOrder) async -> ActionAnswer {
        await write("extend \(order.originalTransactionID)", requestID: order.requestID) {
            let body = try ExtendRenewalDateBody(days: order.days, reason: order.reason, requestIdentifier: order.requestID)
            return ActionPlan(
                action: .extend, request: try .extendRenewalDate(order.originalTransactionID, body), requestID: order.requestID,
                environment: order.environment, ids: ActionIDs(originalTransactionID: order.originalTransactionID, productID: order.productID),
                lines: [])
        } done: { report in
            "extended \(order.originalTransactionID) by \(order.days) days: expires \(report.result?.object?["effective_date"]?.text ?? "?")"
        }
    }

    public func consume(_ order: ConsumptionOrder) async -> ActionAnswer {
        await write("consumption for \(order.transactionID)", requestID: order.requestID) {
            let request = try APIRequest.consumption(order.transactionID, try order.body())
            let ids = ActionIDs(transactionID: order.transactionID)
            guard let environment = order.environment else {
                // Where the transaction is not known yet: found as `lookup` finds it.
                switch await actions.plan(.consumption, request, ids: ids, selection: .auto, requestID: order.requestID) {
                case .success(let plan): return plan
                case .failure(let failure): throw NotPlanned(reason: failure.reason)
                }
            }
            return ActionPlan(action: .consumption, request: request, requestID: order.requestID, environment: environment, ids: ids, lines: [])
        } done: { report in
            "consumption for \(order.transactionID) sent: Apple took it (HTTP \(report.httpStatus ?? 202))"
        }
    }

    public func setToken(_ order: TokenOrder) async -> ActionAnswer {
        await write("app account token for \(order.originalTransactionID)", requestID: order.requestID) {
            ActionPlan(
                action: .appAccountToken, request: try .setAppAccountToken(order.originalTransactionID, try AppAccountTokenBody(token: order.token)),
                requestID: order.requestID, environment: order.environment, ids: ActionIDs(originalTransactionID: order.originalTransactionID),
                lines: [])
        } done: { _ in
            "app account token of \(order.originalTransactionID) set to \(order.token.lowercased())"
        }
    }

    /// The customer could not be read, so nothing was sent.
    private struct NotPlanned: Error {
        let reason: String
    }

    /// One write: its plan (a rule broken, or the customer not found, is said and nothing is
    /// sent), the send, the audit row, and the Log's line: `done`'s words and the request id,
    /// or `what` and why it failed.
    private func write(
        _ what: String, requestID: String, plan makePlan: () async throws -> ActionPlan, done: (ActionReport) -> String
    ) async -> ActionAnswer {
        let plan: ActionPlan
        do {
            plan = try await makePlan()
        } catch let error as ActionRuleError {
            return ActionAnswer(ok: false, line: "not sent: \(error.description)")
        } catch let error as NotPlanned {
            return ActionAnswer(ok: false, line: "\(what): not sent: \(error.reason)")
        } catch {
            return ActionAnswer(ok: false, line: "not sent: \(error)")
        }
        let report = await actions.send(plan)
        let recorded = await record(report)
        guard report.outcome == .success else {
            return ActionAnswer(ok: false, line: "\(what): \(report.failureText ?? "failed")\(recorded)")
        }
        return ActionAnswer(ok: recorded.isEmpty, line: "\(done(report)) (request id \(requestID))\(recorded)")
    }

    /// Records a write sent; the words of a failure to, or "" when recorded (or nowhere to).
    private func record(_ report: ActionReport) async -> String {
        guard let store else { return "" }
        do {
            try await store.recordAction(AuditAction(report))
            return ""
        } catch {
            return "; it could not be recorded in \(store.location): \(AuditStores.words(error))"
        }
    }
}
