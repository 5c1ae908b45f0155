import ArgumentParser
import Foundation
import ReceiptService

/// The options every command that talks to verifyReceipt takes (`verify`, the dashboard).
struct OnlineOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Production verifyReceipt URL.", valueName: "url"))
    var productionURL: String = VerifyReceiptEndpoints.apple.production

    @Option(name: .long, help: ArgumentHelp("Sandbox verifyReceipt URL.", valueName: "url"))
    var sandboxURL: String = VerifyReceiptEndpoints.apple.sandbox

    @Option(name: .long, help: ArgumentHelp("A file holding the app's shared secret (or RECEIPTDASH_SHARED_SECRET).", valueName: "file"))
    var sharedSecretFile: String?

    @Option(name: .long, help: ArgumentHelp("Extra trusted root certificates (PEM or DER), e.g. a corporate proxy's.", valueName: "file"))
    var caFile: String?

    @Option(name: .long, help: "Receipts verified at the same time.")
    var concurrency: Int = 8

    func validate() throws {
        if concurrency < 1 || concurrency > 1024 { throw ValidationError("--concurrency must be between 1 and 1024.") }
    }

    /// The client these options describe. The secret is read here, never from an argument.
    func makeClient(excludeOldTransactions: Bool = false, timeout: Double = 20) throws -> VerifyReceiptClient {
        let secret: SharedSecret?
        do {
            secret = try SharedSecret.load(file: sharedSecretFile, environment: ProcessInfo.processInfo.environment)
        } catch {
            throw ValidationError("\(error)")
        }
        return VerifyReceiptClient(
            endpoints: VerifyReceiptEndpoints(production: productionURL, sandbox: sandboxURL), secret: secret,
            excludeOldTransactions: excludeOldTransactions, requestTimeout: .milliseconds(Int64(timeout * 1000)),
            extraTrustRoots: try caFile.map { try VerifyReceiptClient.loadTrustRoots(file: $0) } ?? [])
    }
}
