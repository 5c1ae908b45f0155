import Foundation
import PlainWords

/// A transaction's `commitmentInfo` (API 1.21): the period of a monthly-billed plan with a
/// 12-month commitment (`billingPlanType` `MONTHLY`) this transaction pays for.
public struct CommitmentInfo: Sendable, Hashable {
    /// `billingPeriodNumber`: 1 to 12.
    public var billingPeriodNumber: Int64?
    /// `totalBillingPeriods`: the periods the customer committed to (12).
    public var totalBillingPeriods: Int64?
    /// `commitmentExpiresDate`: when the commitment ends.
    public var commitmentExpiresDate: Date?
    /// `commitmentPrice`, in milliunits of the transaction's currency: the whole commitment.
    public var commitmentPrice: Int64?
    /// Keys Apple added that this model has no name for.
    public var otherFields: [Field] = []

    public init(
        billingPeriodNumber: Int64? = nil, totalBillingPeriods: Int64? = nil, commitmentExpiresDate: Date? = nil, commitmentPrice: Int64? = nil
    ) {
        self.billingPeriodNumber = billingPeriodNumber
        self.totalBillingPeriods = totalBillingPeriods
        self.commitmentExpiresDate = commitmentExpiresDate
        self.commitmentPrice = commitmentPrice
    }

    /// Apple's object; nil when `value` is not an object.
    init?(apple value: JSONValue) {
        guard case .object(let object) = value else { return nil }
        var r = JSONFieldReader(object)
        billingPeriodNumber = r.int("billingPeriodNumber")
        totalBillingPeriods = r.int("totalBillingPeriods")
        commitmentExpiresDate = r.epochMillisecondsDate("commitmentExpiresDate")
        commitmentPrice = r.int("commitmentPrice")
        otherFields = r.remainingFields()
    }

    /// ``json`` read back (what the audit store kept).
    init?(snakeCase value: JSONValue) {
        guard case .object(let object) = value else { return nil }
        billingPeriodNumber = object["billing_period_number"]?.int64
        totalBillingPeriods = object["total_billing_periods"]?.int64
        commitmentExpiresDate = object["commitment_expires_date"]?.text.flatMap { AppleDate.parse($0) }
        commitmentPrice = object["commitment_price"]?.int64
        if case .object(let other)? = object["other_fields"] {
            otherFields = other.keys.sorted().map { Field(name: $0, keeping: other[$0] ?? .null) }
        }
    }

    /// `commitment_info` as every output writes it (snake_case keys, ISO 8601 date).
    public var json: JSONValue {
        var out: [String: JSONValue] = [:]
        if let billingPeriodNumber { out["billing_period_number"] = .integer(billingPeriodNumber) }
        if let totalBillingPeriods { out["total_billing_periods"] = .integer(totalBillingPeriods) }
        if let commitmentExpiresDate { out["commitment_expires_date"] = .string(AppleDate.iso8601(commitmentExpiresDate)) }
        if let commitmentPrice { out["commitment_price"] = .integer(commitmentPrice) }
        if !otherFields.isEmpty { out["other_fields"] = Field.object(otherFields) }
        return .object(out)
    }

    /// "billing period 3 of 12, commitment ends 2027-08-01".
    public var summary: String {
        var parts: [String] = []
        if let n = billingPeriodNumber {
            parts.append("billing period \(n)" + (totalBillingPeriods.map { " of \($0)" } ?? ""))
        } else if let total = totalBillingPeriods {
            parts.append("\(total) billing periods")
        }
        if let end = commitmentExpiresDate { parts.append("commitment ends \(AppleDate.day(end))") }
        return parts.joined(separator: ", ")
    }
}

/// A renewal info's `commitmentInfo` (RenewalCommitmentInfo, API 1.21): what happens when the
/// current commitment ends.
public struct RenewalCommitmentInfo: Sendable, Hashable {
    public var autoRenewProductID: String?
    /// `commitmentAutoRenewStatus`: whether a new commitment starts when this one ends.
    public var autoRenewStatus: Bool?
    /// `commitmentAutoRenewStatus` as sent when Apple does not define it (not 0 or 1).
    public var autoRenewStatusAsSent: JSONValue?
    public var renewalBillingPlanType: String?
    public var renewalDate: Date?
    /// `commitmentRenewalPrice`, milliunits.
    public var renewalPrice: Int64?
    public var otherFields: [Field] = []

    public init() {}

    init?(apple value: JSONValue) {
        guard case .object(let object) = value else { return nil }
        var r = JSONFieldReader(object)
        autoRenewProductID = r.string("commitmentAutoRenewProductId")
        (autoRenewStatus, autoRenewStatusAsSent) = r.definedFlag("commitmentAutoRenewStatus")
        renewalBillingPlanType = r.string("commitmentRenewalBillingPlanType")
        renewalDate = r.epochMillisecondsDate("commitmentRenewalDate")
        renewalPrice = r.int("commitmentRenewalPrice")
        otherFields = r.remainingFields()
    }

    public var json: JSONValue {
        var out: [String: JSONValue] = [:]
        if let autoRenewProductID { out["commitment_auto_renew_product_id"] = .string(autoRenewProductID) }
        if let autoRenewStatus { out["commitment_auto_renew_status"] = .bool(autoRenewStatus) }
        if let autoRenewStatusAsSent { out["commitment_auto_renew_status"] = autoRenewStatusAsSent }
        if let renewalBillingPlanType { out["commitment_renewal_billing_plan_type"] = .string(renewalBillingPlanType) }
        if let renewalDate { out["commitment_renewal_date"] = .string(AppleDate.iso8601(renewalDate)) }
        if let renewalPrice { out["commitment_renewal_price"] = .integer(renewalPrice) }
        if !otherFields.isEmpty { out["other_fields"] = Field.object(otherFields) }
        return .object(out)
    }
}

/// Words for the newest enumerations Apple signs.
public enum OfferWords {
    /// `offerType`: 1 introductory, 2 promotional, 3 offer code, 4 win-back.
    public static func type(_ value: Int) -> String {
        switch value {
        case 1: "introductory offer"
        case 2: "promotional offer"
        case 3: "offer code"
        case 4: "win-back offer"
        default: AppleValue.notDefined
        }
    }

    /// `offerDiscountType`.
    public static func discount(_ value: String) -> String {
        switch value {
        case "FREE_TRIAL": "free trial"
        case "PAY_AS_YOU_GO": "pay as you go"
        case "PAY_UP_FRONT": "pay up front"
        case "ONE_TIME": "one-time (an In-App Purchase offer code)"
        default: AppleValue.notDefined
        }
    }

    /// The name of an offer for a timeline: "win-back offer", "one-time offer code", …
    public static func name(type: Int?, discount: String?) -> String? {
        switch (type, discount) {
        case (3?, "ONE_TIME"?), (nil, "ONE_TIME"?): "one-time offer code"
        case (let t?, let d?) where (1...4).contains(t) && d != "ONE_TIME": "\(Self.type(t)), \(Self.discount(d))"
        case (let t?, _) where (1...4).contains(t): Self.type(t)
        case (let t?, _): "offer of type \(t) (\(AppleValue.notDefined))"
        default: nil
        }
    }

    /// An ISO 8601 duration in words: `P1M` "1 month", `P3D` "3 days", `P1Y6M` "1 year 6 months";
    /// nil when it is not one.
    public static func period(_ text: String) -> String? {
        var rest = Substring(text)
        guard rest.first == "P", rest.count > 1, rest.count <= 32 else { return nil }
        rest = rest.dropFirst()
        let units: [(Character, String)] = [("Y", "year"), ("M", "month"), ("W", "week"), ("D", "day")]
        var parts: [String] = []
        var digits = ""
        var next = 0
        for c in rest {
            if c.isASCII, c.isNumber {
                digits.append(c)
                continue
            }
            guard let index = units[next...].firstIndex(where: { $0.0 == c }), let n = Int(digits) else { return nil }
            parts.append(CountNoun(units[index].1).count(n))
            next = index + 1
            digits = ""
            if next > units.count { return nil }
        }
        guard digits.isEmpty, !parts.isEmpty else { return nil }
        return parts.joined(separator: " ")
    }

    /// `revocationType`.
    public static func revocation(_ value: String) -> String {
        switch value {
        case "REFUND_FULL": "a full refund"
        case "REFUND_PRORATED": "a prorated refund"
        case "FAMILY_REVOKE": "Family Sharing revoked"
        default: AppleValue.notDefined
        }
    }

    /// `revocationPercentage` milliunits as a percentage: 40000 → "40%", 12500 → "12.5%".
    public static func percentage(_ milliunits: Int64) -> String {
        let sign = milliunits < 0 ? "-" : ""
        let magnitude = milliunits.magnitude
        let whole = magnitude / 1000
        let fraction = magnitude % 1000
        guard fraction != 0 else { return "\(sign)\(whole)%" }
        var decimals = String(fraction)
        while decimals.count < 3 { decimals = "0" + decimals }
        while decimals.hasSuffix("0") { decimals.removeLast() }
        return "\(sign)\(whole).\(decimals)%"
    }

    /// `billingPlanType`.
    public static func billingPlan(_ value: String) -> String {
        switch value {
        case "BILLED_UPFRONT": "billed up front"
        case "MONTHLY": "billed monthly under a 12-month commitment"
        default: AppleValue.notDefined
        }
    }
}
