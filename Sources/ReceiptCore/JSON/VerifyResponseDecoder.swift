import Foundation

/// Decodes saved `verifyReceipt` response bodies (iOS 7 and iOS 6 styles) and App Store Server
/// Notification V1 bodies.
enum VerifyResponseDecoder {
    /// True when a JSON object looks like a V1 notification.
    static func isNotificationV1(_ object: [String: JSONValue]) -> Bool {
        object["notification_type"] != nil || object["unified_receipt"] != nil
    }

    /// True when a JSON object looks like a verifyReceipt response.
    static func isResponse(_ object: [String: JSONValue]) -> Bool {
        object["status"] != nil || object["receipt"] != nil || object["latest_receipt_info"] != nil
            || object["pending_renewal_info"] != nil
    }

    static func decodeResponse(_ object: [String: JSONValue], limits: DecodingLimits) throws -> DecodedInput {
        var result = DecodedInput(format: .verifyResponse)
        try fill(&result, from: object, limits: limits)
        return result
    }

    static func decodeNotificationV1(_ object: [String: JSONValue], limits: DecodingLimits) throws -> DecodedInput {
        var result = DecodedInput(format: .notificationV1)
        var r = JSONFieldReader(object)
        r.secretKeys = ["password"]
        var info = NotificationInfo()
        info.notificationType = r.string("notification_type")
        info.bundleID = r.string("bid")
        info.bundleVersion = r.string("bvrs")
        info.containedSharedSecret = object["password"] != nil
        _ = r.value("password")
        if let unified = r.value("unified_receipt") {
            guard case .object(let inner) = unified else {
                throw ReceiptDecodingError(.invalidJSON, "unified_receipt is not an object")
            }
            try fill(&result, from: inner, limits: limits)
        }
        if let env = r.string("environment") {
            // The notification's own spelling (`PROD`, `Sandbox`) wins over unified_receipt's.
            result.rawEnvironment = env
            result.environment = StoreEnvironment(appleValue: env)
        }
        // Before March 2021, V1 bodies carried the latest transaction at the top level too.
        for (key, source) in [
            ("latest_receipt_info", Purchase.Source.latestReceiptInfo),
            ("latest_expired_receipt_info", .latestExpiredReceiptInfo),
        ] {
            if let rows = r.value(key) {
                result.latestReceiptInfo += try purchases(rows, source: source, field: key, limits: limits)
            }
        }
        if result.latestReceipt == nil { result.latestReceipt = r.string("latest_receipt") }
        _ = r.value("latest_expired_receipt")
        let renewalKeys = [
            "auto_renew_status", "auto_renew_product_id", "expiration_intent", "is_in_billing_retry_period",
            "original_transaction_id",
        ]
        if renewalKeys.contains(where: { object[$0] != nil }) {
            var renewal = RenewalInfo(snakeCase: object.filter { renewalKeys.contains($0.key) })
            renewal.otherFields = []
            for key in renewalKeys { _ = r.value(key) }
            if renewal.productID == nil { renewal.productID = renewal.autoRenewProductID }
            // The top level repeats one subscription's renewal state; add it only when no
            // pending_renewal_info entry already describes that subscription.
            let known = result.pendingRenewalInfo.contains { entry in
                if let id = renewal.originalTransactionID { return entry.originalTransactionID == id }
                guard let product = renewal.autoRenewProductID else { return true }
                return entry.autoRenewProductID == product || entry.productID == product
            }
            if !known { result.pendingRenewalInfo.append(renewal) }
        }
        _ = r.appleDate("auto_renew_status_change_date")
        if let changed = object["auto_renew_status_change_date_ms"]?.text {
            info.otherFields.append(Field(name: "auto_renew_status_change_date_ms", value: changed))
        }
        info.otherFields += r.remainingFields()
        result.notification = info
        return result
    }

    /// Fills `result` from a response body (or a V1 notification's `unified_receipt`).
    private static func fill(_ result: inout DecodedInput, from object: [String: JSONValue], limits: DecodingLimits) throws {
        var r = JSONFieldReader(object)
        result.status = r.int("status").map { Int(clamping: $0) }
        result.isRetryable = r.bool("is-retryable") ?? r.bool("is_retryable")
        if let env = r.string("environment") {
            result.rawEnvironment = env
            result.environment = StoreEnvironment(appleValue: env)
        }
        result.latestReceipt = r.string("latest_receipt")
        if let receipt = r.value("receipt") {
            guard case .object(let body) = receipt else {
                throw ReceiptDecodingError(.invalidJSON, "receipt is not an object")
            }
            if isIOS6Receipt(body) {
                result.transactions.append(Purchase(snakeCase: body, source: .legacyResponse))
            } else {
                result.receipt = try AppReceipt(verifyReceipt: body, limits: limits)
            }
        }
        if let rows = r.value("latest_receipt_info") {
            result.latestReceiptInfo += try purchases(rows, source: .latestReceiptInfo, field: "latest_receipt_info", limits: limits)
        }
        if let rows = r.value("latest_expired_receipt_info") {
            result.latestReceiptInfo += try purchases(
                rows, source: .latestExpiredReceiptInfo, field: "latest_expired_receipt_info", limits: limits)
        }
        if let entries = r.value("pending_renewal_info") {
            guard case .array(let items) = entries else {
                throw ReceiptDecodingError(.invalidJSON, "pending_renewal_info is not an array")
            }
            guard items.count <= limits.maximumPurchases else {
                throw ReceiptDecodingError(.limitExceeded, "pending_renewal_info has \(items.count) entries")
            }
            result.pendingRenewalInfo = try items.enumerated().map { index, item in
                guard case .object(let entry) = item else {
                    throw ReceiptDecodingError(.invalidJSON, "pending_renewal_info[\(index)] is not an object")
                }
                return RenewalInfo(snakeCase: entry)
            }
        }
        // iOS 6 responses put the renewal state at the top level.
        let topLevelRenewal = ["auto_renew_status", "auto_renew_product_id", "expiration_intent", "is_in_billing_retry_period"]
        if result.pendingRenewalInfo.isEmpty, topLevelRenewal.contains(where: { object[$0] != nil }) {
            var renewal = RenewalInfo(snakeCase: object.filter { topLevelRenewal.contains($0.key) })
            for key in topLevelRenewal { _ = r.value(key) }
            let rows = result.transactions + result.latestReceiptInfo
            renewal.originalTransactionID = rows.lazy.compactMap(\.originalTransactionID).first
            renewal.productID = rows.lazy.compactMap(\.productID).first
            result.pendingRenewalInfo.append(renewal)
        }
        if result.environment == nil, let type = result.receipt?.receiptType {
            result.environment = StoreEnvironment(appleValue: type)
        }
        for field in r.remainingFields() {
            result.warnings.append("unrecognised response field \(field.name)")
        }
    }

    /// iOS 6 responses carry a flat `receipt` describing one transaction.
    static func isIOS6Receipt(_ body: [String: JSONValue]) -> Bool {
        body["in_app"] == nil && body["bundle_id"] == nil && body["receipt_type"] == nil
            && (body["bid"] != nil || body["product_id"] != nil || body["transaction_id"] != nil)
    }
}
