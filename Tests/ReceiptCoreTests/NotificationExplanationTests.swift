import Foundation
import Testing

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
        #expect(NotificationExplanation.explain(type: "NEW_THING", subtype: "X") == "NEW_THING / X: a notification type receiptdash does not know yet")
        #expect(NotificationExplanation.explain(type: nil, subtype: nil) == "?: a notification type receiptdash does not know yet")
    }
}
