import AppStoreAPI
import Foundation

/// What a policy file decides for one `CONSUMPTION_REQUEST`: send this body, or why nothing is
/// sent. The same decision serves the receiver, `policy explain` and the dry run.
public struct ConsumptionDecision: Sendable, Hashable {
    /// The result, named as the trail, the listing and the metrics name it.
    public enum Outcome: String, Sendable, Hashable, CaseIterable {
        /// A policy matched and its body is to be sent.
        case send
        /// No policy matched: nothing is sent.
        case noMatch = "no-match"
        /// A policy matched, but the file does not say `customer_consented = true`.
        case noConsent = "no-consent"
        /// The policy that matched says `respond = false`.
        case noResponse = "no-response"
        /// The policy that matched cannot answer this request (an `elapsed` share without the
        /// period's dates, a share Apple would refuse): nothing is sent.
        case failed
    }

    public var outcome: Outcome
    /// The policy that matched.
    public var policy: String?
    public var policyLine: Int?
    /// The body to send (``Outcome/send``).
    public var body: ConsumptionBody?
    /// Why, in words (a failure's reason).
    public var reason: String?

    public init(outcome: Outcome, policy: String? = nil, policyLine: Int? = nil, body: ConsumptionBody? = nil, reason: String? = nil) {
        self.outcome = outcome
        self.policy = policy
        self.policyLine = policyLine
        self.body = body
        self.reason = reason
    }
}

extension ConsumptionPolicies {
    /// The first policy that matches `facts` at `now`, and what it sends.
    public func decide(_ facts: ConsumptionFacts, now: Date) -> ConsumptionDecision {
        guard let policy = policies.first(where: { $0.matches(facts, now: now) }) else {
            return ConsumptionDecision(outcome: .noMatch)
        }
        var decision = ConsumptionDecision(outcome: .send, policy: policy.name, policyLine: policy.line)
        guard case .respond(let answer) = policy.answer else {
            decision.outcome = .noResponse
            return decision
        }
        guard customerConsented else {
            decision.outcome = .noConsent
            return decision
        }
        var percent: Double?
        // Apple works an auto-renewable's share out from its period and refuses one sent: the
        // policy's share is left out for them (`elapsed` is then Apple's own reckoning).
        let autoRenewable = facts.productType.flatMap(PolicyProductType.init(appleType:)) == .autoRenewable
        switch answer.consumption {
        case nil: percent = nil
        case _ where autoRenewable:
            percent = nil
            decision.reason = "the consumed share is left out: Apple works it out for an auto-renewable subscription"
        case .percent(let fixed)?: percent = fixed
        case .elapsed?:
            guard let elapsed = facts.elapsedPercent(now: now) else {
                decision.outcome = .failed
                decision.reason = "consumption_percent = \"elapsed\" needs the purchase's period (purchase and expiry dates), and this transaction has none"
                return decision
            }
            percent = elapsed
        }
        do {
            decision.body = try ConsumptionBody(
                customerConsented: true, deliveryStatus: answer.deliveryStatus, sampleContentProvided: answer.sampleContentProvided,
                consumedPercent: percent, refundPreference: answer.refundPreference, autoRenewable: autoRenewable)
        } catch {
            decision.outcome = .failed
            decision.reason = "Apple would refuse the answer: \(error.reason)"
        }
        return decision
    }
}
