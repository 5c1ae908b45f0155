import AppStoreAPI
import Foundation
import RuleFiles

/// One `[[policy]]` of a consumption policy file: what it matches (every key given must match;
/// a key not given matches anything) and what it answers. Policies are tried in file order and
/// the first that matches answers.
public struct ConsumptionPolicy: Sendable, Hashable {
    /// What a matching policy sends.
    public enum Answer: Sendable, Hashable {
        /// Consumption information with this preference (nil: `none`, data without one).
        case respond(ConsumptionAnswer)
        /// `respond = false`: nothing is sent (Apple decides without us).
        case noResponse
    }

    public var name: String
    /// The line of its `[[policy]]` header.
    public var line: Int
    /// Product id globs (`*`, `?`); any of them.
    public var products: [String] = []
    public var productTypes: [PolicyProductType] = []
    /// Whole days from the purchase the refund is asked for to the decision.
    public var daysSincePurchase: CountRange?
    /// Apple's three-letter storefront codes, upper case; any of them.
    public var storefronts: [String] = []
    /// Apple's names: `Production`, `Sandbox`.
    public var environments: [String] = []
    /// How many refunds the trail holds for the customer.
    public var customerRefunds: CountRange?
    public var answer: Answer

    public init(name: String, line: Int, answer: Answer) {
        self.name = name
        self.line = line
        self.answer = answer
    }

    /// Whether every key this policy gives matches `facts` at `now`. A fact the request does
    /// not carry (or the trail does not know) never matches a key that asks about it.
    public func matches(_ facts: ConsumptionFacts, now: Date) -> Bool {
        if !products.isEmpty {
            guard let product = facts.productID, products.contains(where: { ProductGlob.matches($0, product) }) else { return false }
        }
        if !productTypes.isEmpty {
            guard let type = facts.productType.flatMap(PolicyProductType.init(appleType:)), productTypes.contains(type) else { return false }
        }
        if let range = daysSincePurchase {
            guard let days = facts.daysSincePurchase(now: now), range.contains(days) else { return false }
        }
        if !storefronts.isEmpty {
            guard let storefront = facts.storefront?.uppercased(), storefronts.contains(storefront) else { return false }
        }
        if !environments.isEmpty {
            guard let environment = facts.environment, environments.contains(environment) else { return false }
        }
        if let range = customerRefunds {
            guard let refunds = facts.customerRefunds, range.contains(refunds) else { return false }
        }
        return true
    }
}

/// The consumption information a policy sends, before it is worked out for one request.
public struct ConsumptionAnswer: Sendable, Hashable {
    /// How much was consumed: a fixed share, or the share of the current period that has passed.
    public enum Share: Sendable, Hashable {
        case percent(Double)
        case elapsed
    }

    /// Nil: `none` (consumption information without a preference).
    public var refundPreference: RefundPreference?
    public var deliveryStatus: DeliveryStatus
    public var consumption: Share?
    public var sampleContentProvided: Bool

    public init(refundPreference: RefundPreference?, deliveryStatus: DeliveryStatus, consumption: Share?, sampleContentProvided: Bool) {
        self.refundPreference = refundPreference
        self.deliveryStatus = deliveryStatus
        self.consumption = consumption
        self.sampleContentProvided = sampleContentProvided
    }
}

/// The kinds of in-app purchase a policy names (`product_type`), from Apple's `type`.
public enum PolicyProductType: String, Sendable, Hashable, CaseIterable {
    case consumable
    case nonConsumable = "non-consumable"
    case autoRenewable = "auto-renewable"
    case nonRenewing = "non-renewing"

    /// Apple's `type` of a transaction (`Auto-Renewable Subscription`, …); nil for a value
    /// Apple does not define.
    public init?(appleType: String) {
        switch appleType {
        case "Consumable": self = .consumable
        case "Non-Consumable": self = .nonConsumable
        case "Auto-Renewable Subscription": self = .autoRenewable
        case "Non-Renewing Subscription": self = .nonRenewing
        default: return nil
        }
    }
}

/// What a policy is matched against: the transaction the `CONSUMPTION_REQUEST` names (from its
/// signed transaction), and what the trail knows of the customer.
public struct ConsumptionFacts: Sendable, Hashable {
    public var transactionID: String
    public var originalTransactionID: String?
    public var productID: String?
    /// Apple's `type`, as sent.
    public var productType: String?
    public var purchaseDate: Date?
    /// The end of the period bought (subscriptions): what `elapsed` measures against.
    public var expiresDate: Date?
    public var storefront: String?
    /// Apple's name: `Production`, `Sandbox`.
    public var environment: String?
    /// Refunds the trail holds for this customer; nil when it cannot tell.
    public var customerRefunds: Int?
    /// Why Apple asks (`consumptionRequestReason`), as sent.
    public var reason: String?

    public init(transactionID: String) {
        self.transactionID = transactionID
    }

    /// Whole days from the purchase to `now` (0 on the day of purchase); nil without a date.
    public func daysSincePurchase(now: Date) -> Int? {
        guard let purchaseDate else { return nil }
        return max(0, Int((now.timeIntervalSince(purchaseDate) / 86_400).rounded(.down)))
    }

    /// The share of the period from purchase to expiry that has passed at `now`, 0–100; nil
    /// without both dates.
    public func elapsedPercent(now: Date) -> Double? {
        guard let purchaseDate, let expiresDate, expiresDate > purchaseDate else { return nil }
        let share = now.timeIntervalSince(purchaseDate) / expiresDate.timeIntervalSince(purchaseDate) * 100
        return min(100, max(0, share))
    }
}
