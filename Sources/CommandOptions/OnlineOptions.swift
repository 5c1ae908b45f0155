import AppStoreClients
import ArgumentParser
import Foundation
import OutboundHTTP
import AppStoreAPI
import ReceiptCore
import UntrustedText

/// The options every command that talks to verifyReceipt takes (`verify`, `watch`, the dashboard).
public struct OnlineOptions: ParsableArguments {
    public init() {}

    @Option(name: .long, help: ArgumentHelp("Production verifyReceipt URL (https; plain http on loopback only).", valueName: "url"))
    public var productionURL: String = VerifyReceiptEndpoints.appleProductionURL

    @Option(name: .long, help: ArgumentHelp("Sandbox verifyReceipt URL (https; plain http on loopback only).", valueName: "url"))
    public var sandboxURL: String = VerifyReceiptEndpoints.appleSandboxURL

    @Option(name: .long, help: ArgumentHelp("A file holding the app's shared secret (or RECEIPTDASH_SHARED_SECRET).", valueName: "file"))
    public var sharedSecretFile: String?

    @OptionGroup public var tls: TLSTrustOptions

    @Option(name: .long, help: "Receipts verified at the same time.")
    public var concurrency: Int = 8

    public func validate() throws {
        if concurrency < 1 || concurrency > 1024 { throw ValidationError("--concurrency must be between 1 and 1024.") }
        // A usage error (exit 64) before anything is sent: the secret must not cross the
        // network in clear.
        _ = try endpoints()
    }

    /// The endpoints these options name, checked (https, or http on a loopback host).
    public func endpoints() throws -> VerifyReceiptEndpoints {
        do {
            return try VerifyReceiptEndpoints(production: productionURL, sandbox: sandboxURL)
        } catch {
            throw ValidationError(error.reason)
        }
    }

    /// The client these options describe. The secret is read here, never from an argument.
    public func makeClient(excludeOldTransactions: Bool = false, timeout: Double = 20) throws -> VerifyReceiptClient {
        let secret: SharedSecret?
        do {
            secret = try SharedSecret.load(file: sharedSecretFile, environment: ProcessInfo.processInfo.environment, warn: Console.standard.warning)
        } catch {
            throw ValidationError("\(error)")
        }
        let endpoints = try endpoints()
        do {
            return VerifyReceiptClient(
                endpoints: endpoints, secret: secret,
                excludeOldTransactions: excludeOldTransactions, requestTimeout: .milliseconds(Int64(timeout * 1000)),
                extraTrustRoots: try tls.caFile.map { try OutboundHTTPClient.loadTrustRoots(file: $0) } ?? [])
        } catch {
            Console.standard.error("receiptdash: \(String(describing: error))")
            throw ExitStatus.usage
        }
    }
}
