import AppStoreAPI
import Foundation
import ReceiptCore

/// Contradictions and gaps between the sources, each found only where both sides were asked: a
/// refund Apple's history shows that no stored notification told, a notification Apple sent
/// that the trail lacks, a status the timeline does not explain, a consumption request still
/// unanswered, a write whose outcome is unknown.
enum CustomerIssues {
    /// How long Apple gives to answer a `CONSUMPTION_REQUEST`.
    static let consumptionWindow: TimeInterval = 12 * 3600

    static func find(events: [CustomerEvent], answers: [SubscriptionAnswer], inputs: CustomerInputs) -> [CustomerIssue] {
        var issues: [CustomerIssue] = []
        let storeRead = inputs.stored != nil
        let refundKinds: Set<CustomerEventKind> = [.refund, .proratedRefund, .revoke]

        if storeRead {
            for event in events where refundKinds.contains(event.kind) && event.sources.contains(.api) && !event.sources.contains(.notification) {
                let what = event.kind == .revoke ? "REVOKE" : "REFUND"
                issues.append(
                    CustomerIssue(
                        code: .refundNotNotified, transactionID: event.transactionID, originalTransactionID: event.originalTransactionID,
                        summary: "Apple's history shows \(event.kind.rawValue) of \(event.transactionID ?? "?") at \(AppleDate.iso8601(event.at)); no \(what) notification is stored",
                        refs: event.refs))
            }
        }

        if storeRead, let sent = inputs.sent {
            let stored = Set(inputs.stored?.notifications.map(\.record.notificationUUID) ?? [])
            for n in sent where !stored.contains(n.notificationUUID) {
                let words = [n.notificationType ?? "?", n.subtype].compactMap { $0 }.joined(separator: "/")
                let attempts = n.attempts.isEmpty ? "no send attempt reported" : "send attempts: " + n.attempts.joined(separator: ", ")
                issues.append(
                    CustomerIssue(
                        code: .notificationMissing, transactionID: n.transactionID, originalTransactionID: n.originalTransactionID,
                        summary: "Apple sent \(words) signed \(n.signedDate.map(AppleDate.iso8601) ?? "?"); the trail does not have it (\(attempts))",
                        refs: ["notification:" + n.notificationUUID]))
            }
        }

        // Apple's status is of now: at a chosen instant there is nothing to compare it with.
        if storeRead, !inputs.pointInTime, let lookup = inputs.lookup {
            for (original, status) in lookup.apiStatuses.sorted(by: { $0.key < $1.key }) {
                let mine = events.filter { $0.originalTransactionID == original }
                let needed: Set<CustomerEventKind>? =
                    switch status {
                    case .active: nil
                    case .expired: [.expired]
                    case .billingRetry: [.billingRetry]
                    case .gracePeriod: [.gracePeriod]
                    case .revoked: refundKinds
                    default: []
                    }
                guard let needed else { continue }
                if needed.isEmpty {
                    issues.append(
                        CustomerIssue(
                            code: .statusUnexplained, originalTransactionID: original,
                            summary: "Apple reports status \(status.rawValue) for \(original), a value it does not define"))
                } else if !mine.contains(where: { needed.contains($0.kind) }) {
                    issues.append(
                        CustomerIssue(
                            code: .statusUnexplained, originalTransactionID: original,
                            summary: "Apple reports \(LookupFilters.name(status)) for \(original); no event in the timeline explains it"))
                }
            }
        }

        for request in events where request.kind == .consumptionRequest {
            let answered = events.contains {
                $0.kind == .consumptionAnswered && $0.transactionID == request.transactionID && $0.at >= request.at
                    && ($0.outcome == "success" || $0.outcome == "unknown")
            }
            guard !answered else { continue }
            let deadline = request.at.addingTimeInterval(consumptionWindow)
            let left = deadline.timeIntervalSince(inputs.at)
            let when = left > 0 ? "answer by \(AppleDate.iso8601(deadline)) (\(Int(left / 3600)) h \(Int(left / 60) % 60) min left)" : "the deadline passed at \(AppleDate.iso8601(deadline))"
            issues.append(
                CustomerIssue(
                    code: .consumptionUnanswered, transactionID: request.transactionID, originalTransactionID: request.originalTransactionID,
                    summary: "consumption request for \(request.transactionID ?? "?") not answered: \(when)", deadline: deadline, refs: request.refs))
        }

        for event in events where event.outcome == "unknown" {
            issues.append(
                CustomerIssue(
                    code: .actionUnknown, transactionID: event.transactionID, originalTransactionID: event.originalTransactionID,
                    summary: "\(event.summary) (check the customer's state before sending again)", refs: event.refs))
        }
        return issues
    }
}
