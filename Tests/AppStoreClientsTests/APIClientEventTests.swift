import AppStoreClients
import Foundation
import AppStoreAPI
import ReceiptCore
import Testing

/// The words `lookup` and `notifications --reconcile` print while a request waits to be retried.
@Suite struct APIClientEventTests {
    @Test func aRetrySaysWhatFailedAndHowLongItWaits() {
        let after = APIAttemptResult.http(status: 503)
        let backoff = APIClientEvent.retrying(endpoint: .transactionHistory, inSeconds: 2.5, until: nil, after: after)
        #expect(backoff.waitingLine == "transaction-history: \(after); waiting 2.5 s")
        let until = Date(timeIntervalSince1970: 1_795_564_800)
        let limited = APIClientEvent.retrying(endpoint: .refundHistory, inSeconds: 60, until: until, after: .http(status: 429))
        #expect(limited.waitingLine == "refund-history: \(APIAttemptResult.http(status: 429)); waiting until 2026-11-25T00:00:00Z")
    }

    @Test func otherEventsSayNothing() {
        #expect(APIClientEvent.sending(endpoint: .transactionInfo, environment: .production, attempt: 1).waitingLine == nil)
        #expect(APIClientEvent.switchingToSandbox(endpoint: .transactionInfo).waitingLine == nil)
    }
}
