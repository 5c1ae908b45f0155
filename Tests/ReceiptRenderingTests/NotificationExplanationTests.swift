import AppStoreAPI
import Foundation
import Testing
import TestSupport

@testable import ReceiptRendering
@testable import ReceiptCore

@Suite struct NotificationExplanationTests {
    @Test func typesAndSubtypesInWords() {
        let grace = Date(timeIntervalSince1970: 1_796_000_000)  // 2026-11-30
        #expect(
            NotificationExplanation.explain(type: "DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD", until: grace)
                == "DID_FAIL_TO_RENEW / GRACE_PERIOD: billing failed; access continues until 2026-11-30 while Apple retries")
        #expect(
            NotificationExplanation.explain(type: "DID_FAIL_TO_RENEW", subtype: nil)
                == "DID_FAIL_TO_RENEW: billing failed; no access while Apple retries the payment (billing retry)")
        #expect(NotificationExplanation.explain(type: "REFUND", subtype: nil) == "REFUND: Apple refunded the purchase: revoke what it granted")
        #expect(
            NotificationExplanation.explain(type: "EXPIRED", subtype: "BILLING_RETRY")
                == "EXPIRED / BILLING_RETRY: expired: billing retry ended without a successful payment")
        #expect(NotificationExplanation.explain(type: "NEW_THING", subtype: "X") == "NEW_THING / X: a notification type receiptdash does not know yet (kept as sent)")
        #expect(NotificationExplanation.explain(type: nil, subtype: nil) == "?: a notification type receiptdash does not know yet (kept as sent)")
    }
}

/// A refund request (CONSUMPTION_REQUEST) in the Notifications pane: its reason, and the time
/// left to answer.
@Suite struct ConsumptionRequestNoteTests {
    private func row(_ type: String, reason: String?, signed: Date?) -> NotificationRow {
        var row = NotificationRow(
            notificationUUID: "u", notificationType: type, subtype: nil, bundleID: nil, environment: "Production", signedDate: signed,
            receivedAt: Date(timeIntervalSince1970: 1_795_564_800), deliveries: 1, verdict: .valid, transactionID: "1", originalTransactionID: "1",
            productID: "p", explanation: "x")
        row.consumptionRequestReason = reason
        return row
    }

    @Test func theReasonAndTheHoursLeftAreSaid() {
        let signed = Date(timeIntervalSince1970: 1_795_564_800)
        let request = row("CONSUMPTION_REQUEST", reason: "UNINTENDED_PURCHASE", signed: signed)
        #expect(request.consumptionNote(now: signed.addingTimeInterval(3 * 3600)) == "refund asked (unintended purchase): answer within 9 h")
        #expect(request.consumptionNote(now: signed.addingTimeInterval(11.5 * 3600)) == "refund asked (unintended purchase): answer within 1 h")
        #expect(request.consumptionNote(now: signed.addingTimeInterval(12 * 3600)) == "refund asked (unintended purchase): the 12 h to answer have passed")
        #expect(row("CONSUMPTION_REQUEST", reason: "LEGAL_HOLD", signed: signed).consumptionNote(now: signed) == "refund asked (LEGAL_HOLD, not defined by Apple): answer within 12 h")
        #expect(row("CONSUMPTION_REQUEST", reason: nil, signed: nil).consumptionNote(now: signed) == "refund asked (no reason given)")
        #expect(row("DID_RENEW", reason: nil, signed: signed).consumptionNote(now: signed) == nil)
    }

    /// Answered (consumption information Apple took after it signed the request): when, with
    /// Apple's status, and the countdown is over; an answer from before the request is not one.
    @Test func anAnsweredRequestSaysWhenAndEndsItsCountdown() {
        let signed = Date(timeIntervalSince1970: 1_795_564_800)  // 2026-11-26T00:00:00Z
        let request = row("CONSUMPTION_REQUEST", reason: "UNINTENDED_PURCHASE", signed: signed)
        let later = signed.addingTimeInterval(3600 + 14)
        #expect(
            request.consumptionNote(now: signed.addingTimeInterval(2 * 3600), answered: (later, 202))
                == "refund asked (unintended purchase): answered at 01:00:14 (HTTP 202)")
        #expect(
            request.consumptionNote(now: signed.addingTimeInterval(20 * 3600), answered: (later, nil))
                == "refund asked (unintended purchase): answered at 01:00:14")
        #expect(
            request.consumptionNote(now: signed.addingTimeInterval(2 * 3600), answered: (signed.addingTimeInterval(-60), 202))
                == "refund asked (unintended purchase): answer within 10 h")
    }
}
