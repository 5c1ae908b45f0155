import ArgumentParser
import Foundation
import ReceiptCore
import ReceiptService
import UntrustedText

/// Where the audit database is.
struct DatabaseOption: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The audit database (default: $XDG_DATA_HOME/receiptdash/audit.sqlite).", valueName: "path"))
    var db: String?

    var path: String { db ?? AuditStore.defaultPath(environment: ProcessInfo.processInfo.environment) }
}

enum HistoryFormat: String, ExpressibleByArgument, CaseIterable {
    case text, json, csv
}

struct History: ParsableCommand {
    static let configuration = CommandConfiguration(
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

    @Option(name: .long, help: "Apple's status for the receipt.")
    var status: Int?

    @Option(name: .long, help: ArgumentHelp("Seen at or after this time (ISO 8601).", valueName: "time"))
    var since: String?

    @Option(name: .long, help: "Output format: text, json or csv.")
    var format: HistoryFormat = .text

    func validate() throws {
        if let since, AppleDate.parse(since) == nil { throw ValidationError("--since must be an ISO 8601 time.") }
    }

    func run() throws {
        guard FileManager.default.fileExists(atPath: database.path) else {
            throw ValidationError("No audit database at \(database.path) yet: it is written by `watch` and `verify --db`.")
        }
        let store = try AuditStore(readOnlyPath: database.path)
        let rows = try store.history(
            HistoryQuery(
                transactionID: transactionId, originalTransactionID: originalTransactionId, bundleID: bundleId, productID: productId,
                status: status, since: since.flatMap(AppleDate.parse)))
        switch format {
        case .json: print(InspectJSON.encode(HistoryRendering.json(rows)))
        case .csv: print(HistoryRendering.csv(rows), terminator: "")
        case .text:
            if rows.isEmpty { print("no receipts match") }
            // Everything after the id is receipt-derived: escaped, so it cannot drive the terminal.
            let safe = SafeText.escaped
            for r in rows {
                print(
                    "#\(r.id) \(safe(r.format)) \(safe(r.bundleID ?? "-")) \(safe(r.environment ?? "-")) \(safe(r.state))\(r.status.map { " status \($0)" } ?? "") · seen \(r.sightings)× \(AppleDate.iso8601(r.firstSeen)) … \(AppleDate.iso8601(r.lastSeen))"
                )
                for p in r.purchases {
                    print(
                        "    \(safe(p.productID ?? "?"))  \(safe(p.transactionID ?? ""))  \(safe(p.originalTransactionID ?? ""))  \(p.purchaseDate.map(AppleDate.iso8601) ?? "")\(p.expiresDate.map { " → " + AppleDate.iso8601($0) } ?? "")"
                    )
                }
            }
        }
    }
}
