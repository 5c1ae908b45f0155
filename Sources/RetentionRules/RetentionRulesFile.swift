import RuleFiles
import Foundation
import PlainWords
import ReceiptCore
import TOMLKit

/// Why a rules file cannot be used, with the line of the first fault (`FILE line N: …`).
/// Equality compares only the ``Code``.
public struct RetentionRulesError: CodedError {
    public enum Code: String, CaseIterable, CodedErrorCode {
        /// The file cannot be read, or is not UTF-8.
        case unreadable
        /// Not TOML.
        case syntax
        /// A key this file does not take.
        case unknownKey = "unknown-key"
        /// A value of the wrong type or form.
        case badValue = "bad-value"
        /// A key a rule needs is missing.
        case missingKey = "missing-key"
        /// No `[[rule]]` at all.
        case noRules = "no-rules"
        /// Two rules with one name.
        case duplicateName = "duplicate-name"
    }

    public let code: Code
    public let reason: String
    /// The 1-based line the fault is on, when the text says.
    public let line: Int?

    public init(_ code: Code, _ reason: String, line: Int? = nil) {
        self.code = code
        self.reason = reason
        self.line = line
    }
}

/// The In-App Purchase key promotional offers are signed with (`[offer_key]`): the same keys
/// as an `api.toml` profile. The key itself stays in its `.p8` file.
public struct OfferKeySettings: Sendable, Hashable {
    public var issuerID: String?
    public var keyID: String?
    public var privateKeyFile: String?
    public var bundleID: String?
}

/// A retention rules file, read and checked: `receive --retention-rules FILE` answers by it,
/// `messaging rules check FILE` checks it.
///
/// ```toml
/// [offer_key]                       # only for promotional-offer rules
/// issuer_id = "…"
/// key_id = "2X9R4HXF34"
/// private_key_file = "SubscriptionKey_2X9R4HXF34.p8"   # relative to this file
/// bundle_id = "com.example.app"
///
/// [[rule]]
/// name = "loyal monthly: a month free"
/// product = "com.example.monthly*"  # or a list; globs with * and ?
/// locale = ["fr", "en-US"]          # fr also matches fr-CA
/// environment = "Production"
/// months_subscribed = ">= 12"       # "3", "< 3", "3..30", …
/// offers_redeemed = "0"
/// refunds = "0"
/// answer = "promotional-offer"      # message | alternate-product | promotional-offer
/// message = "8D5A…-UUID"
/// offer = "loyal_month_free"
/// signature = "v2"                  # v2 (default) or v1
/// ```
public struct RetentionRules: Sendable, Hashable {
    public var path: String
    public var rules: [RetentionRule]
    public var offerKey: OfferKeySettings?

    public static let ruleKeys = [
        "name", "product", "locale", "environment", "months_subscribed", "offers_redeemed", "refunds", "answer", "message",
        "alternate_product", "billing_plan_type", "offer", "signature",
    ]
    public static let offerKeyKeys = ["issuer_id", "key_id", "private_key_file", "bundle_id"]
    public static let answers = ["message", "alternate-product", "promotional-offer"]
    public static let environments = ["Production", "Sandbox"]
    public static let billingPlanTypes = ["BILLED_UPFRONT", "MONTHLY"]
    /// The most rules a file may hold (each request walks them in order).
    public static let maximumRules = 10_000

    public init(path: String, rules: [RetentionRule], offerKey: OfferKeySettings? = nil) {
        self.path = path
        self.rules = rules
        self.offerKey = offerKey
    }

    /// Reads and checks the file at `path`.
    public static func load(path: String) throws(RetentionRulesError) -> RetentionRules {
        let text: String
        do { text = try RuleFileText.read(path: path) } catch { throw RetentionRulesError(.unreadable, error.words) }
        return try parse(text, path: path)
    }

    /// Checks `text` as the file at `path` (named in every error).
    public static func parse(_ text: String, path: String) throws(RetentionRulesError) -> RetentionRules {
        let root: TOMLTable
        do { root = try RuleFileText.table(text, path: path) } catch { throw RetentionRulesError(.syntax, error.words, line: error.line) }
        let lines = RuleLines(text)
        for key in root.keys.sorted() where key != "rule" && key != "offer_key" {
            let line = lines.topLevel(key)
            let guess = NearestWord.closest(to: key, in: ["rule", "offer_key"]).map { " (did you mean \($0)?)" } ?? ""
            throw RetentionRulesError(
                .unknownKey, "\(place(path, line)): no setting \(key)\(guess); a rules file holds [[rule]] tables and one [offer_key]", line: line)
        }
        var offerKey: OfferKeySettings?
        if let value = root["offer_key"] {
            guard let table = value.table else {
                throw RetentionRulesError(.badValue, "\(place(path, lines.topLevel("offer_key"))): offer_key must be a table ([offer_key])")
            }
            var settings = OfferKeySettings()
            for key in table.keys.sorted() {
                let line = lines.key(key, inTable: "offer_key")
                guard offerKeyKeys.contains(key) else {
                    let guess = NearestWord.closest(to: key, in: offerKeyKeys).map { " (did you mean \($0)?)" } ?? ""
                    throw RetentionRulesError(
                        .unknownKey, "\(place(path, line)) [offer_key]: no setting \(key)\(guess); the keys are \(offerKeyKeys.joined(separator: ", "))",
                        line: line)
                }
                guard let string = table[key]?.string else {
                    throw RetentionRulesError(.badValue, "\(place(path, line)) [offer_key]: \(key) must be a string", line: line)
                }
                switch key {
                case "issuer_id": settings.issuerID = string
                case "key_id": settings.keyID = string
                case "bundle_id": settings.bundleID = string
                default:
                    // Relative to the rules file, as a person reads the file.
                    let base = (path as NSString).deletingLastPathComponent
                    settings.privateKeyFile = string.hasPrefix("/") || base.isEmpty ? string : base + "/" + string
                }
            }
            offerKey = settings
        }
        guard let value = root["rule"] else {
            throw RetentionRulesError(.noRules, "\(path) has no [[rule]]: add one (see docs/retention.md)")
        }
        guard let array = value.array else {
            throw RetentionRulesError(.badValue, "\(place(path, lines.topLevel("rule"))): rule must be written [[rule]], one table per rule")
        }
        guard array.count <= maximumRules else {
            throw RetentionRulesError(.badValue, "\(path) has \(array.count) rules; at most \(maximumRules)")
        }
        var rules: [RetentionRule] = []
        var names: [String: Int] = [:]
        for (index, element) in array.enumerated() {
            let header = lines.header(of: "rule", index) ?? 0
            guard let table = element.table else {
                throw RetentionRulesError(.badValue, "\(place(path, header)): rule \(index + 1) is not a table", line: header)
            }
            let rule = try Self.rule(table, index: index, header: header, lines: lines, path: path, offerKey: offerKey)
            if let earlier = names[rule.name] {
                let line = lines.key("name", in: "rule", index) ?? header
                throw RetentionRulesError(
                    .duplicateName, "\(place(path, line)): a rule named \"\(rule.name)\" is already on line \(earlier): names must differ",
                    line: line)
            }
            names[rule.name] = header
            rules.append(rule)
        }
        return RetentionRules(path: path, rules: rules, offerKey: offerKey)
    }

    private static func rule(
        _ table: TOMLTable, index: Int, header: Int, lines: RuleLines, path: String, offerKey: OfferKeySettings?
    ) throws(RetentionRulesError) -> RetentionRule {
        func line(_ key: String) -> Int { lines.key(key, in: "rule", index) ?? header }
        func fail(_ code: RetentionRulesError.Code, _ key: String?, _ words: String) -> RetentionRulesError {
            let at = key.map(line) ?? header
            return RetentionRulesError(code, "\(place(path, at)) (rule \(index + 1)): \(words)", line: at)
        }
        for key in table.keys.sorted() where !ruleKeys.contains(key) {
            let guess = NearestWord.closest(to: key, in: ruleKeys).map { " (did you mean \($0)?)" } ?? ""
            throw fail(.unknownKey, key, "no setting \(key)\(guess); a rule takes \(ruleKeys.joined(separator: ", "))")
        }
        let values = RuleTable(table)
        func read<T>(_ value: (RuleTable) throws(RuleValueFault) -> T) throws(RetentionRulesError) -> T {
            do { return try value(values) } catch { throw fail(.badValue, error.key, error.words) }
        }
        func string(_ key: String) throws(RetentionRulesError) -> String? { try read { t throws(RuleValueFault) in try t.string(key) } }
        func strings(_ key: String) throws(RetentionRulesError) -> [String] { try read { t throws(RuleValueFault) in try t.strings(key) } }
        func range(_ key: String) throws(RetentionRulesError) -> CountRange? { try read { t throws(RuleValueFault) in try t.range(key) } }
        func uuid(_ key: String) throws(RetentionRulesError) -> String {
            guard let text = try string(key) else { throw fail(.missingKey, nil, "\(key) is missing: name the message Apple shows (its UUID)") }
            guard UUID(uuidString: text) != nil else { throw fail(.badValue, key, "\(key) must be a UUID such as 8D5A1C2E-4B6F-4E21-9A3B-5C7D9E1F2A3B") }
            return text.uppercased()
        }
        guard let name = try string("name") else { throw fail(.missingKey, nil, "name is missing: every rule has a name (logs and the trail say it)") }
        guard RuleFileText.isPrintableName(name) else {
            throw fail(.badValue, "name", "name must be at most 200 bytes of printable text")
        }
        guard let kind = try string("answer") else {
            throw fail(.missingKey, nil, "answer is missing: say message, alternate-product or promotional-offer")
        }
        let answer: RetentionRule.Answer
        switch kind {
        case "message":
            answer = .message(messageID: try uuid("message"))
        case "alternate-product":
            guard let product = try string("alternate_product") else {
                throw fail(.missingKey, nil, "alternate_product is missing: an alternate-product answer names the product to switch to")
            }
            let plan = try string("billing_plan_type")
            if let plan, !billingPlanTypes.contains(plan) {
                throw fail(.badValue, "billing_plan_type", "billing_plan_type must be \(billingPlanTypes.joined(separator: " or "))")
            }
            answer = .alternateProduct(messageID: try uuid("message"), productID: product, billingPlanType: plan)
        case "promotional-offer":
            guard let offer = try string("offer") else {
                throw fail(.missingKey, nil, "offer is missing: a promotional-offer answer names the offer set up in App Store Connect")
            }
            let version = try string("signature") ?? "v2"
            guard let signature = RetentionRule.SignatureVersion(rawValue: version) else {
                throw fail(.badValue, "signature", "signature must be v2 or v1")
            }
            guard offerKey != nil else {
                throw fail(.missingKey, "answer", "a promotional-offer answer is signed: add an [offer_key] table (issuer_id, key_id, private_key_file, bundle_id)")
            }
            answer = .promotionalOffer(messageID: try uuid("message"), offerID: offer, signature: signature)
        default:
            let guess = NearestWord.closest(to: kind, in: answers).map { " (did you mean \($0)?)" } ?? ""
            throw fail(.badValue, "answer", "answer \(kind) is not one of \(answers.joined(separator: ", "))\(guess)")
        }
        for (key, only) in [("alternate_product", "alternate-product"), ("billing_plan_type", "alternate-product"), ("offer", "promotional-offer"), ("signature", "promotional-offer")]
        where table.contains(key: key) && kind != only {
            throw fail(.badValue, key, "\(key) belongs to an answer = \"\(only)\" rule, and this one answers \(kind)")
        }
        var rule = RetentionRule(name: name, line: header, answer: answer)
        rule.products = try strings("product")
        rule.locales = try strings("locale")
        rule.environments = try strings("environment")
        for environment in rule.environments where !environments.contains(environment) {
            throw fail(.badValue, "environment", "environment \(environment) is not Production or Sandbox (Apple's names)")
        }
        rule.monthsSubscribed = try range("months_subscribed")
        rule.offersRedeemed = try range("offers_redeemed")
        rule.refunds = try range("refunds")
        return rule
    }

    private static func place(_ path: String, _ line: Int?) -> String {
        line.map { "\(path) line \($0)" } ?? path
    }
}
