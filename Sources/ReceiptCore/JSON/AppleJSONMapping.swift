import Foundation

// Maps Apple's JSON shapes onto the one model: verifyReceipt's snake_case names, iOS 6's
// `bid`/`bvrs` and dashed purchase-info keys (converted to snake_case first), and StoreKit 2's
// camelCase JWS payloads.

extension Purchase {
    /// A verifyReceipt `in_app` / `latest_receipt_info` row, an iOS 6 `receipt` or
    /// `latest_receipt_info` dictionary, or an iOS 6 purchase-info with its dashes turned into
    /// underscores.
    init(snakeCase object: [String: JSONValue], source: Source) {
        self.init(source: source)
        var r = JSONFieldReader(object)
        readFields(&r, PurchaseField.withReceiptKeys, epochDates: false)
        otherFields = r.remainingFields()
    }

    /// A StoreKit 2 `JWSTransactionDecodedPayload`.
    init(jwsTransaction object: [String: JSONValue]) {
        self.init(source: .jwsTransaction)
        var r = JSONFieldReader(object)
        readFields(&r, PurchaseField.withJWSKeys, epochDates: true)
        if offerType == 1 {
            // An introductory offer; a free one is what receipts call a trial.
            isInIntroOfferPeriod = offerDiscountType != "FREE_TRIAL"
            isTrialPeriod = offerDiscountType == "FREE_TRIAL"
        }
        otherFields = r.remainingFields()
    }
}

extension RenewalInfo {
    /// A `pending_renewal_info` entry, or the top-level renewal fields of an iOS 6 response or
    /// a V1 notification.
    init(snakeCase object: [String: JSONValue], secretKeys: Set<String> = []) {
        self.init()
        var r = JSONFieldReader(object)
        r.secretKeys = secretKeys
        originalTransactionID = r.string("original_transaction_id")
        productID = r.string("product_id")
        autoRenewProductID = r.string("auto_renew_product_id")
        (autoRenewStatus, autoRenewStatusAsSent) = r.definedFlag("auto_renew_status")
        expirationIntent = r.int("expiration_intent").map { Int(clamping: $0) }
        isInBillingRetryPeriod = r.bool("is_in_billing_retry_period")
        gracePeriodExpiresDate = r.appleDate("grace_period_expires_date")
        priceConsentStatus = r.int("price_consent_status").map { Int(clamping: $0) }
        priceIncreaseStatus = r.int("price_increase_status").map { Int(clamping: $0) }
        offerCodeRefName = r.string("offer_code_ref_name")
        promotionalOfferID = r.string("promotional_offer_id")
        otherFields = r.remainingFields()
    }

    /// A StoreKit 2 `JWSRenewalInfoDecodedPayload`.
    init(jwsRenewal object: [String: JSONValue]) {
        self.init()
        var r = JSONFieldReader(object)
        originalTransactionID = r.string("originalTransactionId")
        productID = r.string("productId")
        autoRenewProductID = r.string("autoRenewProductId")
        (autoRenewStatus, autoRenewStatusAsSent) = r.definedFlag("autoRenewStatus")
        expirationIntent = r.int("expirationIntent").map { Int(clamping: $0) }
        isInBillingRetryPeriod = r.bool("isInBillingRetryPeriod")
        gracePeriodExpiresDate = r.epochMillisecondsDate("gracePeriodExpiresDate")
        priceIncreaseStatus = r.int("priceIncreaseStatus").map { Int(clamping: $0) }
        offerType = r.int("offerType").map { Int(clamping: $0) }
        offerIdentifier = r.string("offerIdentifier")
        environment = r.string("environment")
        signedDate = r.epochMillisecondsDate("signedDate")
        recentSubscriptionStartDate = r.epochMillisecondsDate("recentSubscriptionStartDate")
        renewalDate = r.epochMillisecondsDate("renewalDate")
        renewalPriceMilliunits = r.int("renewalPrice")
        currency = r.string("currency")
        offerDiscountType = r.string("offerDiscountType")
        offerPeriod = r.string("offerPeriod")
        appTransactionID = r.string("appTransactionId")
        appAccountToken = r.string("appAccountToken")
        eligibleWinBackOfferIDs = r.parsed("eligibleWinBackOfferIds") { value in
            value.array.flatMap { ids in ids.allSatisfy { $0.text != nil } ? ids.compactMap(\.text) : nil }
        }
        renewalBillingPlanType = r.string("renewalBillingPlanType")
        commitmentInfo = r.parsed("commitmentInfo") { RenewalCommitmentInfo(apple: $0) }
        advancedCommerceInfo = r.value("advancedCommerceInfo")
        otherFields = r.remainingFields()
    }
}

extension AppReceipt {
    /// The `receipt` object of an iOS 7-style verifyReceipt response.
    init(verifyReceipt object: [String: JSONValue], limits: DecodingLimits) throws {
        self.init()
        var r = JSONFieldReader(object)
        receiptType = r.string("receipt_type")
        appItemID = r.int("app_item_id") ?? r.int("adam_id")
        _ = r.value("adam_id")
        bundleID = r.string("bundle_id")
        applicationVersion = r.string("application_version")
        originalApplicationVersion = r.string("original_application_version")
        receiptCreationDate = r.appleDate("receipt_creation_date")
        requestDate = r.appleDate("request_date")
        originalPurchaseDate = r.appleDate("original_purchase_date")
        expirationDate = r.appleDate("expiration_date")
        preorderDate = r.appleDate("preorder_date")
        versionExternalIdentifier = r.int("version_external_identifier")
        downloadID = r.int("download_id")
        if let rows = r.value("in_app") {
            inApp = try purchases(rows, source: .receiptInApp, field: "receipt.in_app", limits: limits)
        }
        otherFields = r.remainingFields()
    }

    /// A StoreKit 2 `AppTransaction` payload.
    init(appTransaction object: [String: JSONValue]) {
        self.init()
        var r = JSONFieldReader(object)
        receiptType = r.string("receiptType")
        appItemID = r.int("appAppleId")
        bundleID = r.string("bundleId")
        applicationVersion = r.string("applicationVersion")
        versionExternalIdentifier = r.int("versionExternalIdentifier")
        receiptCreationDate = r.epochMillisecondsDate("receiptCreationDate")
        originalPurchaseDate = r.epochMillisecondsDate("originalPurchaseDate")
        originalApplicationVersion = r.string("originalApplicationVersion")
        deviceVerification = r.string("deviceVerification")
        deviceVerificationNonce = r.string("deviceVerificationNonce")
        preorderDate = r.epochMillisecondsDate("preorderDate")
        appTransactionID = r.string("appTransactionId")
        originalPlatform = r.string("originalPlatform")
        otherFields = r.remainingFields()
    }
}

/// Reads an array of purchase rows (or, as iOS 6 wrote `latest_receipt_info`, one row as an
/// object).
func purchases(_ value: JSONValue, source: Purchase.Source, field: String, limits: DecodingLimits) throws -> [Purchase] {
    switch value {
    case .object(let row):
        return [Purchase(snakeCase: row, source: source)]
    case .array(let rows):
        guard rows.count <= limits.maximumPurchases else {
            throw ReceiptDecodingError(.limitExceeded, "\(field) has \(rows.count) rows, more than \(limits.maximumPurchases)")
        }
        return try rows.enumerated().map { index, row in
            guard case .object(let object) = row else {
                throw ReceiptDecodingError(.invalidJSON, "\(field)[\(index)] is not an object")
            }
            return Purchase(snakeCase: object, source: source)
        }
    case .null:
        return []
    default:
        throw ReceiptDecodingError(.invalidJSON, "\(field) is neither an array nor an object")
    }
}
