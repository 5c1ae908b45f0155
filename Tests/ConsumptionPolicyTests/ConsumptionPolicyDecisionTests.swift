import AppStoreAPI
import ConsumptionPolicy
import Foundation
import Testing

/// A policy file decides each refund request by its first matching policy: which policy, and
/// the exact body Apple is sent (or why none is).
@Suite struct ConsumptionPolicyDecisionTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static let file = """
        customer_consented = true

        [[policy]]
        name = "refund-abusers"
        customer_refunds = ">= 3"
        refund_preference = "decline"
        consumption_percent = 100
        sample_content_provided = false

        [[policy]]
        name = "fresh-coins"
        product = "com.example.coins.*"
        product_type = "consumable"
        days_since_purchase = "< 2"
        refund_preference = "grant-full"
        delivery_status = "undelivered-server-outage"
        consumption_percent = 0
        sample_content_provided = false

        [[policy]]
        name = "france-subscribers"
        product_type = ["auto-renewable"]
        storefront = ["FRA", "bel"]
        refund_preference = "grant-prorated"
        consumption_percent = "elapsed"
        sample_content_provided = true

        [[policy]]
        name = "season-prorated"
        product_type = "non-renewing"
        refund_preference = "grant-prorated"
        consumption_percent = "elapsed"
        sample_content_provided = true

        [[policy]]
        name = "sandbox-quiet"
        environment = "Sandbox"
        respond = false

        [[policy]]
        name = "data-only"
        days_since_purchase = "3..30"
        refund_preference = "none"
        sample_content_provided = true
        """

    static func facts(
        product: String = "com.example.monthly", type: String = "Auto-Renewable Subscription", daysAgo: Double = 10, periodDays: Double? = 30,
        storefront: String = "USA", environment: String = "Production", refunds: Int? = 0
    ) -> ConsumptionFacts {
        var facts = ConsumptionFacts(transactionID: "2000000777")
        facts.productID = product
        facts.productType = type
        facts.purchaseDate = now.addingTimeInterval(-daysAgo * 86_400)
        facts.expiresDate = periodDays.map { facts.purchaseDate!.addingTimeInterval($0 * 86_400) }
        facts.storefront = storefront
        facts.environment = environment
        facts.customerRefunds = refunds
        return facts
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var label: String
        var facts: ConsumptionFacts
        var outcome: ConsumptionDecision.Outcome
        var policy: String?
        var body: String?
        var testDescription: String { label }
    }

    static let cases: [Case] = [
        Case(
            label: "three refunds of a subscription: its share left out", facts: facts(refunds: 3), outcome: .send, policy: "refund-abusers",
            body: #"{"customerConsented":true,"deliveryStatus":"DELIVERED","refundPreference":"DECLINE","sampleContentProvided":false}"#),
        Case(
            label: "three refunds of coins", facts: facts(product: "com.example.coins.1", type: "Consumable", refunds: 3), outcome: .send,
            policy: "refund-abusers",
            body: #"{"consumptionPercentage":100000,"customerConsented":true,"deliveryStatus":"DELIVERED","refundPreference":"DECLINE","sampleContentProvided":false}"#),
        Case(
            label: "coins bought yesterday",
            facts: facts(product: "com.example.coins.500", type: "Consumable", daysAgo: 1, periodDays: nil), outcome: .send, policy: "fresh-coins",
            body: #"{"consumptionPercentage":0,"customerConsented":true,"deliveryStatus":"UNDELIVERED_SERVER_OUTAGE","refundPreference":"GRANT_FULL","sampleContentProvided":false}"#),
        Case(
            label: "coins bought two days ago fall through to data only",
            facts: facts(product: "com.example.coins.500", type: "Consumable", daysAgo: 5, periodDays: nil), outcome: .send, policy: "data-only",
            body: #"{"customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":true}"#),
        Case(
            label: "an auto-renewable's share is Apple's to work out", facts: facts(daysAgo: 7.5, storefront: "FRA"), outcome: .send,
            policy: "france-subscribers",
            body: #"{"customerConsented":true,"deliveryStatus":"DELIVERED","refundPreference":"GRANT_PRORATED","sampleContentProvided":true}"#),
        Case(
            label: "a Belgian storefront written in lower case", facts: facts(daysAgo: 15, storefront: "BEL"), outcome: .send,
            policy: "france-subscribers",
            body: #"{"customerConsented":true,"deliveryStatus":"DELIVERED","refundPreference":"GRANT_PRORATED","sampleContentProvided":true}"#),
        Case(
            label: "a quarter of a non-renewing period elapsed",
            facts: facts(product: "com.example.season", type: "Non-Renewing Subscription", daysAgo: 7.5, storefront: "BEL"), outcome: .send,
            policy: "season-prorated",
            body: #"{"consumptionPercentage":25000,"customerConsented":true,"deliveryStatus":"DELIVERED","refundPreference":"GRANT_PRORATED","sampleContentProvided":true}"#),
        Case(
            label: "a non-renewing period over has no partial share",
            facts: facts(product: "com.example.season", type: "Non-Renewing Subscription", daysAgo: 40, storefront: "BEL"), outcome: .failed,
            policy: "season-prorated", body: nil),
        Case(
            label: "elapsed without the period's end cannot answer",
            facts: facts(product: "com.example.season", type: "Non-Renewing Subscription", daysAgo: 7.5, periodDays: nil, storefront: "BEL"),
            outcome: .failed, policy: "season-prorated", body: nil),
        Case(label: "sandbox does not respond", facts: facts(daysAgo: 40, environment: "Sandbox"), outcome: .noResponse, policy: "sandbox-quiet", body: nil),
        Case(label: "nothing matches a 40-day-old purchase", facts: facts(daysAgo: 40), outcome: .noMatch, policy: nil, body: nil),
        Case(
            label: "refunds unknown never match a refund range", facts: facts(daysAgo: 40, refunds: nil), outcome: .noMatch, policy: nil, body: nil),
        Case(
            label: "a type Apple does not define matches no product_type",
            facts: facts(product: "com.example.coins.1", type: "Bundle", daysAgo: 1), outcome: .noMatch, policy: nil, body: nil),
    ]

    @Test(arguments: cases) func theFirstMatchingPolicyAnswersWithThisBody(_ c: Case) throws {
        let policies = try ConsumptionPolicies.parse(Self.file, path: "policy.toml")
        let decision = policies.decide(c.facts, now: Self.now)
        #expect(decision.outcome == c.outcome)
        #expect(decision.policy == c.policy)
        let body = try decision.body.flatMap { try APIRequest.consumption("2000000777", $0).bodyText }
        #expect(body == c.body)
    }

    @Test func withoutConsentAMatchSendsNothing() throws {
        let text = Self.file.replacingOccurrences(of: "customer_consented = true", with: "")
        let policies = try ConsumptionPolicies.parse(text, path: "policy.toml")
        #expect(!policies.customerConsented)
        let decision = policies.decide(Self.facts(refunds: 3), now: Self.now)
        #expect(decision.outcome == .noConsent)
        #expect(decision.policy == "refund-abusers")
        #expect(decision.body == nil)
        // respond = false needs no consent: it sends nothing anyway.
        #expect(policies.decide(Self.facts(daysAgo: 40, environment: "Sandbox"), now: Self.now).outcome == .noResponse)
    }

    /// The trail's count of a customer's refunds is read only for a file that matches on it.
    @Test func onlyAFileMatchingOnRefundsNeedsTheirCount() throws {
        #expect(try ConsumptionPolicies.parse(Self.file, path: "policy.toml").matchesOnCustomerRefunds)
        let without = "customer_consented = true\n[[policy]]\nname = \"all\"\nrefund_preference = \"decline\"\nsample_content_provided = false\n"
        #expect(try !ConsumptionPolicies.parse(without, path: "policy.toml").matchesOnCustomerRefunds)
    }

    @Test func policiesKeepTheirHeaderLines() throws {
        let policies = try ConsumptionPolicies.parse(Self.file, path: "policy.toml")
        #expect(policies.policies.map(\.line) == [3, 10, 20, 28, 35, 40])
        #expect(policies.policies.map(\.name) == ["refund-abusers", "fresh-coins", "france-subscribers", "season-prorated", "sandbox-quiet", "data-only"])
    }
}
