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

    public func consume(_ order: ConsumptionOrder) async -> ActionAnswer {
        let request: APIRequest
        do {
            request = try .consumption(order.transactionID, try order.body())
        } catch let error as ActionRuleError {
            return ActionAnswer(ok: false, line: "not sent: \(error.description)")
        } catch {
            return ActionAnswer(ok: false, line: "not sent: \(error)")
        }
        let ids = ActionIDs(transactionID: order.transactionID)
        let plan: ActionPlan
        if let environment = order.environment {
            plan = ActionPlan(action: .consumption, request: request, requestID: order.requestID, environment: environment, ids: ids, lines: [])
        } else {
            switch await actions.plan(.consumption, request, ids: ids, selection: .auto, requestID: order.requestID) {
            case .success(let made): plan = made
            case .failure(let failure): return ActionAnswer(ok: false, line: "consumption for \(order.transactionID): not sent: \(failure.reason)")
            }
        }
        let report = await actions.send(plan)
        let recorded = await record(report)
        guard report.outcome == .success else {
            return ActionAnswer(ok: false, line: "consumption for \(order.transactionID): \(report.failureText ?? "failed")\(recorded)")
        }
        return ActionAnswer(
            ok: recorded.isEmpty,
            line: "consumption for \(order.transactionID) sent: Apple took it (HTTP \(report.httpStatus ?? 202)) (request id \(order.requestID))\(recorded)")
    }

    public func setToken(_ order: TokenOrder) async -> ActionAnswer {
        let request: APIRequest
        do {
            request = try .setAppAccountToken(order.originalTransactionID, try AppAccountTokenBody(token: order.token))
        } catch let error as ActionRuleError {
            return ActionAnswer(ok: false, line: "not sent: \(error.description)")
        } catch {
            return ActionAnswer(ok: false, line: "not sent: \(error)")
        }
        let plan = ActionPlan(
            action: .appAccountToken, request: request, requestID: order.requestID, environment: order.environment,
            ids: ActionIDs(originalTransactionID: order.originalTransactionID), lines: [])
        let report = await actions.send(plan)
        let recorded = await record(report)
        guard report.outcome == .success else {
            return ActionAnswer(ok: false, line: "app account token for \(order.originalTransactionID): \(report.failureText ?? "failed")\(recorded)")
        }
        return ActionAnswer(
            ok: recorded.isEmpty,
            line: "app account token of \(order.originalTransactionID) set to \(order.token.lowercased()) (request id \(order.requestID))\(recorded)")
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
        let recorded = await record(report)
        guard report.outcome == .success else {
            return ActionAnswer(ok: false, line: "extend \(order.originalTransactionID): \(report.failureText ?? "failed")\(recorded)")
        }
        let expires = report.result?.object?["effective_date"]?.text ?? "?"
        return ActionAnswer(
            ok: recorded.isEmpty, line: "extended \(order.originalTransactionID) by \(order.days) days: expires \(expires) (request id \(order.requestID))\(recorded)")
    }
}
