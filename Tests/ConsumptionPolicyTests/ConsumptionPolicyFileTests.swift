import ConsumptionPolicy
import Foundation
import Testing

/// A policy file with a fault is refused with the code of the fault and the line it is on,
/// before a receiver starts.
@Suite struct ConsumptionPolicyFileTests {
    struct Fault: Sendable, CustomTestStringConvertible {
        var label: String
        var text: String
        var code: ConsumptionPolicyError.Code
        var line: Int?
        var testDescription: String { label }
    }

    static let good = """
        [[policy]]
        name = "all"
        refund_preference = "decline"
        sample_content_provided = false
        """

    static let faults: [Fault] = [
        Fault(label: "not TOML", text: "[[policy]\nname = 1", code: .syntax, line: 1),
        Fault(label: "no policy", text: "customer_consented = true\n", code: .noPolicies, line: nil),
        Fault(label: "a top-level typo", text: "customer_consent = true\n" + good, code: .unknownKey, line: 1),
        Fault(label: "consent not a boolean", text: "customer_consented = \"yes\"\n" + good, code: .badValue, line: 1),
        Fault(label: "a policy key typo", text: good + "\nstorefronts = [\"USA\"]", code: .unknownKey, line: 5),
        Fault(label: "no name", text: "[[policy]]\nrefund_preference = \"decline\"\nsample_content_provided = false", code: .missingKey, line: 1),
        Fault(
            label: "a preference Apple does not take", text: "[[policy]]\nname = \"x\"\nrefund_preference = \"refuse\"\nsample_content_provided = false",
            code: .badValue, line: 3),
        Fault(label: "no sample answer", text: "[[policy]]\nname = \"x\"\nrefund_preference = \"decline\"", code: .missingKey, line: 1),
        Fault(label: "a share above 100", text: good + "\nconsumption_percent = 140", code: .badValue, line: 5),
        Fault(label: "a range that is not one", text: good + "\ndays_since_purchase = \"soon\"", code: .badValue, line: 5),
        Fault(label: "a product type typo", text: good + "\nproduct_type = \"consumables\"", code: .badValue, line: 5),
        Fault(label: "a storefront of two letters", text: good + "\nstorefront = [\"US\"]", code: .badValue, line: 5),
        Fault(label: "an environment Apple does not name", text: good + "\nenvironment = \"production\"", code: .badValue, line: 5),
        Fault(
            label: "prorated without a share",
            text: "[[policy]]\nname = \"x\"\nrefund_preference = \"grant-prorated\"\nsample_content_provided = false", code: .refusedByApple, line: 3),
        Fault(
            label: "consumed while undelivered",
            text: good + "\ndelivery_status = \"undelivered-other\"\nconsumption_percent = 30", code: .refusedByApple, line: 6),
        Fault(label: "an answer beside respond = false", text: "[[policy]]\nname = \"x\"\nrespond = false\nrefund_preference = \"decline\"", code: .badValue, line: 4),
        Fault(label: "two policies with one name", text: good + "\n\n" + good, code: .duplicateName, line: 7),
    ]

    @Test(arguments: faults) func aFaultIsNamedWithItsLine(_ fault: Fault) {
        #expect {
            try ConsumptionPolicies.parse(fault.text, path: "policy.toml")
        } throws: { error in
            guard let error = error as? ConsumptionPolicyError else { return false }
            return error.code == fault.code && error.line == fault.line
        }
    }

    @Test func aGoodFileReadsWithItsDefaults() throws {
        let policies = try ConsumptionPolicies.parse(Self.good, path: "policy.toml")
        #expect(!policies.customerConsented)
        #expect(
            policies.policies.map(\.answer) == [
                .respond(ConsumptionAnswer(refundPreference: .decline, deliveryStatus: .delivered, consumption: nil, sampleContentProvided: false))
            ])
    }

    @Test func tenThousandPoliciesAreReadAndOneMoreIsRefused() throws {
        let one = { (i: Int) in "[[policy]]\nname = \"p\(i)\"\nproduct = \"com.example.\(i)\"\nrefund_preference = \"none\"\nsample_content_provided = false\n" }
        let many = (0..<10_000).map(one).joined()
        #expect(try ConsumptionPolicies.parse(many, path: "p.toml").policies.last?.line == 49_996)
        #expect(throws: ConsumptionPolicyError(.badValue, "")) {
            try ConsumptionPolicies.parse(many + one(10_000), path: "p.toml")
        }
    }
}
