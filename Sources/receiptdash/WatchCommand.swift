import AppStoreClients
import ArgumentParser
import AuditTrail
import CommandOptions
import Foundation
import ReceiptCore
import ReceiptWatch
import UntrustedText

struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Watch folders, log files or standard input for receipts and record them (and verify with --verify).",
        discussion: """
            A SOURCE is a folder (each new file is read once), a log file followed like tail -F \
            (rotation and truncation handled; each line that holds a receipt, a \
            {"receipt-data": …} body or a verifyReceipt response is ingested, other lines are \
            counted as skipped), or - for lines from standard input.

            Everything goes to the audit database; receipts already there are one row with \
            another sighting. With --verify, new receipts are verified online as they arrive; \
            receipts left pending by an interrupted run are picked up first (--resume is implied).

            A failed write to the audit database stops the watch: the error is named and the \
            exit status is 1.

            Examples:
              receiptdash watch --verify incoming/ /var/log/app/receipts.log
              tail -f app.log | receiptdash watch -

            With --once, folders and log files are read as they are now and standard input (-) \
            to its end.
            """
    )

    @OptionGroup var database: DatabaseOption

    @Flag(name: .long, help: "Verify new receipts online as they arrive.")
    var verify = false

    @OptionGroup(title: "Online verification (--verify)") var online: OnlineOptions

    @Flag(name: .long, help: "Read what is there now, verify it, and exit (no following).")
    var once = false

    @Flag(name: .long, help: "Follow log files from their end (skip what is already there).")
    var fromEnd = false

    @Option(name: .long, help: ArgumentHelp("Seconds between polls of folders and files.", valueName: "seconds"))
    var interval: Double = 0.5

    @Option(name: .long, help: ArgumentHelp("Delete receipts not seen for this many days (at least 1).", valueName: "days"))
    var keepDays: Int?

    @Argument(help: "Folders, log files, or - for standard input.")
    var sources: [String] = []

    func validate() throws {
        if sources.isEmpty { throw ValidationError("No source. Name folders, log files, or '-' for standard input.") }
        if interval <= 0 { throw ValidationError("--interval must be positive.") }
        // 0 would delete what was seen seconds ago (everything not seen today, this instant).
        if let keepDays, keepDays < 1 { throw ValidationError("--keep-days must be at least 1 (days a receipt is kept after it was last seen).") }
    }

    func run() async throws {
        let store = try await database.open()
        var client: VerifyReceiptClient?
        do {
            client = verify ? try online.makeClient() : nil
        } catch {
            await store.close()
            throw error
        }
        let loop = WatchLoop(
            store: store,
            settings: .init(sources: sources, once: once, fromEnd: fromEnd, interval: .seconds(interval), keepDays: keepDays),
            verifier: client.map { BatchVerifier(client: $0, concurrency: online.concurrency) },
            standardInput: sources.contains("-") ? StandardInputLines() : nil,
            log: { line in FileHandle.standardOutput.write(Data((SafeText.escaped(line) + "\n").utf8)) })
        do {
            try await loop.runUntilSignalled()
        } catch {
            try? await client?.shutdown()
            throw error
        }
        try? await client?.shutdown()
    }
}
