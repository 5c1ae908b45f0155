import AppStoreAPI
import Foundation
import Testing
import TestSupport

@testable import ReceiptRendering
@testable import ReceiptCore

@Suite struct NotificationExplanationTests {
    @Test func typesAndSubtypesInWords() {
        let words = Wording("notification-explanation")
        let grace = Date(timeIntervalSince1970: 1_796_000_000)  // 2026-11-30
        words.said(NotificationExplanation.explain(type: "DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD", until: grace))
        words.said(NotificationExplanation.explain(type: "DID_FAIL_TO_RENEW", subtype: nil))
        words.said(NotificationExplanation.explain(type: "REFUND", subtype: nil))
        words.said(NotificationExplanation.explain(type: "EXPIRED", subtype: "BILLING_RETRY"))
        words.said(NotificationExplanation.explain(type: "NEW_THING", subtype: "X"))
        words.said(NotificationExplanation.explain(type: nil, subtype: nil))
        words.check()
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
        let words = Wording("notification-explanation")
        let signed = Date(timeIntervalSince1970: 1_795_564_800)
        let request = row("CONSUMPTION_REQUEST", reason: "UNINTENDED_PURCHASE", signed: signed)
        #expect(request.consumptionNote(now: signed.addingTimeInterval(3 * 3600)) == "refund asked (unintended purchase): answer within 9 h")
        #expect(request.consumptionNote(now: signed.addingTimeInterval(11.5 * 3600)) == "refund asked (unintended purchase): answer within 1 h")
        words.said(request.consumptionNote(now: signed.addingTimeInterval(12 * 3600)))
        words.said(row("CONSUMPTION_REQUEST", reason: "LEGAL_HOLD", signed: signed).consumptionNote(now: signed))
        words.said(row("CONSUMPTION_REQUEST", reason: nil, signed: nil).consumptionNote(now: signed))
        #expect(row("DID_RENEW", reason: nil, signed: signed).consumptionNote(now: signed) == nil)
        words.check()
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
