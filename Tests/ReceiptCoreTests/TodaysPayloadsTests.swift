import AppStoreAPI
import Crypto
import Foundation
import Testing
import TestSupport

@testable import ReceiptRendering
@testable import ReceiptCore

/// Today's payload fields (prorated refunds, 12-month commitments, win-back and one-time
/// offers, app transaction ids) and notification types, read from JWS this test signs with its
/// own test CA (``ECHierarchy``), with the exact words every output shows.
@Suite struct TodaysPayloadsTests {
    static let day: Int64 = 86_400_000
    /// 2024-03-01T00:00:00Z.
    static let march: Int64 = 1_709_251_200_000
    static let product = "com.example.receiptdash.pro.monthly"
    var march: Int64 { Self.march }
    var day: Int64 { Self.day }

    /// A signed JWS of `payload` (sorted keys), by the test CA's leaf.
    static func sign(_ payload: [String: JSONValue]) throws -> String {
        let pki = try ECHierarchy.shared.get()
        return try SignedJWS.make(pki, payload: JSONValue.object(payload).compactJSON)
    }

    static func transaction(
        _ id: Int, purchase: Int64, expires: Int64?, _ extra: [String: JSONValue] = [:]
    ) -> [String: JSONValue] {
        var t: [String: JSONValue] = [
            "transactionId": .string("20000009000000\(10 + id)"), "originalTransactionId": .string("2000000900000010"),
            "productId": .string(product), "bundleId": .string(SignedReceipt.bundleID), "type": .string("Auto-Renewable Subscription"),
            "purchaseDate": .integer(purchase), "originalPurchaseDate": .integer(march), "signedDate": .integer(march),
            "environment": .string("Production"), "inAppOwnershipType": .string("PURCHASED"),
        ]
        if let expires { t["expiresDate"] = .integer(expires) }
        for (k, v) in extra { t[k] = v }
        return t
    }

    static func decode(_ payloads: [[String: JSONValue]]) throws -> [DecodedInput] {
        try payloads.map { try ReceiptDecoder().decode(text: try sign($0)) }
    }

    static func analysis(_ payloads: [[String: JSONValue]], renewal: [String: JSONValue]? = nil, at: String) throws -> PurchaseAnalysis {
        var inputs = try decode(payloads)
        if let renewal { inputs.append(try ReceiptDecoder().decode(text: try sign(renewal))) }
        return PurchaseAnalysis.analyze(inputs, at: utc(at))
    }

    /// Three monthly periods from 2024-03-01; the last with `last`'s fields.
    static func threeMonths(last: [String: JSONValue]) -> [[String: JSONValue]] {
        [
            transaction(1, purchase: march, expires: march + 31 * day),
            transaction(2, purchase: march + 31 * day, expires: march + 61 * day),
            transaction(3, purchase: march + 61 * day, expires: march + 92 * day, last),
        ]
    }

    // MARK: Refunds

    @Test func aProratedRefundEndsAccessAtTheRefundAndKeepsTheEarlierPeriodsPaid() throws {
        let words = Wording("todays-payloads")
        let refund: [String: JSONValue] = [
            "revocationDate": .integer(march + 71 * day), "revocationReason": .integer(0), "revocationType": .string("REFUND_PRORATED"),
            "revocationPercentage": .integer(40000),
        ]
        let result = try Self.analysis(Self.threeMonths(last: refund), at: "2024-05-20T00:00:00Z")
        let s = try #require(result.subscriptions.first)
        #expect(s.state == .refundedProrated)
        #expect(s.state.rawValue == "refunded-prorated")
        words.said(s.explanation)
        #expect(s.periods.map(\.kind) == [.paid, .paid, .refundedProrated])
        #expect(s.periods.last?.end == utc("2024-05-11T00:00:00Z"))
        #expect(s.paidPeriods == 2)
        #expect(s.revocationType == "REFUND_PRORATED")
        #expect(s.revocationPercentage == 40000)
        #expect(s.evidence.contains("revocation_type REFUND_PRORATED, revocation_percentage 40000 (40%)"))
        let json = AnalysisRendering.json(result)
        let sub = try #require(json["subscriptions"]?.array?.first?.object)
        #expect(sub["state"]?.text == "refunded-prorated")
        #expect(sub["revocation_type"]?.text == "REFUND_PRORATED")
        #expect(sub["revocation_percentage"]?.int64 == 40000)
        #expect(sub["periods"]?.array?.last?.object?["kind"]?.text == "refunded-prorated")
        let text = AnalysisRendering.text(result)
        let bar = try #require(text.first { $0.hasPrefix("    [") })
        #expect(bar == "    [====================================ppppppp     ]  2024-03-01 … 2024-05-20")
        words.check()
    }

    @Test func aFullRefundStaysNeverPurchasedAndAFamilyRevokeSaysSo() throws {
        let words = Wording("todays-payloads")
        let full = try Self.analysis(
            Self.threeMonths(last: [
                "revocationDate": .integer(march + 71 * day), "revocationReason": .integer(1), "revocationType": .string("REFUND_FULL"),
                "revocationPercentage": .integer(100000),
            ]), at: "2024-05-20T00:00:00Z")
        #expect(full.subscriptions.first?.state == .refunded)
        words.said(full.subscriptions.first?.explanation)
        let family = try Self.analysis(
            Self.threeMonths(last: ["revocationDate": .integer(march + 71 * day), "revocationType": .string("FAMILY_REVOKE")]),
            at: "2024-05-20T00:00:00Z")
        #expect(family.subscriptions.first?.state == .revokedFamilySharing)
        words.said(family.subscriptions.first?.explanation)

        // One-time purchases say the same.
        func oneTime(_ extra: [String: JSONValue]) throws -> String? {
            var t = Self.transaction(9, purchase: march, expires: nil, extra)
            t["type"] = .string("Non-Consumable")
            t["productId"] = .string("com.example.receiptdash.lifetime")
            return try Self.analysis([t], at: "2024-05-20T00:00:00Z").oneTimePurchases.first?.explanation
        }
        words.said(try oneTime(["revocationDate": .integer(march + 10 * day), "revocationType": .string("FAMILY_REVOKE")]))
        words.said(try oneTime([
                "revocationDate": .integer(march + 10 * day), "revocationReason": .integer(0), "revocationType": .string("REFUND_PRORATED"),
                "revocationPercentage": .integer(12500),
            ]))
        words.said(try oneTime(["revocationDate": .integer(march + 10 * day), "revocationType": .string("REFUND_FULL")]))
        words.check()
    }

    // MARK: Commitments and offers

    static let commitment: [String: JSONValue] = [
        "billingPlanType": .string("MONTHLY"),
        "commitmentInfo": .object([
            "billingPeriodNumber": .integer(3), "totalBillingPeriods": .integer(12),
            "commitmentExpiresDate": .integer(1_740_787_200_000), "commitmentPrice": .integer(119_880),
        ]),
    ]

    static func renewal(autoRenew: Int64, commitmentRenews: Bool) -> [String: JSONValue] {
        [
            "originalTransactionId": .string("2000000900000010"), "productId": .string(product), "autoRenewProductId": .string(product),
            "autoRenewStatus": .integer(autoRenew), "environment": .string("Production"), "signedDate": .integer(march),
            "renewalBillingPlanType": .string("MONTHLY"),
            "commitmentInfo": .object([
                "commitmentAutoRenewStatus": .bool(commitmentRenews), "commitmentAutoRenewProductId": .string(product),
                "commitmentRenewalBillingPlanType": .string("MONTHLY"), "commitmentRenewalDate": .integer(1_740_787_200_000),
                "commitmentRenewalPrice": .integer(119_880),
            ]),
        ]
    }

    @Test func aCommitmentPlanShowsItsPeriodAndWhatCancellingMeans() throws {
        let words = Wording("todays-payloads")
        let on = try Self.analysis(
            Self.threeMonths(last: Self.commitment), renewal: Self.renewal(autoRenew: 1, commitmentRenews: false), at: "2024-05-20T00:00:00Z")
        let active = try #require(on.subscriptions.first)
        #expect(active.state == .active)
        words.said(active.explanation)
        #expect(active.evidence.contains("commitment_info: billing period 3 of 12, commitment ends 2025-03-01, commitment_price 119880"))
        #expect(active.billingPlanType == "MONTHLY")
        #expect(active.commitment?.billingPeriodNumber == 3)

        let off = try Self.analysis(
            Self.threeMonths(last: Self.commitment), renewal: Self.renewal(autoRenew: 0, commitmentRenews: false), at: "2024-05-20T00:00:00Z")
        let cancelled = try #require(off.subscriptions.first)
        #expect(cancelled.state == .activeWillNotRenew)
        words.said(cancelled.explanation)
        let json = AnalysisRendering.json(off)
        let sub = try #require(json["subscriptions"]?.array?.first?.object)
        #expect(sub["billing_plan_type"]?.text == "MONTHLY")
        #expect(
            sub["commitment_info"]
                == .object([
                    "billing_period_number": .integer(3), "total_billing_periods": .integer(12),
                    "commitment_expires_date": .string("2025-03-01T00:00:00Z"), "commitment_price": .integer(119_880),
                ]))
        words.check()
    }

    @Test func winBackAndOneTimeOffersAreNamedInTheTimeline() throws {
        let words = Wording("todays-payloads")
        let payloads = [
            Self.transaction(
                1, purchase: Self.march, expires: Self.march + 31 * Self.day,
                ["offerType": .integer(4), "offerDiscountType": .string("PAY_AS_YOU_GO"), "offerPeriod": .string("P1M"), "offerIdentifier": .string("winback-1")]),
            Self.transaction(
                2, purchase: Self.march + 31 * Self.day, expires: Self.march + 61 * Self.day,
                ["offerType": .integer(3), "offerDiscountType": .string("ONE_TIME"), "offerIdentifier": .string("SPRING")]),
            Self.transaction(3, purchase: Self.march + 61 * Self.day, expires: Self.march + 92 * Self.day),
        ]
        let result = try Self.analysis(payloads, at: "2024-05-20T00:00:00Z")
        let s = try #require(result.subscriptions.first)
        #expect(s.periods.map(\.kind) == [.offer, .offer, .paid])
        words.said(s.periods.map(\.offer))
        words.said(AnalysisRendering.offers(s))
        words.said(AnalysisRendering.text(result))
        let periods = try #require(AnalysisRendering.json(result)["subscriptions"]?.array?.first?.object?["periods"]?.array)
        words.said(periods.map { $0.object?["offer"]?.text })
        words.check()
    }

    // MARK: Fields in every output

    @Test func everyNewTransactionFieldIsFirstClassInInspectAndTheDetailView() async throws {
        let words = Wording("todays-payloads")
        var payload = Self.transaction(
            3, purchase: Self.march, expires: Self.march + 31 * Self.day,
            [
                "revocationDate": .integer(Self.march + 10 * Self.day), "revocationType": .string("REFUND_PRORATED"),
                "revocationPercentage": .integer(40000), "offerType": .integer(4), "offerDiscountType": .string("ONE_TIME"),
                "offerPeriod": .string("P1Y6M"), "appTransactionId": .string("704289572311094157"),
                "previousOriginalTransactionId": .string("1000000900000001"),
                "advancedCommerceInfo": .object(["requestReferenceId": .string("ref-1"), "items": .array([.object(["SKU": .string("sku.a")])])]),
                "futureField": .object(["nested": .integer(1)]), "futureFlag": .string("yes"),
            ])
        for (k, v) in Self.commitment { payload[k] = v }
        let token = try Self.sign(payload)
        let decoded = try ReceiptDecoder().decode(text: token)
        let report = await (try ECHierarchy.shared.get()).evaluator.evaluate(decoded, options: TamperClock.options)
        #expect(report.verdict == .valid)

        let json = try #require(InspectJSON.object(for: decoded).object?["transactions"]?.array?.first?.object)
        #expect(json["revocation_type"] == .string("REFUND_PRORATED"))
        #expect(json["revocation_percentage"] == .integer(40000))
        #expect(json["offer_type"] == .integer(4))
        #expect(json["offer_discount_type"] == .string("ONE_TIME"))
        #expect(json["offer_period"] == .string("P1Y6M"))
        #expect(json["app_transaction_id"] == .string("704289572311094157"))
        #expect(json["previous_original_transaction_id"] == .string("1000000900000001"))
        #expect(json["billing_plan_type"] == .string("MONTHLY"))
        #expect(
            json["commitment_info"]
                == .object([
                    "billing_period_number": .integer(3), "total_billing_periods": .integer(12),
                    "commitment_expires_date": .string("2025-03-01T00:00:00Z"), "commitment_price": .integer(119_880),
                ]))
        #expect(
            json["advanced_commerce_info"]
                == .object(["requestReferenceId": .string("ref-1"), "items": .array([.object(["SKU": .string("sku.a")])])]))
        // Unknown fields stay, objects as objects.
        #expect(json["other_fields"] == .object(["futureField": .object(["nested": .integer(1)]), "futureFlag": .string("yes")]))

        let p = try #require(decoded.transactions.first)
        func shown(_ field: PurchaseField) -> String? { field.displayText(in: p) }
        words.said(shown(.revocationType))
        #expect(shown(.revocationPercentage) == "40000 (40%)")
        #expect(PurchaseField.revocationPercentage.label == "revocation_percentage (milliunits)")
        #expect(shown(.offerType) == "4 (win-back offer)")
        words.said(shown(.offerDiscountType))
        #expect(shown(.offerPeriod) == "P1Y6M (1 year 6 months)")
        words.said(shown(.billingPlanType))
        #expect(shown(.commitmentInfo) == "billing period 3 of 12, commitment ends 2025-03-01, commitment price 119880 milliunits")
        #expect(shown(.appTransactionID) == "704289572311094157")
        words.check()
    }

    @Test func renewalInfoCarriesItsBillingPlanAndCommitment() throws {
        var payload = Self.renewal(autoRenew: 1, commitmentRenews: true)
        payload["offerDiscountType"] = .string("FREE_TRIAL")
        payload["offerPeriod"] = .string("P2W")
        payload["appTransactionId"] = .string("704289572311094157")
        payload["eligibleWinBackOfferIds"] = .array([.string("winback-1"), .string("winback-2")])
        let decoded = try ReceiptDecoder().decode(text: try Self.sign(payload))
        let renewal = try #require(InspectJSON.object(for: decoded).object?["pending_renewal_info"]?.array?.first?.object)
        #expect(renewal["renewal_billing_plan_type"] == .string("MONTHLY"))
        #expect(
            renewal["commitment_info"]
                == .object([
                    "commitment_auto_renew_status": .bool(true), "commitment_auto_renew_product_id": .string(Self.product),
                    "commitment_renewal_billing_plan_type": .string("MONTHLY"), "commitment_renewal_date": .string("2025-03-01T00:00:00Z"),
                    "commitment_renewal_price": .integer(119_880),
                ]))
        #expect(renewal["offer_discount_type"] == .string("FREE_TRIAL"))
        #expect(renewal["offer_period"] == .string("P2W"))
        #expect(renewal["app_transaction_id"] == .string("704289572311094157"))
        #expect(renewal["eligible_win_back_offer_ids"] == .array([.string("winback-1"), .string("winback-2")]))
        #expect(renewal["other_fields"] == nil)
    }

    @Test func offerPeriodsAndPercentagesReadAsWords() {
        let words = Wording("todays-payloads")
        #expect(OfferWords.period("P1M") == "1 month")
        #expect(OfferWords.period("P3D") == "3 days")
        #expect(OfferWords.period("P1W") == "1 week")
        #expect(OfferWords.period("P1Y6M") == "1 year 6 months")
        #expect(OfferWords.period("P6M1Y") == nil)
        #expect(OfferWords.period("PT1H") == nil)
        #expect(OfferWords.period("P") == nil)
        #expect(OfferWords.period("1M") == nil)
        #expect(OfferWords.percentage(40000) == "40%")
        #expect(OfferWords.percentage(12500) == "12.5%")
        #expect(OfferWords.percentage(100000) == "100%")
        words.said(OfferWords.type(7))
        words.said(OfferWords.name(type: 7, discount: nil))
        words.said(OfferWords.discount("HALF_OFF"))
        words.said(OfferWords.revocation("REFUND_PARTIAL"))
        words.said(OfferWords.billingPlan("WEEKLY"))
        words.said(ExpirationIntent.explain(9))
        words.said(CancellationReason.explain(7))
        words.said(CancellationReason.meaning(7))
        words.said(CancellationReason.meaning(1))
        #expect(OfferWords.percentage(-500) == "-0.5%")
        #expect(OfferWords.percentage(Int64.min) == "-9223372036854775.808%")
        words.check()
    }

    /// Hostile commitment numbers neither crash the analysis nor make up payments; a
    /// commitment of another shape stays in `other_fields`.
    @Test func hostileCommitmentNumbersAreHarmless() throws {
        let words = Wording("todays-payloads")
        var last = Self.commitment
        last["commitmentInfo"] = .object([
            "billingPeriodNumber": .integer(Int64.min), "totalBillingPeriods": .integer(1), "commitmentExpiresDate": .integer(1_740_787_200_000),
        ])
        let off = try Self.analysis(
            Self.threeMonths(last: last), renewal: Self.renewal(autoRenew: 0, commitmentRenews: false), at: "2024-05-20T00:00:00Z")
        #expect(off.subscriptions.first?.state == .activeWillNotRenew)
        words.said(off.subscriptions.first?.explanation)
        var odd = Self.transaction(3, purchase: Self.march, expires: nil)
        odd["commitmentInfo"] = .string("twelve months")
        odd["eligibleWinBackOfferIds"] = .integer(3)
        let decoded = try ReceiptDecoder().decode(text: try Self.sign(odd))
        let p = try #require(decoded.transactions.first)
        #expect(p.commitmentInfo == nil)
        #expect(p.otherFields.map(\.name) == ["commitmentInfo", "eligibleWinBackOfferIds"])
        words.check()
    }

    // MARK: Notification types

    static func notification(_ type: String, _ subtype: String?, container: String, _ fields: [String: JSONValue]) throws -> DecodedInput {
        var payload: [String: JSONValue] = [
            "notificationType": .string(type), "notificationUUID": .string("7c5a1d2e-0000-4000-8000-00000000000\(type.count % 10)"),
            "version": .string("2.0"), "signedDate": .integer(march), container: .object(fields),
        ]
        if let subtype { payload["subtype"] = .string(subtype) }
        return try ReceiptDecoder().decode(text: try sign(payload))
    }

    static func explained(_ decoded: DecodedInput) -> String {
        NotificationRow.explanation(type: decoded.notification?.notificationType, subtype: decoded.notification?.subtype, decoded: decoded)
    }

    @Test func aRefundNotificationSaysWhetherTheRefundWasProrated() throws {
        let words = Wording("todays-payloads")
        func refund(_ extra: [String: JSONValue]) throws -> String {
            let transaction = try Self.sign(Self.transaction(3, purchase: Self.march, expires: Self.march + 31 * Self.day, extra))
            return Self.explained(
                try Self.notification(
                    "REFUND", nil, container: "data",
                    ["bundleId": .string(SignedReceipt.bundleID), "environment": .string("Production"), "signedTransactionInfo": .string(transaction)]))
        }
        words.said(try refund([
                "revocationDate": .integer(Self.march + 10 * Self.day), "revocationType": .string("REFUND_PRORATED"),
                "revocationPercentage": .integer(40000),
            ]))
        words.said(try refund(["revocationDate": .integer(Self.march + 10 * Self.day), "revocationType": .string("REFUND_FULL")]))
        words.said(try refund(["revocationDate": .integer(Self.march + 10 * Self.day)]))
        words.check()
    }

    @Test func rescindConsentCarriesAVerifiedAppTransaction() async throws {
        let words = Wording("todays-payloads")
        let appTransaction = try Self.sign([
            "receiptType": .string("Production"), "appAppleId": .integer(1_234_567_890), "bundleId": .string(SignedReceipt.bundleID),
            "applicationVersion": .string("3"), "originalApplicationVersion": .string("1"), "originalPurchaseDate": .integer(Self.march),
            "appTransactionId": .string("704289572311094157"), "originalPlatform": .string("iOS"), "signedDate": .integer(Self.march),
        ])
        let decoded = try Self.notification(
            "RESCIND_CONSENT", nil, container: "appData",
            [
                "appAppleId": .integer(1_234_567_890), "bundleId": .string(SignedReceipt.bundleID), "environment": .string("Production"),
                "signedAppTransactionInfo": .string(appTransaction),
            ])
        #expect(decoded.notification?.container == "appData")
        #expect(decoded.nested.map(\.field) == ["appData.signedAppTransactionInfo"])
        #expect(decoded.receipt?.appTransactionID == "704289572311094157")
        #expect(decoded.notification?.bundleID == SignedReceipt.bundleID)
        let report = await (try ECHierarchy.shared.get()).evaluator.evaluate(decoded, options: TamperClock.options)
        #expect(report.verdict == .valid)
        #expect(report.steps.last.map { "\($0.name): \($0.outcome.rawValue)" } == "nested appData.signedAppTransactionInfo: pass")
        words.said(Self.explained(decoded))
        words.check()
    }

    @Test func eachNewTypeIsExplainedInOneLineAndUnknownOnesAreKept() throws {
        let words = Wording("todays-payloads")
        let summary = try Self.notification(
            "RENEWAL_EXTENSION", "SUMMARY", container: "summary",
            [
                "requestIdentifier": .string("5a8d0f4e-6f3b-4c1d-8e2a-9b7c6d5e4f30"), "environment": .string("Production"),
                "appAppleId": .integer(1_234_567_890), "bundleId": .string(SignedReceipt.bundleID), "productId": .string(Self.product),
                "storefrontCountryCodes": .array([.string("USA"), .string("FRA")]), "succeededCount": .integer(41), "failedCount": .integer(2),
            ])
        words.said(Self.explained(summary))
        let summaryJSON = try #require(InspectJSON.object(for: summary).object?["notification"]?.object)
        #expect(summaryJSON["container"] == .string("summary"))
        #expect(summaryJSON["summary"]?.object?["succeeded_count"] == .integer(41))
        #expect(summaryJSON["summary"]?.object?["storefront_country_codes"] == .array([.string("USA"), .string("FRA")]))
        #expect(summary.environment == .production)

        let token = try Self.notification(
            "EXTERNAL_PURCHASE_TOKEN", "CREATED", container: "externalPurchaseToken",
            [
                "externalPurchaseId": .string("b2f0a3c4-1111-4222-8333-444455556666"), "tokenCreationDate": .integer(Self.march),
                "appAppleId": .integer(1_234_567_890), "bundleId": .string(SignedReceipt.bundleID), "tokenType": .string("ACQUISITION"),
                "tokenExpirationDate": .integer(Self.march + 30 * Self.day),
            ])
        words.said(Self.explained(token))
        #expect(InspectJSON.object(for: token).object?["notification"]?.object?["token_type"] == .string("ACQUISITION"))

        func line(_ type: String?, _ subtype: String?) -> String { NotificationExplanation.explain(type: type, subtype: subtype) }
        words.said(line("EXTERNAL_PURCHASE_TOKEN", "UNREPORTED"))
        words.said(line("EXTERNAL_PURCHASE_TOKEN", "ACTIVE_TOKEN_REMINDER"))
        words.said(line("MIGRATE", nil))
        words.said(line("MIGRATION", nil))
        words.said(line("METADATA_UPDATE", nil))
        words.said(line("PRICE_CHANGE", nil))
        words.said(line("RENEWAL_EXTENSION", "FAILURE"))
        #expect(NotificationExplanation.knownTypes.isSuperset(of: ["MIGRATE", "MIGRATION", "RESCIND_CONSENT", "METADATA_UPDATE", "PRICE_CHANGE"]))
        // Unknown: kept raw, shown as such.
        words.said(line("SOMETHING_NEW", "ODD"))
        words.said(line("SUBSCRIBED", "ODD"))
        let unknown = try Self.notification(
            "SOMETHING_NEW", nil, container: "futureData", ["bundleId": .string(SignedReceipt.bundleID), "what": .object(["x": .integer(1)])])
        #expect(unknown.notification?.notificationType == "SOMETHING_NEW")
        #expect(unknown.notification?.otherFields.map(\.name) == ["futureData"])
        #expect(unknown.notification?.otherFields.first?.json?.object?["what"] == .object(["x": .integer(1)]))
        words.check()
    }
}
