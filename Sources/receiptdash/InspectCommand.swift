import ArgumentParser
import CommandOptions
import Foundation
import JSONWriting
import LocalFiles
import ReceiptRendering
import ReceiptDemo
import ReceiptCore
import ReceiptTrust
import UntrustedText

extension OutputFormat: ExpressibleByArgument {}

struct Inspect: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
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
              receiptdash inspect --summary --where 'state:expired env:sandbox' receipts/
              receiptdash inspect --summary --format csv receipts/ > receipts.csv
            """
    )

    @Option(name: .long, help: "Output format: text or json (csv with --summary).")
    var format: TableFormat = .text

    @Flag(name: .long, help: "One line per receipt: file, verdict, environment, bundle, products, subscriptions active and expired, refunds, latest expiry, why.")
    var summary = false

    @Option(
        name: .customLong("where"),
        help: ArgumentHelp(
            "With --summary, only receipts where this holds (repeatable, all must): state:expired verdict:invalid env:sandbox product:ID bundle:ID file:GLOB, or words.",
            valueName: "filter"))
    var filters: [String] = []

    @Flag(name: .long, help: "Inspect the bundled demo receipts.")
    var demo = false

    @Option(name: .long, help: ArgumentHelp("Your Xcode-exported StoreKit certificate (DER), to check Xcode test receipts.", valueName: "file"))
    var storekitCert: String?

    @Option(name: .long, help: ArgumentHelp("Device identifier for the receipt's device hash: an identifierForVendor UUID, a MAC address (aa:bb:cc:dd:ee:ff), hex:… or base64:….", valueName: "id"))
    var deviceId: String?

    @Flag(name: .long, help: "Skip the offline signature and chain checks.")
    var noVerify = false

    @OptionGroup var online: OnlineChecksOption

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
        if format == .csv && !summary { throw ValidationError("--format csv goes with --summary (the full rendering is text or json).") }
        if !filters.isEmpty && !summary { throw ValidationError("--where filters --summary's lines: add --summary.") }
        if summary && combine { throw ValidationError("--summary gives one line per receipt; --combine analyses them together: give one.") }
        do { _ = try ReceiptFilter(filters) } catch { throw ValidationError("--where: \(error.reason).") }
        if let deviceId, DeviceIdentifier(parsing: deviceId) == nil {
            throw ValidationError("--device-id must be a UUID, a MAC address (aa:bb:cc:dd:ee:ff), hex:… or base64:….")
        }
    }

    func trustOptions() throws -> TrustOptions {
        var options = TrustOptions()
        options.deviceIdentifier = deviceId.flatMap(DeviceIdentifier.init(parsing:))
        options.onlineChecks = online.make()
        if let path = storekitCert {
            guard let der = try StoreKitCertificateFile.read(path) else { throw ValidationError("--storekit-cert: \(path) cannot be read.") }
            options.storeKitCertificate = der
        }
        return options
    }

    /// Reads the bundled Apple roots (about a millisecond of certificate parsing, done once).
    static func readBundledRoots() {
        _ = TrustAnchors.apple
    }

    func run() async throws {
        let instant = at.flatMap(TimeArgument.parse) ?? Date()
        let pipeline = ReceiptPipeline(at: instant, trustOptions: try trustOptions(), checksTrust: !noVerify)
        let inputs = InputFiles.origins(files).map { PendingInput.origin($0) } + (demo ? InputFiles.demo().map { .loaded($0) } : [])
        var run = InspectRun(inputs: inputs, pipeline: pipeline, format: format == .json ? .json : .text, combine: combine, console: .standard)
        if summary { run.summary = (format, try ReceiptFilter(filters)) }
        let failures = await run.run()
        if failures > 0 { throw ExitCode.failure }
    }
}
