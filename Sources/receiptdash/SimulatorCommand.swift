import ArgumentParser
import Foundation
import ReceiptService
import ReceiptSimulator

struct Simulator: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve a local App Store verifyReceipt on loopback, for offline tests, demos and QA.",
        discussion: """
            Production answers at /production/verifyReceipt and sandbox at /sandbox/verifyReceipt. \
            The posted receipt is decoded locally and answered as Apple would: 0 with receipt, \
            latest_receipt_info and pending_renewal_info; 21007 for a sandbox receipt sent to \
            production, 21008 the other way; 21002 for garbage; 21004 for a wrong secret; 21006 for \
            an expired iOS 6 subscription. --fault-rate injects 21005, 21100-21199 (is-retryable), \
            HTTP 503, dropped connections and slow answers, repeatably with --seed.

            The simulator's own shared secret (the password subscription receipts must come with) \
            is read from --secret-file or RECEIPTDASH_SHARED_SECRET, never from an argument \
            (the command line is visible to every user in ps).
            """
    )

    @Option(name: .long, help: "Address to listen on (loopback by default).")
    var host = "127.0.0.1"

    @Option(name: .long, help: "Port (0 picks a free one).")
    var port = 8099

    @Option(name: .long, help: ArgumentHelp("Added to every answer, in milliseconds.", valueName: "ms"))
    var latency: Double = 0

    @Option(name: .long, help: ArgumentHelp("Share of requests that get an injected fault (0 to 1).", valueName: "rate"))
    var faultRate: Double = 0

    @Option(name: .long, help: "Seed for the fault sequence.")
    var seed: UInt64 = 1

    @Option(name: .long, help: ArgumentHelp("A file holding the shared secret this simulator expects.", valueName: "file"))
    var secretFile: String?

    func validate() throws {
        if !(0...1).contains(faultRate) { throw ValidationError("--fault-rate must be between 0 and 1.") }
        if latency < 0 { throw ValidationError("--latency must not be negative.") }
    }

    func run() async throws {
        let expected: SharedSecret?
        do {
            expected = try SharedSecret.load(file: secretFile, environment: ProcessInfo.processInfo.environment)
        } catch {
            throw ValidationError("\(error)")
        }
        let simulator = try await VerifyReceiptSimulator.start(
            SimulatorConfiguration(host: host, port: port, latency: latency / 1000, faultRate: faultRate, seed: seed, secret: expected))
        let banner = """
            production: \(simulator.productionURL)
            sandbox:    \(simulator.sandboxURL)
            shared secret: \(expected.map { "required (\($0.masked))" } ?? "not checked"), latency \(Int(latency)) ms, fault rate \(faultRate), seed \(seed)

            """
        FileHandle.standardOutput.write(Data(banner.utf8))
        try await simulator.wait()
    }
}
