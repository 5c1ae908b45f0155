import Foundation
import ReceiptCore

/// App Store Server Notifications V2 types and subtypes in one line of plain words, for the
/// on-call operator: what happened and what it means for the customer's access.
public enum NotificationExplanation {
    /// Every V2 notification type Apple documents (metrics label values are limited to these:
    /// any other text from a request counts as `other`).
    public static let knownTypes: Set<String> = [
        "SUBSCRIBED", "DID_CHANGE_RENEWAL_PREF", "DID_CHANGE_RENEWAL_STATUS", "OFFER_REDEEMED", "DID_RENEW", "EXPIRED",
        "DID_FAIL_TO_RENEW", "GRACE_PERIOD_EXPIRED", "PRICE_INCREASE", "REFUND", "REFUND_DECLINED", "REFUND_REVERSED",
        "CONSUMPTION_REQUEST", "RENEWAL_EXTENDED", "RENEWAL_EXTENSION", "REVOKE", "TEST", "EXTERNAL_PURCHASE_TOKEN",
        "ONE_TIME_CHARGE", "RESCIND_CONSENT", "METADATA_UPDATE", "MIGRATION", "MIGRATE", "PRICE_CHANGE",
    ]

    /// Every V2 subtype Apple documents; another is shown as new rather than read as one of these.
    public static let knownSubtypes: Set<String> = [
        "INITIAL_BUY", "RESUBSCRIBE", "DOWNGRADE", "UPGRADE", "AUTO_RENEW_ENABLED", "AUTO_RENEW_DISABLED", "VOLUNTARY", "BILLING_RETRY",
        "PRICE_INCREASE", "GRACE_PERIOD", "PENDING", "ACCEPTED", "BILLING_RECOVERY", "PRODUCT_NOT_FOR_SALE", "SUMMARY", "FAILURE",
        "UNREPORTED", "CREATED", "ACTIVE_TOKEN_REMINDER",
    ]

    /// `DID_FAIL_TO_RENEW / GRACE_PERIOD: billing failed; access continues until 2026-11-30
    /// while Apple retries`. `until` is the date that bounds the news (the grace period's end,
    /// the new expiry), when the caller knows it.
    /// `notification`, when the payload was decoded, adds what only it says: a mass
    /// extension's counts, an external purchase token's kind and expiry.
    /// `refunded`: the nested transaction, whose revocation tells a prorated refund from a full one.
    public static func explain(
        type: String?, subtype: String?, until: Date? = nil, notification: NotificationInfo? = nil, refunded: Purchase? = nil
    ) -> String {
        let name = [type ?? "?", subtype].compactMap { $0 }.joined(separator: " / ")
        let day = until.map { AppleDate.calendarDay($0) }
        var text = name + ": " + words(type: type ?? "", subtype: subtype ?? "", until: day)
        if type == "REFUND", let refund = refunded {
            switch refund.revocationType {
            case "REFUND_PRORATED":
                text = name + ": Apple refunded "
                    + (refund.revocationPercentage.map { "\(OfferWords.percentage($0)) of the price" } ?? "part of the price")
                    + " (prorated): access ends at the refund; what came before it stays paid"
            case "REFUND_FULL": text += " (a full refund)"
            default: break
            }
        }
        if let summary = notification?.extensionSummary { text += ": " + summary.words }
        if let n = notification, n.tokenType != nil || n.tokenExpirationDate != nil {
            var parts: [String] = []
            if let kind = n.tokenType { parts.append(kind == "ACQUISITION" ? "an acquisition token" : kind == "SERVICES" ? "a services token" : "token type \(kind)") }
            if let end = n.tokenExpirationDate { parts.append("expires \(AppleDate.day(end))") }
            text += " (" + parts.joined(separator: ", ") + ")"
        }
        if let subtype, !subtype.isEmpty, !knownSubtypes.contains(subtype), knownTypes.contains(type ?? "") {
            text += " (subtype \(subtype) is new to receiptdash: kept as sent)"
        }
        return text
    }

    static func words(type: String, subtype: String, until day: String?) -> String {
        let untilText = day.map { " until \($0)" } ?? ""
        switch (type, subtype) {
        case ("SUBSCRIBED", "INITIAL_BUY"): return "a new subscription: first purchase in its group"
        case ("SUBSCRIBED", "RESUBSCRIBE"): return "subscribed again after it had lapsed, in the same group"
        case ("SUBSCRIBED", _): return "subscribed"
        case ("DID_RENEW", "BILLING_RECOVERY"): return "renewed after billing problems: access restored" + untilText
        case ("DID_RENEW", _): return "renewed: access continues" + untilText
        case ("DID_CHANGE_RENEWAL_PREF", "UPGRADE"): return "upgraded: the higher product applies at once, the old one is refunded pro rata"
        case ("DID_CHANGE_RENEWAL_PREF", "DOWNGRADE"): return "downgraded: the lower product starts at the next renewal"
        case ("DID_CHANGE_RENEWAL_PREF", _): return "the renewal product changed back: the current product renews as before"
        case ("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED"): return "auto-renew turned back on"
        case ("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED"): return "auto-renew turned off: access lasts to the end of the paid period, then ends"
        case ("DID_CHANGE_RENEWAL_STATUS", _): return "auto-renew changed"
        case ("OFFER_REDEEMED", _): return "an offer was redeemed (\(subtype.isEmpty ? "offer" : subtype.lowercased().replacingOccurrences(of: "_", with: " ")))"
        case ("DID_FAIL_TO_RENEW", "GRACE_PERIOD"): return "billing failed; access continues" + untilText + " while Apple retries"
        case ("DID_FAIL_TO_RENEW", _): return "billing failed; no access while Apple retries the payment (billing retry)"
        case ("EXPIRED", "VOLUNTARY"): return "expired: the customer had turned auto-renew off"
        case ("EXPIRED", "BILLING_RETRY"): return "expired: billing retry ended without a successful payment"
        case ("EXPIRED", "PRICE_INCREASE"): return "expired: the customer did not consent to a price increase"
        case ("EXPIRED", "PRODUCT_NOT_FOR_SALE"): return "expired: the product was no longer for sale at renewal"
        case ("EXPIRED", _): return "expired: access has ended"
        case ("GRACE_PERIOD_EXPIRED", _): return "the billing grace period ended without payment: access ends now"
        case ("PRICE_INCREASE", "PENDING"): return "a price increase awaits the customer's consent"
        case ("PRICE_INCREASE", "ACCEPTED"): return "the customer accepted the price increase (or it needed no consent)"
        case ("PRICE_INCREASE", _): return "price increase"
        case ("REFUND", _): return "Apple refunded the purchase: revoke what it granted"
        case ("REFUND_DECLINED", _): return "Apple declined the refund request: nothing changes"
        case ("REFUND_REVERSED", _): return "a refund was reversed: grant the purchase again"
        case ("CONSUMPTION_REQUEST", _): return "Apple asks for consumption information to decide a refund request (answer within 12 hours)"
        case ("RENEWAL_EXTENDED", _): return "the renewal date was extended" + untilText
        case ("RENEWAL_EXTENSION", "SUMMARY"): return "a mass renewal-date extension finished"
        case ("RENEWAL_EXTENSION", "FAILURE"): return "a renewal-date extension failed for this subscription"
        case ("RENEWAL_EXTENSION", _): return "renewal-date extension"
        case ("REVOKE", _): return "Family Sharing access was revoked: the purchaser stopped sharing or left the family"
        case ("TEST", _): return "a test notification (Request a Test Notification): the endpoint works"
        case ("EXTERNAL_PURCHASE_TOKEN", "UNREPORTED"):
            return "an external purchase token was not reported to Apple within 10 days of its creation or expiry: report it"
        case ("EXTERNAL_PURCHASE_TOKEN", "CREATED"): return "a custom-link external purchase token was created"
        case ("EXTERNAL_PURCHASE_TOKEN", "ACTIVE_TOKEN_REMINDER"): return "monthly reminder: an external purchase token is still active; report its purchases"
        case ("EXTERNAL_PURCHASE_TOKEN", _): return "external purchase token"
        case ("ONE_TIME_CHARGE", _): return "a one-time purchase (consumable, non-consumable or non-renewing)"
        case ("RESCIND_CONSENT", _):
            return "a parent or guardian withdrew consent for this child's use of the app: stop serving the account of its app transaction"
        case ("METADATA_UPDATE", _): return "Advanced Commerce: the subscription's metadata changed"
        case ("MIGRATION", _), ("MIGRATE", _): return "Advanced Commerce: a subscription was migrated into Advanced Commerce"
        case ("PRICE_CHANGE", _): return "Advanced Commerce: the subscription's price changed"
        default: return "a notification type receiptdash does not know yet (kept as sent)"
        }
    }
}
