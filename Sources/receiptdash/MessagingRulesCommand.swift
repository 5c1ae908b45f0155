import AppStoreAPI
import ArgumentParser
import AuditTrail
import CommandOptions
import Foundation
import JSONWriting
import PlainWords
import ReceiptCore
import RetentionRules
import UntrustedText

/// `receiptdash messaging rules`: the retention rules file `receive --retention-rules` answers by.
struct MessagingRulesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rules",
        abstract: "Check a retention rules file (receive --retention-rules).",
        subcommands: [Check.self])

    /// `messaging rules check FILE`: read as the receiver reads it; exit 64 naming the line.
    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "check",
            abstract: "Read a retention rules file as the receiver does, and say each rule in order.",
            discussion: """
                The file is read exactly as `receive --retention-rules` reads it: every key checked, \
                [offer_key]'s key loaded (never printed). With --db, each message a rule names is \
                looked up among the states `messaging status` recorded: one not APPROVED is named, \
                as the receiver would answer nothing for it.

                Exit status: 0 usable; 64 a fault (its line is named); 1 --db given and a rule names \
                a message not known as APPROVED.
                """)

        @Argument(help: ArgumentHelp("The rules file (TOML).", valueName: "file"))
        var file: String

        @Option(name: .long, help: ArgumentHelp("An audit trail whose recorded message states to check the rules against.", valueName: "path"))
        var db: String?

        @Option(name: .long, help: "Which environment's messages to check them against (with --db): production or sandbox.")
        var environment: String = "production"

        @Option(name: .long, help: "Output format: text or json.")
        var format: OutputFormat = .text

        func validate() throws {
            guard ["production", "sandbox"].contains(environment) else {
                throw ValidationError("--environment takes production or sandbox, not \(SafeText.escaped(environment)).")
            }
        }

        func run() async throws {
            let rules: RetentionRules
            do {
                rules = try RetentionRules.load(path: file)
                _ = try rules.offerSigner(environment: ProcessInfo.processInfo.environment)
            } catch let error as RetentionRulesError {
                ErrorOutput.write(code: error.code.rawValue, message: error.reason, format: format, to: .standard)
                throw ExitStatus.usage
            } catch let error as APICredentialError {
                ErrorOutput.write(code: "offer-key", message: "\(file) [offer_key]: \(error.reason)", format: format, to: .standard)
                throw ExitStatus.usage
            }
            var unapproved: [(rule: RetentionRule, why: String)] = []
            if let db {
                let backend = try await AuditStores.open(db, readOnly: true, durable: false)
                let approved = try await AuditStoreService.closing(backend) {
                    ApprovedContent(try await backend.retentionContent(environment: environment == "production" ? "Production" : "Sandbox"))
                }
                for rule in rules.rules { if let why = approved.refusal(rule.answer.messageID) { unapproved.append((rule, why)) } }
            }
            switch format {
            case .text:
                var out = "\(SafeText.escaped(file)): \(CountNoun.rule.count(rules.rules.count)), tried in order; the first that matches answers\n"
                for (index, rule) in rules.rules.enumerated() { out += "  \(index + 1). " + Self.line(rule) + "\n" }
                if let key = rules.offerKey { out += "offer key: \(SafeText.escaped(key.keyID ?? "-")) (loaded; promotional offers are signed with it)\n" }
                for (rule, why) in unapproved { out += "not answered while so: rule \(SafeText.escaped(rule.name)): \(why)\n" }
                Console.standard.output(out)
            case .json:
                let object: JSONValue = .object([
                    "file": .string(file),
                    "rules": .array(rules.rules.map { Self.json($0) }),
                    "not_approved": .array(unapproved.map { .object(["rule": .string($0.rule.name), "reason": .string($0.why)]) }),
                ])
                Console.standard.line(JSONOutput.text(of: object))
            }
            if !unapproved.isEmpty { throw ExitStatus.failed }
        }

        /// `line 8 "loyal": product com.example.monthly*, locale fr en-US, … → promotional-offer 8D5A… (offer x, v2)`
        static func line(_ rule: RetentionRule) -> String {
            var conditions: [String] = []
            if !rule.products.isEmpty { conditions.append("product " + rule.products.joined(separator: " ")) }
            if !rule.locales.isEmpty { conditions.append("locale " + rule.locales.joined(separator: " ")) }
            if !rule.environments.isEmpty { conditions.append("environment " + rule.environments.joined(separator: " ")) }
            if let r = rule.monthsSubscribed { conditions.append("months subscribed \(r)") }
            if let r = rule.offersRedeemed { conditions.append("offers redeemed \(r)") }
            if let r = rule.refunds { conditions.append("refunds \(r)") }
            let answer: String =
                switch rule.answer {
                case .message(let id): "message \(id)"
                case .alternateProduct(let id, let product, let plan): "alternate-product \(product)\(plan.map { " (\($0))" } ?? "") with message \(id)"
                case .promotionalOffer(let id, let offer, let version): "promotional-offer \(offer) signed \(version.rawValue) with message \(id)"
                }
            let when = conditions.isEmpty ? "every request" : conditions.joined(separator: ", ")
            return SafeText.escaped("line \(rule.line) \"\(rule.name)\": \(when) → \(answer)")
        }

        static func json(_ rule: RetentionRule) -> JSONValue {
            var object: [String: JSONValue] = [
                "name": .string(rule.name), "line": .integer(Int64(rule.line)), "answer": .string(rule.answer.kind),
                "message": .string(rule.answer.messageID), "product": .array(rule.products.map(JSONValue.string)),
                "locale": .array(rule.locales.map(JSONValue.string)), "environment": .array(rule.environments.map(JSONValue.string)),
            ]
            object["months_subscribed"] = rule.monthsSubscribed.map { .string($0.description) } ?? .null
            object["offers_redeemed"] = rule.offersRedeemed.map { .string($0.description) } ?? .null
            object["refunds"] = rule.refunds.map { .string($0.description) } ?? .null
            return .object(object)
        }
    }
}
