import AppStoreClients
import ArgumentParser
import AuditStore
import Foundation
import ReceiptCore
import ReceiptWatch
import Synchronization
import UntrustedText

struct Verify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
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

    func validate() throws {
        if files.isEmpty && !resume { throw ValidationError("No input. Name receipt files or folders, or '-' for standard input.") }
        if resume && db == nil { throw ValidationError("--resume needs --db PATH.") }
    }

    /// One input, in order: sent (its batch item), or not sent and why.
    enum Row {
        case sent(BatchItem)
        case notSent(source: String, code: String, message: String, offset: Int?)
    }

    /// What an input is sent as.
    struct Accepted {
        var row: Int
        var source: String
        var receiptData: String
        var kind: AuditStore.SourceKind
        var bytes: [UInt8]
        /// Nil for an undecodable input sent as it is.
        var decoded: DecodedInput?
    }

    func run() async throws {
        let store: (any AuditBackend)? = if let db { try await AuditOpening.open(db) } else { nil }
        try await AuditOpening.closing(store) { try await verify(recordingIn: store) }
    }

    private func verify(recordingIn store: (any AuditBackend)?) async throws {
        // Decoding only: verify sends receipts, it does not judge them offline.
        let pipeline = ReceiptPipeline(at: Date(), checksTrust: false, analyses: false)
        var rows: [Row] = []
        var accepted: [Accepted] = []
        var decodeFailures = 0
        for input in InputFiles.load(files, limit: pipeline.inputLimit) {
            let kind: AuditSourceKind = input.source == "-" ? .stdin : .file
            let judged = pipeline.decode(input)
            switch judged.result {
            case .success(let decoded):
                let bytes = judged.bytes ?? []
                guard let data = VerifyReceiptData.base64(decoded) else {
                    let message = "\(decoded.format.rawValue) is not a receipt verifyReceipt accepts"
                    Standard.error("receiptdash: \(SafeText.escaped(input.source)): \(message)")
                    rows.append(.notSent(source: input.source, code: "not a verifyReceipt input", message: message, offset: nil))
                    decodeFailures += 1
                    continue
                }
                accepted.append(Accepted(row: rows.count, source: input.source, receiptData: data, kind: kind, bytes: bytes, decoded: decoded))
                rows.append(.notSent(source: input.source, code: "", message: "", offset: nil))  // replaced below
            case .failure(let error):
                if sendUndecodable, let bytes = judged.bytes {
                    // Never the password of a pasted request body: not sent, not stored.
                    if let bytes = VerifyRendering.withoutPassword(bytes) {
                        if let data = VerifyRendering.asIs(bytes) {
                            Standard.error("receiptdash: \(SafeText.escaped(input.source)): \(error.reason); sent as it is (--send-undecodable)")
                            accepted.append(Accepted(row: rows.count, source: input.source, receiptData: data, kind: kind, bytes: bytes, decoded: nil))
                            rows.append(.notSent(source: input.source, code: "", message: "", offset: nil))
                            continue
                        }
                    } else {
                        Standard.error(
                            "receiptdash: \(SafeText.escaped(input.source)): not sent (--send-undecodable): it names a \"password\" that could not be removed (not JSON)")
                    }
                }
                Standard.error("receiptdash: \(SafeText.escaped(input.source)): \(error.reason)")
                rows.append(.notSent(source: input.source, code: error.code.description, message: error.reason, offset: error.offset))
                decodeFailures += 1
            }
        }
        var items: [BatchItem] = []
        if let store {
            // One write for the decoded inputs, one per input sent as it is, then one marking
            // them pending.
            let decoded = accepted.filter { $0.decoded != nil }
            let recorded = try await audited("recording \(decoded.count) inputs", in: store) {
                try await store.record(
                    decoded.compactMap { a in
                        a.decoded.map { AuditIngest(decoded: $0, bytes: a.bytes, kind: a.kind, source: a.source, seenAt: Date()) }
                    })
            }
            var ids = Dictionary(uniqueKeysWithValues: zip(decoded.map(\.row), recorded.map(\.id)))
            for a in accepted where a.decoded == nil {
                ids[a.row] = try await audited("recording \(a.source)", in: store) {
                    try await store.recordUndecodable(bytes: a.bytes, receiptData: a.receiptData, kind: a.kind, source: a.source, seenAt: Date()).id
                }
            }
            try await audited("marking \(accepted.count) inputs pending", in: store) {
                try await store.markPending(accepted.compactMap { ids[$0.row] }, again: true)
            }
            items = accepted.compactMap { a in ids[a.row].map { BatchItem(id: Int($0), source: a.source, receiptData: a.receiptData) } }
        } else {
            items = accepted.enumerated().map { BatchItem(id: $0.offset, source: $0.element.source, receiptData: $0.element.receiptData) }
        }
        for (a, item) in zip(accepted, items) { rows[a.row] = .sent(item) }
        if let store, resume {
            let given = Set(items.map(\.id))
            for (id, data) in try await store.pending() where !given.contains(Int(id)) {
                let item = BatchItem(id: Int(id), source: "pending #\(id)", receiptData: data)
                items.append(item)
                rows.append(.sent(item))
            }
        }
        let progress = ProgressPrinter(total: items.count, interactive: isatty(STDERR_FILENO) != 0 && format == .text)
        let results = ResultCollector()
        // Made here, after every step that can fail before sending (an HTTP client must be shut
        // down before it goes away).
        let client = try online.makeClient(excludeOldTransactions: excludeOldTransactions, timeout: timeout)
        let batch = BatchVerifier(client: client, concurrency: online.concurrency)
        let onEvent: @Sendable (BatchEvent) -> Void = { event in
            progress.handle(event)
            // A failure keeps the attempts it made (the row shows every one).
            if let (id, outcome) = event.result { results.add(id, outcome) }
        }
        let summary: BatchSummary
        var auditErrors: [AuditError] = []
        if let store {
            let audited = await AuditedVerification(store: store, verifier: batch).run(BatchItems(items), onEvent: onEvent)
            summary = audited.batch
            auditErrors = audited.auditErrors
        } else {
            summary = await batch.run(BatchItems(items), onEvent: onEvent)
        }
        progress.finish(summary)
        try await client.shutdown()
        var outputs: [JSONValue] = []
        for row in rows {
            switch (row, format) {
            case (.sent(let item), .json): outputs.append(VerifyRendering.json(source: item.source, results.get(item.id)))
            case (.sent(let item), .text): print(VerifyRendering.text(source: item.source, results.get(item.id)), terminator: "")
            case (.notSent(let source, let code, let message, let offset), .json):
                var error: [String: JSONValue] = ["code": .string(code), "message": .string(message)]
                if let offset { error["offset"] = .integer(Int64(offset)) }
                outputs.append(.object(["source": .string(source), "error": .object(error)]))
            case (.notSent, .text): break  // said on standard error above
            }
        }
        if format == .json { print(InspectJSON.encode(outputs.count == 1 ? outputs[0] : .array(outputs))) }
        if let first = auditErrors.first {
            for error in auditErrors.dropFirst() { Standard.error("receiptdash: \(SafeText.escaped(error.reason))") }
            throw first
        }
        if decodeFailures > 0 || summary.valid != items.count { throw ExitCode.failure }
    }
}

/// Results by receipt id, filled from concurrent events.
final class ResultCollector: Sendable {
    private let results = Mutex<[Int: VerificationOutcome]>([:])

    func add(_ id: Int, _ result: VerificationOutcome) {
        results.withLock { $0[id] = result }
    }

    func get(_ id: Int) -> VerificationOutcome? {
        results.withLock { $0[id] }
    }
}

/// A progress bar on a terminal (standard error), plain lines otherwise.
final class ProgressPrinter: Sendable {
    private let total: Int
    private let interactive: Bool
    private let state = Mutex(State())

    struct State {
        var finished = 0
        var failed = 0
        var retrying = 0
        var lastDraw = DispatchTime.now().uptimeNanoseconds
    }

    init(total: Int, interactive: Bool) {
        self.total = total
        self.interactive = interactive
    }

    func handle(_ event: BatchEvent) {
        let total = total
        let interactive = interactive
        state.withLock { s in
            switch event {
            case .done(let id, let outcome, _):
                s.finished += 1
                if !interactive {
                    Self.line("done \(id): status \(outcome.status.map(String.init) ?? "?") (\(outcome.attempts.count) attempt\(outcome.attempts.count == 1 ? "" : "s"))")
                }
            case .failed(let id, let failure, _):
                s.finished += 1
                s.failed += 1
                if !interactive { Self.line("failed \(id): \(SafeText.escaped(failure.reason))") }
            case .retrying(let id, let seconds, let reason):
                s.retrying += 1
                if !interactive { Self.line(String(format: "retrying %d in %.2f s: ", id, seconds) + SafeText.escaped(reason.description)) }
            default: break
            }
            let now = DispatchTime.now().uptimeNanoseconds
            if interactive, now - s.lastDraw > 50_000_000 || s.finished == total {
                s.lastDraw = now
                let width = 30
                let filled = total == 0 ? width : width * s.finished / total
                let bar = String(repeating: "█", count: filled) + String(repeating: "·", count: width - filled)
                FileHandle.standardError.write(Data("\r[\(bar)] \(s.finished)/\(total) done, \(s.failed) failed, \(s.retrying) retries ".utf8))
            }
        }
    }

    func finish(_ summary: BatchSummary) {
        let interactive = interactive
        state.withLock { _ in
            if interactive { FileHandle.standardError.write(Data("\n".utf8)) }
            let statuses = summary.byStatus.keys.sorted().map { "\($0): \(summary.byStatus[$0]!)" }.joined(separator: ", ")
            Self.line("verified \(summary.queued): \(summary.done) answered (\(statuses.isEmpty ? "none" : statuses)), \(summary.failed) failed, \(summary.duplicates) duplicate\(summary.duplicates == 1 ? "" : "s")")
        }
    }

    private static func line(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }
}
