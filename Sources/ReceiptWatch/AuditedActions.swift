import AppStoreClients
import AuditStore
import Foundation
import ReceiptCore

extension AuditAction {
    /// The audit row of a write that was sent: who, when, the plan's ids and body, and what
    /// Apple answered.
    public init(_ report: ActionReport, user: String = ProcessInfo.processInfo.userName, at time: Date = Date()) {
        self.init(
            at: time, user: user, action: report.plan.action.rawValue, environment: report.plan.environment.rawValue,
            requestID: report.plan.requestID, originalTransactionID: report.plan.ids.originalTransactionID,
            transactionID: report.plan.ids.transactionID, productID: report.plan.ids.productID, requestBody: report.plan.request.bodyText,
            httpStatus: report.httpStatus, apiError: report.apiError?.rawValue, result: report.outcome?.rawValue ?? "failed")
    }
}
