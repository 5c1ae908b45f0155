import ArgumentParser
import AuditTrail
import AuditTrailSQLite
import CommandOptions
import Foundation
import JSONWriting
import UntrustedText

struct History: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "Look up what was seen and what Apple said, from the audit database.",
        discussion: """
            One row per distinct receipt (the same receipt seen twice is one row with both \
            sightings), most recently seen first, with its purchases.

            Examples:
              receiptdash history --transaction-id 1000000472106082
              receiptdash history --bundle-id com.example.app --since 2024-03-01T00:00:00Z --format csv > seen.csv
            """
    )

    @OptionGroup var database: DatabaseOption

    @Option(name: .long, help: "A transaction id in the receipt.")
    var transactionId: String?

    @Option(name: .long, help: "An original transaction id in the receipt.")
    var originalTransactionId: String?

    @Option(name: .long, help: "The app's bundle id.")
    var bundleId: String?

    @Option(name: .long, help: "A product id in the receipt.")
    var productId: String?

    @Option(
        name: .long, help: ArgumentHelp("Apple's status for the receipt: a whole number (0, 21002, 21007, …).", valueName: "number"),
        transform: { text in
            guard let number = Int(text.trimmingCharacters(in: .whitespaces)) else {
                throw ValidationError("--status takes Apple's status for the receipt, a whole number such as 0, 21002 or 21007")
            }
            return number
        })
    var status: Int?

    @Option(name: .long, help: ArgumentHelp("Seen at or after this time (ISO 8601, or a date: midnight UTC).", valueName: "time"))
    var since: String?

    @Option(name: .long, help: "Output format: text, json or csv.")
    var format: TableFormat = .text

    @Flag(name: .long, help: "List the writes sent to Apple (extend, consumption, …) instead of receipts.")
    var actions = false

    func validate() throws {
        try TimeArgument.check("--since", since)
    }

    func run() async throws {
        if !AuditDatabase.isPostgres(database.path), !FileManager.default.fileExists(atPath: database.path) {
            // Said plainly, without the usage text: the command was typed right.
            // 66 (no input), as `db copy` and `notifications` say a database that is not there.
            let writers =
                actions
                ? "the writes to Apple (`extend`, `consumption`, `app-account-token`, `finish`, `test-notification`) create it"
                : "`watch --db` and `verify --db` create it"
            Console.standard.error("receiptdash: no audit database at \(database.path) yet: \(writers)")
            throw ExitStatus.noInput
        }
        let store = try await database.open(readOnly: true)
        if actions {
            let rows: [AuditAction]
            do {
                rows = try await AuditStoreService.closing(store) { try await store.actions(AuditActionQuery(transactionID: transactionId)) }
            } catch {
                Console.standard.error("receiptdash: could not read the actions from \(store.location): \(AuditStores.words(error))")
                throw ExitCode.failure
            }
            ActionHistory.write(rows, format: format, to: .standard)
            return
        }
        let rows: [HistoryRow]
        do {
            let query = HistoryQuery(
                transactionID: transactionId, originalTransactionID: originalTransactionId, bundleID: bundleId, productID: productId,
                status: status, since: since.flatMap(TimeArgument.parse))
            rows = try await AuditStoreService.closing(store) { try await store.history(query) }
        } catch {
            Console.standard.error("receiptdash: could not read the history from \(store.location): \(AuditStores.words(error))")
            throw ExitCode.failure
        }
        HistoryRendering.write(rows, format: format, to: .standard)
    }
}
