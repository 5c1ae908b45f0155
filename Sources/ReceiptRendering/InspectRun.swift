import AppStoreAPI
import JSONWriting
import LocalFiles
import ReceiptCore
import ReceiptTrust
import Foundation
import UntrustedText


/// What `receiptdash inspect` does once its arguments are read: judges every input on every
/// core, writes each rendering in input order (JSON streamed to the console's standard output:
/// one object for one input, else an array), then the combined analysis when asked.
public struct InspectRun: Sendable {
    public var inputs: [PendingInput]
    public var pipeline: ReceiptPipeline
    public var format: OutputFormat
    /// Also analyse every decoded input together, as one customer's.
    public var combine: Bool
    /// Where the renderings and the failures go.
    public var console: Console
    /// `--summary`: one line per receipt in this format, only those the filter keeps (instead
    /// of the full renderings).
    public var summary: (format: TableFormat, filter: ReceiptFilter)?

    public init(inputs: [PendingInput], pipeline: ReceiptPipeline, format: OutputFormat, combine: Bool, console: Console) {
        self.console = console
        self.inputs = inputs
        self.pipeline = pipeline
        self.format = format
        self.combine = combine
    }

    /// Writes every input's rendering; failures are named on standard error. Returns how many
    /// inputs could not be decoded.
    public func run() async -> Int {
        MemoryTuning.forBulkWork()
        let loaded = inputs
        let pipeline = pipeline
        var json = JSONOutput(flushingTo: console)
        // `--summary` writes its own array (one element per kept receipt, whatever the count).
        let wholeArray = summary == nil && format == .json && loaded.count != 1
        if wholeArray { json.beginArray() }
        var texts: [String] = []
        var decodedInputs: [DecodedInput] = []
        var failures = 0
        let format = self.format
        let keepDecoded = combine
        let summary = self.summary
        if let summary {
            switch summary.format {
            case .json: json.beginArray()
            case .csv: console.line(ReceiptSummary.csvHeader)
            case .text: break
            }
        }
        let depth = json.depth
        // Listed first, read where each is judged: reading was a tenth of the time, in series.
        let inflight = 2 * max(1, ProcessInfo.processInfo.activeProcessorCount)
        await withTaskGroup(of: (Int, Rendered).self) { group in
            var next = 0
            var arrived: [Int: Rendered] = [:]
            var written = 0
            func start() {
                let index = next
                let input = loaded[index]
                next += 1
                group.addTask {
                    let read = input.read(limit: pipeline.inputLimit)
                    return (
                        index, await Self.render(read, with: pipeline, format: format, depth: depth, keepDecoded: keepDecoded, summary: summary != nil)
                    )
                }
            }
            while next < loaded.count && next < inflight { start() }
            for await (index, rendered) in group {
                arrived[index] = rendered
                while let done = arrived.removeValue(forKey: written) {
                    written += 1
                    if let error = done.error {
                        failures += 1
                        console.error("receiptdash: \(loaded[written - 1].source): \(error.reason)")
                    }
                    if let decoded = done.decoded { decodedInputs.append(decoded) }
                    if let line = done.summary, let summary {
                        // Written as it comes, in input order: the first line appears before the
                        // last file is read.
                        if summary.filter.matches(line) {
                            switch summary.format {
                            case .json:
                                line.json(into: &json)
                                json.flush()
                            case .csv: console.line(line.csvLine)
                            case .text: console.line(line.textLine)
                            }
                        }
                        continue
                    }
                    if let fragment = done.json { json.element(fragment) }
                    if let text = done.text { texts.append(text) }
                }
                if next < loaded.count { start() }
            }
        }
        if let summary {
            if summary.format == .json {
                json.endArray()
                json.newline()
                json.flush()
            }
            return failures
        }
        if combine && decodedInputs.count > 1 {
            let analysis = PurchaseAnalysis.analyze(decodedInputs, at: pipeline.instant)
            switch format {
            case .json:
                AnalysisRendering.write(analysis, extra: ["source": "combined", "format": "analysis"], into: &json)
            case .text:
                texts.append("combined analysis of \(decodedInputs.count) inputs\n" + AnalysisRendering.text(analysis).joined(separator: "\n") + "\n")
            }
        }
        switch format {
        case .json:
            if wholeArray { json.endArray() }
            json.newline()
            json.flush()
        case .text:
            console.output(texts.joined(separator: "\n"))
        }
        return failures
    }

    /// One input judged and rendered, ready to be written in its turn.
    struct Rendered: Sendable {
        var json: JSONOutput?
        var text: String?
        var decoded: DecodedInput?
        var error: ReceiptDecodingError?
        var summary: ReceiptSummary?
    }

    /// Judges one input and renders it (JSON as a fragment at `depth`, or text). Nonisolated:
    /// it runs on any core, beside the others.
    @concurrent nonisolated static func render(
        _ input: LoadedInput, with pipeline: ReceiptPipeline, format: OutputFormat, depth: Int, keepDecoded: Bool, summary: Bool = false
    ) async -> Rendered {
        let judged = await pipeline.judge(input)
        var rendered = Rendered()
        switch judged.result {
        case .success(let value):
            let analysis = judged.analysis ?? PurchaseAnalysis.analyze([value], at: pipeline.instant)
            if keepDecoded { rendered.decoded = value }
            if summary {
                rendered.summary = ReceiptSummary(file: input.source, decoded: value, trust: judged.trust, analysis: analysis)
                return rendered
            }
            switch format {
            case .json:
                // The JSON runs to about 3.4 times a receipt's size: room for it at once.
                let size = (try? input.result.get().count) ?? 0
                var out = JSONOutput(fragmentAtDepth: depth, capacity: max(64 * 1024, 4 * size))
                InspectJSON.write(value, source: input.source, trust: judged.trust, analysis: analysis, into: &out)
                rendered.json = out
            case .text:
                let extra = AnalysisRendering.text(analysis)
                rendered.text =
                    TextSummary.render(value, title: input.source, trust: judged.trust)
                    + (extra.isEmpty ? "" : extra.joined(separator: "\n") + "\n")
            }
        case .failure(let error):
            rendered.error = error
            if summary {
                rendered.summary = ReceiptSummary(file: input.source, error: error)
                return rendered
            }
            if format == .json {
                var out = JSONOutput(fragmentAtDepth: depth, capacity: 256)
                InspectJSON.write(error: error, source: input.source, into: &out)
                rendered.json = out
            }
        }
        return rendered
    }
}

/// An input named on the command line and not read yet, or one already in memory (the demo's).
public enum PendingInput: Sendable {
    case origin(InputFiles.Origin)
    case loaded(LoadedInput)

    public var source: String {
        switch self {
        case .origin(let origin): origin.source
        case .loaded(let input): input.source
        }
    }

    public func read(limit: Int) -> LoadedInput {
        switch self {
        case .origin(let origin): InputFiles.read(origin, limit: limit)
        case .loaded(let input): input
        }
    }
}
