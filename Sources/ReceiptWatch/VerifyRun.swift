import AppStoreClients
import AuditTrail
import Foundation
import AppStoreAPI
import JSONWriting
import LocalFiles
import PlainWords
import ReceiptRendering
import ReceiptCore
import ReceiptTrust
import Synchronization
import UntrustedText

/// What `receiptdash verify` does once its arguments are read: decodes every input, records
/// them pending (with a store), sends them through the batch engine, then writes one row per
/// input in order. Inputs that are not sent (undecodable, not a verifyReceipt input) keep their
/// row with the reason.
public struct VerifyRun {
    public var files: [String]
    public var format: OutputFormat
    public var concurrency: Int
    /// Also verify what an interrupted run left pending in the store.
    public var resume: Bool
    /// Send what the decoder cannot read as it is, and record Apple's answer.
    public var sendUndecodable: Bool
    /// Where the results, the refusals and the progress are said.
    public var console: Console
    /// `--verbose`: a line per retry's wait where no progress bar is drawn (by default a
    /// retry shows only in the bar, and in the attempts of the item's result).
    public var verbose = false

    public init(files: [String], format: OutputFormat, concurrency: Int, resume: Bool, sendUndecodable: Bool, console: Console) {
        self.console = console
        self.files = files
        self.format = format
        self.concurrency = concurrency
        self.resume = resume
        self.sendUndecodable = sendUndecodable
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
        var kind: AuditSourceKind
        var bytes: [UInt8]
        /// Nil for an undecodable input sent as it is.
        var decoded: DecodedInput?
    }

    /// Verifies every input, recording in `store` when given. `makeClient` is called once every
    /// step that can fail before sending has passed (a client must be shut down before it goes
    /// away). Returns whether every input was sent and answered 0; an audit write that failed
    /// is thrown once the rows are written (the others named on standard error).
    public func run(recordingIn store: (any AuditBackend)?, makeClient: () throws -> VerifyReceiptClient) async throws -> Bool {
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
                    console.error("receiptdash: \(SafeText.escaped(input.source)): \(message)")
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
                            console.error("receiptdash: \(SafeText.escaped(input.source)): \(error.reason); sent as it is (--send-undecodable)")
                            accepted.append(Accepted(row: rows.count, source: input.source, receiptData: data, kind: kind, bytes: bytes, decoded: nil))
                            rows.append(.notSent(source: input.source, code: "", message: "", offset: nil))
                            continue
                        }
                    } else {
                        console.error(
                            "receiptdash: \(SafeText.escaped(input.source)): not sent (--send-undecodable): it names a \"password\" that could not be removed (not JSON)")
                    }
                }
                console.error("receiptdash: \(SafeText.escaped(input.source)): \(error.reason)")
                rows.append(.notSent(source: input.source, code: error.code.description, message: error.reason, offset: error.offset))
                decodeFailures += 1
            }
        }
        var items = try await record(accepted, in: store)
        for (a, item) in zip(accepted, items) { rows[a.row] = .sent(item) }
        if let store, resume {
            let given = Set(items.map(\.id))
            for (id, data) in try await store.pending() where !given.contains(Int(id)) {
                let item = BatchItem(id: Int(id), source: "pending #\(id)", receiptData: data)
                items.append(item)
                rows.append(.sent(item))
            }
        }
        let progress = VerifyProgress(
            total: items.count, names: Dictionary(items.map { ($0.id, $0.source) }, uniquingKeysWith: { first, _ in first }),
            interactive: console.errorIsTerminal && format == .text, verbose: verbose, console: console)
        let results = Mutex<[Int: VerificationOutcome]>([:])
        let client = try makeClient()
        let batch = BatchVerifier(client: client, concurrency: concurrency)
        let onEvent: @Sendable (BatchEvent) -> Void = { event in
            progress.handle(event)
            // A failure keeps the attempts it made (the row shows every one).
            if let (id, outcome) = event.result { results.withLock { $0[id] = outcome } }
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
        write(rows, results: results.withLock { $0 })
        if let first = auditErrors.first {
            for error in auditErrors.dropFirst() { console.error("receiptdash: \(SafeText.escaped(error.reason))") }
            throw first
        }
        return decodeFailures == 0 && summary.valid == items.count
    }

    /// Records the accepted inputs (one write for the decoded ones, one per input sent as it is,
    /// then one marking them pending) and returns their batch items, ids from the store.
    private func record(_ accepted: [Accepted], in store: (any AuditBackend)?) async throws -> [BatchItem] {
        guard let store else {
            return accepted.enumerated().map { BatchItem(id: $0.offset, source: $0.element.source, receiptData: $0.element.receiptData) }
        }
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
        return accepted.compactMap { a in ids[a.row].map { BatchItem(id: Int($0), source: a.source, receiptData: a.receiptData) } }
    }

    /// One row per input, in order: JSON (one object for one input, else an array) or text.
    private func write(_ rows: [Row], results: [Int: VerificationOutcome]) {
        var outputs: [JSONValue] = []
        for row in rows {
            switch (row, format) {
            case (.sent(let item), .json): outputs.append(VerifyRendering.json(source: item.source, results[item.id]))
            case (.sent(let item), .text): console.output(VerifyRendering.text(source: item.source, results[item.id]))
            case (.notSent(let source, let code, let message, let offset), .json):
                var error: [String: JSONValue] = ["code": .string(code), "message": .string(message)]
                if let offset { error["offset"] = .integer(Int64(offset)) }
                outputs.append(.object(["source": .string(source), "error": .object(error)]))
            case (.notSent, .text): break  // said on standard error as it was found
            }
        }
        if format == .json { console.line(InspectJSON.encode(outputs.count == 1 ? outputs[0] : .array(outputs))) }
    }
}

/// `verify`'s progress on the console's standard error: a bar on a terminal, a line per event
/// otherwise, each naming its input (`done receipts/a.b64: status 0 (1 attempt)`).
final class VerifyProgress: Sendable {
    private let total: Int
    /// Each item's input, by item id, as the lines name it.
    private let names: [Int: String]
    private let interactive: Bool
    private let verbose: Bool
    private let console: Console
    private let state = Mutex(State())

    struct State {
        var finished = 0
        var failed = 0
        var retrying = 0
        var lastDraw = DispatchTime.now().uptimeNanoseconds
    }

    init(total: Int, names: [Int: String] = [:], interactive: Bool, verbose: Bool = false, console: Console) {
        self.console = console
        self.verbose = verbose
        self.total = total
        self.names = names
        self.interactive = interactive
    }

    func handle(_ event: BatchEvent) {
        let total = total
        let interactive = interactive
        let verbose = verbose
        state.withLock { s in
            switch event {
            case .done(let id, let outcome, _):
                s.finished += 1
                if !interactive {
                    line("done \(name(id)): status \(outcome.status.map(String.init) ?? "?") (\(CountNoun.attempt.count(outcome.attempts.count)))")
                }
            case .failed(let id, let failure, _):
                s.finished += 1
                s.failed += 1
                if !interactive { line("failed \(name(id)): \(SafeText.escaped(failure.reason))") }
            case .retrying(let id, let seconds, let reason):
                s.retrying += 1
                if !interactive && verbose { line("retrying \(name(id)) " + String(format: "in %.2f s: ", seconds) + SafeText.escaped(reason.description)) }
            default: break
            }
            let now = DispatchTime.now().uptimeNanoseconds
            if interactive, now - s.lastDraw > 50_000_000 || s.finished == total {
                s.lastDraw = now
                let width = 30
                let filled = total == 0 ? width : width * s.finished / total
                let bar = String(repeating: "█", count: filled) + String(repeating: "·", count: width - filled)
                console.errorRaw("\r[\(bar)] \(s.finished)/\(total) done, \(s.failed) failed, \(s.retrying) retries ")
            }
        }
    }

    /// An item's input, escaped (a file name may hold anything), else its number.
    private func name(_ id: Int) -> String {
        names[id].map(SafeText.escaped) ?? "#\(id)"
    }

    func finish(_ summary: BatchSummary) {
        let interactive = interactive
        state.withLock { _ in
            if interactive { console.errorRaw("\n") }
            let statuses = summary.byStatus.keys.sorted().map { "\($0): \(summary.byStatus[$0]!)" }.joined(separator: ", ")
            line(
                "verified \(summary.queued): \(summary.done) answered (\(statuses.isEmpty ? "none" : statuses)), \(summary.failed) failed, \(CountNoun.duplicate.count(summary.duplicates))"
            )
        }
    }

    private func line(_ text: String) {
        console.errorRaw(text + "\n")
    }
}
