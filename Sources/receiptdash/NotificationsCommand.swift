import AppStoreClients
import ArgumentParser
import AuditTrail
import AuditTrailSQLite
import CommandOptions
import Foundation
import JSONWriting
import NotificationReceiver
import ScheduledReconciliation
import AppStoreAPI
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

/// `notifications --format`: the table formats, and `jsonl` (one JSON object a line) for
/// `--follow`.
enum NotificationsFormat: String, ExpressibleByArgument, CaseIterable {
    case text, json, csv, jsonl

    var table: TableFormat {
        switch self {
        case .text: .text
        case .json, .jsonl: .json
        case .csv: .csv
        }
    }
}

struct Notifications: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notifications",
        abstract: "List the notifications a receiver stored, or reconcile them with Apple's Notification History.",
        discussion: """
            Lists what `receiptdash receive --db PATH` stored: one row per notificationUUID, its type \
            and subtype in words, product, transaction, trust verdict and how often it was delivered.

            With --reconcile, asks Apple's Get Notification History for the window (every page) and \
            lists what Apple sent that this store never received, with Apple's send attempts \
            (TIMED_OUT, TLS_ISSUE, …): are we missing events, and why. With --ingest it also \
            stores each of them, verified exactly as the receiver verifies a POST from Apple \
            (source: history): a backfill after an outage.

            --follow streams each notification as it is stored (--format jsonl: one JSON object a \
            line, with the row id --after-id resumes after). --refusals lists refused requests by \
            reason. --outbox lists forwarding's deliveries (receive --forward); --replay queues \
            notifications again, or with --to sends them to a new URL.

            --bundle-id (of the API options) also filters the list to one app.

            Exit status: 0 listed (reconcile: nothing missing); 1 when reconciliation finds missing \
            notifications or fails; 64 usage or a setting that cannot be used (credentials, a key file).
            """
    )

    @Option(name: .long, help: ArgumentHelp("The receiver's audit database (default: the audit store's default path).", valueName: "path"))
    var db: String?

    @Option(name: .long, help: "Output format: text, json or csv (csv for the list only); jsonl with --follow.")
    var format: NotificationsFormat = .text

    @Flag(name: .long, help: "Follow: one line per notification as it is stored (from the end, --since or --after-id), until stopped.")
    var follow = false

    @Option(name: .long, help: ArgumentHelp("Follow: start after this row id (a JSON line's id), to resume.", valueName: "n"))
    var afterId: Int64?

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

    @Flag(
        name: .long,
        help: "Reconcile: store each missing notification, verified exactly as the receiver verifies a POST (source: history).")
    var ingest = false

    @Option(name: .long, help: ArgumentHelp("Reconcile: only this subtype (with --type).", valueName: "subtype"))
    var subtype: String?

    @Option(name: .long, help: ArgumentHelp("Reconcile: only this customer (any transaction id of theirs; not with --type).", valueName: "id"))
    var transactionId: String?

    @Flag(name: .long, help: "Reconcile: only notifications Apple failed to deliver.")
    var onlyFailures = false

    @OptionGroup(title: "App Store Server API (for --reconcile)")
    var api: APIOptions

    /// Trusted roots for Apple's Notification History (--reconcile) and --replay --to's targets.
    @OptionGroup var tls: TLSTrustOptions

    @Flag(name: .long, help: "--reconcile: say each retry's wait on a line of its own (default: one line rewritten in place on a terminal, none elsewhere).")
    var verbose = false

    @Flag(name: .long, help: "List the refused requests by reason (count, addresses, last seen), since --since (default: the last 24 h).")
    var refusals = false

    @Flag(name: .long, help: "List Retention Messaging realtime requests (receive --retention-path): each answer, or why none, oldest first.")
    var retention = false

    @Flag(
        name: .long,
        help: "List Apple's refund requests (CONSUMPTION_REQUEST), newest first: the deadline, the policy matched, what was sent and Apple's answer.")
    var consumption = false

    @Flag(name: .long, help: "List the forwarding outbox (receive --forward): pending, delivered and dead deliveries, newest first.")
    var outbox = false

    @Option(name: .long, help: "Outbox: only deliveries in this state (pending, delivered or dead).")
    var state: ForwardDelivery.State?

    @Option(name: .long, help: ArgumentHelp("Outbox, retention and consumption: at most this many rows (the newest).", valueName: "n"))
    var limit = 100

    @Flag(
        name: .long,
        help:
            "Queue notifications again for forwarding: the UUIDs given, or every one received since --since; for every target registered in the trail (receive --forward), or to --to.")
    var replay = false

    @Option(
        name: .long,
        help: ArgumentHelp("Replay: deliver to this URL now, from this command (repeatable; signed with --forward-secret-file).", valueName: "url"))
    var to: [String] = []

    @Option(name: .long, help: ArgumentHelp("Replay --to: the signing secret (whsec_…) in this file (or RECEIPTDASH_FORWARD_SECRET).", valueName: "file"))
    var forwardSecretFile: String?

    @Option(
        name: .long,
        help: ArgumentHelp("Replay --to: headers every delivery carries, one 'Name: value' a line (as receive --forward-header-file).", valueName: "file"))
    var forwardHeaderFile: String?

    @Option(
        name: .long,
        help: ArgumentHelp("Outbox: forward to this registered target again after it answered 410 Gone (its waiting deliveries go out).", valueName: "url"))
    var enable: [String] = []

    @Argument(help: ArgumentHelp("Replay: the notificationUUIDs to queue again.", valueName: "uuid"))
    var notificationUUIDs: [String] = []

    /// What `--type` may name: every V2 type and the V1 ones, matched whatever the case.
    static let knownTypes = NotificationExplanation.knownTypes.union([
        "CANCEL", "DID_RECOVER", "INITIAL_BUY", "INTERACTIVE_RENEWAL", "PRICE_INCREASE_CONSENT", "RENEWAL",
    ])

    func validate() throws {
        for (flag, value) in [("--since", since), ("--start", start), ("--end", end)] { try TimeArgument.check(flag, value) }
        try validateOutbox()
        if let type, !Self.knownTypes.contains(type.uppercased()) {
            throw ValidationError(
                "--type \(type) is not a notification type; known types: \(Self.knownTypes.sorted().joined(separator: ", ")) (any case)")
        }
        if reconcile {
            if start == nil { throw ValidationError("--reconcile needs --start TIME (the window's start).") }
            if format == .csv { throw ValidationError("--reconcile writes text or json.") }
            // Apple keeps 180 days of history (its startDate may not be older).
            if let from = start.flatMap(TimeArgument.parse), from < Date().addingTimeInterval(-180 * 86_400) {
                throw ValidationError("--start \(start ?? "") is more than 180 days back: Apple's Notification History keeps 180 days.")
            }
            if transactionId != nil && (type != nil || subtype != nil) {
                throw ValidationError("--transaction-id and --type/--subtype cannot be combined: Apple's Notification History takes one or the other.")
            }
            if let transactionId, !LookupQuery.isIDShaped(transactionId) {
                throw ValidationError("--transaction-id takes digits only (e.g. 2000000123456789), not \(SafeText.escaped(transactionId)).")
            }
        } else if start != nil || end != nil {
            throw ValidationError("--start and --end belong to --reconcile; to filter the list, use --since.")
        } else if ingest || subtype != nil || transactionId != nil || onlyFailures {
            throw ValidationError("--ingest, --subtype, --transaction-id and --only-failures belong to --reconcile.")
        }
        if tls.caFile != nil && !reconcile && to.isEmpty {
            throw ValidationError("--ca-file belongs to --reconcile and --replay --to (the requests they send).")
        }
    }

    /// The store is opened once and closed by `AuditStoreService.closing` whichever way the
    /// command ends; the paths below never close it themselves (but `--reconcile` without
    /// `--ingest`, which releases it early).
    func run() async throws {
        let path = db ?? AuditStore.defaultPath(environment: ProcessInfo.processInfo.environment)
        let backend: any AuditBackend
        do {
            // --ingest, --replay and --enable write (durably, as the receiver does); everything else only reads.
            let writes = ingest || replay || !enable.isEmpty
            backend = try await AuditStores.open(path, readOnly: !writes, durable: writes)
        } catch {
            if !AuditDatabase.isPostgres(path), !FileManager.default.fileExists(atPath: path) {
                Console.standard.error("receiptdash: no audit database at \(path) yet: `receiptdash receive --db \(path)` stores notifications there")
                throw ExitStatus.noInput
            }
            Console.standard.error("receiptdash: \(error.reason)")
            throw ExitCode.failure
        }
        try await AuditStoreService.closing(backend) {
            do {
                if follow {
                    try await runFollow(backend)
                    return
                }
                if refusals {
                    let since = since.flatMap(TimeArgument.parse) ?? Date().addingTimeInterval(-86_400)
                    RefusalSummary(try await backend.rejections(), since: since).write(format: format.table, to: .standard)
                    return
                }
                if outbox || replay {
                    try await runOutbox(backend)
                    return
                }
                if consumption {
                    let records = try await backend.consumptionRequests(transactionID: nil, limit: limit)
                    let since = since.flatMap(TimeArgument.parse)
                    ConsumptionListing.write(
                        records.filter { since == nil || $0.requestedAt >= since! }, format: format.table, now: Date(), to: .standard)
                    return
                }
                if retention {
                    let records = try await backend.retentionRequests(RetentionQuery(limit: limit))
                    let since = since.flatMap(TimeArgument.parse)
                    RetentionListing.write(records.filter { since == nil || $0.receivedAt >= since! }, format: format.table, to: .standard)
                    return
                }
                if reconcile {
                    let have = try await backend.notificationUUIDs()
                    // Released before the long reconcile when nothing is ingested into it.
                    if !ingest { await backend.close() }
                    try await runReconcile(have, into: ingest ? backend : nil)
                    return
                }
                let filter = NotificationFilter(since: since.flatMap(TimeArgument.parse), type: type, bundleID: api.bundleId)
                try await backend.writeNotificationList(filter, format: format.table, to: .standard)
            } catch let error as ExitCode {
                throw error
            } catch let error as ValidationError {
                // A setting that cannot be used (a secret file): said as itself, exit 64.
                throw error
            } catch {
                Console.standard.error("receiptdash: could not read notifications from \(path): \(AuditStores.words(error))")
                throw ExitCode.failure
            }
        }
    }

    /// `--follow`: the trail's ``NotificationStream`` on standard output until the reader goes.
    private func runFollow(_ backend: any AuditBackend) async throws {
        let start: NotificationStream.Start =
            if let afterId { .afterID(afterId) } else if let since = since.flatMap(TimeArgument.parse) { .since(since) } else { .end }
        let stream = NotificationStream(backend: backend, filter: NotificationFilter(type: type, bundleID: api.bundleId), jsonLines: format == .jsonl)
        try await stream.run(from: start) { lines in lines.withUnsafeBytes { Console.put(.output, $0) } }
    }

    private func runReconcile(_ have: Set<String>, into backend: (any AuditBackend)?) async throws {
        let startDate = start.flatMap(TimeArgument.parse) ?? Date()
        let endDate = end.flatMap(TimeArgument.parse) ?? Date()
        let credentials: APICredentials
        let client: AppStoreServerAPIClient
        do {
            credentials = try api.credentials()
            client = try api.makeClient(credentials, caFile: tls.caFile)
        } catch let error as APIOptionsError {
            Console.standard.error("receiptdash: \(error.description)")
            throw ExitStatus.usage
        }
        // --ingest: each page's missing ones through the receiver as the page arrives, as Apple
        // would have POSTed them.
        let ingest = try backend.map { backend in
            (backend: backend, policy: ReceiverPolicy(
                allowedBundleIDs: [credentials.bundleID], appAppleID: credentials.appAppleID, anchors: try api.trustAnchors(),
                environments: [environment == .production ? .production : .sandbox], maximumAge: nil))
        }
        let filter = NotificationHistoryFilter(
            startDate: startDate, endDate: endDate, notificationType: type?.uppercased(), notificationSubtype: subtype?.uppercased(),
            transactionID: transactionId, onlyFailures: onlyFailures)
        let reconciled = await ReconcileOnce(reconciler: NotificationReconciler(client: client), filter: filter, environment: environment)
            .run(received: have, ingest: ingest, json: format != .text, console: .standard, verbose: verbose)
        try? await client.shutdown()
        if !reconciled { throw ExitCode.failure }
    }
}
