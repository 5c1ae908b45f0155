import ArgumentParser
import Dashboard
import Foundation
import ReceiptCore
import ReceiptService
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

            Exit status: 0 when every receipt got status 0, 1 otherwise.

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

    @Option(name: .long, help: ArgumentHelp("Record receipts, attempts and results in this audit database.", valueName: "path"))
    var db: String?

    @Flag(name: .long, help: "Also verify the receipts an interrupted run left pending in --db.")
    var resume = false

    @Option(name: .long, help: ArgumentHelp("Seconds a single request may take.", valueName: "seconds"))
    var timeout: Double = 20

    @Argument(help: "Receipt files or folders, or - for standard input.")
    var files: [String] = []

    func validate() throws {
        if files.isEmpty && !resume { throw ValidationError("No input. Name receipt files or folders, or '-' for standard input.") }
        if resume && db == nil { throw ValidationError("--resume needs --db PATH.") }
    }

    func run() async throws {
        let client = try online.makeClient(excludeOldTransactions: excludeOldTransactions, timeout: timeout)
        let decoder = ReceiptDecoder()
        let store = try db.map { try AuditStore(path: $0) }
        var accepted: [(source: String, receiptData: String, ingest: AuditStore.Ingest)] = []
        var decodeFailures = 0
        for input in InputFiles.load(files, limit: decoder.limits.maximumInputBytes) {
            switch input.result.flatMap({ bytes in decoder.result(bytes).map { (bytes, $0) } }) {
            case .success(let (bytes, decoded)):
                guard let data = VerifyReceiptData.base64(decoded) else {
                    Standard.error("receiptdash: \(SafeText.escaped(input.source)): \(decoded.format.rawValue) is not a receipt verifyReceipt accepts")
                    decodeFailures += 1
                    continue
                }
                let kind: AuditStore.SourceKind = input.source == "-" ? .stdin : .file
                accepted.append((input.source, data, AuditStore.Ingest(decoded: decoded, bytes: bytes, kind: kind, source: input.source, seenAt: Date())))
            case .failure(let error):
                Standard.error("receiptdash: \(SafeText.escaped(input.source)): \(error.reason)")
                decodeFailures += 1
            }
        }
        var items: [BatchItem]
        if let store {
            // One write for all the inputs, then one marking them pending.
            let recorded = try store.record(accepted.map(\.ingest))
            try store.markPending(recorded.map(\.id), again: true)
            items = zip(accepted, recorded).map { BatchItem(id: Int($1.id), source: $0.source, receiptData: $0.receiptData) }
        } else {
            items = accepted.enumerated().map { BatchItem(id: $0.offset, source: $0.element.source, receiptData: $0.element.receiptData) }
        }
        if let store, resume {
            let given = Set(items.map(\.id))
            for (id, data) in try store.pending() where !given.contains(Int(id)) {
                items.append(BatchItem(id: Int(id), source: "pending #\(id)", receiptData: data))
            }
        }
        let progress = ProgressPrinter(total: items.count, interactive: isatty(STDERR_FILENO) != 0 && format == .text)
        let results = ResultCollector()
        let batch = BatchVerifier(client: client, concurrency: online.concurrency)
        let onEvent: @Sendable (BatchEvent) -> Void = { event in
            progress.handle(event)
            if case .done(let id, let outcome, _) = event { results.add(id, .success(outcome)) }
            if case .failed(let id, let reason, _) = event { results.add(id, .failure(reason)) }
        }
        let summary =
            if let store {
                await AuditedVerification(store: store, verifier: batch).run(BatchItems(items), onEvent: onEvent)
            } else {
                await batch.run(BatchItems(items), onEvent: onEvent)
            }
        progress.finish(summary)
        try await client.shutdown()
        var outputs: [JSONValue] = []
        for item in items {
            let result = results.get(item.id)
            switch format {
            case .json: outputs.append(Self.json(item, result))
            case .text: print(Self.text(item, result), terminator: "")
            }
        }
        if format == .json { print(InspectJSON.encode(outputs.count == 1 ? outputs[0] : .array(outputs))) }
        if decodeFailures > 0 || summary.valid != items.count { throw ExitCode.failure }
    }

    static func json(_ item: BatchItem, _ result: Result<VerificationOutcome, String>?) -> JSONValue {
        var o: [String: JSONValue] = ["source": .string(item.source)]
        switch result {
        case .success(let outcome)?:
            o["status"] = outcome.status.map { .integer(Int64($0)) } ?? .null
            o["environment"] = outcome.environment.map(JSONValue.string) ?? .null
            o["attempts"] = .array(
                outcome.attempts.map { a in
                    var attempt: [String: JSONValue] = [
                        "url": .string(a.url), "latency_ms": .number((a.latencyMilliseconds * 10).rounded() / 10),
                    ]
                    if let s = a.status { attempt["status"] = .integer(Int64(s)) }
                    if let h = a.httpStatus { attempt["http_status"] = .integer(Int64(h)) }
                    if let e = a.error { attempt["error"] = .string(e) }
                    if let r = a.isRetryable { attempt["is-retryable"] = .bool(r) }
                    if let w = a.retryAfterSeconds { attempt["retried_after_s"] = .number((w * 1000).rounded() / 1000) }
                    return .object(attempt)
                })
            if let e = outcome.explanation {
                o["explanation"] = .object([
                    "title": .string(e.title), "explanation": .string(e.explanation), "next_step": .string(e.nextStep),
                    "retryable": .bool(e.retryable),
                ])
            }
            if let response = outcome.response { o["response"] = InspectJSON.object(for: response) }
        case .failure(let reason)?:
            o["status"] = .null
            o["error"] = .string(reason)
        case nil:
            o["error"] = .string("not verified")
        }
        return .object(o)
    }

    static func text(_ item: BatchItem, _ result: Result<VerificationOutcome, String>?) -> String {
        var lines = [SafeText.escaped(item.source)]
        switch result {
        case .success(let outcome)?:
            let e = outcome.explanation
            lines.append("  Status          \(outcome.status.map(String.init) ?? "?") \(e?.title ?? "")")
            if let e {
                lines.append("                  \(e.explanation)")
                lines.append("  Next            \(e.nextStep)")
            }
            lines.append("  Environment     \(outcome.environment ?? "?")")
            for (i, a) in outcome.attempts.enumerated() {
                var text = "  Attempt \(i + 1)       \(a.url) → "
                text += a.resultText
                text += String(format: " in %.0f ms", a.latencyMilliseconds)
                if let w = a.retryAfterSeconds { text += String(format: ", retried after %.2f s", w) }
                lines.append(text)
            }
            if let response = outcome.response, let bundle = response.bundleID {
                lines.append("  Bundle id       \(SafeText.escaped(bundle))")
                lines.append("  Purchases       \(response.allPurchases.count)")
            }
        case .failure(let reason)?:
            lines.append("  Failed          \(SafeText.escaped(reason))")
        case nil:
            lines.append("  Failed          not verified")
        }
        return lines.joined(separator: "\n") + "\n\n"
    }
}

/// Results by receipt id, filled from concurrent events.
final class ResultCollector: @unchecked Sendable {
    private let lock = NSLock()
    private var results: [Int: Result<VerificationOutcome, String>] = [:]

    func add(_ id: Int, _ result: Result<VerificationOutcome, String>) {
        lock.lock()
        results[id] = result
        lock.unlock()
    }

    func get(_ id: Int) -> Result<VerificationOutcome, String>? {
        lock.lock()
        defer { lock.unlock() }
        return results[id]
    }
}

extension String: @retroactive Error {}

/// A progress bar on a terminal (standard error), plain lines otherwise.
final class ProgressPrinter: @unchecked Sendable {
    private let lock = NSLock()
    private let total: Int
    private let interactive: Bool
    private var finished = 0
    private var failed = 0
    private var retrying = 0
    private var lastDraw = DispatchTime.now().uptimeNanoseconds

    init(total: Int, interactive: Bool) {
        self.total = total
        self.interactive = interactive
    }

    func handle(_ event: BatchEvent) {
        lock.lock()
        defer { lock.unlock() }
        switch event {
        case .done(let id, let outcome, _):
            finished += 1
            if !interactive { line("done \(id): status \(outcome.status.map(String.init) ?? "?") (\(outcome.attempts.count) attempt\(outcome.attempts.count == 1 ? "" : "s"))") }
        case .failed(let id, let reason, _):
            finished += 1
            failed += 1
            if !interactive { line("failed \(id): \(reason)") }
        case .retrying(let id, let seconds, let reason):
            retrying += 1
            if !interactive { line(String(format: "retrying %d in %.2f s: %@", id, seconds, reason)) }
        default: break
        }
        let now = DispatchTime.now().uptimeNanoseconds
        if interactive, now - lastDraw > 50_000_000 || finished == total {
            lastDraw = now
            let width = 30
            let filled = total == 0 ? width : width * finished / total
            let bar = String(repeating: "█", count: filled) + String(repeating: "·", count: width - filled)
            FileHandle.standardError.write(Data("\r[\(bar)] \(finished)/\(total) done, \(failed) failed, \(retrying) retries ".utf8))
        }
    }

    func finish(_ summary: BatchSummary) {
        lock.lock()
        defer { lock.unlock() }
        if interactive { FileHandle.standardError.write(Data("\n".utf8)) }
        let statuses = summary.byStatus.keys.sorted().map { "\($0): \(summary.byStatus[$0]!)" }.joined(separator: ", ")
        line("verified \(summary.queued): \(summary.done) answered (\(statuses.isEmpty ? "none" : statuses)), \(summary.failed) failed, \(summary.duplicates) duplicate\(summary.duplicates == 1 ? "" : "s")")
    }

    private func line(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }
}
