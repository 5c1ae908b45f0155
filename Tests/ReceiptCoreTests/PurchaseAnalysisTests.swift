import Foundation
import Testing
import TestSupport
import ReceiptDemo
@testable import ReceiptCore

/// Subscription states at fixed instants, on constructed responses that each isolate one
/// situation, and on real fixtures.
@Suite struct PurchaseAnalysisTests {
    static let t0 = utc("2024-03-01T00:00:00Z")

    /// A `latest_receipt_info` row, dates as offsets in days from `t0`.
    static func row(
        _ tx: String, product: String = "pro.monthly", original: String = "100", from start: Double, to end: Double,
        extra: [String: String] = [:]
    ) -> String {
        func ms(_ days: Double) -> String { String(Int64((t0.timeIntervalSince1970 + days * 86_400) * 1000)) }
        var fields = [
            "transaction_id": tx, "original_transaction_id": original, "product_id": product, "quantity": "1",
            "purchase_date_ms": ms(start), "expires_date_ms": ms(end), "web_order_line_item_id": "9\(tx)",
        ]
        fields.merge(extra) { _, new in new }
        return "{" + fields.map { "\"\($0.key)\": \"\($0.value)\"" }.sorted().joined(separator: ", ") + "}"
    }

    static func response(_ rows: [String], renewal: [String: String]? = nil, environment: String = "Production") -> String {
        var body = #"{"status": 0, "environment": "\#(environment)", "latest_receipt_info": [\#(rows.joined(separator: ", "))]"#
        if let renewal {
            let fields = renewal.map { "\"\($0.key)\": \"\($0.value)\"" }.sorted().joined(separator: ", ")
            body += #", "pending_renewal_info": [{"original_transaction_id": "100", \#(fields)}]"#
        }
        return body + "}"
    }

    func analyze(_ text: String, at: Date = t0) throws -> PurchaseAnalysis {
        PurchaseAnalysis.analyze([try ReceiptDecoder().decode(text: text)], at: at)
    }

    func only(_ analysis: PurchaseAnalysis) throws -> SubscriptionSummary {
        #expect(analysis.subscriptions.count == 1)
        return try #require(analysis.subscriptions.first)
    }

    @Test func active() throws {
        let s = try only(analyze(Self.response([Self.row("1", from: -20, to: 10)], renewal: ["auto_renew_status": "1", "auto_renew_product_id": "pro.monthly"])))
        #expect(s.state == .active)
        #expect(s.autoRenew == true)
        #expect(s.expiresDate == utc("2024-03-11T00:00:00Z"))
        #expect(s.explanation == "Active until 2024-03-11 (in 10 days), then renews.")
    }

    /// Auto-renew off with time left is not expired.
    @Test func autoRenewOffWithTimeLeftIsActiveWillNotRenew() throws {
        let words = Wording("purchase-analysis")
        let s = try only(analyze(Self.response([Self.row("1", from: -20, to: 10)], renewal: ["auto_renew_status": "0", "expiration_intent": "1"])))
        #expect(s.state == .activeWillNotRenew)
        words.said(s.explanation)
        words.check()
    }

    @Test func gracePeriod() throws {
        let words = Wording("purchase-analysis")
        let grace = String(Int64((Self.t0.timeIntervalSince1970 + 3 * 86_400) * 1000))
        let s = try only(analyze(Self.response(
            [Self.row("1", from: -32, to: -2)],
            renewal: ["auto_renew_status": "1", "is_in_billing_retry_period": "1", "grace_period_expires_date_ms": grace])))
        #expect(s.state == .inGracePeriod)
        #expect(s.gracePeriodExpiresDate == utc("2024-03-04T00:00:00Z"))
        #expect(s.periods.last?.kind == .grace)
        words.said(s.explanation)
        words.check()
    }

    @Test func billingRetry() throws {
        let words = Wording("purchase-analysis")
        let s = try only(analyze(Self.response(
            [Self.row("1", from: -32, to: -2)], renewal: ["auto_renew_status": "1", "is_in_billing_retry_period": "1", "expiration_intent": "2"])))
        #expect(s.state == .inBillingRetry)
        words.said(s.explanation)
        words.check()
    }

    @Test func expiredWithIntentExplained() throws {
        let words = Wording("purchase-analysis")
        let s = try only(analyze(Self.response(
            [Self.row("1", from: -32, to: -2)], renewal: ["auto_renew_status": "0", "expiration_intent": "1", "is_in_billing_retry_period": "0"])))
        #expect(s.state == .expired)
        #expect(s.expirationIntent == 1)
        words.said(s.explanation)
        words.check()
    }

    @Test(arguments: [("0", "another reason (for example an accidental purchase)"), ("1", "the customer reported an issue with the app")])
    func refundWithReason(reason: String, words reasonWords: String) throws {
        let words = Wording("purchase-analysis", case: "\(reason)")
        let cancel = String(Int64((Self.t0.timeIntervalSince1970 - 86_400) * 1000))
        let s = try only(analyze(Self.response(
            [Self.row("1", from: -10, to: 20, extra: ["cancellation_date_ms": cancel, "cancellation_reason": reason])],
            renewal: ["auto_renew_status": "1"])))
        #expect(s.state == .refunded)
        words.said(s.explanation)
        #expect(s.explanation.contains("(\(reasonWords))"))
        #expect(s.periods.map(\.kind) == [.refunded])
        #expect(s.periods.first?.end == utc("2024-02-29T00:00:00Z"))
        #expect(s.paidPeriods == 0)
        words.check()
    }

    /// Upgrade within a group: the basic row is cancelled with is_upgraded, the pro row carries on.
    @Test func upgradeWithinAGroup() throws {
        let cancel = String(Int64((Self.t0.timeIntervalSince1970 - 5 * 86_400) * 1000))
        let rows = [
            Self.row("1", product: "basic.monthly", from: -15, to: 15, extra: ["cancellation_date_ms": cancel, "is_upgraded": "true"]),
            Self.row("2", product: "pro.monthly", from: -5, to: 25),
        ]
        let s = try only(analyze(Self.response(rows, renewal: ["auto_renew_status": "1"])))
        #expect(s.state == .active)
        #expect(s.productID == "pro.monthly")
        #expect(s.productIDs == ["basic.monthly", "pro.monthly"])
        #expect(s.periods.map(\.kind) == [.upgraded, .paid])
        // Judged before the new product started and after the cancellation... only the upgraded row has begun.
        let onlyOld = try only(analyze(Self.response([rows[0]], renewal: ["auto_renew_status": "1"])))
        #expect(onlyOld.state == .upgraded)
        #expect(onlyOld.explanation.hasPrefix("Upgraded on 2024-02-25"))
    }

    /// A renewal row dated after the instant is flagged and does not decide the state.
    @Test func futureDatedRenewalRow() throws {
        let rows = [Self.row("1", from: -40, to: -10), Self.row("2", from: 5, to: 35)]
        let s = try only(analyze(Self.response(rows, renewal: ["auto_renew_status": "0"])))
        #expect(s.state == .expired)
        #expect(s.expiresDate == utc("2024-02-20T00:00:00Z"))
        #expect(s.warnings.contains { $0.hasPrefix("transaction 2 is dated in the future (2024-03-06T00:00:00Z)") })
    }

    /// latest_receipt_info is unordered: the state follows dates, not positions.
    @Test func unorderedRowsAreOrderedByDate() throws {
        let rows = [Self.row("3", from: -10, to: 20), Self.row("1", from: -70, to: -40), Self.row("2", from: -40, to: -10)]
        for order in [rows, rows.reversed(), [rows[1], rows[0], rows[2]]] {
            let s = try only(analyze(Self.response(order, renewal: ["auto_renew_status": "1"])))
            #expect(s.state == .active)
            #expect(s.expiresDate == utc("2024-03-21T00:00:00Z"))
            #expect(s.periods.map(\.transactionID) == ["1", "2", "3"])
            #expect(s.renewalCount == 2)
            #expect(s.warnings.isEmpty)
        }
    }

    @Test func duplicateRowsCountOnce() throws {
        let words = Wording("purchase-analysis")
        let rows = [Self.row("1", from: -40, to: -10), Self.row("1", from: -40, to: -10), Self.row("2", from: -10, to: 20)]
        let analysis = try analyze(Self.response(rows, renewal: ["auto_renew_status": "1"]))
        #expect(try only(analysis).periods.count == 2)
        words.said(analysis.notes)
        words.check()
    }

    @Test func overlapAndGap() throws {
        let words = Wording("purchase-analysis")
        let rows = [Self.row("1", from: -70, to: -40), Self.row("2", from: -45, to: -15), Self.row("3", from: -5, to: 25)]
        let s = try only(analyze(Self.response(rows, renewal: ["auto_renew_status": "1"])))
        words.said(s.warnings)
        words.check()
    }

    /// Six overlaps or gaps are all shown; past six, the first five and how many more.
    @Test func manyGapsAreCountedPastSix() throws {
        let words = Wording("purchase-analysis")
        // Ten-day periods with a two-day gap after each: n periods, n - 1 gaps.
        func gaps(_ n: Int) throws -> [String] {
            let rows = (0..<n).map { Self.row("\($0 + 1)", from: Double(-12 * n + 12 * $0), to: Double(-12 * n + 12 * $0 + 10)) }
            return try only(analyze(Self.response(rows, renewal: ["auto_renew_status": "1"]))).warnings
        }
        func gap(_ k: Int, of n: Int) -> String {
            let end = AppleDate.iso8601(Self.t0.addingTimeInterval(Double(-12 * n + 12 * k + 10) * 86_400))
            let next = AppleDate.iso8601(Self.t0.addingTimeInterval(Double(-12 * n + 12 * (k + 1)) * 86_400))
            return "gap of 2 days between \(end) and \(next): the subscription lapsed and was renewed later"
        }
        #expect(try gaps(7) == (0..<6).map { gap($0, of: 7) })
        #expect(try gaps(8) == (0..<5).map { gap($0, of: 8) } + ["2 more overlaps or gaps"])
        #expect(try gaps(30) == (0..<5).map { gap($0, of: 30) } + ["24 more overlaps or gaps"])
        words.said(gap(0, of: 7))
        words.check()
    }

    /// Sandbox: 5-minute renewals stand for months.
    @Test func sandboxAcceleratedRenewals() throws {
        let words = Wording("purchase-analysis")
        let minute = 1.0 / 1440
        let rows = (0..<6).map { Self.row("\($0)", from: -60 * minute + Double($0) * 5 * minute, to: -55 * minute + Double($0) * 5 * minute) }
        let s = try only(analyze(Self.response(rows, renewal: ["auto_renew_status": "1"], environment: "Sandbox")))
        #expect(s.isSandbox)
        #expect(s.renewalCount == 5)
        #expect(s.state == .expired)
        words.said(s.warnings)
        words.check()
    }

    @Test func receiptWithNoPurchasesIsNotAnError() throws {
        let decoded = try ReceiptDecoder().decode(TestDER.container(TestDER.tlv(0x31, TestDER.attribute(2, TestDER.utf8(Array("a.b".utf8))))))
        let analysis = PurchaseAnalysis.analyze([decoded], at: Self.t0)
        #expect(analysis.subscriptions.isEmpty)
        #expect(analysis.oneTimePurchases.isEmpty)
        #expect(analysis.notes.isEmpty)
    }

    @Test func familySharingRevoked() throws {
        let payload = #"{"transactionId":"5","originalTransactionId":"5","productId":"pro","type":"Auto-Renewable Subscription","purchaseDate":1706745600000,"expiresDate":1711929600000,"revocationDate":1708000000000,"revocationReason":0,"revocationType":"FAMILY_REVOKE","inAppOwnershipType":"FAMILY_SHARED"}"#
        let s = try only(analyze(payload))
        #expect(s.state == .revokedFamilySharing)
        #expect(s.originalTransactionID == "5")
    }

    /// A receipt and Apple's response for it: the same transaction counts once, and the
    /// response's refund wins.
    @Test func combinedSources() throws {
        let cancel = String(Int64((Self.t0.timeIntervalSince1970 - 86_400) * 1000))
        let receipt = #"{"status": 0, "receipt": {"bundle_id": "a.b", "in_app": [\#(Self.row("1", from: -10, to: 20))]}}"#
        let response = Self.response([Self.row("1", from: -10, to: 20, extra: ["cancellation_date_ms": cancel, "cancellation_reason": "1"])])
        let inputs = try [receipt, response].map { try ReceiptDecoder().decode(text: $0) }
        let analysis = PurchaseAnalysis.analyze(inputs, at: Self.t0)
        let s = try only(analysis)
        #expect(s.state == .refunded)
        #expect(s.periods.count == 1)
    }

    @Test func oneTimePurchasesAndRefundedNonConsumable() throws {
        let words = Wording("purchase-analysis")
        let cancel = String(Int64((Self.t0.timeIntervalSince1970 - 86_400) * 1000))
        let body = #"{"status": 0, "receipt": {"bundle_id": "a.b", "in_app": [{"transaction_id": "7", "product_id": "coins", "quantity": "3", "purchase_date_ms": "1700000000000"}, {"transaction_id": "8", "product_id": "unlock", "purchase_date_ms": "1700000000000", "cancellation_date_ms": "\#(cancel)", "cancellation_reason": "0"}]}}"#
        let analysis = try analyze(body)
        #expect(analysis.subscriptions.isEmpty)
        #expect(analysis.oneTimePurchases.map(\.productID) == ["coins", "unlock"])
        #expect(analysis.oneTimePurchases[0].typeInferred)
        #expect(analysis.oneTimePurchases[1].refunded)
        words.said(analysis.oneTimePurchases[1].explanation)
        words.check()
    }

    /// The TPInAppReceipt production receipt: a weekly product, then monthly renewals with two
    /// lapses; judged inside and after the last monthly period.
    @Test func realProductionReceipt() throws {
        let decoded = try ReceiptDecoder().decode(try Fixture.bytes("production.b64"))
        let at = utc("2023-10-01T00:00:00Z")
        let s = try only(PurchaseAnalysis.analyze([decoded], at: at))
        // Manifest: org.getpure.pure.Week then .Month; the last Month period runs 2023-09-19 to 2023-10-19.
        #expect(s.originalTransactionID == "340001196262039")
        #expect(s.productID == "org.getpure.pure.Month")
        #expect(s.expiresDate == utc("2023-10-19T23:26:23Z"))
        #expect(s.state == .active)
        #expect(s.autoRenew == nil)
        #expect(s.renewalCount == 3)
        #expect(s.productIDs == ["org.getpure.pure.Week", "org.getpure.pure.Month"])
        #expect(s.warnings.count == 2)  // two lapses: 42 and 22 days
        let later = try only(PurchaseAnalysis.analyze([decoded], at: utc("2024-01-01T00:00:00Z")))
        #expect(later.state == .expired)
    }

    /// Judged at an instant, only what had begun by then counts: the demo's weekly-intro
    /// sandbox receipt at 21:50 on 2020-07-14 has had a trial and three paid 5-minute periods;
    /// its four later monthly renewals and the annual one of 2020-07-22 are notes, not
    /// renewals, products, gaps or timeline (issue 24: they were counted as "8 paid").
    @Test func transactionsAfterTheInstantAreNotCounted() throws {
        let words = Wording("purchase-analysis")
        let item = try #require(DemoCorpus.items().first { $0.name == "sandbox-weekly-intro.b64" })
        let decoded = try ReceiptDecoder().decode(item.bytes)
        let s = try only(PurchaseAnalysis.analyze([decoded], at: utc("2020-07-14T21:50:00Z")))
        #expect(s.state == .active)
        #expect(s.expiresDate == utc("2020-07-14T21:52:57Z"))
        #expect(s.renewalCount == 3)
        #expect(s.paidPeriods == 3)
        #expect(s.productIDs == ["com.revenuecat.monthly_4.99.1_week_intro"])
        #expect(s.periods.map(\.transactionID) == ["1000000692878476", "1000000692879214", "1000000692901513", "1000000692902182"])
        #expect(s.periods.map(\.kind) == [.trial, .paid, .paid, .paid])
        #expect(s.periods.last?.end == utc("2020-07-14T21:52:57Z"))
        words.said(s.warnings)
        // At the receipt's creation everything counts: 8 paid, both products, the 7-day gap.
        let all = try only(PurchaseAnalysis.analyze([decoded], at: utc("2020-07-22T17:40:00Z")))
        #expect(all.paidPeriods == 8)
        #expect(all.renewalCount == 8)
        #expect(all.productIDs == ["com.revenuecat.monthly_4.99.1_week_intro", "com.revenuecat.annual_39.99.2_week_intro"])
        words.check()
    }

    /// A refund dated after the instant had not happened at it: the period is paid, the
    /// subscription active; after the refund date it is refunded.
    @Test func aLaterRefundIsNotYetARefund() throws {
        let text = Self.response([Self.row("1", from: -10, to: 20, extra: ["cancellation_date_ms": String(Int64((Self.t0.timeIntervalSince1970 + 5 * 86_400) * 1000)), "cancellation_reason": "0"])])
        let before = try only(try analyze(text))
        #expect(before.state == .active)
        #expect(before.periods.map(\.kind) == [.paid])
        #expect(before.periods.first?.end == Self.t0.addingTimeInterval(20 * 86_400))
        let after = try only(try analyze(text, at: Self.t0.addingTimeInterval(6 * 86_400)))
        #expect(after.state == .refunded)
        #expect(after.periods.map(\.kind) == [.refunded])
        #expect(after.periods.first?.end == Self.t0.addingTimeInterval(5 * 86_400))
    }

    /// session-pro DID_RENEW (sandbox): active during the 3-minute renewal, expired after it.
    @Test func realNotificationDidRenew() throws {
        let words = Wording("purchase-analysis")
        let decoded = try ReceiptDecoder().decode(try Fixture.bytes("notification-v2.jws"))
        // DID_RENEW, signed 2025-10-01T07:08:38Z: the renewal runs 07:09:12 to 07:12:12.
        let during = try only(PurchaseAnalysis.analyze([decoded], at: utc("2025-10-01T07:10:00Z")))
        #expect(during.state == .active)
        #expect(during.isSandbox)
        words.said(during.warnings)
        let after = try only(PurchaseAnalysis.analyze([decoded], at: utc("2025-10-01T08:00:00Z")))
        #expect(after.state == .expired)
        words.check()
    }

    /// The benchmark shape: 10,000 rows in one response analyse without error (timing is
    /// reported by `receiptdash bench --analyze`, not asserted here).
    @Test func tenThousandRows() throws {
        let rows = (0..<10_000).map { i in Self.row("\(i)", original: "\(i % 50)", from: Double(i / 50) * 30 - 6000, to: Double(i / 50) * 30 - 5970) }
        let analysis = try analyze(Self.response(rows))
        #expect(analysis.subscriptions.count == 50)
        #expect(analysis.subscriptions.allSatisfy { $0.renewalCount == 199 })
    }
}
