import AppStoreClients
import AuditTrail
import Dashboard
import Foundation
import AppStoreAPI
import ReceiptCore
import ReceiptWatch

/// Plugs the App Store Server API's writes into the dashboard (`x`, `c`, `a`): each is sent as
/// the command line sends it (the same request id on every retry), recorded as pending in the
/// audit trail before it leaves and completed with its outcome (a write that cannot be
/// recorded is not sent), and answered in a line for the Log.
public struct ServiceActions: CustomerActing {
    public let actions: CustomerActions
    /// Where writes are recorded (the dashboard's `--db`, else the default audit store).
    public let recording: ActionRecording

    public init(actions: CustomerActions, store: any AuditBackend) {
        self.actions = actions
        recording = .audit(store)
    }

    public init(actions: CustomerActions, recording: ActionRecording) {
        self.actions = actions
        self.recording = recording
    }

    public func extend(_ order: ExtendOrder) async -> ActionAnswer {
        await write("extend \(order.originalTransactionID)", target: ActionAnswer.target("extend", order.originalTransactionID), requestID: order.requestID) {
            let body = try ExtendRenewalDateBody(days: order.days, reason: order.reason, requestIdentifier: order.requestID)
            return try await planned(
                .extend, try .extendRenewalDate(order.originalTransactionID, body),
                ids: ActionIDs(originalTransactionID: order.originalTransactionID, productID: order.productID), environment: order.environment,
                requestID: order.requestID, extendDays: order.days, force: order.forceUntrusted)
        } done: { report in
            "extended \(order.originalTransactionID) by \(order.days) days: expires \(report.result?.object?["effective_date"]?.text ?? "?")"
        }
    }

    public func consume(_ order: ConsumptionOrder) async -> ActionAnswer {
        await write("consumption for \(order.transactionID)", target: ActionAnswer.target("consumption", order.transactionID), requestID: order.requestID) {
            // Where the transaction is not known yet: found as `lookup` finds it.
            try await planned(
                .consumption, try APIRequest.consumption(order.transactionID, try order.body()), ids: ActionIDs(transactionID: order.transactionID),
                environment: order.environment, requestID: order.requestID, force: order.forceUntrusted)
        } done: { report in
            "consumption for \(order.transactionID) sent: Apple took it (HTTP \(report.httpStatus ?? 202))"
        }
    }

    public func setToken(_ order: TokenOrder) async -> ActionAnswer {
        await write(
            "app account token for \(order.originalTransactionID)", target: ActionAnswer.target("app-account-token", order.originalTransactionID),
            requestID: order.requestID
        ) {
            try await planned(
                .appAccountToken, try .setAppAccountToken(order.originalTransactionID, try AppAccountTokenBody(token: order.token)),
                ids: ActionIDs(originalTransactionID: order.originalTransactionID), environment: order.environment, requestID: order.requestID,
                force: order.forceUntrusted)
        } done: { _ in
            "app account token of \(order.originalTransactionID) set to \(order.token.lowercased())"
        }
    }

    /// The plan as `receiptdash extend`, `consumption` and `app-account-token` make it: the
    /// customer looked up, the one gate on data that is not genuine (``ActionDataGate``), the
    /// same plan lines, recorded as the commands record them.
    private func planned(
        _ action: APIAction, _ request: APIRequest, ids: ActionIDs, environment: APIEnvironment?, requestID: String, extendDays: Int? = nil,
        force: Bool
    ) async throws -> ActionPlan {
        switch await actions.plan(
            action, request, ids: ids, selection: environment.map(APIEnvironmentSelection.init) ?? .auto, requestID: requestID, extendDays: extendDays, forceUntrusted: force,
            howToForce: ActionDataGate.dashboardForce)
        {
        case .success(let plan): return plan
        case .failure(let failure): throw NotPlanned(code: failure.code.rawValue, reason: failure.reason)
        }
    }

    /// The customer could not be read, so nothing was sent.
    private struct NotPlanned: Error {
        let code: String
        let reason: String
    }

    /// One write: its plan (a rule broken, or the customer not found, is said and nothing is
    /// sent), the send, the audit row, and the Log's line: `done`'s words and the request id,
    /// or `what` and why it failed.
    private func write(
        _ what: String, target: String, requestID: String, plan makePlan: () async throws -> ActionPlan, done: (ActionReport) -> String
    ) async -> ActionAnswer {
        let plan: ActionPlan
        do {
            plan = try await makePlan()
        } catch let error as ActionRuleError {
            return ActionAnswer(ok: false, line: "not sent: \(error.reason)")
        } catch let error as NotPlanned {
            return ActionAnswer(ok: false, line: "\(what): not sent: \(error.reason)", target: target, code: error.code)
        } catch {
            return ActionAnswer(ok: false, line: "not sent: \(error)")
        }
        let pending: ActionRecording.Pending
        switch await recording.begin(plan) {
        case .success(let row): pending = row
        case .failure(let failure): return ActionAnswer(ok: false, line: "\(what): not sent: \(failure.words)")
        }
        let report = await actions.send(plan)
        let recorded = await recording.complete(pending, report).map { "; its outcome could not be recorded (\($0.words)): the trail keeps it as pending" } ?? ""
        guard report.outcome == .success else {
            return ActionAnswer(
                ok: false, line: "\(what): \(report.failureText ?? "failed")\(recorded)", target: target,
                unknownRequestID: report.outcome == .unknown ? requestID : nil)
        }
        return ActionAnswer(
            ok: recorded.isEmpty, line: "\(done(report)) (request id \(requestID))\(recorded)", target: target, httpStatus: report.httpStatus)
    }
}
