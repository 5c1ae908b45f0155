import AppStoreAPI
import AppStoreClients
import ArgumentParser
import AuditTrail
import CommandOptions
import CustomerSearch
import CustomerTimeline
import Foundation
import JSONWriting
import ReceiptCore
import ReceiptTrust
import UntrustedText

struct CustomerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "customer",
        abstract: "One customer's whole story: the API, notifications, our writes and receipts merged into one timeline.",
        discussion: """
            Finds the customer by any id, asks the App Store Server API (history, statuses, \
            refunds, the app transaction, and the notifications Apple says it sent) and merges \
            what the audit trail holds: notifications received, writes sent, receipts seen and \
            verifyReceipt's answers. The same fact from two sources is one event that lists both. \
            On top: each subscription's state now, each one-time product; below: the issues \
            (a refund never notified, a notification Apple sent that the trail lacks, a status \
            nothing explains, a consumption request unanswered) and the timeline, oldest first.

            Without API credentials, or with --offline, it reads the audit trail alone and says so.
            --app-account-token is searched in the trail (Apple's API is not searched by it); a \
            token several customers share lists them all.

            Exit status: 0 found; 1 no such customer, or a source failed (what the others gave is \
            still shown); 64 usage or a setting that cannot be used (credentials, a key file).

            Examples:
              receiptdash customer --transaction-id 2000000123456789
              receiptdash customer --offline --app-account-token UUID
              receiptdash customer --order-id MQ5X7ABCDE --format json
              receiptdash customer --original-transaction-id ID --format csv > events.csv
            """
    )

    @Option(name: .long, help: ArgumentHelp("Any transaction ID of the customer.", valueName: "id"))
    var transactionId: String?

    @Option(name: .long, help: ArgumentHelp("An original transaction ID of the customer.", valueName: "id"))
    var originalTransactionId: String?

    @Option(name: .long, help: ArgumentHelp("The Order ID from the customer's App Store invoice email (asks the API).", valueName: "id"))
    var orderId: String?

    @Option(name: .long, help: ArgumentHelp("The customer's appTransactionId (one per Apple Account and app).", valueName: "id"))
    var appTransactionId: String?

    @Option(name: .long, help: ArgumentHelp("The appAccountToken your app set (a UUID), found in the audit trail.", valueName: "uuid"))
    var appAccountToken: String?

    @Flag(name: .long, help: "Read the audit trail alone: ask Apple nothing.")
    var offline = false

    @Flag(name: .long, help: "List the timeline newest first.")
    var newestFirst = false

    @Option(name: .long, help: "Output format: text, json or csv (the events).")
    var format: TableFormat = .text

    @Option(name: .long, help: ArgumentHelp("Judge subscriptions at this instant (ISO 8601; default: now).", valueName: "time"))
    var at: String?

    @Option(name: .long, help: "auto (production, then sandbox when production does not know the id), production or sandbox.")
    var environment: APIEnvironmentSelection = .auto

    @OptionGroup(title: "Filters (sent to Apple with every history page)")
    var filtering: LookupFilterOptions

    @OptionGroup var database: DatabaseOption

    @OptionGroup(title: "App Store Server API")
    var api: APIOptions

    @OptionGroup var tls: TLSTrustOptions

    @Flag(name: .long, help: "Say each retry's wait on a line of its own (default: one line rewritten in place on a terminal, none elsewhere).")
    var verbose = false

    func validate() throws {
        _ = try query()
        try TimeArgument.check("--at", at)
        if orderId != nil && offline {
            throw ValidationError("--order-id is known to Apple only: drop --offline, or name the customer by --transaction-id.")
        }
    }

    /// The one id given, checked against the shape Apple gives it.
    func query() throws -> CustomerQuery {
        let given: [(String, String, (String) -> CustomerQuery)] = [
            ("--transaction-id", transactionId, CustomerQuery.transactionID), ("--original-transaction-id", originalTransactionId, CustomerQuery.originalTransactionID),
            ("--order-id", orderId, CustomerQuery.orderID), ("--app-transaction-id", appTransactionId, CustomerQuery.appTransactionID),
            ("--app-account-token", appAccountToken, CustomerQuery.appAccountToken),
        ].compactMap { flag, value, make in value.map { (flag, $0.trimmingCharacters(in: .whitespaces), make) } }
        guard given.count == 1, let (flag, value, make) = given.first else {
            throw ValidationError(
                "Name exactly one of --transaction-id, --original-transaction-id, --order-id, --app-transaction-id or --app-account-token.")
        }
        switch flag {
        case "--order-id":
            guard LookupQuery.isOrderIDShaped(value) else {
                throw ValidationError("--order-id takes letters and digits only, as on the App Store invoice (e.g. MQ5X7ABCDE), not \(SafeText.escaped(value)).")
            }
        case "--app-account-token":
            guard let uuid = UUID(uuidString: value) else {
                throw ValidationError("--app-account-token takes a UUID (e.g. 7e3fb20b-4cdb-47cc-936d-99d65f608138), not \(SafeText.escaped(value)).")
            }
            return .appAccountToken(uuid.uuidString.lowercased())
        default:
            guard LookupQuery.isIDShaped(value) else {
                throw ValidationError("\(flag) takes digits only (e.g. 2000000123456789), not \(SafeText.escaped(value)).")
            }
        }
        return make(value)
    }

    func run() async throws {
        let query = try query()
        let instant = at.flatMap(TimeArgument.parse) ?? Date()
        let online = !offline && (api.namesCredentials || api.apiProfile != nil)
        if !offline && !online && format == .text {
            Console.standard.error("receiptdash: no API credentials given: reading the audit trail alone (--offline). See `receiptdash customer --help`.")
        }
        if case .orderID = query, !online {
            throw failure("an order ID is known to Apple only, and no API credentials are given: set them (see `receiptdash lookup --help`) or name the customer by --transaction-id")
        }
        var lookupService: CustomerLookupService?
        var client: AppStoreServerAPIClient?
        if online {
            do {
                let pipeline = ReceiptPipeline(at: instant, evaluator: TrustEvaluator(anchors: try api.trustAnchors()))
                let credentials = try api.credentials()
                let made = try api.makeClient(credentials, caFile: tls.caFile)
                client = made
                lookupService = CustomerLookupService(client: made, pipeline: pipeline)
            } catch let error as APIOptionsError {
                throw failure(error.description, code: "configuration", status: ExitStatus.usage)
            }
        }
        // The trail, read-only: a missing one is said, and online the API's part still stands.
        var store: (any AuditBackend)?
        do {
            store = try await AuditStores.open(try AuditDatabase(database.path), readOnly: true)
        } catch {
            if !online { throw failure("no customer with \(query.words): \(error.reason)") }
            Console.standard.error("receiptdash: \(error.reason); showing Apple's part alone")
        }
        let finder = CustomerFinder(store: store, lookup: lookupService, environment: environment, filters: try filtering.filters())
        let found = try await AuditStoreService.closing(store) {
            await report.find(query, with: finder, at: instant, pointInTime: at != nil) { try? await client?.shutdown() }
        }
        if !found { throw ExitCode.failure }
    }

    /// Says `message` and gives `status` (1 unless a setting cannot be used): a JSON error
    /// object with `--format json`.
    private func failure(_ message: String, code: String = "failed", status: ExitCode = ExitStatus.failed) -> ExitCode {
        report.fail(message, code: code)
        return status
    }

    private var report: CustomerReport {
        var report = CustomerReport(format: format, newestFirst: newestFirst, console: .standard)
        report.verbose = verbose
        return report
    }
}
