import AppStoreAPI
import Foundation
import ReceiptCore

/// A policy as `policy check` says it, in a line or as JSON.
public enum PolicyWords {
    /// `line 8 "new buyers": product com.example.*, days since purchase < 3 → decline, delivered, consumed elapsed, no sample`
    public static func line(_ policy: ConsumptionPolicy) -> String {
        var conditions: [String] = []
        if !policy.products.isEmpty { conditions.append("product " + policy.products.joined(separator: " ")) }
        if !policy.productTypes.isEmpty { conditions.append("type " + policy.productTypes.map(\.rawValue).joined(separator: " ")) }
        if let r = policy.daysSincePurchase { conditions.append("days since purchase \(r)") }
        if !policy.storefronts.isEmpty { conditions.append("storefront " + policy.storefronts.joined(separator: " ")) }
        if !policy.environments.isEmpty { conditions.append("environment " + policy.environments.joined(separator: " ")) }
        if let r = policy.customerRefunds { conditions.append("customer refunds \(r)") }
        let when = conditions.isEmpty ? "every request" : conditions.joined(separator: ", ")
        return "line \(policy.line) \"\(policy.name)\": \(when) → \(answer(policy.answer))"
    }

    /// `decline, delivered, consumed 40 %, sample provided` or `respond = false (nothing is sent)`.
    public static func answer(_ answer: ConsumptionPolicy.Answer) -> String {
        guard case .respond(let a) = answer else { return "respond = false (nothing is sent)" }
        var parts = [a.refundPreference?.name ?? "no preference (none)", a.deliveryStatus.name]
        switch a.consumption {
        case nil: break
        case .percent(let p)?: parts.append("consumed \(p.formatted(.number.precision(.fractionLength(0...3)))) %")
        case .elapsed?: parts.append("consumed: the share of the period elapsed")
        }
        parts.append(a.sampleContentProvided ? "sample provided" : "no sample")
        return parts.joined(separator: ", ")
    }

    public static func json(_ policy: ConsumptionPolicy) -> JSONValue {
        var object: [String: JSONValue] = [
            "name": .string(policy.name), "line": .integer(Int64(policy.line)), "product": .array(policy.products.map(JSONValue.string)),
            "product_type": .array(policy.productTypes.map { .string($0.rawValue) }), "storefront": .array(policy.storefronts.map(JSONValue.string)),
            "environment": .array(policy.environments.map(JSONValue.string)),
            "days_since_purchase": policy.daysSincePurchase.map { .string($0.description) } ?? .null,
            "customer_refunds": policy.customerRefunds.map { .string($0.description) } ?? .null,
        ]
        switch policy.answer {
        case .noResponse:
            object["respond"] = .bool(false)
        case .respond(let a):
            object["respond"] = .bool(true)
            object["refund_preference"] = .string(a.refundPreference?.name ?? "none")
            object["delivery_status"] = .string(a.deliveryStatus.name)
            switch a.consumption {
            case nil: object["consumption_percent"] = .null
            case .percent(let p)?: object["consumption_percent"] = .number(p)
            case .elapsed?: object["consumption_percent"] = .string("elapsed")
            }
            object["sample_content_provided"] = .bool(a.sampleContentProvided)
        }
        return .object(object)
    }
}
