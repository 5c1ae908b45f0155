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

            The App Store Server API is served on the same port under /api/production and \
            /api/sandbox (both base URLs are printed at start): the customers of --api-data, or a \
            built-in demo customer (bundle id com.example.receiptdash, order ID MQ5X7ABCDE). Every \
            payload is signed by a test PKI made at start, shaped like Apple's; --api-root-out \
            writes its root (DER) for --root-ca. Tokens are checked as Apple does (ES256 with \
            --api-key-file, aud, bid, iss, exp at most 60 minutes after iat and not passed); \
            otherwise 401 with no body. --api-fault-rate injects 429 (Retry-After in UNIX ms), \
            5000001, HTTP 503 and dropped connections, repeatably with --seed.
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

    @Option(name: .long, help: ArgumentHelp("JSON customers for the App Store Server API (orders, transactions, renewals, notifications).", valueName: "file"))
    var apiData: String?

    @Option(
        name: .long,
        help: ArgumentHelp("PEM public key (or .p8 private key) API tokens must be signed with; without it any ES256 signature passes.", valueName: "pem"))
    var apiKeyFile: String?

    @Option(name: .long, help: ArgumentHelp("Write the API signing root certificate (DER) here, for --root-ca.", valueName: "file"))
    var apiRootOut: String?

    @Option(name: .long, help: ArgumentHelp("Share of API requests that get an injected fault (0 to 1).", valueName: "rate"))
    var apiFaultRate: Double = 0

    func validate() throws {
        if !(0...1).contains(faultRate) { throw ValidationError("--fault-rate must be between 0 and 1.") }
        if !(0...1).contains(apiFaultRate) { throw ValidationError("--api-fault-rate must be between 0 and 1.") }
        if latency < 0 { throw ValidationError("--latency must not be negative.") }
    }

    func run() async throws {
        let expected: SharedSecret?
        do {
            expected = try SharedSecret.load(file: secretFile, environment: ProcessInfo.processInfo.environment)
        } catch {
            throw ValidationError("\(error)")
        }
        let api: ServerAPIService
        do throws(ServerAPISimulatorError) {
            let publicKey = try apiKeyFile.map { file throws(ServerAPISimulatorError) in
                guard let data = FileManager.default.contents(atPath: file) else {
                    throw ServerAPISimulatorError(.invalidKey, "the API key file \(file) cannot be read")
                }
                return try ServerAPIConfiguration.publicKey(pem: String(decoding: data, as: UTF8.self))
            }
            let data = try apiData.map { file throws(ServerAPISimulatorError) in try ServerAPIData.load(file: file) }
            api = try ServerAPIService(
                ServerAPIConfiguration(
                    host: host, port: port, latency: latency / 1000, faultRate: apiFaultRate, seed: seed, data: data, publicKey: publicKey))
        } catch {
            throw ValidationError(error.reason)
        }
        if let apiRootOut {
            guard FileManager.default.createFile(atPath: apiRootOut, contents: Data(api.pki.rootDER)) else {
                throw ValidationError("--api-root-out: \(apiRootOut) cannot be written")
            }
        }
        let simulator = try await VerifyReceiptSimulator.start(
            SimulatorConfiguration(host: host, port: port, latency: latency / 1000, faultRate: faultRate, seed: seed, secret: expected),
            api: api)
        let tokens = apiKeyFile == nil ? "signature not checked (no --api-key-file)" : "checked against --api-key-file"
        let rootNote = apiRootOut.map { ", signing root written to \($0)" } ?? ""
        let banner = """
            production: \(simulator.productionURL)
            sandbox:    \(simulator.sandboxURL)
            shared secret: \(expected.map { "required (\($0.masked))" } ?? "not checked"), latency \(Int(latency)) ms, fault rate \(faultRate), seed \(seed)
            App Store Server API production: \(simulator.apiProductionURL)
            App Store Server API sandbox:    \(simulator.apiSandboxURL)
            API data: \(apiData ?? "built-in demo customer"), bundle id \(api.bundleID ?? "any"), tokens \(tokens), fault rate \(apiFaultRate)\(rootNote)

            """
        FileHandle.standardOutput.write(Data(banner.utf8))
        try await simulator.wait()
    }
}
