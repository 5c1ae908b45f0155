import Foundation

/// What a customer's purchases amount to at one instant: each subscription's state with its
/// reasons, and each one-time purchase.
///
/// Pure: the instant is a parameter, nothing reads the clock. Rows are ordered by their dates,
/// never by their position in an array, because Apple does not order `latest_receipt_info`.
public struct PurchaseAnalysis: Sendable, Hashable {
    public var at: Date
    public var subscriptions: [SubscriptionSummary]
    public var oneTimePurchases: [OneTimePurchase]
    /// Observations about the inputs as a whole (missing consumables, duplicate rows).
    public var notes: [String]

    public init(at: Date, subscriptions: [SubscriptionSummary], oneTimePurchases: [OneTimePurchase], notes: [String]) {
        (self.at, self.subscriptions, self.oneTimePurchases, self.notes) = (at, subscriptions, oneTimePurchases, notes)
    }

    /// Analyses one or several decoded inputs for one customer (e.g. a receipt and Apple's
    /// response to it) at instant `at`.
    public static func analyze(_ inputs: [DecodedInput], at: Date) -> PurchaseAnalysis {
        var analyzer = Analyzer(at: at)
        for input in inputs { analyzer.add(input) }
        return analyzer.finish()
    }
}

/// The state names are a contract (`inspect --format json` prints them): add, never rename.
public enum SubscriptionState: String, Sendable, Hashable, CaseIterable {
    case active
    case activeWillNotRenew = "active-will-not-renew"
    case inGracePeriod = "in-grace-period"
    case inBillingRetry = "in-billing-retry"
    case expired
    case refunded
    /// A prorated refund (`revocationType` `REFUND_PRORATED`): part of the last period's price
    /// returned, access ended at the refund, the periods before it stay paid.
    case refundedProrated = "refunded-prorated"
    case upgraded
    case revokedFamilySharing = "revoked-family-sharing"
}

/// One auto-renewable subscription (a chain of transactions sharing an original transaction id).
public struct SubscriptionSummary: Sendable, Hashable {
    public var originalTransactionID: String
    /// The product of the latest period (by date).
    public var productID: String?
    /// Every product this chain has had, in date order.
    public var productIDs: [String]
    public var subscriptionGroup: String?
    public var state: SubscriptionState
    /// One line in plain words.
    public var explanation: String
    /// The fields and rows the state rests on.
    public var evidence: [String]
    public var expiresDate: Date?
    public var autoRenew: Bool?
    /// The product it will renew as, when different (a downgrade or crossgrade is pending).
    public var autoRenewProductID: String?
    public var gracePeriodExpiresDate: Date?
    public var expirationIntent: Int?
    public var periods: [Period]
    /// Renewals after the first purchase.
    public var renewalCount: Int
    /// Periods that were paid for (not trials, not refunded).
    public var paidPeriods: Int
    public var isSandbox: Bool
    /// Flags: future-dated rows, duplicates, overlaps and gaps, sandbox acceleration.
    public var warnings: [String]
    /// The latest period's billing plan (`BILLED_UPFRONT`, `MONTHLY`) and its commitment.
    public var billingPlanType: String? = nil
    public var commitment: CommitmentInfo? = nil
    /// The latest period's revocation: its kind and the share refunded (milliunits).
    public var revocationType: String? = nil
    public var revocationPercentage: Int64? = nil

    /// One period of a subscription.
    public struct Period: Sendable, Hashable {
        public enum Kind: String, Sendable, Hashable {
            case trial, intro, offer, paid, grace, refunded, upgraded
            case refundedProrated = "refunded-prorated"
        }

        public var start: Date
        public var end: Date?
        public var kind: Kind
        public var productID: String?
        public var transactionID: String?
        /// The offer this period was bought with, named: "win-back offer", "one-time offer code", …
        public var offer: String? = nil
    }
}

/// A purchase that is not an auto-renewable subscription.
public struct OneTimePurchase: Sendable, Hashable {
    public var productID: String?
    public var transactionID: String?
    public var productType: ProductType
    /// True when the type was inferred rather than stated by the receipt.
    public var typeInferred: Bool
    public var purchaseDate: Date?
    public var refunded: Bool
    /// One line in plain words.
    public var explanation: String
}
