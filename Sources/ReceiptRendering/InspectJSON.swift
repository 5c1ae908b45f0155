import AppStoreAPI
import JSONWriting
import ReceiptCore
import ReceiptTrust
import Foundation

/// Writes the JSON that `receiptdash inspect --format json` prints for a decoded input.
///
/// Keys use Apple's verifyReceipt names wherever one exists (`bundle_id`, `in_app`,
/// `original_transaction_id`, …), so people can compare our output with Apple's. Dates are ISO
/// 8601 in UTC, integers and booleans are typed, absent fields are left out, and raw bytes are
/// base64 (unknown ASN.1 attributes are hex, for the byte-level view). The names are a
/// contract: add keys, never rename them.
///
/// Everything is streamed through ``JSONOutput``: members are written in the order
/// `JSONEncoder`'s `.sortedKeys` put them (by UTF-8 bytes), so the bytes are those the
/// tree-and-encoder version wrote.
public enum InspectJSON {
    /// Writes the object for one input, with the analysis's members (``AnalysisRendering``)
    /// merged in when given.
    ///
    /// - Parameters:
    ///   - source: where the input came from (a path, `-`, `paste`), or `nil`.
    ///   - field: for a nested input, the field it was found in.
    public static func write(
        _ input: DecodedInput, source: String? = nil, trust: TrustReport? = nil, analysis: PurchaseAnalysis? = nil,
        field: String? = nil, into out: inout JSONOutput
    ) {
        out.beginObject()
        if let analysis {
            AnalysisRendering.write(analysis, .analysisNotes, into: &out)
            AnalysisRendering.write(analysis, .analyzedAt, into: &out)
        }
        out.member("environment", input.environment?.rawValue ?? input.rawEnvironment)
        out.member("field", field)
        out.member("format", input.format.rawValue)
        out.member("is-retryable", input.isRetryable)
        out.member("latest_receipt", input.latestReceipt)
        purchases("latest_receipt_info", input.latestReceiptInfo, into: &out)
        if !input.nested.isEmpty {
            out.key("nested")
            out.beginArray()
            for nested in input.nested { write(nested.input, field: nested.field, into: &out) }
            out.endArray()
        }
        if let n = input.notification {
            out.key("notification")
            notification(n, explanation: NotificationRow.explanation(type: n.notificationType, subtype: n.subtype, decoded: input), into: &out)
        }
        if let analysis { AnalysisRendering.write(analysis, .oneTimePurchases, into: &out) }
        if !input.payloadFields.isEmpty { fields("payload_fields", input.payloadFields, into: &out) }
        if !input.pendingRenewalInfo.isEmpty {
            out.key("pending_renewal_info")
            out.beginArray()
            for r in input.pendingRenewalInfo { renewal(r, into: &out) }
            out.endArray()
        }
        if let request = input.realtimeRequest {
            out.key("realtime_request")
            realtimeRequest(request, into: &out)
        }
        if let r = input.receipt {
            out.key("receipt")
            receipt(r, into: &out)
        }
        if let s = input.signature {
            out.key("signature")
            signature(s, into: &out)
        }
        out.member("source", source)
        out.member("status", input.status)
        if let status = input.status {
            let explained = AppleStatus.explain(status, isRetryable: input.isRetryable)
            out.key("status_explanation")
            out.beginObject()
            out.member("explanation", explained.explanation)
            out.member("next_step", explained.nextStep)
            out.member("retryable", explained.retryable)
            out.member("title", explained.title)
            out.endObject()
        }
        if let analysis { AnalysisRendering.write(analysis, .subscriptions, into: &out) }
        if !input.legacyEnvelope.isEmpty { fields("transaction_receipt", input.legacyEnvelope, into: &out) }
        purchases("transactions", input.transactions, into: &out)
        if let trust {
            out.key("trust")
            self.trust(trust, into: &out)
        }
        out.member("warnings", strings: input.warnings.isEmpty ? nil : input.warnings)
        out.member("wrapping", strings: input.wrapping.isEmpty ? nil : input.wrapping)
        out.endObject()
    }

    /// Writes `{"error": {"code", "message", "offset"}, "source"}` for an input that could not
    /// be decoded.
    public static func write(error: ReceiptDecodingError, source: String, into out: inout JSONOutput) {
        out.beginObject()
        out.key("error")
        out.beginObject()
        out.member("code", error.code.description)
        out.member("message", error.reason)
        out.member("offset", error.offset)
        out.endObject()
        out.member("source", source)
        out.endObject()
    }

    /// The JSON object for one input, as a value (for callers that embed it in other JSON).
    ///
    /// - Parameter source: where the input came from (a path, `-`, `paste`), or `nil`.
    public static func object(for input: DecodedInput, source: String? = nil, trust: TrustReport? = nil) -> JSONValue {
        var out = JSONOutput()
        write(input, source: source, trust: trust, into: &out)
        return (try? JSONValue.parse(out.bytes)) ?? .null
    }

    /// Encodes values as pretty-printed JSON with sorted keys.
    public static func encode(_ value: JSONValue) -> String { JSONOutput.text(of: value) }

    /// `{"verdict", "validation_time", "steps": [{"name", "outcome", "reason", "details"}]}`.
    public static func trust(_ report: TrustReport) -> JSONValue {
        var out = JSONOutput()
        trust(report, into: &out)
        return (try? JSONValue.parse(out.bytes)) ?? .null
    }

    static func trust(_ report: TrustReport, into out: inout JSONOutput) {
        out.beginObject()
        out.key("steps")
        out.beginArray()
        for step in report.steps {
            out.beginObject()
            if let code = step.code { out.member("code", code) }
            if !step.details.isEmpty { fields("details", step.details, into: &out) }
            out.member("name", step.name)
            out.member("outcome", step.outcome.rawValue)
            out.member("reason", step.reason)
            out.endObject()
        }
        out.endArray()
        if let retryable = report.retryable { out.member("retryable", retryable) }
        out.member("summary", report.headline)
        out.member("validation_time", report.validationTime)
        out.member("validation_time_source", report.validationTimeSource)
        out.member("verdict", report.verdict.rawValue)
        out.endObject()
    }

    static func receipt(_ r: AppReceipt, into out: inout JSONOutput) {
        out.beginObject()
        out.member("age_rating", r.ageRating)
        out.member("app_item_id", r.appItemID)
        out.member("app_transaction_id", r.appTransactionID)
        out.member("application_version", r.applicationVersion)
        out.member("bundle_id", r.bundleID)
        out.member("developer_id", r.developerID)
        out.member("device_verification", r.deviceVerification)
        out.member("device_verification_nonce", r.deviceVerificationNonce)
        out.member("download_id", r.downloadID)
        out.member("expiration_date", r.expirationDate)
        out.member("fulfillment_tool_version", r.fulfillmentToolVersion)
        out.key("in_app")
        out.beginArray()
        purchases(r.inApp, into: &out)
        out.endArray()
        out.member("opaque_value", r.opaqueValue.map(base64))
        out.member("original_application_version", r.originalApplicationVersion)
        out.member("original_platform", r.originalPlatform)
        out.member("original_purchase_date", r.originalPurchaseDate)
        if !r.otherFields.isEmpty { fields("other_fields", r.otherFields, into: &out) }
        out.member("preorder_date", r.preorderDate)
        out.member("receipt_creation_date", r.receiptCreationDate)
        out.member("receipt_type", r.receiptType)
        out.member("request_date", r.requestDate)
        out.member("sha1_hash", r.sha1Hash.map(base64))
        out.member("transaction_date", r.transactionDate)
        attributes(r.unknownAttributes, into: &out)
        out.member("version_external_identifier", r.versionExternalIdentifier)
        out.endObject()
    }

    /// One member of a purchase's object: the fields of ``PurchaseField/all`` plus the kept
    /// extras. Plain values (a constant key, a kind, a byte offset), so walking the list for
    /// every purchase costs no reference counting (the table's class rows did: measured, a
    /// fifth of `inspect --format json`).
    private struct PurchaseMember {
        enum Kind { case text, integer, integer64, flag, date, source, productType, json, commitment, otherFields, unknownAttributes, accessor }
        let key: StaticString
        let kind: Kind
        /// Where the stored property lives in ``Purchase`` (the stored kinds only; -1 otherwise).
        let offset: Int
        /// The field's index in ``PurchaseField/all`` (read through its accessor for `accessor`).
        let field: Int
    }

    /// In key order, as `JSONEncoder`'s `.sortedKeys` put them.
    private static let purchaseMembers: [PurchaseMember] = {
        var members = PurchaseField.all.enumerated().map { index, field -> PurchaseMember in
            let kind: PurchaseMember.Kind =
                switch field.accessor {
                case .source: .source
                case .productType: .productType
                case .commitment: .commitment
                // A key path with no stored offset (a computed property) is read through its
                // accessor: never from a guessed place in memory.
                case _ where field.offset == nil: .accessor
                case .text: .text
                case .integer: .integer
                case .integer64: .integer64
                case .flag: .flag
                case .date: .date
                case .json: .json
                }
            return PurchaseMember(key: field.key, kind: kind, offset: field.offset ?? -1, field: index)
        }
        members.append(PurchaseMember(key: "other_fields", kind: .otherFields, offset: -1, field: -1))
        members.append(PurchaseMember(key: "unknown_attributes", kind: .unknownAttributes, offset: -1, field: -1))
        return members.sorted { $0.key.description.utf8.lexicographicallyPrecedes($1.key.description.utf8) }
    }()

    static func purchase(_ p: Purchase, into out: inout JSONOutput) {
        withUnsafePointer(to: p) { purchase(at: $0, into: &out) }
    }

    /// Each purchase read in place: `for p in list` copies every row, retaining each of its
    /// strings and arrays (measured: a tenth of the writer's time).
    private static func purchases(_ list: [Purchase], into out: inout JSONOutput) {
        list.withUnsafeBufferPointer { rows in
            guard let base = rows.baseAddress else { return }
            for i in 0..<rows.count { purchase(at: base + i, into: &out) }
        }
    }

    private static func purchase(at pointer: UnsafePointer<Purchase>, into out: inout JSONOutput) {
        let base = UnsafeRawPointer(pointer)
        @inline(__always) func stored<T>(_ member: PurchaseMember, _: T.Type) -> T? {
            base.advanced(by: member.offset).assumingMemoryBound(to: T?.self).pointee
        }
        out.beginObject()
        purchaseMembers.withUnsafeBufferPointer { members in
            for member in members {
                switch member.kind {
                case .text:
                    guard let text = stored(member, String.self) else { continue }
                    out.key(member.key)
                    out.string(text)
                case .integer:
                    guard let number = stored(member, Int.self) else { continue }
                    out.key(member.key)
                    out.integer(number)
                case .integer64:
                    guard let number = stored(member, Int64.self) else { continue }
                    out.key(member.key)
                    out.integer(number)
                case .flag:
                    guard let flag = stored(member, Bool.self) else { continue }
                    out.key(member.key)
                    out.bool(flag)
                case .date:
                    guard let date = stored(member, Date.self) else { continue }
                    out.key(member.key)
                    out.date(date)
                case .source:
                    out.key(member.key)
                    out.string(pointer.pointee.source.rawValue)
                case .productType:
                    guard let type = pointer.pointee.productType else { continue }
                    out.key(member.key)
                    // A type Apple does not define is written as sent (number or text).
                    if let asSent = pointer.pointee.productTypeAsSent { out.value(asSent) } else { out.string(type.rawValue) }
                case .json:
                    guard let value = stored(member, JSONValue.self) else { continue }
                    out.key(member.key)
                    out.value(value)
                case .commitment:
                    guard let info = pointer.pointee.commitmentInfo else { continue }
                    out.key(member.key)
                    out.value(info.json)
                case .accessor:
                    guard let value = PurchaseField.all[member.field].value(at: pointer) else { continue }
                    out.key(member.key)
                    switch value {
                    case .text(let text): out.string(text)
                    case .integer(let number): out.integer(number)
                    case .flag(let flag): out.bool(flag)
                    case .date(let date): out.date(date)
                    case .object(let object): out.value(object)
                    }
                case .otherFields:
                    if !pointer.pointee.otherFields.isEmpty { fields("other_fields", pointer.pointee.otherFields, into: &out) }
                case .unknownAttributes:
                    attributes(pointer.pointee.unknownAttributes, into: &out)
                }
            }
        }
        out.endObject()
    }

    private static func purchases(_ name: StaticString, _ list: [Purchase], into out: inout JSONOutput) {
        guard !list.isEmpty else { return }
        out.key(name)
        out.beginArray()
        purchases(list, into: &out)
        out.endArray()
    }

    /// `{"app_apple_id": 1234 (a number), "environment", "original_transaction_id", "product_id",
    /// "request_identifier", "signed_date", "user_locale"}`, and `other_fields`.
    static func realtimeRequest(_ r: RealtimeRequest, into out: inout JSONOutput) {
        out.beginObject()
        out.member("app_apple_id", r.appAppleID)
        out.member("environment", r.environment)
        out.member("original_transaction_id", r.originalTransactionID)
        if !r.otherFields.isEmpty { fields("other_fields", r.otherFields, into: &out) }
        out.member("product_id", r.productID)
        out.member("request_identifier", r.requestIdentifier)
        out.member("signed_date", r.signedDate)
        out.member("user_locale", r.userLocale)
        out.endObject()
    }

    static func renewal(_ r: RenewalInfo, into out: inout JSONOutput) {
        out.beginObject()
        if let info = r.advancedCommerceInfo {
            out.key("advanced_commerce_info")
            out.value(info)
        }
        out.member("app_account_token", r.appAccountToken)
        out.member("app_transaction_id", r.appTransactionID)
        out.member("auto_renew_product_id", r.autoRenewProductID)
        if let asSent = r.autoRenewStatusAsSent {
            // Not a value Apple defines: written as sent (a rule docs/payloads.md states).
            out.key("auto_renew_status")
            out.value(asSent)
        } else {
            out.member("auto_renew_status", r.autoRenewStatus)
        }
        if let info = r.commitmentInfo {
            out.key("commitment_info")
            out.value(info.json)
        }
        out.member("currency", r.currency)
        out.member("eligible_win_back_offer_ids", strings: r.eligibleWinBackOfferIDs)
        out.member("environment", r.environment)
        out.member("expiration_intent", r.expirationIntent)
        out.member("grace_period_expires_date", r.gracePeriodExpiresDate)
        out.member("is_in_billing_retry_period", r.isInBillingRetryPeriod)
        out.member("offer_code_ref_name", r.offerCodeRefName)
        out.member("offer_discount_type", r.offerDiscountType)
        out.member("offer_identifier", r.offerIdentifier)
        out.member("offer_period", r.offerPeriod)
        out.member("offer_type", r.offerType)
        out.member("original_transaction_id", r.originalTransactionID)
        if !r.otherFields.isEmpty { fields("other_fields", r.otherFields, into: &out) }
        out.member("price_consent_status", r.priceConsentStatus)
        out.member("price_increase_status", r.priceIncreaseStatus)
        out.member("product_id", r.productID)
        out.member("promotional_offer_id", r.promotionalOfferID)
        out.member("recent_subscription_start_date", r.recentSubscriptionStartDate)
        out.member("renewal_billing_plan_type", r.renewalBillingPlanType)
        out.member("renewal_date", r.renewalDate)
        out.member("renewal_price", r.renewalPriceMilliunits)
        out.member("signed_date", r.signedDate)
        out.endObject()
    }

    /// The notification's members; `explanation` is the line `notifications` shows (a type or
    /// subtype receiptdash does not know is said to be kept as sent).
    static func notification(_ n: NotificationInfo, explanation: String? = nil, into out: inout JSONOutput) {
        out.beginObject()
        out.member("app_apple_id", n.appAppleID)
        out.member("bundle_id", n.bundleID)
        out.member("bundle_version", n.bundleVersion)
        out.member("consumption_request_reason", n.consumptionRequestReason)
        out.member("container", n.container)
        out.member("explanation", explanation)
        out.member("external_purchase_id", n.externalPurchaseID)
        out.member("notification_type", n.notificationType)
        out.member("notification_uuid", n.notificationUUID)
        if !n.otherFields.isEmpty { fields("other_fields", n.otherFields, into: &out) }
        if n.containedSharedSecret { out.member("password", "(shared secret present; not shown)") }
        out.member("signed_date", n.signedDate)
        out.member("status", n.subscriptionStatus)
        out.member("subtype", n.subtype)
        if let summary = n.extensionSummary {
            out.key("summary")
            out.beginObject()
            out.member("failed_count", summary.failedCount)
            out.member("product_id", summary.productID)
            out.member("request_identifier", summary.requestIdentifier)
            out.member("storefront_country_codes", strings: summary.storefrontCountryCodes)
            out.member("succeeded_count", summary.succeededCount)
            out.endObject()
        }
        out.member("token_creation_date", n.tokenCreationDate)
        out.member("token_expiration_date", n.tokenExpirationDate)
        out.member("token_type", n.tokenType)
        out.member("version", n.version)
        out.endObject()
    }

    static func signature(_ s: SignatureMaterial, into out: inout JSONOutput) {
        let summary = SignatureSummary(s)
        out.beginObject()
        out.member("algorithm", summary.algorithm)
        out.key("certificates")
        out.beginArray()
        for c in summary.certificates {
            out.beginObject()
            out.member("issuer", c.issuer)
            out.member("not_after", c.notAfter)
            out.member("not_before", c.notBefore)
            out.member("serial", c.serial)
            out.member("subject", c.subject)
            out.endObject()
        }
        out.endArray()
        out.member("kind", summary.kind)
        out.member("problems", strings: summary.problems.isEmpty ? nil : summary.problems)
        out.endObject()
    }

    /// `unknown_attributes`: `[{"type", "value_hex", "version"}]`, left out when empty.
    private static func attributes(_ list: [ASN1Attribute], into out: inout JSONOutput) {
        guard !list.isEmpty else { return }
        out.key("unknown_attributes")
        out.beginArray()
        for a in list { out.attributeObject(type: a.type, hex: a.bytes, version: a.version) }
        out.endArray()
    }

    /// Named text values as an object; for a name given twice, the last value.
    static func fields(_ name: StaticString, _ list: [Field], into out: inout JSONOutput) {
        out.key(name)
        out.beginObject()
        let ordered = list.indices.sorted { a, b in
            let (x, y) = (list[a].name, list[b].name)
            return x == y ? a < b : x.utf8.lexicographicallyPrecedes(y.utf8)
        }
        for (n, i) in ordered.enumerated() where n + 1 == ordered.count || list[ordered[n + 1]].name != list[i].name {
            out.key(text: list[i].name)
            if let json = list[i].json { out.value(json) } else { out.string(list[i].value) }
        }
        out.endObject()
    }

    static func base64(_ bytes: [UInt8]) -> String { Data(bytes).base64EncodedString() }
}
