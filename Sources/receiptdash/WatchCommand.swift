import AppStoreClients
import ArgumentParser
import AuditStore
import Foundation
import NIOConcurrencyHelpers
import ReceiptCore
import ReceiptWatch
import Synchronization
import UntrustedText

struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
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
        defer { Task { await store.close() } }
        if let keepDays {
            let removed = try await store.prune(keepDays: keepDays, now: Date())
            log("pruned \(removed) receipt\(removed == 1 ? "" : "s") not seen for \(keepDays) days")
        }
        let ingestor = Ingestor(store: store)
        let watched = WatchedSources(sources, logsFromStart: !fromEnd)
        let (folders, logs) = (watched.folders, watched.logs)
        let stdinLines = watched.readsStandardInput ? StandardInputLines() : nil

        // Verification runs beside the polling, fed through a stream. A result it cannot
        // write stops the loop below.
        let (stream, continuation) = AsyncStream<BatchItem>.makeStream()
        var verification: Task<AuditedSummary, Never>?
        var client: VerifyReceiptClient?
        let auditFailure = NIOLockedValueBox<AuditError?>(nil)
        if verify {
            let made = try online.makeClient()
            client = made
            let audited = AuditedVerification(store: store, verifier: BatchVerifier(client: made, concurrency: online.concurrency))
            verification = Task { [auditFailure] in
                await audited.run(
                    stream,
                    onEvent: { event in
                        switch event {
                        case .done(let id, let outcome, _):
                            log("verified #\(id): status \(outcome.status.map(String.init) ?? "?") (\(outcome.attempts.count) attempts)")
                        case .failed(let id, let failure, _): log("failed #\(id): \(failure.reason)")
                        case .retrying(let id, let seconds, let reason): log(String(format: "retrying #%d in %.1f s: ", id, seconds) + reason.description)
                        default: break
                        }
                    },
                    onAuditError: { error in
                        log(error.reason)
                        auditFailure.withLockedValue { if $0 == nil { $0 = error } }
                    })
            }
            for (id, data) in try await store.pending() {
                continuation.yield(BatchItem(id: Int(id), source: "pending #\(id)", receiptData: data))
            }
        }
        func enqueue(_ recorded: [AuditRecorded]) async throws {
            guard verify else { return }
            let fresh = recorded.filter { $0.isNew && $0.receiptData != nil }
            try await audited("marking \(fresh.count) receipts pending", in: store) { try await store.markPending(fresh.map(\.id)) }
            for r in fresh { continuation.yield(BatchItem(id: Int(r.id), source: "#\(r.id)", receiptData: r.receiptData!)) }
        }

        var unreadable = 0
        var firstPass = true
        while true {
            let now = Date()
            // --once reads folders and logs once; standard input is read to its end.
            let pollFiles = !once || firstPass
            firstPass = false
            for folder in folders where pollFiles {
                // --once takes the folder as it is; a long watch waits for each file to settle.
                let paths = folder.poll(settled: !once)
                var files: [(path: String, bytes: [UInt8])] = []
                for path in paths {
                    // Read no more than the decoder takes: a huge file dropped in is skipped, not a stall.
                    switch InputFiles.readFile(path, limit: DecodingLimits.default.maximumInputBytes) {
                    case .success(let bytes): files.append((path, bytes))
                    case .failure(let error):
                        unreadable += 1
                        log("\(path): skipped: \(error.reason)")
                    }
                }
                if !files.isEmpty {
                    let recorded = try await audited("recording files from \(folder.path)", in: store) { try await ingestor.ingest(files: files, kind: .watch, at: now) }
                    try await enqueue(recorded)
                    log("\(folder.path): \(files.count) file\(files.count == 1 ? "" : "s"), \(recorded.filter(\.isNew).count) new")
                }
            }
            for follower in logs where pollFiles {
                let lines = follower.poll()
                if !lines.isEmpty {
                    let recorded = try await audited("recording lines of \(follower.path)", in: store) {
                        try await ingestor.ingest(lines: lines, kind: .watch, source: follower.path, at: now)
                    }
                    try await enqueue(recorded)
                    log("\(follower.path): \(lines.count) line\(lines.count == 1 ? "" : "s"), \(recorded.filter(\.isNew).count) new, \(lines.count - recorded.count) skipped")
                }
            }
            var stdinDone = false
            if let stdinLines {
                let (lines, ended) = stdinLines.drain()
                stdinDone = ended
                if !lines.isEmpty {
                    let recorded = try await audited("recording lines of standard input", in: store) {
                        try await ingestor.ingest(lines: lines, kind: .stdin, source: "-", at: now)
                    }
                    try await enqueue(recorded)
                }
            }
            let onlyStdin = folders.isEmpty && logs.isEmpty
            if auditFailure.withLockedValue({ $0 != nil }) { break }
            if stdinLines == nil || stdinDone {
                if once || (onlyStdin && stdinDone) { break }
            }
            try? await Task.sleep(nanoseconds: UInt64(interval * 1e9))
        }
        continuation.finish()
        if let verification {
            let summary = await verification.value.batch
            log("verification: \(summary.done) answered, \(summary.failed) failed")
        }
        try? await client?.shutdown()
        let c = ingestor.counts
        log("ingested \(c.lines) lines and \(c.files) files: \(c.newReceipts) new receipts, \(c.seenAgain) seen again, \(c.skipped + unreadable) skipped")
        if let failure = auditFailure.withLockedValue({ $0 }) { throw failure }
    }
}

/// Runs a write to the audit database; its failure becomes an ``AuditError`` that names what
/// was being written (the command then exits non-zero with it).
func audited<T>(_ what: String, in store: any AuditBackend, _ body: () async throws -> T) async throws(AuditError) -> T {
    do {
        return try await body()
    } catch {
        throw AuditError(.writeFailed, doing: SafeText.escaped(what), error, in: store)
    }
}

private func log(_ line: String) {
    FileHandle.standardOutput.write(Data((SafeText.escaped(line) + "\n").utf8))
}

/// Lines from standard input, read on a thread of their own and drained by the poll loop.
final class StandardInputLines: Sendable {
    private let state = Mutex<(lines: [String], ended: Bool)>(([], false))

    init() {
        Thread.detachNewThread { [self] in
            while let line = readLine(strippingNewline: true) {
                state.withLock { $0.lines.append(line) }
            }
            state.withLock { $0.ended = true }
        }
    }

    func drain() -> (lines: [String], ended: Bool) {
        state.withLock { s in
            let out = s.lines
            s.lines.removeAll()
            return (out, s.ended && out.isEmpty)
        }
    }
}
