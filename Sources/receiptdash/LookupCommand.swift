import AppStoreClients
import ArgumentParser
import AuditTrail
import CommandOptions
import CustomerSearch
import Foundation
import AppStoreAPI
import JSONWriting
import ReceiptRendering
import ReceiptCore
import ReceiptTrust
import UntrustedText

extension APIEnvironmentSelection: ExpressibleByArgument {}

struct Lookup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lookup",
        abstract: "Look a customer up through the App Store Server API: by order ID, transaction ID, or a receipt.",
        discussion: """
            Finds the customer's transactions (every history page), subscription statuses, refunds \
            and renewal preferences, checks every signed item with receiptdash's own JWS trust \
            (chain at signedDate, bundleId and environment against the request), and judges each \
            subscription as `inspect --at` does. A receipt FILE is decoded and checked offline \
            first; its newest transaction id is looked up (the way off verifyReceipt).

            Credentials: an In-App Purchase key from App Store Connect (Users and Access › \
            Integrations), given by flags or RECEIPTDASH_API_ISSUER_ID, RECEIPTDASH_API_KEY_ID, \
            RECEIPTDASH_API_PRIVATE_KEY_FILE and RECEIPTDASH_BUNDLE_ID.

            Exit status: 0 found; 1 not found, refused or failed (the JSON carries `error`); 64 usage \
            or a setting that cannot be used (credentials, the key file).

            Examples:
              receiptdash lookup --order-id MQ5X7ABCDE
              receiptdash lookup --transaction-id 2000000123456789 --format json
              receiptdash lookup --app-transaction-id 704289572311094157
              receiptdash lookup receipt.b64 --environment sandbox
              receiptdash lookup --transaction-id 2000000123456789 --product-id pro.monthly --status active

            Against the local simulator (`receiptdash simulator --api-root-out sim-root.der`):
              receiptdash lookup --order-id MQ5X7ABCDE --root-ca sim-root.der \\
                --api-production-url http://127.0.0.1:8080/api/production \\
                --api-sandbox-url http://127.0.0.1:8080/api/sandbox
            """
    )

    @Option(name: .long, help: ArgumentHelp("The Order ID from the customer's App Store invoice email (production only).", valueName: "id"))
    var orderId: String?

    @Option(name: .long, help: ArgumentHelp("Any transaction ID of the customer.", valueName: "id"))
    var transactionId: String?

    @Option(
        name: .long,
        help: ArgumentHelp("The customer's appTransactionId (one per Apple Account and app, in every signed transaction).", valueName: "id"))
    var appTransactionId: String?

    @Argument(help: ArgumentHelp("A receipt to take the transaction ID from (any format inspect reads), or - for standard input.", valueName: "file"))
    var file: String?

    @Option(name: .long, help: "Output format: text or json.")
    var format: OutputFormat = .text

    @Option(name: .long, help: ArgumentHelp("Judge subscriptions at this instant (ISO 8601; default: now).", valueName: "time"))
    var at: String?

    @Option(name: .long, help: "auto (production, then sandbox when production does not know the id), production or sandbox.")
    var environment: APIEnvironmentSelection = .auto

    @OptionGroup(title: "Filters (sent to Apple with every history page)")
    var filtering: LookupFilterOptions

    @OptionGroup var recording: RecordingDatabaseOption
    var db: String? { recording.db }

    @OptionGroup var online: OnlineChecksOption

    @OptionGroup(title: "App Store Server API")
    var api: APIOptions

    @OptionGroup var tls: TLSTrustOptions

    @Flag(name: .long, help: "Say each retry's wait on a line of its own (default: one line rewritten in place on a terminal, none elsewhere).")
    var verbose = false

    func validate() throws {
        let given = [orderId != nil, transactionId != nil, appTransactionId != nil, file != nil].filter { $0 }.count
        if given != 1 {
            throw ValidationError("Name exactly one of --order-id ID, --transaction-id ID, --app-transaction-id ID or a receipt FILE.")
        }
        try TimeArgument.check("--at", at)
        for (flag, value) in [("--order-id", orderId), ("--transaction-id", transactionId), ("--app-transaction-id", appTransactionId)] {
            if let value, value.trimmingCharacters(in: .whitespaces).isEmpty { throw ValidationError("\(flag) is empty.") }
        }
        // The shapes Apple gives them: ids are digits; an order ID is letters and digits.
        for (flag, value) in [("--transaction-id", transactionId), ("--app-transaction-id", appTransactionId)] {
            if let value, !LookupQuery.isIDShaped(value.trimmingCharacters(in: .whitespaces)) {
                throw ValidationError("\(flag) takes digits only (e.g. 2000000123456789), not \(SafeText.escaped(value)).")
            }
        }
        if let orderId, !LookupQuery.isOrderIDShaped(orderId.trimmingCharacters(in: .whitespaces)) {
            throw ValidationError("--order-id takes letters and digits only, as on the App Store invoice (e.g. MQ5X7ABCDE), not \(SafeText.escaped(orderId)).")
        }
        if orderId != nil && environment == .sandbox {
            throw ValidationError("Look Up Order ID exists in production only: order IDs come from real purchases. Drop --environment sandbox.")
        }
    }

    func run() async throws {
        let pipeline: ReceiptPipeline
        let query: LookupQuery
        let credentials: APICredentials
        do {
            pipeline = ReceiptPipeline(
                at: at.flatMap(TimeArgument.parse) ?? Date(), evaluator: TrustEvaluator(anchors: try api.trustAnchors()),
                trustOptions: TrustOptions(onlineChecks: online.make(profile: try api.profile())))
            query = try await self.query(pipeline)
            credentials = try api.credentials()
        } catch let error as APIOptionsError {
            LookupOutput.writeError(code: "configuration", message: error.description, format: format, to: .standard)
            throw ExitStatus.usage
        } catch let error as ReceiptUnreadable {
            LookupOutput.writeError(code: "configuration", message: error.reason, format: format, to: .standard)
            throw ExitStatus.failed
        }
        // The store before the client: a client is shut down once made, whatever follows.
        let store: (any AuditBackend)? = if let db { try await AuditOpening.open(db) } else { nil }
        let stored = try await AuditStoreService.closing(store) { () async throws -> Bool in
            let client: AppStoreServerAPIClient
            do {
                client = try api.makeClient(credentials, caFile: tls.caFile)
            } catch let error as APIOptionsError {
                LookupOutput.writeError(code: "configuration", message: error.description, format: format, to: .standard)
                throw ExitStatus.usage
            }
            return await CustomerLookupService(client: client, pipeline: pipeline).lookUp(
                query, environment: environment, filters: try filtering.filters(), format: format, recordIn: store, words: AuditStores.words,
                console: .standard, verbose: verbose)
        }
        if !stored { throw ExitCode.failure }
    }

    /// The query: the id given, or a receipt's newest transaction id.
    private func query(_ pipeline: ReceiptPipeline) async throws -> LookupQuery {
        if let orderId { return .orderID(orderId.trimmingCharacters(in: .whitespaces)) }
        if let transactionId { return .transactionID(transactionId.trimmingCharacters(in: .whitespaces)) }
        if let appTransactionId { return .appTransactionID(appTransactionId.trimmingCharacters(in: .whitespaces)) }
        do {
            return try await LookupQuery.newestTransaction(in: file ?? "-", with: pipeline).get()
        } catch {
            throw ReceiptUnreadable(reason: error.reason)
        }
    }
}

/// The receipt `lookup FILE` names could not be read or holds no transaction: an input fault
/// (exit 1), not a setting.
struct ReceiptUnreadable: Error {
    var reason: String
}
