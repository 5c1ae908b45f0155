import ArgumentParser
import Foundation
import ReceiptCore
import UntrustedText

/// Output formats of `inspect`.
enum OutputFormat: String, ExpressibleByArgument, CaseIterable {
    case text, json
}

struct Inspect: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Decode receipts offline and show what they contain.",
        discussion: """
            Each FILE may be a receipt in any supported format, a folder (its files are read in \
            name order), or - for standard input. The format is sniffed from the content.

            Exit status: 0 when every input decoded, 1 when any could not be (the others are \
            still reported; each error names the input and the reason on standard error).

            Examples:
              receiptdash inspect receipt.b64
              receiptdash inspect --format json receipts/ > decoded.json
              pbpaste | receiptdash inspect -
              receiptdash inspect --demo
            """
    )

    @Option(name: .long, help: "Output format: text or json.")
    var format: OutputFormat = .text

    @Flag(name: .long, help: "Inspect the bundled demo receipts.")
    var demo = false

    @Option(name: .long, help: ArgumentHelp("Your Xcode-exported StoreKit certificate (DER), to check Xcode test receipts.", valueName: "file"))
    var storekitCert: String?

    @Option(name: .long, help: ArgumentHelp("Device identifier for the receipt's device hash: an identifierForVendor UUID, a MAC address (aa:bb:cc:dd:ee:ff), hex:… or base64:….", valueName: "id"))
    var deviceId: String?

    @Flag(name: .long, help: "Skip the offline signature and chain checks.")
    var noVerify = false

    @Option(name: .long, help: ArgumentHelp("Judge subscriptions at this instant (ISO 8601, e.g. 2024-03-01T12:00:00Z; default: now).", valueName: "time"))
    var at: String?

    @Flag(name: .long, help: "Also analyse all inputs together, as one customer's (e.g. a receipt and Apple's response).")
    var combine = false

    @Argument(help: "Receipt files or folders, or - for standard input.")
    var files: [String] = []

    func validate() throws {
        if files.isEmpty && !demo {
            throw ValidationError("No input. Name receipt files or folders, '-' for standard input, or use --demo.")
        }
        try TimeArgument.check("--at", at)
        if let deviceId, DeviceIdentifier(parsing: deviceId) == nil {
            throw ValidationError("--device-id must be a UUID, a MAC address (aa:bb:cc:dd:ee:ff), hex:… or base64:….")
        }
    }

    func trustOptions() throws -> TrustOptions {
        var options = TrustOptions()
        options.deviceIdentifier = deviceId.flatMap(DeviceIdentifier.init(parsing:))
        if let path = storekitCert {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ValidationError("--storekit-cert: \(path) cannot be read.")
            }
            let bytes = [UInt8](data)
            // Accept DER, or PEM as Xcode's "Save Certificate" and openssl write it.
            if let text = String(bytes: bytes, encoding: .utf8), text.contains("-----BEGIN CERTIFICATE-----") {
                let body = text.components(separatedBy: "\n").filter { !$0.hasPrefix("-----") }.joined()
                options.storeKitCertificate = try Base64Text.decode(Array(body.utf8), what: "--storekit-cert PEM")
            } else {
                options.storeKitCertificate = bytes
            }
        }
        return options
    }

    func run() async throws {
        MemoryTuning.forBulkWork()
        let instant = at.flatMap(TimeArgument.parse) ?? Date()
        let pipeline = ReceiptPipeline(at: instant, trustOptions: try trustOptions(), checksTrust: !noVerify)
        // Listed now, read where each is judged: reading was a tenth of the time, in series.
        var loaded: [PendingInput] = InputFiles.origins(files).map { .origin($0) }
        if demo { loaded += InputFiles.demo().map { .loaded($0) } }
        // JSON is streamed to standard output: one object for one input, else an array.
        var json = JSONOutput(flushingTo: STDOUT_FILENO)
        if format == .json && loaded.count != 1 { json.beginArray() }
        var texts: [String] = []
        var decodedInputs: [DecodedInput] = []
        var failures = 0
        let format = self.format
        let keepDecoded = combine
        let depth = json.depth
        // Inputs are judged and rendered on every core, and written in their order.
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
                    return (index, await Self.render(read, with: pipeline, format: format, depth: depth, keepDecoded: keepDecoded))
                }
            }
            while next < loaded.count && next < inflight { start() }
            for await (index, rendered) in group {
                arrived[index] = rendered
                while let done = arrived.removeValue(forKey: written) {
                    written += 1
                    if let error = done.error {
                        failures += 1
                        Standard.error("receiptdash: \(loaded[written - 1].source): \(error.reason)")
                    }
                    if let decoded = done.decoded { decodedInputs.append(decoded) }
                    if let fragment = done.json { json.element(fragment) }
                    if let text = done.text { texts.append(text) }
                }
                if next < loaded.count { start() }
            }
        }
        if combine && decodedInputs.count > 1 {
            let analysis = PurchaseAnalysis.analyze(decodedInputs, at: instant)
            switch format {
            case .json:
                AnalysisRendering.write(analysis, extra: ["source": "combined", "format": "analysis"], into: &json)
            case .text:
                texts.append("combined analysis of \(decodedInputs.count) inputs\n" + AnalysisRendering.text(analysis).joined(separator: "\n") + "\n")
            }
        }
        switch format {
        case .json:
            if loaded.count != 1 { json.endArray() }
            json.newline()
            json.flush()
        case .text:
            print(texts.joined(separator: "\n"), terminator: "")
        }
        if failures > 0 { throw ExitCode.failure }
    }
}

/// An input named on the command line and not read yet, or one already in memory (the demo's).
enum PendingInput: Sendable {
    case origin(InputFiles.Origin)
    case loaded(LoadedInput)

    var source: String {
        switch self {
        case .origin(let origin): origin.source
        case .loaded(let input): input.source
        }
    }

    func read(limit: Int) -> LoadedInput {
        switch self {
        case .origin(let origin): InputFiles.read(origin, limit: limit)
        case .loaded(let input): input
        }
    }
}

/// One input judged and rendered, ready to be written in its turn.
struct Rendered: Sendable {
    var json: JSONOutput?
    var text: String?
    var decoded: DecodedInput?
    var error: ReceiptDecodingError?
}

extension Inspect {
    /// Judges one input and renders it (JSON as a fragment at `depth`, or text). Nonisolated:
    /// it runs on any core, beside the others.
    @concurrent nonisolated static func render(
        _ input: LoadedInput, with pipeline: ReceiptPipeline, format: OutputFormat, depth: Int, keepDecoded: Bool
    ) async -> Rendered {
        let judged = await pipeline.judge(input)
        var rendered = Rendered()
        switch judged.result {
        case .success(let value):
            let analysis = judged.analysis ?? PurchaseAnalysis.analyze([value], at: pipeline.instant)
            if keepDecoded { rendered.decoded = value }
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
            if format == .json {
                var out = JSONOutput(fragmentAtDepth: depth, capacity: 256)
                InspectJSON.write(error: error, source: input.source, into: &out)
                rendered.json = out
            }
        }
        return rendered
    }
}

/// The process's standard error. Every line written here may carry text from an input (a file
/// name, a JSON key in an error message), so every line goes through the one sanitiser.
enum Standard {
    static func error(_ line: String) {
        FileHandle.standardError.write(Data((SafeText.escaped(line) + "\n").utf8))
    }
}
