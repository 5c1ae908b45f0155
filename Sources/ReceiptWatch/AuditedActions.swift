import AppStoreClients
import AuditTrail
import Foundation
import ReceiptCore

extension AuditAction {
    /// The audit row of a write about to be sent: who, when, the plan's ids, body and words.
    public init(_ plan: ActionPlan, user: String = ProcessInfo.processInfo.userName, at time: Date = Date()) {
        self.init(
            at: time, user: user, action: plan.action.rawValue, environment: plan.environment.rawValue, requestID: plan.requestID,
            originalTransactionID: plan.ids.originalTransactionID, transactionID: plan.ids.transactionID, productID: plan.ids.productID,
            requestBody: plan.request.bodyText, httpStatus: nil, apiError: nil, result: AuditAction.pending, plan: plan.text,
            appTransactionID: plan.ids.appTransactionID)
    }

    /// The audit row of a write that was sent: the plan's row with what Apple answered.
    public init(_ report: ActionReport, user: String = ProcessInfo.processInfo.userName, at time: Date = Date()) {
        self.init(report.plan, user: user, at: time)
        httpStatus = report.httpStatus
        apiError = report.apiError?.rawValue
        result = report.outcome?.rawValue ?? "failed"
        // Apple's answer: as sent when it did not decode, else as decoded (an extension's new
        // renewal date is then known to the trail at once).
        responseBody = report.responseBody ?? report.result?.compactJSON
        completedAt = time
    }
}

extension ActionRecording {
    /// Records writes in `store`: a `pending` row committed durably before the write is sent,
    /// completed with the outcome after.
    public static func audit(
        _ store: any AuditBackend, user: String = ProcessInfo.processInfo.userName, now: @escaping @Sendable () -> Date = { Date() }
    ) -> ActionRecording {
        ActionRecording(location: store.location) { plan in
            do {
                return .success(Pending(id: try await store.beginAction(AuditAction(plan, user: user, at: now()))))
            } catch {
                return .failure(Failure(code: "audit-unwritable", words: "the write could not be recorded in \(store.location): \(store.words(for: error))"))
            }
        } complete: { pending, report in
            do {
                try await store.completeAction(pending.id, AuditAction(report, user: user, at: now()))
                return nil
            } catch {
                return Failure(code: "audit-unwritable", words: "\(store.location): \(store.words(for: error))")
            }
        }
    }
}

extension ActionRecording {
    /// Records writes in `store` as ``audit(_:user:now:)`` does, with SIGINT and SIGTERM held
    /// (`signals`) from the pending row's commit on: the caller releases them once the outcome
    /// is recorded.
    public static func audit(_ store: any AuditBackend, holding signals: WriteSignalGuard) -> ActionRecording {
        let audit = ActionRecording.audit(store)
        return ActionRecording(location: audit.location) { plan in
            let begun = await audit.begin(plan)
            if case .success = begun { signals.hold() }
            return begun
        } complete: { pending, report in
            await audit.complete(pending, report)
        }
    }
}
