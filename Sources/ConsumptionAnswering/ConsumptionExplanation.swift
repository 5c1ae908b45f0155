import AppStoreAPI
import AuditTrail
import ConsumptionPolicy
import Foundation
import ReceiptCore
import UntrustedText

extension PolicyWords {
    /// `policy explain`'s text: the request, the facts matched on, the policy and the body.
    public static func explanation(_ request: ConsumptionRequestRecord, _ facts: ConsumptionFacts, _ decision: ConsumptionDecision, now: Date) -> String {
        func shown(_ text: String?) -> String { SafeText.escaped(text ?? "unknown") }
        var out = "CONSUMPTION_REQUEST for transaction \(shown(request.transactionID)) (\(shown(facts.environment)))\n"
        out += "  asked \(AppleDate.iso8601(request.requestedAt)), deadline \(AppleDate.iso8601(request.deadline)), now \(request.state.rawValue)\n"
        out += "  reason: \(shown(facts.reason))\n"
        out += "facts matched on:\n"
        out += "  product \(shown(facts.productID)), type \(shown(facts.productType))\n"
        out += "  days since purchase: \(facts.daysSincePurchase(now: now).map(String.init) ?? "unknown")"
        out += facts.purchaseDate.map { " (purchased \(AppleDate.iso8601($0)))" } ?? ""
        out += "\n  storefront \(shown(facts.storefront)), customer refunds in the trail: \(facts.customerRefunds.map(String.init) ?? "unknown")\n"
        switch decision.outcome {
        case .send:
            out += "policy \"\(shown(decision.policy))\" (line \(decision.policyLine ?? 0)) would send:\n"
            if let body = decision.body, let text = try? APIRequest.consumption(request.transactionID, body).bodyText {
                out += "  \(SafeText.escaped(text))\n"
            }
        case .noMatch:
            out += "no policy matches: nothing would be sent (no-match)\n"
        case .noConsent:
            out += "policy \"\(shown(decision.policy))\" (line \(decision.policyLine ?? 0)) matches, but the file does not say customer_consented = true: nothing would be sent (no-consent)\n"
        case .noResponse:
            out += "policy \"\(shown(decision.policy))\" (line \(decision.policyLine ?? 0)) matches and says respond = false: nothing would be sent (no-response)\n"
        case .failed:
            out += "policy \"\(shown(decision.policy))\" (line \(decision.policyLine ?? 0)) matches but cannot answer: \(shown(decision.reason)) (failed)\n"
        }
        if request.state != .open {
            out += "(the trail says it was \(request.state.rawValue)\(request.policy.map { " by policy \"\(SafeText.escaped($0))\"" } ?? ""); nothing is sent again)\n"
        }
        return out
    }

    /// `policy explain --format json`: `transaction_id`, `state`, `deadline`, `facts`, `outcome`,
    /// `policy`, `policy_line`, `body`, `reason`.
    public static func json(_ request: ConsumptionRequestRecord, _ facts: ConsumptionFacts, _ decision: ConsumptionDecision, now: Date) -> JSONValue {
        func text(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }
        let body = decision.body.flatMap { try? APIRequest.consumption(request.transactionID, $0).bodyText }
        return .object([
            "transaction_id": .string(request.transactionID), "state": .string(request.state.rawValue),
            "requested_at": .string(AppleDate.iso8601(request.requestedAt)), "deadline": .string(AppleDate.iso8601(request.deadline)),
            "facts": .object([
                "product_id": text(facts.productID), "product_type": text(facts.productType),
                "days_since_purchase": facts.daysSincePurchase(now: now).map { .integer(Int64($0)) } ?? .null,
                "storefront": text(facts.storefront), "environment": text(facts.environment),
                "customer_refunds": facts.customerRefunds.map { .integer(Int64($0)) } ?? .null, "reason": text(facts.reason),
            ]),
            "outcome": .string(decision.outcome.rawValue), "policy": text(decision.policy),
            "policy_line": decision.policyLine.map { .integer(Int64($0)) } ?? .null,
            "body": body.flatMap { try? JSONValue.parse(Array($0.utf8)) } ?? .null, "reason": text(decision.reason),
        ])
    }
}
