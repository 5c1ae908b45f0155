import AppStoreClients
import ArgumentParser
import AuditStore
import AuditTrail
import Foundation
import ReceiptCore

extension APIEnvironmentSelection: ExpressibleByArgument {}

struct Lookup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Look a customer up through the App Store Server API: by order ID, transaction ID, or a receipt.",
        discussion: """
            Finds the customer's transactions (every history page), subscription statuses, refunds \
            and renewal preferences, checks every signed item with receiptdash's own JWS trust \
            (chain at signedDate, bundleId and environment against the request), and judges each \
            subscription as `inspect --at` does. A receipt FILE is decoded and checked offline \
            first; its newest transaction id is looked up (the way off verifyReceipt).

            Credentials: an In-App Purchase key from App Store Connect (Users and Access › \
            Integrations), given by flags or RECEIPTDASH_API_ISSUER_ID, RECEIPTDASH_API_KEY_ID, \
            RECEIPTDASH_API_PRIVATE_KEY_FILE and RECEIPTDASH_BUNDLE_ID.

            Exit status: 0 found; 1 not found, refused or failed (the JSON carries `error`); 64 usage.

            Examples:
              receiptdash lookup --order-id MQ5X7ABCDE
              receiptdash lookup --transaction-id 2000000123456789 --format json
              receiptdash lookup receipt.b64 --environment sandbox

            Against the local simulator (`receiptdash simulator --api-root-out sim-root.der`):
              receiptdash lookup --order-id MQ5X7ABCDE --root-ca sim-root.der \\
                --api-production-url http://127.0.0.1:8080/api/production \\
                --api-sandbox-url http://127.0.0.1:8080/api/sandbox
            """
    )

    @Option(name: .long, help: ArgumentHelp("The Order ID from the customer's App Store invoice email (production only).", valueName: "id"))
    var orderId: String?

    @Option(name: .long, help: ArgumentHelp("Any transaction ID of the customer.", valueName: "id"))
    var transactionId: String?

    @Argument(help: ArgumentHelp("A receipt to take the transaction ID from (any format inspect reads), or - for standard input.", valueName: "file"))
    var file: String?

    @Option(name: .long, help: "Output format: text or json.")
    var format: OutputFormat = .text

    @Option(name: .long, help: ArgumentHelp("Judge subscriptions at this instant (ISO 8601; default: now).", valueName: "time"))
    var at: String?

    @Option(name: .long, help: "auto (production, then sandbox when production does not know the id), production or sandbox.")
    var environment: APIEnvironmentSelection = .auto

    @OptionGroup var recording: RecordingDatabaseOption
    var db: String? { recording.db }

    @OptionGroup(title: "App Store Server API")
    var api: APIOptions

    @Option(name: .long, help: ArgumentHelp("Extra trusted TLS root certificates (PEM or DER), e.g. a corporate proxy's.", valueName: "file"))
    var caFile: String?

    func validate() throws {
        let given = [orderId != nil, transactionId != nil, file != nil].filter { $0 }.count
        if given != 1 {
            throw ValidationError("Name exactly one of --order-id ID, --transaction-id ID or a receipt FILE.")
        }
        try TimeArgument.check("--at", at)
        for (flag, value) in [("--order-id", orderId), ("--transaction-id", transactionId)] {
            if let value, value.trimmingCharacters(in: .whitespaces).isEmpty { throw ValidationError("\(flag) is empty.") }
        }
        if orderId != nil && environment == .sandbox {
            throw ValidationError("Look Up Order ID exists in production only: order IDs come from real purchases. Drop --environment sandbox.")
        }
    }

    func run() async throws {
        let instant = at.flatMap(TimeArgument.parse) ?? Date()
        let failed: Bool
        do {
            let anchors = try api.trustAnchors()
            let pipeline = ReceiptPipeline(at: instant, evaluator: TrustEvaluator(anchors: anchors))
            let query = try await self.query(pipeline)
            let credentials = try api.credentials()
            let client = try api.makeClient(credentials, caFile: caFile)
            let service = CustomerLookupService(client: client, pipeline: pipeline)
            let events: @Sendable (APIClientEvent) -> Void = { event in
                if case .retrying(let endpoint, let seconds, let until, let after) = event {
                    let when = until.map { " until \(AppleDate.iso8601($0))" } ?? String(format: " %.1f s", seconds)
                    Standard.error("receiptdash: \(endpoint.rawValue): \(after); waiting\(when)")
                }
            }
            let store: (any AuditBackend)? = if let db { try await AuditOpening.open(db) } else { nil }
            let result = await service.lookUp(query, environment: environment, onEvent: events)
            try? await client.shutdown()
            write(result)
            var stored = true
            if let store {
                do {
                    _ = try await store.recordLookup(result, bundleID: credentials.bundleID, source: Self.name(query), at: Date())
                } catch {
                    Standard.error("receiptdash: the look-up could not be recorded in \(store.location): \(AuditStores.words(error))")
                    stored = false
                }
                await store.close()
            }
            failed = result.failure != nil || result.transactions.isEmpty || !stored
        } catch let error as APIOptionsError {
            writeError(code: "configuration", message: error.description)
            failed = true
        }
        if failed { throw ExitCode.failure }
    }

    /// How the look-up is named in the audit store and the dashboard.
    static func name(_ query: LookupQuery) -> String { query.auditSource }

    /// The query: the id given, or a receipt's newest transaction id after our own decode and
    /// trust check.
    private func query(_ pipeline: ReceiptPipeline) async throws -> LookupQuery {
        if let orderId { return .orderID(orderId.trimmingCharacters(in: .whitespaces)) }
        if let transactionId { return .transactionID(transactionId.trimmingCharacters(in: .whitespaces)) }
        let path = file ?? "-"
        let loaded = InputFiles.load([path], limit: pipeline.inputLimit)[0]
        let judged = await pipeline.judge(loaded)
        guard let decoded = judged.decoded else {
            throw APIOptionsError("\(path): \(judged.error?.reason ?? "could not be read")")
        }
        let purchases = (decoded.receipt?.inApp ?? []) + decoded.transactions + decoded.latestReceiptInfo
        let newest = purchases.filter { $0.transactionID != nil }
            .max { ($0.purchaseDate ?? .distantPast) < ($1.purchaseDate ?? .distantPast) }
        guard let id = newest?.transactionID else {
            throw APIOptionsError("\(path) holds no transaction id to look up (a receipt without in-app purchases).")
        }
        return .receipt(source: path, transactionID: id, verdict: judged.trust?.verdict)
    }

    private func write(_ result: CustomerLookupResult) {
        switch format {
        case .json:
            var out = JSONOutput(flushingTo: STDOUT_FILENO)
            LookupJSON.write(result, into: &out)
            out.newline()
            out.flush()
        case .text:
            print(LookupText.render(result), terminator: "")
            if let failure = result.failure { Standard.error("receiptdash: \(failure.reason)") }
        }
    }

    private func writeError(code: String, message: String) {
        switch format {
        case .json:
            var out = JSONOutput(flushingTo: STDOUT_FILENO)
            out.beginObject()
            out.key("error")
            out.beginObject()
            out.member("code", code)
            out.member("message", message)
            out.endObject()
            out.endObject()
            out.newline()
            out.flush()
        case .text:
            Standard.error("receiptdash: \(message)")
        }
    }
}
