import AppStoreAPI
import Foundation
import Testing
import TestSupport

@testable import ReceiptRendering
@testable import ReceiptCore

/// Every field Apple's JWSTransactionDecodedPayload and JWSRenewalInfoDecodedPayload define,
/// signed by the test CA and read back: exact JSON, numbers as numbers, nothing left in
/// `other_fields`. The values are this test's own; the shapes follow Apple's models.
@Suite struct ConformanceTests {
    typealias Payloads = TodaysPayloadsTests

    static let transaction: [String: JSONValue] = [
        "transactionId": .string("2000000900000031"), "originalTransactionId": .string("2000000900000030"),
        "webOrderLineItemId": .string("2000000090000031"), "bundleId": .string(SignedReceipt.bundleID),
        "productId": .string("com.example.receiptdash.pro.yearly"), "subscriptionGroupIdentifier": .string("21450001"),
        "purchaseDate": .integer(1_709_251_200_000), "originalPurchaseDate": .integer(1_709_164_800_000),
        "expiresDate": .integer(1_740_787_200_000), "quantity": .integer(1), "type": .string("Auto-Renewable Subscription"),
        "appAccountToken": .string("0c7e2a4b-5d1f-4e3a-9b8c-7d6e5f4a3b2c"), "inAppOwnershipType": .string("FAMILY_SHARED"),
        "signedDate": .integer(1_709_251_200_500), "revocationReason": .integer(0), "revocationDate": .integer(1_712_000_000_000),
        "isUpgraded": .bool(false), "offerType": .integer(2), "offerIdentifier": .string("spring.promo"), "environment": .string("Sandbox"),
        "transactionReason": .string("RENEWAL"), "storefront": .string("FRA"), "storefrontId": .string("143442"),
        "price": .integer(49_990), "currency": .string("EUR"), "offerDiscountType": .string("PAY_UP_FRONT"),
        "appTransactionId": .string("704000000000000031"), "offerPeriod": .string("P6M"),
        "revocationType": .string("REFUND_FULL"), "revocationPercentage": .integer(100_000),
        "billingPlanType": .string("BILLED_UPFRONT"),
    ]

    static let renewal: [String: JSONValue] = [
        "expirationIntent": .integer(2), "originalTransactionId": .string("2000000900000030"),
        "autoRenewProductId": .string("com.example.receiptdash.pro.monthly"), "productId": .string("com.example.receiptdash.pro.yearly"),
        "autoRenewStatus": .integer(0), "isInBillingRetryPeriod": .bool(false), "priceIncreaseStatus": .integer(1),
        "gracePeriodExpiresDate": .integer(1_740_960_000_000), "offerType": .integer(3), "offerIdentifier": .string("code.spring"),
        "signedDate": .integer(1_740_787_200_000), "environment": .string("Sandbox"), "recentSubscriptionStartDate": .integer(1_709_164_800_000),
        "renewalDate": .integer(1_740_787_200_000), "renewalPrice": .integer(4_990), "currency": .string("EUR"),
        "offerDiscountType": .string("FREE_TRIAL"), "eligibleWinBackOfferIds": .array([.string("winback.a"), .string("winback.b")]),
        "appTransactionId": .string("704000000000000031"), "offerPeriod": .string("P1W"),
        "appAccountToken": .string("0c7e2a4b-5d1f-4e3a-9b8c-7d6e5f4a3b2c"), "renewalBillingPlanType": .string("MONTHLY"),
        "commitmentInfo": .object([
            "commitmentAutoRenewProductId": .string("com.example.receiptdash.pro.monthly"), "commitmentAutoRenewStatus": .integer(1),
            "commitmentRenewalBillingPlanType": .string("MONTHLY"), "commitmentRenewalDate": .integer(1_772_323_200_000),
            "commitmentRenewalPrice": .integer(59_880),
        ]),
    ]

    /// What `inspect --format json` writes for ``transaction`` (verifyReceipt's key names).
    static let transactionJSON = #"""
        {
            "app_account_token": "0c7e2a4b-5d1f-4e3a-9b8c-7d6e5f4a3b2c",
            "app_transaction_id": "704000000000000031",
            "bid": "com.example.receiptdash",
            "billing_plan_type": "BILLED_UPFRONT",
            "cancellation_date": "2024-04-01T19:33:20Z",
            "cancellation_reason": 0,
            "currency": "EUR",
            "environment": "Sandbox",
            "expires_date": "2025-03-01T00:00:00Z",
            "in_app_ownership_type": "FAMILY_SHARED",
            "is_upgraded": false,
            "offer_discount_type": "PAY_UP_FRONT",
            "offer_identifier": "spring.promo",
            "offer_period": "P6M",
            "offer_type": 2,
            "original_purchase_date": "2024-02-29T00:00:00Z",
            "original_transaction_id": "2000000900000030",
            "price": 49990,
            "product_id": "com.example.receiptdash.pro.yearly",
            "product_type": "Auto-Renewable Subscription",
            "purchase_date": "2024-03-01T00:00:00Z",
            "quantity": 1,
            "revocation_percentage": 100000,
            "revocation_type": "REFUND_FULL",
            "signed_date": "2024-03-01T00:00:00.500Z",
            "source": "jws",
            "storefront": "FRA",
            "storefront_id": "143442",
            "subscription_group_identifier": "21450001",
            "transaction_id": "2000000900000031",
            "transaction_reason": "RENEWAL",
            "web_order_line_item_id": "2000000090000031"
        }
        """#

    /// What it writes for ``renewal``.
    static let renewalJSON = #"""
        {
            "app_account_token": "0c7e2a4b-5d1f-4e3a-9b8c-7d6e5f4a3b2c",
            "app_transaction_id": "704000000000000031",
            "auto_renew_product_id": "com.example.receiptdash.pro.monthly",
            "auto_renew_status": false,
            "commitment_info": {
                "commitment_auto_renew_product_id": "com.example.receiptdash.pro.monthly",
                "commitment_auto_renew_status": true,
                "commitment_renewal_billing_plan_type": "MONTHLY",
                "commitment_renewal_date": "2026-03-01T00:00:00Z",
                "commitment_renewal_price": 59880
            },
            "currency": "EUR",
            "eligible_win_back_offer_ids": [
                "winback.a",
                "winback.b"
            ],
            "environment": "Sandbox",
            "expiration_intent": 2,
            "grace_period_expires_date": "2025-03-03T00:00:00Z",
            "is_in_billing_retry_period": false,
            "offer_discount_type": "FREE_TRIAL",
            "offer_identifier": "code.spring",
            "offer_period": "P1W",
            "offer_type": 3,
            "original_transaction_id": "2000000900000030",
            "price_increase_status": 1,
            "product_id": "com.example.receiptdash.pro.yearly",
            "recent_subscription_start_date": "2024-02-29T00:00:00Z",
            "renewal_billing_plan_type": "MONTHLY",
            "renewal_date": "2025-03-01T00:00:00Z",
            "renewal_price": 4990,
            "signed_date": "2025-03-01T00:00:00Z"
        }
        """#

    static func json(_ payload: [String: JSONValue], _ member: String) throws -> JSONValue {
        let decoded = try ReceiptDecoder().decode(text: try Payloads.sign(payload))
        return try #require(InspectJSON.object(for: decoded).object?[member]?.array?.first)
    }

    @Test func everyTransactionFieldReadsAsAppleTypesIt() throws {
        let json = try Self.json(Self.transaction, "transactions")
        #expect(json == (try JSONValue.parse(Array(Self.transactionJSON.utf8))))
        #expect(json.object?["other_fields"] == nil)
    }

    @Test func everyRenewalFieldReadsAsAppleTypesIt() throws {
        let json = try Self.json(Self.renewal, "pending_renewal_info")
        #expect(json == (try JSONValue.parse(Array(Self.renewalJSON.utf8))))
        #expect(json.object?["other_fields"] == nil)
    }

    static let appTransaction: [String: JSONValue] = [
        "receiptType": .string("Sandbox"), "appAppleId": .integer(6_450_000_123), "bundleId": .string(SignedReceipt.bundleID),
        "applicationVersion": .string("4.2.0"), "versionExternalIdentifier": .integer(869_000_100),
        "receiptCreationDate": .integer(1_709_251_200_000), "originalPurchaseDate": .integer(1_690_000_000_000),
        "originalApplicationVersion": .string("3.9"), "deviceVerification": .string("u3aSDW3uQ5KqJm6XgjMNbQ=="),
        "deviceVerificationNonce": .string("b8f9d1c2-3e4a-4b5c-8d6e-7f8091a2b3c4"), "preorderDate": .integer(1_689_000_000_000),
        "appTransactionId": .string("704000000000000031"), "originalPlatform": .string("macOS"),
    ]

    /// Every AppTransaction field is first-class; appAppleId is a number.
    @Test func everyAppTransactionFieldReadsAsAppleTypesIt() throws {
        let decoded = try ReceiptDecoder().decode(text: try Payloads.sign(Self.appTransaction))
        #expect(decoded.format == .jwsAppTransaction)
        let receipt = try #require(InspectJSON.object(for: decoded).object?["receipt"]?.object)
        #expect(receipt["app_item_id"] == .integer(6_450_000_123))
        #expect(receipt["receipt_type"] == .string("Sandbox"))
        #expect(receipt["application_version"] == .string("4.2.0"))
        #expect(receipt["version_external_identifier"] == .integer(869_000_100))
        #expect(receipt["receipt_creation_date"] == .string("2024-03-01T00:00:00Z"))
        #expect(receipt["original_purchase_date"] == .string("2023-07-22T04:26:40Z"))
        #expect(receipt["original_application_version"] == .string("3.9"))
        #expect(receipt["device_verification"] == .string("u3aSDW3uQ5KqJm6XgjMNbQ=="))
        #expect(receipt["device_verification_nonce"] == .string("b8f9d1c2-3e4a-4b5c-8d6e-7f8091a2b3c4"))
        #expect(receipt["preorder_date"] == .string("2023-07-10T14:40:00Z"))
        #expect(receipt["app_transaction_id"] == .string("704000000000000031"))
        #expect(receipt["original_platform"] == .string("macOS"))
        #expect(receipt["bundle_id"] == .string(SignedReceipt.bundleID))
        #expect(receipt["other_fields"] == nil)
    }

    /// commitmentAutoRenewStatus: 0 and 1 are flags; any other value is kept as sent.
    @Test(arguments: [(JSONValue.integer(1), JSONValue.bool(true)), (.integer(0), .bool(false)), (.integer(4), .integer(4))])
    func commitmentAutoRenewStatusKeepsWhatAppleSent(_ sent: JSONValue, _ json: JSONValue) throws {
        var renewal = Self.renewal
        renewal["commitmentInfo"] = .object(["commitmentAutoRenewStatus": sent])
        let value = try Self.json(renewal, "pending_renewal_info")
        #expect(value.object?["commitment_info"]?.object?["commitment_auto_renew_status"] == json)
    }

    /// Every value Apple defines for a transaction's numbered and named enumerations reads as
    /// sent with its meaning; the next value past them reads as sent and "not defined by Apple".
    @Test(arguments: [
        ("offerType", [JSONValue.integer(1), .integer(2), .integer(3), .integer(4)], JSONValue.integer(5), PurchaseField.offerType),
        ("revocationReason", [.integer(0), .integer(1)], .integer(2), PurchaseField.cancellationReason),
        ("offerDiscountType", [.string("FREE_TRIAL"), .string("PAY_AS_YOU_GO"), .string("PAY_UP_FRONT"), .string("ONE_TIME")], .string("HALF_OFF"), PurchaseField.offerDiscountType),
        ("revocationType", [.string("REFUND_FULL"), .string("REFUND_PRORATED"), .string("FAMILY_REVOKE")], .string("REFUND_SOME"), PurchaseField.revocationType),
        ("inAppOwnershipType", [.string("PURCHASED"), .string("FAMILY_SHARED")], .string("BORROWED"), PurchaseField.inAppOwnershipType),
        ("transactionReason", [.string("PURCHASE"), .string("RENEWAL")], .string("GIFT"), PurchaseField.transactionReason),
        ("environment", [.string("Production"), .string("Sandbox"), .string("Xcode"), .string("LocalTesting")], .string("Staging"), PurchaseField.environment),
    ])
    func everyDefinedValueHasItsMeaningAndAnotherIsNotDefined(_ key: String, _ defined: [JSONValue], _ undefined: JSONValue, _ field: PurchaseField) throws {
        for value in defined + [undefined] {
            var payload = Payloads.transaction(1, purchase: Payloads.march, expires: Payloads.march + 31 * Payloads.day, [key: value])
            if key == "revocationReason" { payload["revocationDate"] = .integer(Payloads.march + Payloads.day) }
            let decoded = try ReceiptDecoder().decode(text: try Payloads.sign(payload))
            let purchase = try #require(decoded.transactions.first)
            let json = try #require(InspectJSON.object(for: decoded).object?["transactions"]?.array?.first?.object)
            #expect(json[field.name] == value, "\(key) \(value)")
            let shown = try #require(field.displayText(in: purchase))
            let sent = value.text ?? value.compactJSON
            #expect(shown.hasPrefix("\(sent) ("), "\(key): \(shown)")
            #expect(shown.hasSuffix("(not defined by Apple)") == (value == undefined), "\(key): \(shown)")
        }
    }

    /// Every notification type and subtype Apple documents is explained; one Apple has not
    /// documented is said to be kept as sent, never read as a known one.
    @Test func everyDocumentedNotificationTypeIsExplained() {
        let words = Wording("conformance")
        for type in NotificationExplanation.knownTypes {
            let line = NotificationExplanation.explain(type: type, subtype: nil)
            #expect(line.hasPrefix("\(type): "), "\(line)")
            #expect(!line.contains("does not know"), "\(line)")
        }
        words.said(NotificationExplanation.explain(type: "SOMETHING_NEW", subtype: nil))
        for subtype in NotificationExplanation.knownSubtypes {
            #expect(!NotificationExplanation.explain(type: "DID_RENEW", subtype: subtype).contains("is new to receiptdash"), "\(subtype)")
        }
        words.said(NotificationExplanation.explain(type: "DID_RENEW", subtype: "SIDEWAYS"))
        words.check()
    }
}
