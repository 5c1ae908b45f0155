import Foundation

/// Builds the JSON that `receiptdash inspect --format json` prints for a decoded input.
///
/// Keys use Apple's verifyReceipt names wherever one exists (`bundle_id`, `in_app`,
/// `original_transaction_id`, …), so people can compare our output with Apple's. Dates are ISO
/// 8601 in UTC, integers and booleans are typed, absent fields are left out, and raw bytes are
/// base64 (unknown ASN.1 attributes are hex, for the byte-level view). The names are a
/// contract: add keys, never rename them.
public enum InspectJSON {
    /// The JSON object for one input.
    ///
    /// - Parameter source: where the input came from (a path, `-`, `paste`), or `nil`.
    public static func object(for input: DecodedInput, source: String? = nil, trust: TrustReport? = nil) -> JSONValue {
        var o = ObjectBuilder()
        o["trust"] = trust.map(Self.trust)
        o["source"] = source.map(JSONValue.string)
        o["format"] = .string(input.format.rawValue)
        o["wrapping"] = input.wrapping.isEmpty ? nil : .array(input.wrapping.map(JSONValue.string))
        o["environment"] = (input.environment?.rawValue ?? input.rawEnvironment).map(JSONValue.string)
        o["status"] = input.status.map { .integer(Int64($0)) }
        o["is-retryable"] = input.isRetryable.map(JSONValue.bool)
        if let status = input.status {
            let explained = AppleStatus.explain(status, isRetryable: input.isRetryable)
            o["status_explanation"] = .object([
                "title": .string(explained.title), "explanation": .string(explained.explanation),
                "retryable": .bool(explained.retryable), "next_step": .string(explained.nextStep),
            ])
        }
        o["receipt"] = input.receipt.map(receipt)
        o["transactions"] = input.transactions.isEmpty ? nil : .array(input.transactions.map(purchase))
        o["latest_receipt_info"] = input.latestReceiptInfo.isEmpty ? nil : .array(input.latestReceiptInfo.map(purchase))
        o["pending_renewal_info"] =
            input.pendingRenewalInfo.isEmpty ? nil : .array(input.pendingRenewalInfo.map(renewal))
        o["latest_receipt"] = input.latestReceipt.map(JSONValue.string)
        o["notification"] = input.notification.map(notification)
        if !input.legacyEnvelope.isEmpty { o["transaction_receipt"] = fields(input.legacyEnvelope) }
        o["signature"] = input.signature.map(signature)
        if !input.nested.isEmpty {
            o["nested"] = .array(
                input.nested.map { nested in
                    var inner = object(for: nested.input).object ?? [:]
                    inner["field"] = .string(nested.field)
                    return .object(inner)
                })
        }
        o["warnings"] = input.warnings.isEmpty ? nil : .array(input.warnings.map(JSONValue.string))
        return o.value
    }

    /// Encodes values as pretty-printed JSON with sorted keys.
    public static func encode(_ value: JSONValue) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else { return "null" }
        return String(decoding: data, as: UTF8.self)
    }

    /// `{"verdict", "validation_time", "steps": [{"name", "outcome", "reason", "details"}]}`.
    public static func trust(_ report: TrustReport) -> JSONValue {
        var o = ObjectBuilder()
        o["verdict"] = .string(report.verdict.rawValue)
        o["summary"] = .string(report.headline)
        o["validation_time"] = date(report.validationTime)
        o["validation_time_source"] = report.validationTimeSource.map(JSONValue.string)
        o["steps"] = .array(
            report.steps.map { step in
                var s = ObjectBuilder()
                s["name"] = .string(step.name)
                s["outcome"] = .string(step.outcome.rawValue)
                s["reason"] = .string(step.reason)
                s["details"] = step.details.isEmpty ? nil : fields(step.details)
                return s.value
            })
        return o.value
    }

    static func receipt(_ r: AppReceipt) -> JSONValue {
        var o = ObjectBuilder()
        o["receipt_type"] = r.receiptType.map(JSONValue.string)
        o["app_item_id"] = r.appItemID.map(JSONValue.integer)
        o["bundle_id"] = r.bundleID.map(JSONValue.string)
        o["application_version"] = r.applicationVersion.map(JSONValue.string)
        o["original_application_version"] = r.originalApplicationVersion.map(JSONValue.string)
        o["receipt_creation_date"] = date(r.receiptCreationDate)
        o["request_date"] = date(r.requestDate)
        o["original_purchase_date"] = date(r.originalPurchaseDate)
        o["expiration_date"] = date(r.expirationDate)
        o["preorder_date"] = date(r.preorderDate)
        o["transaction_date"] = date(r.transactionDate)
        o["version_external_identifier"] = r.versionExternalIdentifier.map(JSONValue.integer)
        o["download_id"] = r.downloadID.map(JSONValue.integer)
        o["developer_id"] = r.developerID.map(JSONValue.integer)
        o["age_rating"] = r.ageRating.map(JSONValue.string)
        o["fulfillment_tool_version"] = r.fulfillmentToolVersion.map(JSONValue.string)
        o["opaque_value"] = r.opaqueValue.map(base64)
        o["sha1_hash"] = r.sha1Hash.map(base64)
        o["device_verification"] = r.deviceVerification.map(JSONValue.string)
        o["device_verification_nonce"] = r.deviceVerificationNonce.map(JSONValue.string)
        o["app_transaction_id"] = r.appTransactionID.map(JSONValue.string)
        o["original_platform"] = r.originalPlatform.map(JSONValue.string)
        o["in_app"] = .array(r.inApp.map(purchase))
        o["unknown_attributes"] = r.unknownAttributes.isEmpty ? nil : .array(r.unknownAttributes.map(attribute))
        o["other_fields"] = r.otherFields.isEmpty ? nil : fields(r.otherFields)
        return o.value
    }

    static func purchase(_ p: Purchase) -> JSONValue {
        var o = ObjectBuilder()
        o["source"] = .string(p.source.rawValue)
        o["quantity"] = p.quantity.map { .integer(Int64($0)) }
        o["product_id"] = p.productID.map(JSONValue.string)
        o["product_type"] = p.productType.map { .string($0.rawValue) }
        o["transaction_id"] = p.transactionID.map(JSONValue.string)
        o["original_transaction_id"] = p.originalTransactionID.map(JSONValue.string)
        o["web_order_line_item_id"] = p.webOrderLineItemID.map(JSONValue.string)
        o["purchase_date"] = date(p.purchaseDate)
        o["original_purchase_date"] = date(p.originalPurchaseDate)
        o["expires_date"] = date(p.expiresDate)
        o["cancellation_date"] = date(p.cancellationDate)
        o["cancellation_reason"] = p.cancellationReason.map { .integer(Int64($0)) }
        o["is_trial_period"] = p.isTrialPeriod.map(JSONValue.bool)
        o["is_in_intro_offer_period"] = p.isInIntroOfferPeriod.map(JSONValue.bool)
        o["is_upgraded"] = p.isUpgraded.map(JSONValue.bool)
        o["promotional_offer_id"] = p.promotionalOfferID.map(JSONValue.string)
        o["offer_code_ref_name"] = p.offerCodeRefName.map(JSONValue.string)
        o["subscription_group_identifier"] = p.subscriptionGroupIdentifier.map(JSONValue.string)
        o["in_app_ownership_type"] = p.inAppOwnershipType.map(JSONValue.string)
        o["app_account_token"] = p.appAccountToken.map(JSONValue.string)
        o["bid"] = p.bundleID.map(JSONValue.string)
        o["bvrs"] = p.bundleVersion.map(JSONValue.string)
        o["environment"] = p.environment.map(JSONValue.string)
        o["offer_type"] = p.offerType.map { .integer(Int64($0)) }
        o["offer_identifier"] = p.offerIdentifier.map(JSONValue.string)
        o["offer_discount_type"] = p.offerDiscountType.map(JSONValue.string)
        o["revocation_type"] = p.revocationType.map(JSONValue.string)
        o["transaction_reason"] = p.transactionReason.map(JSONValue.string)
        o["storefront"] = p.storefront.map(JSONValue.string)
        o["storefront_id"] = p.storefrontID.map(JSONValue.string)
        o["currency"] = p.currency.map(JSONValue.string)
        o["price"] = p.priceMilliunits.map(JSONValue.integer)
        o["signed_date"] = date(p.signedDate)
        o["unknown_attributes"] = p.unknownAttributes.isEmpty ? nil : .array(p.unknownAttributes.map(attribute))
        o["other_fields"] = p.otherFields.isEmpty ? nil : fields(p.otherFields)
        return o.value
    }

    static func renewal(_ r: RenewalInfo) -> JSONValue {
        var o = ObjectBuilder()
        o["original_transaction_id"] = r.originalTransactionID.map(JSONValue.string)
        o["product_id"] = r.productID.map(JSONValue.string)
        o["auto_renew_product_id"] = r.autoRenewProductID.map(JSONValue.string)
        o["auto_renew_status"] = r.autoRenewStatus.map(JSONValue.bool)
        o["expiration_intent"] = r.expirationIntent.map { .integer(Int64($0)) }
        o["is_in_billing_retry_period"] = r.isInBillingRetryPeriod.map(JSONValue.bool)
        o["grace_period_expires_date"] = date(r.gracePeriodExpiresDate)
        o["price_consent_status"] = r.priceConsentStatus.map { .integer(Int64($0)) }
        o["price_increase_status"] = r.priceIncreaseStatus.map { .integer(Int64($0)) }
        o["offer_type"] = r.offerType.map { .integer(Int64($0)) }
        o["offer_identifier"] = r.offerIdentifier.map(JSONValue.string)
        o["offer_code_ref_name"] = r.offerCodeRefName.map(JSONValue.string)
        o["promotional_offer_id"] = r.promotionalOfferID.map(JSONValue.string)
        o["environment"] = r.environment.map(JSONValue.string)
        o["signed_date"] = date(r.signedDate)
        o["recent_subscription_start_date"] = date(r.recentSubscriptionStartDate)
        o["renewal_date"] = date(r.renewalDate)
        o["renewal_price"] = r.renewalPriceMilliunits.map(JSONValue.integer)
        o["currency"] = r.currency.map(JSONValue.string)
        o["other_fields"] = r.otherFields.isEmpty ? nil : fields(r.otherFields)
        return o.value
    }

    static func notification(_ n: NotificationInfo) -> JSONValue {
        var o = ObjectBuilder()
        o["notification_type"] = n.notificationType.map(JSONValue.string)
        o["subtype"] = n.subtype.map(JSONValue.string)
        o["notification_uuid"] = n.notificationUUID.map(JSONValue.string)
        o["version"] = n.version.map(JSONValue.string)
        o["signed_date"] = date(n.signedDate)
        o["app_apple_id"] = n.appAppleID.map(JSONValue.integer)
        o["bundle_id"] = n.bundleID.map(JSONValue.string)
        o["bundle_version"] = n.bundleVersion.map(JSONValue.string)
        o["status"] = n.subscriptionStatus.map { .integer(Int64($0)) }
        o["consumption_request_reason"] = n.consumptionRequestReason.map(JSONValue.string)
        if n.containedSharedSecret { o["password"] = .string("(shared secret present; not shown)") }
        o["other_fields"] = n.otherFields.isEmpty ? nil : fields(n.otherFields)
        return o.value
    }

    static func signature(_ s: SignatureMaterial) -> JSONValue {
        let summary = SignatureSummary(s)
        var o = ObjectBuilder()
        o["kind"] = .string(summary.kind)
        o["algorithm"] = summary.algorithm.map(JSONValue.string)
        o["certificates"] = .array(
            summary.certificates.map { c in
                var cert = ObjectBuilder()
                cert["subject"] = .string(c.subject)
                cert["issuer"] = .string(c.issuer)
                cert["serial"] = .string(c.serial)
                cert["not_before"] = date(c.notBefore)
                cert["not_after"] = date(c.notAfter)
                return cert.value
            })
        o["problems"] = summary.problems.isEmpty ? nil : .array(summary.problems.map(JSONValue.string))
        return o.value
    }

    static func attribute(_ a: ASN1Attribute) -> JSONValue {
        .object([
            "type": .integer(Int64(a.type)), "version": .integer(Int64(a.version)),
            "value_hex": .string(Hex.encode(a.value)),
        ])
    }

    static func fields(_ list: [Field]) -> JSONValue {
        .object(Dictionary(list.map { ($0.name, JSONValue.string($0.value)) }, uniquingKeysWith: { _, last in last }))
    }

    static func date(_ d: Date?) -> JSONValue? { d.map { .string(AppleDate.iso8601($0)) } }
    static func base64(_ bytes: [UInt8]) -> JSONValue { .string(Data(bytes).base64EncodedString()) }

    /// Collects keys, leaving out `nil` values.
    struct ObjectBuilder {
        private(set) var storage: [String: JSONValue] = [:]
        subscript(key: String) -> JSONValue? {
            get { storage[key] }
            set { storage[key] = newValue }
        }
        var value: JSONValue { .object(storage) }
    }
}

/// Lower-case hexadecimal.
public enum Hex {
    /// - Parameter separator: put between bytes (e.g. `":"` for serial numbers).
    public static func encode(_ bytes: some Sequence<UInt8>, separator: Character? = nil) -> String {
        let digits = Array("0123456789abcdef".utf8)
        let sep = separator.map { Array(String($0).utf8) } ?? []
        var out = [UInt8]()
        for b in bytes {
            if !out.isEmpty { out += sep }
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
