import Foundation
import AppStoreAPI
import ReceiptCore

/// What a local verifyReceipt answers for a request, as Apple would: the pure part of the
/// simulator, testable without a socket.
public enum SimulatedResponse {
    /// The simulator's view of one request.
    public struct Request: Sendable {
        public var endpoint: Endpoint
        public var body: [UInt8]
        public var now: Date

        public init(endpoint: Endpoint, body: [UInt8], now: Date) {
            self.endpoint = endpoint
            self.body = body
            self.now = now
        }
    }

    public typealias Endpoint = VerifyEndpoint.Kind

    /// The JSON answer for `request`, given the simulator's configured shared secret.
    public static func answer(_ request: Request, secret: SharedSecret?) -> JSONValue {
        guard let body = try? JSONValue.parse(request.body), case .object(let fields) = body else {
            return status(21000)  // not JSON: Apple could not read the request
        }
        guard case .string(let receiptData)? = fields["receipt-data"], !receiptData.isEmpty else {
            return status(21002)
        }
        guard let decoded = try? ReceiptDecoder().decode(text: receiptData),
            decoded.format == .pkcs7 || decoded.format == .legacy
        else { return status(21002) }
        let environment: Endpoint = decoded.environment == .production ? .production : .sandbox
        if decoded.environment == .xcode { return status(21002) }  // Apple rejects StoreKit-testing receipts
        if environment == .sandbox, request.endpoint == .production { return status(21007) }
        if environment == .production, request.endpoint == .sandbox { return status(21008) }
        let password = fields["password"]?.text
        let hasSubscriptions = decoded.allPurchases.contains { $0.expiresDate != nil }
        if hasSubscriptions, let secret, let password, !secret.matches(password) { return status(21004) }
        let includeSubscriptions = hasSubscriptions && password.map { candidate in secret?.matches(candidate) ?? true } == true
        let excludeOld = fields["exclude-old-transactions"]?.bool == true

        if decoded.format == .legacy, let p = decoded.transactions.first {
            var o: [String: JSONValue] = ["status": .integer(0), "receipt": .object(row(p, legacy: true))]
            if let expires = p.expiresDate, expires < request.now {
                o["status"] = .integer(21006)
                o["latest_expired_receipt_info"] = .object(row(p, legacy: true))
            } else if p.expiresDate != nil {
                o["latest_receipt_info"] = .object(row(p, legacy: true))
                o["latest_receipt"] = .string(receiptData)
            }
            return .object(o)
        }
        guard let receipt = decoded.receipt else { return status(21002) }
        var receiptObject: [String: JSONValue] = [
            "receipt_type": .string(receipt.receiptType ?? "Production"),
            "bundle_id": .string(receipt.bundleID ?? ""),
            "application_version": .string(receipt.applicationVersion ?? ""),
            "original_application_version": .string(receipt.originalApplicationVersion ?? ""),
            "app_item_id": .integer(receipt.appItemID ?? 0),
            "adam_id": .integer(receipt.appItemID ?? 0),
            "download_id": .integer(receipt.downloadID ?? 0),
            "version_external_identifier": .integer(receipt.versionExternalIdentifier ?? 0),
            "in_app": .array(receipt.inApp.map { .object(row($0, legacy: false)) }),
        ]
        for (key, date) in [
            ("receipt_creation_date", receipt.receiptCreationDate), ("original_purchase_date", receipt.originalPurchaseDate),
            ("request_date", request.now),
        ] {
            if let date { receiptObject.merge(dateFields(key, date)) { _, new in new } }
        }
        var o: [String: JSONValue] = [
            "status": .integer(0), "environment": .string(environment.rawValue), "receipt": .object(receiptObject),
        ]
        if includeSubscriptions {
            let subscriptionRows = receipt.inApp.filter { $0.expiresDate != nil }
            // The latest-expiring row of each subscription: its renewal info, and all that
            // exclude-old-transactions keeps.
            var latest: [String: Purchase] = [:]
            for r in subscriptionRows {
                let key = r.originalTransactionID ?? r.transactionID ?? ""
                if (latest[key]?.expiresDate ?? .distantPast) < (r.expiresDate ?? .distantPast) { latest[key] = r }
            }
            let latestKeys = latest.keys.sorted()
            let rows = excludeOld ? latestKeys.map { latest[$0]! } : subscriptionRows
            o["latest_receipt_info"] = .array(rows.map { .object(row($0, legacy: false)) })
            o["pending_renewal_info"] = .array(
                latestKeys.map { key in
                    let r = latest[key]!
                    return .object([
                        "original_transaction_id": .string(key), "product_id": .string(r.productID ?? ""),
                        "auto_renew_product_id": .string(r.productID ?? ""), "auto_renew_status": .string("1"),
                    ])
                })
            o["latest_receipt"] = .string(receiptData)
        }
        return .object(o)
    }

    public static func status(_ code: Int, isRetryable: Bool? = nil) -> JSONValue {
        var o: [String: JSONValue] = ["status": .integer(Int64(code))]
        if let isRetryable { o["is-retryable"] = .bool(isRetryable) }
        return .object(o)
    }

    /// A purchase row with Apple's field names and string values.
    static func row(_ p: Purchase, legacy: Bool) -> [String: JSONValue] {
        var o: [String: JSONValue] = ["quantity": .string(String(p.quantity ?? 1))]
        func put(_ key: String, _ value: String?) { if let value { o[key] = .string(value) } }
        put("product_id", p.productID)
        put("transaction_id", p.transactionID)
        put("original_transaction_id", p.originalTransactionID)
        put("web_order_line_item_id", p.webOrderLineItemID)
        put("is_trial_period", p.isTrialPeriod.map { $0 ? "true" : "false" })
        put("is_in_intro_offer_period", p.isInIntroOfferPeriod.map { $0 ? "true" : "false" })
        if legacy {
            put("bid", p.bundleID)
            put("bvrs", p.bundleVersion)
        }
        for (key, date) in [
            ("purchase_date", p.purchaseDate), ("original_purchase_date", p.originalPurchaseDate), ("expires_date", p.expiresDate),
            ("cancellation_date", p.cancellationDate),
        ] {
            if let date { o.merge(dateFields(key, date)) { _, new in new } }
        }
        return o
    }

    /// `key` ("2012-04-30 15:05:55 Etc/GMT"), `key_ms` and `key_pst`, as Apple writes dates.
    static func dateFields(_ key: String, _ date: Date) -> [String: JSONValue] {
        let iso = AppleDate.iso8601(date)
        let text = String(iso.prefix(19)).replacingOccurrences(of: "T", with: " ")
        let pacific = TimeZone(identifier: "America/Los_Angeles")?.secondsFromGMT(for: date) ?? -28_800
        let local = String(AppleDate.iso8601(date.addingTimeInterval(Double(pacific))).prefix(19)).replacingOccurrences(of: "T", with: " ")
        return [
            key: .string(text + " Etc/GMT"),
            key + "_ms": .string(String(Int64((date.timeIntervalSince1970 * 1000).rounded()))),
            key + "_pst": .string(local + " America/Los_Angeles"),
        ]
    }
}
