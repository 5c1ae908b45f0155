import ArgumentParser
import CommandOptions
import Foundation
import ReceiptBenchmarks

struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure decoding speed on one core (use a release build).",
        discussion: """
            Decodes the given receipts (files or folders; default: ../shared/corpus/pkcs7, or the \
            bundled demo receipts) over and over on one thread and prints receipts per second.

            With --verify --suffix .jws (default folder: ../shared/corpus/jws) it verifies genuine \
            JWS, counts every signature checked (a notification's nested tokens included) and \
            prints that rate beside the bare ECDSA P-256 verify rate measured in the same run.

            Example:
              swift build -c release && .build/release/receiptdash bench ../shared/corpus/pkcs7
            """
    )

    @Option(name: .long, help: "How long to measure, in seconds.")
    var seconds: Double = 3

    @Option(name: .long, help: "Only files whose name ends with this (default: .der and .b64).")
    var suffix: [String] = [".der", ".b64"]

    @Flag(name: .long, help: "Verify as well: decode + signature + chain (genuine receipts only).")
    var verify = false

    @Flag(
        name: .long,
        help: "With --verify: JWS with online checks (OCSP, warm cache) on the simulator's tokens and local responder, beside the bare verify.")
    var onlineChecks = false

    @Option(name: .long, help: ArgumentHelp("Instead, time the subscription analysis of one response with this many purchase rows.", valueName: "rows"))
    var analyzeRows: Int?

    @Option(name: .long, help: ArgumentHelp("Instead, time rendering one 200×60 dashboard frame with this many purchase rows.", valueName: "rows"))
    var renderRows: Int?

    @Option(
        name: .long, help: ArgumentHelp("Instead, time the Receipts pane's filter (as typed) and sort over this many inputs.", valueName: "count"))
    var receiptFilter: Int?

    @Option(name: .long, help: ArgumentHelp("Instead, verify this many receipts through an in-process simulator (100 ms latency).", valueName: "count"))
    var onlineReceipts: Int?

    @Option(name: .long, help: ArgumentHelp("Instead, ingest a generated log of this many lines (receipts and noise) into a fresh audit database.", valueName: "lines"))
    var ingestLines: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "With --ingest-lines: also ingest into this scratch PostgreSQL database (postgres://…), one writer and then four together, beside SQLite.",
            valueName: "url"))
    var ingestDb: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Instead, backfill this many notifications from an in-process simulator's history into a fresh SQLite trail (reconcile --ingest).",
            valueName: "count"))
    var backfill: Int?

    @Option(
        name: .long,
        help: ArgumentHelp("Instead, time the dashboard's Customer view of a customer with this many events (a 200×60 frame per key).", valueName: "events"))
    var renderCustomer: Int?

    @Option(name: .long, help: ArgumentHelp("With --render-rows: validations per second streaming in while frames render (60 frames a second).", valueName: "per-second"))
    var streamRate: Int = 0

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Instead, look up a customer with this many transactions through an in-process App Store Server API simulator (50 ms latency).",
            valueName: "count"))
    var lookupTransactions: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Instead, time `customer --offline` on this audit trail (Benchmarks/customer-store.sh builds one) beside a bare SELECT of the same rows.",
            valueName: "path|url"))
    var customerDb: String?

    @Option(name: .long, help: ArgumentHelp("With --customer-db: the customer's transaction id.", valueName: "id"))
    var customerTransactionId: String?

    @Option(name: .long, help: ArgumentHelp("With --customer-db: the customer's app account token.", valueName: "uuid"))
    var customerToken: String?

    @Option(name: .long, help: "With --customer-db: runs of each.")
    var runs = 200

    @Option(name: .long, help: "Concurrency for --online-receipts.")
    var concurrency = 64

    @Argument(help: "Receipt files or folders.")
    var paths: [String] = []

    func run() async throws {
        let bench = BenchmarkRun(
            seconds: seconds, suffix: suffix, verify: verify, paths: paths, concurrency: concurrency, streamRate: streamRate,
            print: { Swift.print($0) }, openStore: { try await AuditOpening.open($0) })
        do {
            if let customerDb {
                let store = try await AuditOpening.open(customerDb, readOnly: true)
                return try await bench.benchCustomer(store, transactionID: customerTransactionId, appAccountToken: customerToken, runs: runs)
            }
            if let count = lookupTransactions { return try await bench.benchLookup(transactions: count) }
            if let count = onlineReceipts { return try await bench.benchOnline(count: count) }
            if let lines = ingestLines { return try await bench.benchIngest(lines: lines, postgres: ingestDb) }
            if let rows = analyzeRows { return try bench.benchAnalysis(rows: rows) }
            if let rows = renderRows { return await bench.benchRender(rows: rows) }
            if let count = receiptFilter { return await bench.benchReceiptFilter(count: count) }
            if let events = renderCustomer { return await bench.benchCustomerView(events: events) }
            if let count = backfill { return try await bench.benchBackfill(count: count) }
            if verify && onlineChecks { return try await bench.benchJWSOnlineChecks() }
            try await bench.benchDecode()
        } catch let error as BenchmarkError {
            throw ValidationError(error.reason)
        }
    }
}
