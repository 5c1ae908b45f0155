import AppStoreAPI
import Foundation
import PlainWords
import ReceiptCore
import RuleFiles
import TOMLKit

/// Why a consumption policy file cannot be used, with the line of the first fault
/// (`FILE line N: …`). Equality compares only the ``Code``.
public struct ConsumptionPolicyError: CodedError {
    public enum Code: String, CaseIterable, CodedErrorCode {
        /// The file cannot be read, or is not UTF-8.
        case unreadable
        /// Not TOML.
        case syntax
        /// A key this file does not take.
        case unknownKey = "unknown-key"
        /// A value of the wrong type or form.
        case badValue = "bad-value"
        /// A key a policy needs is missing.
        case missingKey = "missing-key"
        /// No `[[policy]]` at all.
        case noPolicies = "no-policies"
        /// Two policies with one name.
        case duplicateName = "duplicate-name"
        /// An answer Apple would refuse (a prorated grant without a partial share, …).
        case refusedByApple = "refused-by-apple"
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

/// A consumption policy file (`receive --consumption-policy FILE`): whether the app collects
/// the customer's consent (`customer_consented = true`), and the `[[policy]]` tables in order.
public struct ConsumptionPolicies: Sendable, Hashable {
    public var path: String
    /// The operator states that the app collects the customer's consent to share consumption
    /// data; without it nothing is sent.
    public var customerConsented: Bool
    public var policies: [ConsumptionPolicy]

    public static let topLevelKeys = ["customer_consented", "policy"]
    public static let policyKeys = [
        "name", "product", "product_type", "days_since_purchase", "storefront", "environment", "customer_refunds", "respond",
        "refund_preference", "delivery_status", "consumption_percent", "sample_content_provided",
    ]
    public static let answerKeys = ["refund_preference", "delivery_status", "consumption_percent", "sample_content_provided"]
    public static let refundPreferences = ["decline", "grant-full", "grant-prorated", "none"]
    public static let environments = ["Production", "Sandbox"]
    /// The most policies a file may hold.
    public static let maximumPolicies = 10_000

    public init(path: String, customerConsented: Bool, policies: [ConsumptionPolicy]) {
        self.path = path
        self.customerConsented = customerConsented
        self.policies = policies
    }

    /// Whether a policy matches on `customer_refunds`: only then does a decision need the
    /// trail's count of the customer's refunds.
    public var matchesOnCustomerRefunds: Bool { policies.contains { $0.customerRefunds != nil } }

    /// Reads and checks the file at `path` (at most 4 MiB).
    public static func load(path: String) throws(ConsumptionPolicyError) -> ConsumptionPolicies {
        let text: String
        do { text = try RuleFileText.read(path: path) } catch { throw ConsumptionPolicyError(.unreadable, error.words) }
        return try parse(text, path: path)
    }

    /// Checks `text` as the file at `path` (named in every error).
    public static func parse(_ text: String, path: String) throws(ConsumptionPolicyError) -> ConsumptionPolicies {
        let root: TOMLTable
        do { root = try RuleFileText.table(text, path: path) } catch { throw ConsumptionPolicyError(.syntax, error.words, line: error.line) }
        let lines = RuleLines(text)
        for key in root.keys.sorted() where !topLevelKeys.contains(key) {
            let line = lines.topLevel(key)
            let guess = NearestWord.closest(to: key, in: topLevelKeys).map { " (did you mean \($0)?)" } ?? ""
            throw ConsumptionPolicyError(
                .unknownKey, "\(place(path, line)): no setting \(key)\(guess); a policy file holds customer_consented and [[policy]] tables",
                line: line)
        }
        var consented = false
        if let value = root["customer_consented"] {
            guard let flag = value.bool else {
                let line = lines.topLevel("customer_consented")
                throw ConsumptionPolicyError(.badValue, "\(place(path, line)): customer_consented must be true or false", line: line)
            }
            consented = flag
        }
        guard let value = root["policy"] else {
            throw ConsumptionPolicyError(.noPolicies, "\(path) has no [[policy]]: add one (see docs/on-call.md)")
        }
        guard let array = value.array else {
            let line = lines.topLevel("policy")
            throw ConsumptionPolicyError(.badValue, "\(place(path, line)): policy must be written [[policy]], one table per policy", line: line)
        }
        guard array.count <= maximumPolicies else {
            throw ConsumptionPolicyError(.badValue, "\(path) has \(array.count) policies; at most \(maximumPolicies)")
        }
        var policies: [ConsumptionPolicy] = []
        var names: [String: Int] = [:]
        for (index, element) in array.enumerated() {
            let header = lines.header(of: "policy", index) ?? 0
            guard let table = element.table else {
                throw ConsumptionPolicyError(.badValue, "\(place(path, header)): policy \(index + 1) is not a table", line: header)
            }
            let policy = try Self.policy(table, index: index, header: header, lines: lines, path: path)
            if let earlier = names[policy.name] {
                let line = lines.key("name", in: "policy", index) ?? header
                throw ConsumptionPolicyError(
                    .duplicateName, "\(place(path, line)): a policy named \"\(policy.name)\" is already on line \(earlier): names must differ",
                    line: line)
            }
            names[policy.name] = header
            policies.append(policy)
        }
        return ConsumptionPolicies(path: path, customerConsented: consented, policies: policies)
    }

    private static func policy(
        _ table: TOMLTable, index: Int, header: Int, lines: RuleLines, path: String
    ) throws(ConsumptionPolicyError) -> ConsumptionPolicy {
        func line(_ key: String) -> Int { lines.key(key, in: "policy", index) ?? header }
        func fail(_ code: ConsumptionPolicyError.Code, _ key: String?, _ words: String) -> ConsumptionPolicyError {
            let at = key.map(line) ?? header
            return ConsumptionPolicyError(code, "\(place(path, at)) (policy \(index + 1)): \(words)", line: at)
        }
        for key in table.keys.sorted() where !policyKeys.contains(key) {
            let guess = NearestWord.closest(to: key, in: policyKeys).map { " (did you mean \($0)?)" } ?? ""
            throw fail(.unknownKey, key, "no setting \(key)\(guess); a policy takes \(policyKeys.joined(separator: ", "))")
        }
        let values = RuleTable(table)
        func read<T>(_ value: (RuleTable) throws(RuleValueFault) -> T) throws(ConsumptionPolicyError) -> T {
            do { return try value(values) } catch { throw fail(.badValue, error.key, error.words) }
        }
        func string(_ key: String) throws(ConsumptionPolicyError) -> String? { try read { t throws(RuleValueFault) in try t.string(key) } }
        func strings(_ key: String) throws(ConsumptionPolicyError) -> [String] { try read { t throws(RuleValueFault) in try t.strings(key) } }
        func range(_ key: String) throws(ConsumptionPolicyError) -> CountRange? { try read { t throws(RuleValueFault) in try t.range(key) } }
        func bool(_ key: String) throws(ConsumptionPolicyError) -> Bool? { try read { t throws(RuleValueFault) in try t.bool(key) } }

        guard let name = try string("name") else {
            throw fail(.missingKey, nil, "name is missing: every policy has a name (the trail and the customer's story say it)")
        }
        guard RuleFileText.isPrintableName(name) else {
            throw fail(.badValue, "name", "name must be at most 200 bytes of printable text")
        }
        let answer: ConsumptionPolicy.Answer
        if try bool("respond") == false {
            if let key = answerKeys.first(where: { table.contains(key: $0) }) {
                throw fail(.badValue, key, "\(key) is an answer, and this policy says respond = false: remove one of them")
            }
            answer = .noResponse
        } else {
            guard let preferenceName = try string("refund_preference") else {
                throw fail(.missingKey, nil, "refund_preference is missing: say decline, grant-full, grant-prorated or none (or respond = false)")
            }
            let preference: RefundPreference?
            if preferenceName == "none" {
                preference = nil
            } else if let named = RefundPreference.named(preferenceName), named.name == preferenceName {
                preference = named
            } else {
                let guess = NearestWord.closest(to: preferenceName, in: refundPreferences).map { " (did you mean \($0)?)" } ?? ""
                throw fail(.badValue, "refund_preference", "refund_preference \(preferenceName) is not one of \(refundPreferences.joined(separator: ", "))\(guess)")
            }
            var delivery = DeliveryStatus.delivered
            if let text = try string("delivery_status") {
                guard let status = DeliveryStatus.named(text), status.name == text else {
                    let all = DeliveryStatus.allCases.map(\.name)
                    let guess = NearestWord.closest(to: text, in: all).map { " (did you mean \($0)?)" } ?? ""
                    throw fail(.badValue, "delivery_status", "delivery_status \(text) is not one of \(all.joined(separator: ", "))\(guess)")
                }
                delivery = status
            }
            var share: ConsumptionAnswer.Share?
            if let value = table["consumption_percent"] {
                if let text = value.string {
                    guard text == "elapsed" else {
                        throw fail(.badValue, "consumption_percent", "consumption_percent must be a number from 0 to 100, or \"elapsed\"")
                    }
                    share = .elapsed
                } else if let number = value.double ?? value.int.map(Double.init), number.isFinite, (0...100).contains(number) {
                    share = .percent(number)
                } else {
                    throw fail(.badValue, "consumption_percent", "consumption_percent must be a number from 0 to 100, or \"elapsed\"")
                }
            }
            guard let sample = try bool("sample_content_provided") else {
                throw fail(.missingKey, nil, "sample_content_provided is missing: say whether a free sample or trial was provided (true or false)")
            }
            let chosen = ConsumptionAnswer(refundPreference: preference, deliveryStatus: delivery, consumption: share, sampleContentProvided: sample)
            // What Apple would refuse whatever the request: checked now, with a fixed share.
            if case .percent(let percent)? = share {
                do {
                    _ = try ConsumptionBody(
                        customerConsented: true, deliveryStatus: delivery, sampleContentProvided: sample, consumedPercent: percent,
                        refundPreference: preference)
                } catch {
                    throw fail(.refusedByApple, "consumption_percent", "Apple would refuse this answer: \(error.reason)")
                }
            } else if share == nil, preference == .grantProrated {
                throw fail(.refusedByApple, "refund_preference", "grant-prorated needs consumption_percent (a share above 0 and below 100, or \"elapsed\")")
            } else if share == .elapsed, delivery != .delivered {
                throw fail(.refusedByApple, "consumption_percent", "an item not delivered has consumed nothing: elapsed needs delivery_status = \"delivered\"")
            }
            answer = .respond(chosen)
        }
        var policy = ConsumptionPolicy(name: name, line: header, answer: answer)
        policy.products = try strings("product")
        for text in try strings("product_type") {
            guard let type = PolicyProductType(rawValue: text) else {
                let all = PolicyProductType.allCases.map(\.rawValue)
                let guess = NearestWord.closest(to: text, in: all).map { " (did you mean \($0)?)" } ?? ""
                throw fail(.badValue, "product_type", "product_type \(text) is not one of \(all.joined(separator: ", "))\(guess)")
            }
            policy.productTypes.append(type)
        }
        policy.daysSincePurchase = try range("days_since_purchase")
        for text in try strings("storefront") {
            guard text.utf8.count == 3, text.utf8.allSatisfy({ ($0 | 0x20) >= 0x61 && ($0 | 0x20) <= 0x7A }) else {
                throw fail(.badValue, "storefront", "a storefront is Apple's three-letter code such as USA or FRA (not \(text))")
            }
            policy.storefronts.append(text.uppercased())
        }
        policy.environments = try strings("environment")
        for environment in policy.environments where !environments.contains(environment) {
            throw fail(.badValue, "environment", "environment \(environment) is not Production or Sandbox (Apple's names)")
        }
        policy.customerRefunds = try range("customer_refunds")
        return policy
    }

    private static func place(_ path: String, _ line: Int?) -> String {
        line.map { "\(path) line \($0)" } ?? path
    }
}
