import RuleFiles
import Foundation
import RetentionRules
import Testing
import TestSupport

/// A rules file is read into exactly the rules it says, and a fault is refused with its code
/// and the line it is on.
@Suite struct RetentionRulesFileTests {
    static let message = "8D5A1C2E-4B6F-4E21-9A3B-5C7D9E1F2A3B"
    static let other = "0F1E2D3C-4B5A-4968-8776-A5B4C3D2E1F0"

    static let good = """
        # Which answer Apple gets when a subscriber taps Cancel.
        [offer_key]
        issuer_id = "57246542-96fe-1a63-e053-0824d011072a"
        key_id = "2X9R4HXF34"
        private_key_file = "keys/SubscriptionKey.p8"
        bundle_id = "com.example.app"

        [[rule]]
        name = "loyal-month-free"
        product = "com.example.monthly*"
        locale = ["fr", "en-US"]
        environment = "Production"
        months_subscribed = ">= 12"
        refunds = 0
        answer = "promotional-offer"
        message = "\(message.lowercased())"
        offer = "loyal_month_free"

        [[rule]]
        name = "switch-to-yearly"
        product = ["com.example.monthly", "com.example.weekly"]
        offers_redeemed = "0..1"
        answer = "alternate-product"
        message = "\(other)"
        alternate_product = "com.example.yearly"
        billing_plan_type = "MONTHLY"

        [[rule]]
        name = "everyone-else"
        answer = "message"
        message = "\(message)"
        """

    @Test func aGoodFileIsReadIntoItsRulesInOrder() throws {
        let rules = try RetentionRules.parse(Self.good, path: "/etc/receiptdash/retention.toml")
        #expect(rules.rules.map(\.name) == ["loyal-month-free", "switch-to-yearly", "everyone-else"])
        #expect(rules.rules.map(\.line) == [8, 19, 28])
        let first = rules.rules[0]
        #expect(first.products == ["com.example.monthly*"])
        #expect(first.locales == ["fr", "en-US"])
        #expect(first.environments == ["Production"])
        #expect(first.monthsSubscribed == CountRange(lower: 12, upper: nil, text: ">= 12"))
        #expect(first.refunds?.lower == 0 && first.refunds?.upper == 0)
        #expect(first.answer == .promotionalOffer(messageID: Self.message, offerID: "loyal_month_free", signature: .v2))
        #expect(rules.rules[1].answer == .alternateProduct(messageID: Self.other, productID: "com.example.yearly", billingPlanType: "MONTHLY"))
        #expect(rules.rules[1].offersRedeemed.map { [$0.lower, $0.upper] } == [0, 1])
        #expect(rules.rules[2].answer == .message(messageID: Self.message))
        // The key's file is relative to the rules file; the key itself is never in it.
        #expect(rules.offerKey?.privateKeyFile == "/etc/receiptdash/keys/SubscriptionKey.p8")
        #expect(rules.offerKey?.keyID == "2X9R4HXF34")
    }

    struct Fault: CustomTestStringConvertible, Sendable {
        var label: String
        var text: String
        var code: RetentionRulesError.Code
        var line: Int?
        var testDescription: String { label }
    }

    static let faults: [Fault] = [
        Fault(label: "unknown key", text: "[[rule]]\nname = \"a\"\nanswer = \"message\"\nmessage = \"\(message)\"\nlocal = \"fr\"\n", code: .unknownKey, line: 5),
        Fault(label: "unknown top-level key", text: "rules = 1\n", code: .unknownKey, line: 1),
        Fault(label: "answer not known", text: "\n[[rule]]\nname = \"a\"\nanswer = \"mesage\"\n", code: .badValue, line: 4),
        Fault(label: "message missing", text: "[[rule]]\nname = \"a\"\nanswer = \"message\"\n", code: .missingKey, line: 1),
        Fault(label: "message not a UUID", text: "[[rule]]\nname = \"a\"\nanswer = \"message\"\nmessage = \"hello\"\n", code: .badValue, line: 4),
        Fault(
            label: "range not a range", text: "[[rule]]\nname = \"a\"\nanswer = \"message\"\nmessage = \"\(message)\"\nrefunds = \"few\"\n", code: .badValue,
            line: 5),
        Fault(
            label: "second rule's name taken",
            text: "[[rule]]\nname = \"a\"\nanswer = \"message\"\nmessage = \"\(message)\"\n\n[[rule]]\nname = \"a\"\nanswer = \"message\"\nmessage = \"\(message)\"\n",
            code: .duplicateName, line: 7),
        Fault(
            label: "offer without a key",
            text: "[[rule]]\nname = \"a\"\nanswer = \"promotional-offer\"\noffer = \"o\"\nmessage = \"\(message)\"\n", code: .missingKey, line: 3),
        Fault(
            label: "environment not Apple's",
            text: "[[rule]]\nname = \"a\"\nenvironment = \"prod\"\nanswer = \"message\"\nmessage = \"\(message)\"\n", code: .badValue, line: 3),
        Fault(
            label: "billing plan on a message",
            text: "[[rule]]\nname = \"a\"\nanswer = \"message\"\nmessage = \"\(message)\"\nbilling_plan_type = \"MONTHLY\"\n", code: .badValue, line: 5),
        Fault(label: "no rules", text: "# nothing\n", code: .noRules, line: nil),
        Fault(label: "not TOML", text: "[[rule]]\nname = \"a\n", code: .syntax, line: 2),
    ]

    @Test(arguments: faults) func aFaultIsRefusedWithItsCodeAndLine(_ fault: Fault) {
        #expect {
            _ = try RetentionRules.parse(fault.text, path: "rules.toml")
        } throws: { error in
            guard let error = error as? RetentionRulesError else { return false }
            return error.code == fault.code && error.line == fault.line
        }
    }

    @Test func theWordsOfAFaultSayWhatToWrite() {
        let words = Wording("retention-rules")
        defer { words.check() }
        for fault in Self.faults {
            do {
                _ = try RetentionRules.parse(fault.text, path: "rules.toml")
            } catch {
                words.said("\(fault.label): \(error.reason)")
            }
        }
    }

    @Test func rangesAreReadAsWritten() {
        let table: [(String, Int?, Int?)] = [
            ("3", 3, 3), ("< 3", nil, 2), ("<= 3", nil, 3), ("> 3", 4, nil), (">= 12", 12, nil), ("3..30", 3, 30), (" 0 ", 0, 0),
        ]
        for (text, lower, upper) in table {
            let range = CountRange.parse(text)
            #expect(range?.lower == lower && range?.upper == upper, "\(text)")
        }
        for bad in ["", "few", "-1", "30..3", "< ", "1..", "99999999999"] { #expect(CountRange.parse(bad) == nil, "\(bad)") }
        #expect(CountRange.parse("3..30")!.contains(30))
        #expect(!CountRange.parse("< 3")!.contains(3))
    }

    @Test func productGlobsMatchWholeIDs() {
        let table: [(String, String, Bool)] = [
            ("com.example.monthly*", "com.example.monthly", true), ("com.example.monthly*", "com.example.monthly.intro", true),
            ("com.example.monthly*", "com.example.yearly", false), ("com.example.?early", "com.example.yearly", true),
            ("*", "anything", true), ("com.example", "com.example.monthly", false), ("*.yearly", "com.example.yearly", true),
            ("a*b*c", "aXbYc", true), ("a*b*c", "aXbY", false),
        ]
        for (pattern, text, expected) in table { #expect(ProductGlob.matches(pattern, text) == expected, "\(pattern) ~ \(text)") }
        // A flood of stars against a long id stays cheap (no exponential backtracking).
        #expect(!ProductGlob.matches(String(repeating: "*a", count: 200) + "b", String(repeating: "a", count: 2_000)))
    }
}
