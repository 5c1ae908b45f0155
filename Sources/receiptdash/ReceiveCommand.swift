import ArgumentParser
import Foundation
import Logging
import ReceiptCore
import ReceiptService
import UntrustedText

/// `receiptdash receive`: the App Store Server Notifications endpoint.
struct Receive: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Receive App Store Server Notifications V2: verify, deduplicate, store durably, then answer.",
        discussion: """
            POST /notifications takes {"signedPayload": "<JWS>"} (and legacy V1 JSON, whose password \
            is never stored). A notification is answered 200 only once it is committed to the audit \
            database; a redelivery (same notificationUUID) is counted, not stored twice. Not JSON or \
            no signedPayload: 400; signature, chain, bundle or app mismatch: 403 (recorded with its \
            reason and peer); a body over --max-body: 413. GET /health answers 200 while the store \
            is writable. SIGTERM or SIGINT: stop accepting, finish requests in flight, close the store.
            Plain HTTP: serve on loopback or behind a TLS reverse proxy (Apple requires TLS 1.2+).
            """)

    @Option(name: .long, help: "Address to listen on.")
    var host = "127.0.0.1"

    @Option(name: .long, help: "Port to listen on (0 picks a free one).")
    var port = 8098

    @OptionGroup var database: DatabaseOption

    @Option(name: .long, help: ArgumentHelp("An accepted bundle ID (repeatable; default: any).", valueName: "id"))
    var bundleId: [String] = []

    @Option(name: .long, help: ArgumentHelp("The app's Apple ID, checked when given.", valueName: "n"))
    var appAppleId: Int64?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "A root certificate (DER or PEM) to trust for test data (repeatable). Chains to it are stored as test, never valid.",
            valueName: "file"))
    var rootCa: [String] = []

    @Option(name: .long, help: ArgumentHelp("The largest body accepted, in bytes.", valueName: "bytes"))
    var maxBody = ReceiverPolicy.defaultMaximumBodySize

    @Option(name: .long, help: ArgumentHelp("Serve HTTPS (TLS 1.2+) with this certificate chain (PEM).", valueName: "file"))
    var tlsCert: String?

    @Option(name: .long, help: ArgumentHelp("The private key (PEM) of --tls-cert.", valueName: "file"))
    var tlsKey: String?

    func validate() throws {
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be 0…65535.") }
        guard maxBody > 0 else { throw ValidationError("--max-body must be positive.") }
        guard (tlsCert == nil) == (tlsKey == nil) else { throw ValidationError("--tls-cert and --tls-key go together.") }
    }

    func run() async throws {
        LoggingSystem.bootstrap(StreamLogHandler.standardError)
        let anchors: TrustAnchors
        do {
            anchors = try APIOptions.trustAnchors(rootCa: rootCa)
        } catch {
            FileHandle.standardError.write(Data("receiptdash: \(error)\n".utf8))
            throw ExitCode.failure
        }
        // SQLite commits with synchronous = FULL: an acknowledged notification survives a power
        // loss; PostgreSQL commits are flushed by the server.
        let backend = try await database.open(durable: true)
        let store = NotificationStore(backend: backend)
        let receiver = NotificationReceiver(
            sink: store,
            policy: ReceiverPolicy(allowedBundleIDs: bundleId, appAppleID: appAppleId, anchors: anchors, maximumBodySize: maxBody),
            // One registry for the process: a receiver's /metrics also counts its requests to Apple.
            metrics: ReceiverMetrics(registry: ServiceMetrics.shared.registry))
        let path = store.location
        var tls: ReceiverTLS?
        if let tlsCert, let tlsKey {
            do {
                tls = try ReceiverTLS(certificateFile: tlsCert, keyFile: tlsKey)
            } catch {
                await store.close()
                await backend.close()
                FileHandle.standardError.write(Data("receiptdash: \(SafeText.escaped(error.reason))\n".utf8))
                throw ExitCode.failure
            }
        } else if !["127.0.0.1", "::1", "localhost"].contains(host) {
            FileHandle.standardError.write(
                Data("receiptdash: note: plain HTTP on \(host): Apple delivers only over HTTPS (TLS 1.2+); use --tls-cert/--tls-key or a reverse proxy that terminates TLS\n".utf8))
        }
        let scheme = tls == nil ? "http" : "https"
        do {
            try await receiver.run(host: host, port: port, tls: tls) { address in
                // Written straight to the descriptor: a script waiting for this line gets it now.
                FileHandle.standardOutput.write(
                    Data("receiptdash: receiving App Store Server Notifications at \(scheme)://\(address)/notifications (store: \(path))\n".utf8))
            }
        } catch {
            await store.close()
            await backend.close()
            FileHandle.standardError.write(Data("receiptdash: \(SafeText.escaped("\(error)"))\n".utf8))
            throw ExitCode.failure
        }
        await store.close()
        await backend.close()
        print("receiptdash: stopped; store closed")
    }
}
