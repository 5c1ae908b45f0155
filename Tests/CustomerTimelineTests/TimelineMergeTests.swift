import AppStoreAPI
import AuditTrail
@testable import CustomerTimeline
import Foundation
import ReceiptCore
import ReceiptRendering
import ReceiptTrust
import Testing
import TestSupport

/// A made-up customer, Dana, seen by every source: Apple's history (a monthly subscription
/// bought with an introductory offer, renewed twice, the last renewal with a promotional
/// offer; coins refunded in part), her notifications (one renewal, an offer, a consumption
/// request), our writes (an extension, a token whose outcome is unknown), a verified receipt,
/// and what Apple says it sent.
enum Dana {
    static let day: TimeInterval = 86_400
    static let start = Date(timeIntervalSince1970: 1_760_000_000)  // 2025-10-09T08:53:20Z
    static func date(_ days: Double) -> Date { start.addingTimeInterval(days * day) }
    static let now = date(75)

    static func transaction(
        _ id: String, original: String = "2001", product: String = "pro.monthly", bought: Double, expires: Double?, reason: String? = nil
    ) -> Purchase {
        var p = Purchase(source: .jwsTransaction)
        p.transactionID = id
        p.originalTransactionID = original
        p.productID = product
        p.purchaseDate = date(bought)
        p.expiresDate = expires.map(date)
        p.transactionReason = reason
        p.productType = expires == nil ? .consumable : .autoRenewable
        p.subscriptionGroupIdentifier = expires == nil ? nil : "21000001"
        p.environment = "Production"
        p.appTransactionID = "704000000000000009"
        p.appAccountToken = "7E3FB20B-4CDB-47CC-936D-99D65F608138"
        return p
    }

    static func item(_ p: Purchase) -> LookedUpItem {
        var decoded = DecodedInput(format: .jwsTransaction)
        decoded.transactions = [p]
        return LookedUpItem(decoded: decoded, trust: TrustReport(verdict: .valid, steps: []))
    }

    static var lookup: CustomerLookupResult {
        var first = transaction("2001", bought: 0, expires: 30, reason: "PURCHASE")
        first.offerType = 1
        let second = transaction("2002", bought: 30, expires: 60, reason: "RENEWAL")
        var third = transaction("2003", bought: 60, expires: 90, reason: "RENEWAL")
        third.offerType = 2
        third.offerIdentifier = "come-back"
        var coins = transaction("3001", original: "3001", product: "coins.100", bought: 40, expires: nil, reason: "PURCHASE")
        coins.cancellationDate = date(45)
        coins.revocationType = "REFUND_PRORATED"
        coins.revocationPercentage = 40_000
        let items = [first, second, coins, third].map(item)
        var result = CustomerLookupResult(
            query: .transactionID("2002"), at: now, environment: .production, transactions: items, refunds: ["3001"],
            apiStatuses: ["2001": .billingRetry])
        result.analysis = PurchaseAnalysis.analyze(items.map(\.decoded), at: now)
        return result
    }

    /// What a notification about the third period carries: the transaction, and renewal info
    /// that says it renews.
    static let offerPayload: String = {
        let ms = { (days: Double) in Int64(date(days).timeIntervalSince1970 * 1000) }
        let transaction = UnsignedJWS.make(
            #"{"transactionId":"2003","originalTransactionId":"2001","productId":"pro.monthly","type":"Auto-Renewable Subscription","#
                + #""purchaseDate":\#(ms(60)),"expiresDate":\#(ms(90)),"environment":"Production","subscriptionGroupIdentifier":"21000001"}"#)
        let renewal = UnsignedJWS.make(
            #"{"originalTransactionId":"2001","productId":"pro.monthly","autoRenewProductId":"pro.monthly","autoRenewStatus":1,"environment":"Production"}"#)
        return UnsignedJWS.make(
            #"{"notificationType":"OFFER_REDEEMED","subtype":"UPGRADE","notificationUUID":"n-offer","data":{"environment":"Production","#
                + #""signedTransactionInfo":"\#(transaction)","signedRenewalInfo":"\#(renewal)"}}"#)
    }()

    static func notification(
        _ uuid: String, _ type: String, _ subtype: String? = nil, transaction: String, original: String = "2001", at days: Double, payload: String? = nil
    ) -> StoredNotification {
        StoredNotification(
            record: NotificationRecord(
                notificationUUID: uuid, version: .v2, notificationType: type, subtype: subtype, bundleID: "com.example.app",
                environment: "Production", signedDate: date(days), receivedAt: date(days).addingTimeInterval(2), verdict: .valid,
                transactionID: transaction, originalTransactionID: original, productID: "pro.monthly", signedPayload: payload),
            deliveries: 1, lastReceivedAt: date(days).addingTimeInterval(2))
    }

    static var stored: StoredCustomerRecords {
        var receipt = transaction("2001", bought: 0, expires: 30, reason: "PURCHASE")
        receipt.source = .receiptInApp
        return StoredCustomerRecords(
            originalTransactionIDs: ["2001", "3001"], appTransactionIDs: ["704000000000000009"],
            appAccountTokens: ["7e3fb20b-4cdb-47cc-936d-99d65f608138"],
            notifications: [
                notification("n-renew", "DID_RENEW", transaction: "2002", at: 30),
                notification("n-offer", "OFFER_REDEEMED", "UPGRADE", transaction: "2003", at: 60, payload: offerPayload),
                notification("n-consume", "CONSUMPTION_REQUEST", transaction: "3001", original: "3001", at: 74.8),
            ],
            purchases: [
                StoredPurchase(
                    receiptID: 7, contentHash: "abc123", format: "pkcs7", firstSeen: date(1), fromLookup: false, state: "done", verifyStatus: 0,
                    verifiedAt: date(1), purchase: receipt)
            ],
            actions: [
                AuditAction(
                    id: 1, at: date(70), user: "sam", action: "extend", environment: "Production", requestID: "ticket-9", originalTransactionID: "2001",
                    transactionID: nil, productID: "pro.monthly", requestBody: #"{"extendByDays":3}"#, httpStatus: 200, apiError: nil, result: "success"),
                AuditAction(
                    id: 2, at: date(71), user: "sam", action: "app-account-token", environment: "Production", requestID: "ticket-10",
                    originalTransactionID: "2001", transactionID: nil, productID: nil, requestBody: nil, httpStatus: nil, apiError: nil, result: "pending"),
            ])
    }

    static var sent: [SentNotification] {
        [
            SentNotification(
                notificationUUID: "n-renew", notificationType: "DID_RENEW", subtype: nil, signedDate: date(30), transactionID: "2002",
                originalTransactionID: "2001", attempts: ["SUCCESS"]),
            SentNotification(
                notificationUUID: "n-lost", notificationType: "DID_FAIL_TO_RENEW", subtype: nil, signedDate: date(74), transactionID: "2003",
                originalTransactionID: "2001", attempts: ["TIMED_OUT", "TIMED_OUT"]),
        ]
    }

    static var story: CustomerStory { CustomerStory.build(CustomerInputs(at: now, lookup: lookup, sent: sent, stored: stored)) }
}

@Suite struct TimelineMergeTests {
    struct Row: Equatable, CustomStringConvertible {
        var days: Double
        var kind: CustomerEventKind
        var sources: [CustomerSource]
        var transaction: String?
        var description: String { "\(days) \(kind.rawValue) \(sources.map(\.rawValue)) \(transaction ?? "-")" }
    }

    func rows(_ story: CustomerStory) -> [Row] {
        story.events.map {
            Row(days: ($0.at.timeIntervalSince(Dana.start) / Dana.day * 100).rounded() / 100, kind: $0.kind, sources: $0.sources, transaction: $0.transactionID)
        }
    }

    @Test func everySourceIsMergedIntoOneTimelineOldestFirst() {
        #expect(
            rows(Dana.story) == [
                Row(days: 0, kind: .purchase, sources: [.api, .receipt, .verify], transaction: "2001"),
                Row(days: 30, kind: .renewal, sources: [.api, .notification], transaction: "2002"),
                Row(days: 40, kind: .purchase, sources: [.api], transaction: "3001"),
                Row(days: 45, kind: .proratedRefund, sources: [.api], transaction: "3001"),
                Row(days: 60, kind: .offerRedeemed, sources: [.api, .notification], transaction: "2003"),
                Row(days: 70, kind: .extension, sources: [.action], transaction: nil),
                Row(days: 71, kind: .tokenSet, sources: [.action], transaction: nil),
                Row(days: 74.8, kind: .consumptionRequest, sources: [.notification], transaction: "3001"),
            ])
    }

    @Test func aMergedEventKeepsEverySourcesRefsAndTheWorstTrust() throws {
        let words = Wording("timeline-merge")
        let story = Dana.story
        let purchase = try #require(story.events.first)
        #expect(purchase.refs == ["api:2001", "receipt:abc123"])
        #expect(purchase.trust == "valid")
        #expect(purchase.details.map(\.source) == [.api, .receipt, .verify])
        #expect(purchase.summary == "bought pro.monthly, until 2025-11-08T08:53:20Z, introductory offer")
        let offer = story.events[4]
        #expect(offer.refs == ["api:2003", "notification:n-offer"])
        words.said(offer.summary)
        words.said(story.events[3].summary)
        #expect(story.events[6].outcome == "unknown")
        words.said(story.events[5].summary)
        words.check()
    }

    @Test func theIssuesNameEveryGapBetweenTheSources() throws {
        let words = Wording("timeline-merge")
        let issues = Dana.story.issues
        #expect(
            issues.map(\.code) == [.refundNotNotified, .notificationMissing, .statusUnexplained, .consumptionUnanswered, .actionUnknown])
        #expect(issues.map(\.transactionID) == ["3001", "2003", nil, "3001", nil])
        #expect(issues[1].refs == ["notification:n-lost"])
        words.said(issues[1].summary)
        words.said(issues[2].summary)
        let deadline = try #require(issues[3].deadline)
        #expect(deadline == Dana.date(74.8).addingTimeInterval(12 * 3600))
        #expect(issues[3].summary.hasSuffix("(7 h 12 min left)"))
        words.check()
    }

    @Test func anAnsweredConsumptionRequestIsNoIssue() {
        let words = Wording("timeline-merge")
        var stored = Dana.stored
        stored.actions.append(
            AuditAction(
                id: 3, at: Dana.date(74.9), user: "sam", action: "consumption", environment: "Production", requestID: "c-1", originalTransactionID: "3001",
                transactionID: "3001", productID: "coins.100", requestBody: nil, httpStatus: 202, apiError: nil, result: "success"))
        let story = CustomerStory.build(CustomerInputs(at: Dana.now, lookup: Dana.lookup, sent: Dana.sent, stored: stored))
        #expect(!story.issues.map(\.code).contains(.consumptionUnanswered))
        #expect(story.events.last?.kind == .consumptionAnswered)
        words.said(story.events.last?.summary)
        words.check()
    }

    @Test func theAnswerSaysEachSubscriptionAndProductNow() throws {
        let story = Dana.story
        let subscription = try #require(story.subscriptions.first)
        #expect(story.subscriptions.count == 1)
        #expect(subscription.originalTransactionID == "2001")
        #expect(subscription.group == "21000001")
        #expect(subscription.state == "active")
        #expect(subscription.apiStatus == "billing-retry")
        #expect(subscription.until == Dana.date(90))
        #expect(subscription.offers == ["this period: promotional offer"])
        #expect(story.products.map(\.state) == ["refunded"])
        #expect(story.products.map(\.productID) == ["coins.100"])
        #expect(story.ids.appTransactionIDs == ["704000000000000009"])
        #expect(story.ids.appAccountTokens == ["7e3fb20b-4cdb-47cc-936d-99d65f608138"])
        #expect(story.ids.environment == "Production")
        #expect(story.sources.map(\.source) == [.api, .notification, .action, .receipt, .verify])
        #expect(story.sources.map(\.rows) == [4, 3, 2, 1, 1])
        #expect(story.offline == false)
    }

    @Test func offlineTheTrailAloneTellsItAndNoIssueNeedsTheAPI() {
        let story = CustomerStory.build(CustomerInputs(at: Dana.now, stored: Dana.stored))
        #expect(story.offline)
        #expect(
            rows(story).map(\.kind) == [.purchase, .renewal, .offerRedeemed, .extension, .tokenSet, .consumptionRequest])
        #expect(story.issues.map(\.code) == [.consumptionUnanswered, .actionUnknown])
        #expect(story.sources[0].asked == false)
        // The newest notification's transaction and renewal info say what the trail's receipt
        // cannot: the third period, and that it renews.
        #expect(story.subscriptions.map(\.state) == ["active"])
        #expect(story.subscriptions.map(\.until) == [Dana.date(90)])
        #expect(story.subscriptions.map(\.autoRenew) == [true])
    }

    @Test func newestFirstReversesTheTimelineOnly() {
        let story = Dana.story
        #expect(story.newestFirst.events.map(\.kind) == story.events.reversed().map(\.kind))
        #expect(story.newestFirst.issues == story.issues)
    }

    @Test func anExpiredSubscriptionEndsWithOneExpiredEvent() {
        let lookup = Dana.lookup
        let later = Dana.date(200)
        var result = lookup
        result.at = later
        result.apiStatuses = ["2001": .expired]
        result.analysis = PurchaseAnalysis.analyze(lookup.transactions.map(\.decoded), at: later)
        var stored = Dana.stored
        stored.notifications.append(Dana.notification("n-expired", "EXPIRED", "VOLUNTARY", transaction: "2003", at: 90.01))
        let story = CustomerStory.build(CustomerInputs(at: later, lookup: result, stored: stored))
        let expired = story.events.filter { $0.kind == .expired }
        #expect(expired.count == 1)
        #expect(expired.first?.sources == [.api, .notification])
        #expect(expired.first?.at == Dana.date(90))
        #expect(!story.issues.map(\.code).contains(.statusUnexplained))
    }
}

@Suite struct EventKindTests {
    @Test func everyNotificationTypeHasItsKind() {
        let table: [(String, String?, CustomerEventKind)] = [
            ("SUBSCRIBED", "INITIAL_BUY", .purchase), ("SUBSCRIBED", "RESUBSCRIBE", .purchase), ("ONE_TIME_CHARGE", nil, .purchase),
            ("DID_RENEW", nil, .renewal), ("DID_RENEW", "BILLING_RECOVERY", .renewal), ("DID_CHANGE_RENEWAL_PREF", "UPGRADE", .upgrade),
            ("DID_CHANGE_RENEWAL_PREF", "DOWNGRADE", .downgrade), ("DID_CHANGE_RENEWAL_PREF", nil, .crossgrade),
            ("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", .autoRenewOff), ("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED", .autoRenewOn),
            ("OFFER_REDEEMED", "RESUBSCRIBE", .offerRedeemed), ("DID_FAIL_TO_RENEW", "GRACE_PERIOD", .gracePeriod),
            ("DID_FAIL_TO_RENEW", nil, .billingRetry), ("GRACE_PERIOD_EXPIRED", nil, .billingRetry), ("EXPIRED", "VOLUNTARY", .expired),
            ("REFUND", nil, .refund), ("REFUND_DECLINED", nil, .refundDeclined), ("REFUND_REVERSED", nil, .refundReversed),
            ("REVOKE", nil, .revoke), ("RENEWAL_EXTENDED", nil, .extension), ("RENEWAL_EXTENSION", "SUMMARY", .extension),
            ("PRICE_INCREASE", "PENDING", .priceIncrease), ("CONSUMPTION_REQUEST", nil, .consumptionRequest), ("TEST", nil, .test),
            ("SOMETHING_NEW", nil, .unknown),
        ]
        for (type, subtype, kind) in table {
            #expect(TimelineBuilder.kind(type: type, subtype: subtype, revocationType: nil) == kind, "\(type)/\(subtype ?? "-")")
        }
        #expect(TimelineBuilder.kind(type: "REFUND", subtype: nil, revocationType: "REFUND_PRORATED") == .proratedRefund)
    }

    @Test func aHistoryTransactionIsAPurchaseARenewalAnUpgradeOrACrossgrade() {
        let upgraded = Dana.date(10)
        var old = Dana.transaction("2001", bought: 0, expires: 30)
        old.isUpgraded = true
        old.cancellationDate = upgraded
        let times = TimelineBuilder.upgradeTimes([old])
        #expect(TimelineBuilder.startKind(Dana.transaction("2001", bought: 0, expires: 30), upgradedAt: times) == .purchase)
        #expect(TimelineBuilder.startKind(Dana.transaction("2002", bought: 30, expires: 60, reason: "RENEWAL"), upgradedAt: times) == .renewal)
        #expect(TimelineBuilder.startKind(Dana.transaction("2005", bought: 10, expires: 40, reason: "PURCHASE"), upgradedAt: times) == .upgrade)
        #expect(TimelineBuilder.startKind(Dana.transaction("2006", bought: 20, expires: 50, reason: "PURCHASE"), upgradedAt: times) == .crossgrade)
    }

    @Test func everyWriteHasItsKindAndAnUnknownOutcomeIsNeverRefused() {
        let names: [(String, CustomerEventKind)] = [
            ("extend", .extension), ("mass-extend", .extension), ("consumption", .consumptionAnswered), ("app-account-token", .tokenSet),
            ("finish", .finished), ("test-notification", .test), ("mass-extend-status", .unknown), ("something-new", .unknown),
        ]
        for (index, (name, kind)) in names.enumerated() {
            var builder = TimelineBuilder(at: Dana.now)
            builder.addActions([
                AuditAction(
                    id: Int64(index), at: Dana.date(1), user: "sam", action: name, environment: "Production", requestID: nil, originalTransactionID: "1",
                    transactionID: nil, productID: nil, requestBody: nil, httpStatus: nil, apiError: nil, result: "unknown")
            ])
            let event = builder.finish().first
            #expect(event?.kind == kind, "\(name)")
            #expect(event?.outcome == "unknown")
        }
    }
}
