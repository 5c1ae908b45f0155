import ArgumentParser
import AuditTrail
import AuditTrailSQLite
import CommandOptions
import ConsumptionAnswering
import ConsumptionPolicy
import Foundation
import JSONWriting
import PlainWords
import ReceiptCore
import UntrustedText

/// `receiptdash policy`: the consumption policy file `receive --consumption-policy` answers
/// Apple's refund requests (CONSUMPTION_REQUEST) by.
struct PolicyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "policy",
        abstract: "Check a consumption policy file, or explain what it would send for a refund request (receive --consumption-policy).",
        subcommands: [Check.self, Explain.self])

    /// Reads the file as the receiver does; a fault is exit 64 naming its line.
    static func load(_ file: String, format: OutputFormat) throws -> ConsumptionPolicies {
        do {
            return try ConsumptionPolicies.load(path: file)
        } catch {
            ErrorOutput.write(code: error.code.rawValue, message: error.reason, format: format, to: .standard)
            throw ExitStatus.usage
        }
    }

    /// `policy check FILE`.
    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "check",
            abstract: "Read a consumption policy file as the receiver does, and say each policy in order.",
            discussion: """
                Exit status: 0 usable; 64 a fault (its line is named). Without customer_consented = true \
                the file is usable, but every request a policy answers is listed no-consent and nothing is sent.
                """)

        @Argument(help: ArgumentHelp("The policy file (TOML).", valueName: "file"))
        var file: String

        @Option(name: .long, help: "Output format: text or json.")
        var format: OutputFormat = .text

        func run() async throws {
            let policies = try PolicyCommand.load(file, format: format)
            switch format {
            case .text:
                var out = "\(SafeText.escaped(file)): \(CountNoun.policy.count(policies.policies.count)), tried in order; the first that matches answers\n"
                for (index, policy) in policies.policies.enumerated() { out += "  \(index + 1). " + SafeText.escaped(PolicyWords.line(policy)) + "\n" }
                out +=
                    policies.customerConsented
                    ? "customer consent: stated (customer_consented = true): matching policies send\n"
                    : "customer consent: not stated: nothing is sent (each request is listed no-consent); add customer_consented = true if the app collects it\n"
                Console.standard.output(out)
            case .json:
                Console.standard.line(
                    JSONOutput.text(
                        of: .object([
                            "file": .string(file), "customer_consented": .bool(policies.customerConsented),
                            "policies": .array(policies.policies.map(PolicyWords.json)),
                        ])))
            }
        }
    }

    /// `policy explain FILE --transaction-id ID`.
    struct Explain: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "explain",
            abstract: "Say which policy would answer a customer's refund request and what it would send (nothing is sent).",
            discussion: """
                Reads the newest CONSUMPTION_REQUEST stored for the transaction in the audit trail, \
                with the facts the receiver matches on (product, type, days since purchase, storefront, \
                environment, the customer's refunds), and decides as the receiver would now.

                Exit status: 0 explained; 1 no request for the transaction in the trail; 64 a fault in \
                the file; 66 no audit database.
                """)

        @Argument(help: ArgumentHelp("The policy file (TOML).", valueName: "file"))
        var file: String

        @Option(name: .long, help: ArgumentHelp("The transaction the refund request is about.", valueName: "id"))
        var transactionId: String

        @Option(name: .long, help: ArgumentHelp("The audit trail (a path or postgres:// URL; default: the default store).", valueName: "path"))
        var db: String?

        @Option(name: .long, help: "Output format: text or json.")
        var format: OutputFormat = .text

        func validate() throws {
            if let db { _ = try AuditOpening.parse(db) }
        }

        func run() async throws {
            let policies = try PolicyCommand.load(file, format: format)
            let path = db ?? AuditStore.defaultPath(environment: ProcessInfo.processInfo.environment)
            let backend: any AuditBackend
            do {
                backend = try await AuditStores.open(path, readOnly: true, durable: false)
            } catch {
                if !AuditDatabase.isPostgres(path), !FileManager.default.fileExists(atPath: path) {
                    Console.standard.error("receiptdash: no audit database at \(path) yet: `receiptdash receive --db \(path)` stores notifications there")
                    throw ExitStatus.noInput
                }
                Console.standard.error("receiptdash: \(error.reason)")
                throw ExitCode.failure
            }
            let id = transactionId.trimmingCharacters(in: .whitespaces)
            let now = Date()
            let found = try await AuditStoreService.closing(backend) { () async throws -> (ConsumptionRequestRecord, ConsumptionFacts, ConsumptionDecision)? in
                guard let request = try await backend.consumptionRequests(transactionID: id, limit: 1).first else { return nil }
                let (facts, decision) = await policies.decide(request, trail: backend, now: now, everyFact: true)
                return (request, facts, decision)
            }
            guard let (request, facts, decision) = found else {
                ErrorOutput.write(
                    code: "no-request",
                    message: "no CONSUMPTION_REQUEST for transaction \(SafeText.escaped(id)) in \(backend.location): `receiptdash notifications --consumption` lists those stored",
                    format: format, to: .standard)
                throw ExitStatus.failed
            }
            switch format {
            case .text: Console.standard.output(PolicyWords.explanation(request, facts, decision, now: now))
            case .json: Console.standard.line(JSONOutput.text(of: PolicyWords.json(request, facts, decision, now: now)))
            }
        }
    }
}

extension ConsumptionPolicyMode: ExpressibleByArgument {}
