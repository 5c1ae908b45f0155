import AppStoreClients
import ArgumentParser
import AuditTrail
import AuditTrailSQLite
import Foundation
import AppStoreAPI
import ReceiptRendering
import ReceiptCore
import UntrustedText

extension APIEnvironment: ExpressibleByArgument {
    public init?(argument: String) {
        switch argument.lowercased() {
        case "production": self = .production
        case "sandbox": self = .sandbox
        default: return nil
        }
    }
}

extension TableFormat: ExpressibleByArgument {}

struct Notifications: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notifications",
        abstract: "List the notifications a receiver stored, or reconcile them with Apple's Notification History.",
        discussion: """
            Lists what `receiptdash receive --db PATH` stored: one row per notificationUUID, its type \
            and subtype in words, product, transaction, trust verdict and how often it was delivered.

            With --reconcile, asks Apple's Get Notification History for the window (every page) and \
            lists what Apple sent that this store never received, with Apple's send attempts \
            (TIMED_OUT, TLS_ISSUE, …): are we missing events, and why.

            --bundle-id (of the API options) also filters the list to one app.

            Exit status: 0 listed (reconcile: nothing missing); 1 when reconciliation finds missing \
            notifications or fails; 64 usage.
            """
    )

    @Option(name: .long, help: ArgumentHelp("The receiver's audit database (default: the audit store's default path).", valueName: "path"))
    var db: String?

    @Option(name: .long, help: "Output format: text, json or csv (csv for the list only).")
    var format: TableFormat = .text

    @Option(name: .long, help: ArgumentHelp("Only notifications received at or after this time (ISO 8601, or a date: midnight UTC).", valueName: "time"))
    var since: String?

    @Option(name: .long, help: ArgumentHelp("Only this notification type (e.g. DID_RENEW; any case).", valueName: "type"))
    var type: String?

    @Flag(name: .long, help: "Reconcile with Apple's Notification History instead of listing.")
    var reconcile = false

    @Option(name: .long, help: ArgumentHelp("Reconcile: the window's start (ISO 8601; at most 180 days back, 30 in sandbox).", valueName: "time"))
    var start: String?

    @Option(name: .long, help: ArgumentHelp("Reconcile: the window's end (ISO 8601; default now).", valueName: "time"))
    var end: String?

    @Option(name: .long, help: "Reconcile: production or sandbox.")
    var environment: APIEnvironment = .production

    @OptionGroup(title: "App Store Server API (for --reconcile)")
    var api: APIOptions

    /// What `--type` may name: every V2 type and the V1 ones, matched whatever the case.
    static let knownTypes = NotificationExplanation.knownTypes.union([
        "CANCEL", "DID_RECOVER", "INITIAL_BUY", "INTERACTIVE_RENEWAL", "PRICE_INCREASE_CONSENT", "RENEWAL",
    ])

    func validate() throws {
        for (flag, value) in [("--since", since), ("--start", start), ("--end", end)] { try TimeArgument.check(flag, value) }
        if let type, !Self.knownTypes.contains(type.uppercased()) {
            throw ValidationError(
                "--type \(type) is not a notification type; known types: \(Self.knownTypes.sorted().joined(separator: ", ")) (any case)")
        }
        if reconcile {
            if start == nil { throw ValidationError("--reconcile needs --start TIME (the window's start).") }
            if format == .csv { throw ValidationError("--reconcile writes text or json.") }
        } else if start != nil || end != nil {
            throw ValidationError("--start and --end belong to --reconcile; to filter the list, use --since.")
        }
    }

    func run() async throws {
        let path = db ?? AuditStore.defaultPath(environment: ProcessInfo.processInfo.environment)
        let backend: any AuditBackend
        do {
            backend = try await AuditStores.open(path, readOnly: true)
        } catch {
            if !AuditDatabase.isPostgres(path), !FileManager.default.fileExists(atPath: path) {
                Standard.error("receiptdash: no audit database at \(path) yet: `receiptdash receive --db \(path)` stores notifications there")
            } else {
                Standard.error("receiptdash: \(error.reason)")
            }
            throw ExitCode.failure
        }
        do {
            if reconcile {
                let have = try await backend.notificationUUIDs()
                await backend.close()
                try await runReconcile(have)
                return
            }
            let filter = NotificationFilter(since: since.flatMap(TimeArgument.parse), type: type, bundleID: api.bundleId)
            try await backend.writeNotificationList(filter, format: format, to: .standard)
            await backend.close()
        } catch let error as ExitCode {
            throw error
        } catch {
            await backend.close()
            Standard.error("receiptdash: could not read notifications from \(path): \(AuditStores.words(error))")
            throw ExitCode.failure
        }
    }

    private func runReconcile(_ have: Set<String>) async throws {
        let startDate = start.flatMap(TimeArgument.parse) ?? Date()
        let endDate = end.flatMap(TimeArgument.parse) ?? Date()
        let credentials: APICredentials
        do {
            credentials = try api.credentials()
        } catch let error as APIOptionsError {
            Standard.error("receiptdash: \(error.description)")
            throw ExitCode.failure
        }
        let client = try api.makeClient(credentials, caFile: nil)
        let report = await NotificationReconciler(client: client).reconcile(
            received: have, start: startDate, end: endDate, environment: environment
        ) { event in
            if let waiting = event.waitingLine { Standard.error("receiptdash: \(waiting)") }
        }
        try? await client.shutdown()
        report.write(json: format != .text, to: .standard)
        if report.failure != nil || !report.missing.isEmpty { throw ExitCode.failure }
    }
}
