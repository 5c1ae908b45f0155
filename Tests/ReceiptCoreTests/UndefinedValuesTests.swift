import Foundation
import JSONWriting
import Testing
import TestSupport

@testable import AppStoreAPI
@testable import ReceiptRendering
@testable import ReceiptCore

/// A value Apple does not define is kept as sent and said to be unknown: never coerced to the
/// nearest known case, never a guess in the analysis.
@Suite struct UndefinedValuesTests {
    typealias Payloads = TodaysPayloadsTests
    static var day: Int64 { Payloads.day }
    static var march: Int64 { Payloads.march }

    static func renewal(_ autoRenew: JSONValue) -> [String: JSONValue] {
        [
            "originalTransactionId": .string("2000000900000010"), "productId": .string(Payloads.product),
            "autoRenewProductId": .string(Payloads.product), "autoRenewStatus": autoRenew, "environment": .string("Production"),
            "signedDate": .integer(march),
        ]
    }

    /// Apple defines 0 and 1: those keep today's JSON (false and true); 7, -1 and "on" are
    /// written as sent, and the text says they are not Apple's.
    @Test(arguments: [
        (JSONValue.integer(1), JSONValue.bool(true), "auto-renew on"), (.integer(0), .bool(false), "auto-renew off"),
        (.integer(7), .integer(7), "auto-renew 7 (not defined by Apple)"), (.integer(-1), .integer(-1), "auto-renew -1 (not defined by Apple)"),
        (.string("on"), .string("on"), #"auto-renew "on" (not defined by Apple)"#),
    ])
    func autoRenewStatusKeepsWhatAppleSent(_ sent: JSONValue, _ json: JSONValue, _ text: String) throws {
        let decoded = try ReceiptDecoder().decode(text: try Payloads.sign(Self.renewal(sent)))
        let renewal = try #require(InspectJSON.object(for: decoded).object?["pending_renewal_info"]?.array?.first?.object)
        #expect(renewal["auto_renew_status"] == json)
        #expect(renewal["other_fields"] == nil)
        #expect(TextSummary.render(decoded).contains(text), "\(TextSummary.render(decoded))")
    }

    /// An active subscription whose renewal says 7: active (the expiry is a fact), and whether it
    /// renews is unknown, with the reason; never "then renews".
    @Test func anActiveSubscriptionWithAnUndefinedAutoRenewStatusSaysRenewalIsUnknown() throws {
        let words = Wording("undefined-values")
        let analysis = try Payloads.analysis(
            [Payloads.transaction(1, purchase: Self.march, expires: Self.march + 31 * Self.day)], renewal: Self.renewal(.integer(7)),
            at: "2024-03-10T00:00:00Z")
        let subscription = try #require(analysis.subscriptions.first)
        #expect(subscription.state == .active)
        words.said(subscription.explanation)
        #expect(subscription.evidence.contains { $0.contains("auto_renew_status 7 (not defined by Apple)") })
        words.check()
    }

    /// A transaction `type` Apple does not define is written as sent, and the analysis does not
    /// read it as a subscription or a one-time purchase, even with an expiry date.
    @Test(arguments: [true, false])
    func anUndefinedProductTypeIsKeptAndNotInferred(_ withExpiry: Bool) throws {
        let words = Wording("undefined-values", case: "\(withExpiry)")
        let payload = Payloads.transaction(
            1, purchase: Self.march, expires: withExpiry ? Self.march + 31 * Self.day : nil, ["type": .string("Bundle Pack")])
        let decoded = try ReceiptDecoder().decode(text: try Payloads.sign(payload))
        let purchase = try #require(decoded.transactions.first)
        #expect(purchase.productType == .unknown)
        #expect(purchase.productTypeAsSent == .string("Bundle Pack"))
        let json = try #require(InspectJSON.object(for: decoded).object?["transactions"]?.array?.first?.object)
        #expect(json["product_type"] == .string("Bundle Pack"))
        words.said(PurchaseField.productType.displayText(in: purchase))
        let analysis = PurchaseAnalysis.analyze([decoded], at: utc("2024-03-10T00:00:00Z"))
        #expect(analysis.subscriptions.isEmpty)
        let entry = try #require(analysis.oneTimePurchases.first)
        #expect(!entry.typeInferred)
        words.said(entry.explanation)
        words.check()
    }

    /// Apple's four types keep today's JSON.
    @Test(arguments: ["Auto-Renewable Subscription", "Non-Renewing Subscription", "Consumable", "Non-Consumable"])
    func definedProductTypesKeepTodaysJSON(_ type: String) throws {
        let decoded = try ReceiptDecoder().decode(
            text: try Payloads.sign(Payloads.transaction(1, purchase: Self.march, expires: nil, ["type": .string(type)])))
        #expect(decoded.transactions.first?.productTypeAsSent == nil)
        #expect(InspectJSON.object(for: decoded).object?["transactions"]?.array?.first?.object?["product_type"] == .string(type))
    }

    /// Numbers and names Apple defines for a transaction keep what was sent in JSON, and the
    /// detail view says `7 (not defined by Apple)` for any other.
    @Test func undefinedTransactionValuesAreSaidToBeUndefined() throws {
        let words = Wording("undefined-values")
        let payload = Payloads.transaction(
            1, purchase: Self.march, expires: Self.march + 31 * Self.day,
            [
                "offerType": .integer(7), "offerDiscountType": .string("HALF_OFF"), "revocationReason": .integer(9),
                "revocationDate": .integer(Self.march + Self.day), "revocationType": .string("REFUND_PARTIAL"),
                "inAppOwnershipType": .string("BORROWED"),
            ])
        let decoded = try ReceiptDecoder().decode(text: try Payloads.sign(payload))
        let purchase = try #require(decoded.transactions.first)
        let json = try #require(InspectJSON.object(for: decoded).object?["transactions"]?.array?.first?.object)
        #expect(json["offer_type"] == .integer(7))
        #expect(json["offer_discount_type"] == .string("HALF_OFF"))
        #expect(json["cancellation_reason"] == .integer(9))
        #expect(json["revocation_type"] == .string("REFUND_PARTIAL"))
        #expect(json["in_app_ownership_type"] == .string("BORROWED"))
        words.said(PurchaseField.offerType.displayText(in: purchase))
        words.said(PurchaseField.offerDiscountType.displayText(in: purchase))
        words.said(PurchaseField.cancellationReason.displayText(in: purchase))
        words.said(PurchaseField.revocationType.displayText(in: purchase))
        let analysis = PurchaseAnalysis.analyze([decoded], at: utc("2024-03-10T00:00:00Z"))
        words.said(analysis.subscriptions.first?.explanation)
        words.check()
    }

    /// A subscription status Apple does not define (6) is kept and said so, never dropped.
    @Test func anUndefinedSubscriptionStatusIsKept() throws {
        let words = Wording("undefined-values")
        let statuses: [String: SubscriptionAPIStatus] = ["2000000900000010": .active, "2000000900000020": SubscriptionAPIStatus(rawValue: 6)]
        let result = CustomerLookupResult(query: .transactionID("2000000900000010"), at: Date(), environment: .production, apiStatuses: statuses)
        let text = LookupText.render(result)
        #expect(text.contains("  2000000900000010: 1 (active)\n"))
        words.said(text)
        var out = JSONOutput()
        LookupJSON.write(result, into: &out)
        let rows = try #require(try JSONValue.parse(out.bytes).object?["api_subscription_statuses"]?.array)
        #expect(rows.last == .object(["original_transaction_id": .string("2000000900000020"), "status": .integer(6), "status_name": .string("not defined by Apple")]))
        let decoded = try JSONDecoder().decode(StatusResponse.LastTransaction.self, from: Data(#"{"originalTransactionId":"1","status":6}"#.utf8))
        #expect(decoded.subscriptionStatus == SubscriptionAPIStatus(rawValue: 6))
        words.check()
    }

    /// priceIncreaseStatus: 0 and 1 are said in words; 2 is kept and said not to be Apple's.
    @Test(arguments: [
        (0, "price_increase_status 0 (the customer has not answered the price increase)"),
        (1, "price_increase_status 1 (the customer agreed to the price increase, or was told of it without needing to agree)"),
        (2, "price_increase_status 2 (not defined by Apple)"),
    ])
    func priceIncreaseStatusIsSaidAsSent(_ status: Int, _ text: String) throws {
        var payload = Self.renewal(.integer(1))
        payload["priceIncreaseStatus"] = .integer(Int64(status))
        let decoded = try ReceiptDecoder().decode(text: try Payloads.sign(payload))
        let renewal = try #require(InspectJSON.object(for: decoded).object?["pending_renewal_info"]?.array?.first?.object)
        #expect(renewal["price_increase_status"] == .integer(Int64(status)))
        #expect(TextSummary.render(decoded).contains(text), "\(TextSummary.render(decoded))")
    }

    /// An environment or an original platform Apple does not define is shown as sent, and said
    /// so; Apple's own are shown as they are.
    @Test func anUndefinedEnvironmentAndPlatformAreSaidToBeUndefined() throws {
        let words = Wording("undefined-values")
        var app = ConformanceTests.appTransaction
        app["receiptType"] = .string("Staging")
        app["originalPlatform"] = .string("Android")
        let text = TextSummary.render(try ReceiptDecoder().decode(text: try Payloads.sign(app)))
        words.said(text)
        words.said(text)
        app["receiptType"] = .string("Sandbox")
        app["originalPlatform"] = .string("visionOS")
        let known = TextSummary.render(try ReceiptDecoder().decode(text: try Payloads.sign(app)))
        #expect(known.contains("Environment     Sandbox\n"), "\(known)")
        #expect(known.contains("Platform        visionOS\n"), "\(known)")
        words.check()
    }
}
