import AppStoreClients
import ArgumentParser
import AuditTrail
import CommandOptions
import Foundation
import JSONWriting
import ReceiptRendering
import ReceiptCore
import ReceiptWatch

struct Verify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Verify receipts online with Apple's verifyReceipt (or the local simulator).",
        discussion: """
            Production first, sandbox on 21007, production on 21008; temporary failures (21005, \
            21009, 21100-21199 with is-retryable, HTTP 5xx and 429, timeouts, dropped \
            connections) are retried with backoff. TLS certificates are always verified.

            The shared secret comes from --shared-secret-file FILE or the \
            RECEIPTDASH_SHARED_SECRET environment variable, never from an argument, and is never \
            printed.

            With --format json there is one row per input, in order: inputs that are not sent \
            (they cannot be decoded, or are not receipts verifyReceipt takes) get \
            {"source", "error": {"code", "message"}}, as with inspect. --send-undecodable sends \
            an input the decoder cannot read as it is (its text when it is base64, else the \
            base64 of its bytes) and records Apple's answer.

            Exit status: 0 when every input got status 0; 1 otherwise, or when a write to --db \
            failed (the error is named); 64 for a usage error (e.g. a plain http:// URL that is \
            not loopback).

            Examples:
              RECEIPTDASH_SHARED_SECRET=… receiptdash verify receipts/
              receiptdash simulator --port 8099 &
              receiptdash verify --production-url http://127.0.0.1:8099/production/verifyReceipt \\
                  --sandbox-url http://127.0.0.1:8099/sandbox/verifyReceipt receipt.b64
            """
    )

    @Option(name: .long, help: "Output format: text or json.")
    var format: OutputFormat = .text

    @Flag(name: .long, help: "Ask Apple for only the latest renewal of each subscription.")
    var excludeOldTransactions = false

    @OptionGroup var online: OnlineOptions

    @OptionGroup var recording: RecordingDatabaseOption
    var db: String? { recording.db }

    @Flag(name: .long, help: "Also verify the receipts an interrupted run left pending in --db.")
    var resume = false

    @Option(name: .long, help: ArgumentHelp("Seconds a single request may take.", valueName: "seconds"))
    var timeout: Double = 20

    @Flag(name: .long, help: "Send inputs the decoder cannot read as they are, and record Apple's answer.")
    var sendUndecodable = false

    @Argument(help: "Receipt files or folders, or - for standard input.")
    var files: [String] = []

    @Flag(name: .long, help: "Say each retry's wait on a line of its own where no progress bar is drawn (default: retries show in the bar and in each result's attempts).")
    var verbose = false

    func validate() throws {
        if files.isEmpty && !resume { throw ValidationError("No input. Name receipt files or folders, or '-' for standard input.") }
        if resume && db == nil { throw ValidationError("--resume needs --db PATH.") }
    }

    func run() async throws {
        let store: (any AuditBackend)? = if let db { try await AuditOpening.open(db) } else { nil }
        var run = VerifyRun(files: files, format: format, concurrency: online.concurrency, resume: resume, sendUndecodable: sendUndecodable, console: .standard)
        run.verbose = verbose
        let verified = try await AuditStoreService.closing(store) {
            try await run.run(recordingIn: store) { try online.makeClient(excludeOldTransactions: excludeOldTransactions, timeout: timeout) }
        }
        if !verified { throw ExitCode.failure }
    }
}
