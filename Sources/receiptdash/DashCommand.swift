import ArgumentParser
import AuditTrail
import AuditTrailSQLite
import AppStoreClients
import CommandOptions
import Dashboard
import DashboardLive
import Foundation
import LocalFiles
import NotificationReceiver
import ReceiptCore
import ReceiptTrust
import RetryEngine
import UntrustedText
import TerminalUI

struct Dash: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dash",
        abstract: "The dashboard: load or paste receipts and browse them in panes (the default command).",
        discussion: """
            With no FILE the bundled demo receipts load, so there is something to look at at once \
            (not with --db, --watch or --receive: demo data stays out of an audit database). \
            FILE may be a file, a folder or - for standard input. Keys: press ? in the dashboard, \
            or run `receiptdash keys`.

            Live: --watch DIR lists each file dropped into DIR as it lands; --watch LOG follows \
            a log file (tail -F: rotation and truncation handled) and lists each line that holds \
            a receipt. Add --db to record them, or use `receiptdash watch` with no screen.

            Notifications: --receive PORT embeds the App Store Server Notifications receiver \
            (POST /notifications, verified and stored in --db, or the audit store's default path, \
            before the 200, as `receiptdash receive` does) and shows each one live in a \
            Notifications pane; --db PATH --follow shows those another receiver stores. Enter on a \
            notification shows its payload decoded with every trust step. --expect-every 10m \
            raises a banner when none arrives for that long.

            Themes: --theme default|light|high-contrast|colorblind|mono or a path to a .theme \
            file (see Themes/README.md). NO_COLOR or TERM=dumb always give mono.
            """
    )

    @Option(name: .long, help: ArgumentHelp("Colour theme: a name from Themes/ or a path.", valueName: "name|path"))
    var theme: String?

    @Option(name: .long, help: ArgumentHelp("Judge subscriptions at this instant (ISO 8601; default: now).", valueName: "time"))
    var at: String?

    @OptionGroup(title: "Online verification (v / V)") var online: OnlineOptions

    @OptionGroup var onlineChecks: OnlineChecksOption

    /// Credentials are optional here: without them the dashboard starts and `l` says what to set.
    @OptionGroup(title: "App Store Server API look-up") var api: APIOptions

    @OptionGroup var recording: RecordingDatabaseOption
    var db: String? { recording.db }

    @Flag(name: .long, help: "Attach read-only to --db and show what another process (watch, verify) records, live.")
    var follow = false

    @Flag(name: .long, help: "Refuse every write to Apple (x), as RECEIPTDASH_READ_ONLY=1 or a profile's read_only = true do.")
    var readOnly = false

    @Option(name: .long, help: ArgumentHelp("Watch a folder or follow a log file for new receipts (repeatable).", valueName: "source"))
    var watch: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Embed the notification receiver on this port (POST /notifications; stored in --db or the default audit database).",
            valueName: "port"))
    var receive: Int?

    @Option(name: .long, help: ArgumentHelp("The address the embedded receiver listens on.", valueName: "address"))
    var receiveHost = "127.0.0.1"

    @Option(
        name: .long,
        help: ArgumentHelp(
            "An environment the embedded receiver accepts: production or sandbox (repeatable; default production).", valueName: "env"))
    var receiveEnvironment: [ReceiverEnvironment] = []

    @Option(
        name: .long,
        help: ArgumentHelp("The embedded receiver refuses notifications signed longer ago than this (default 10d; none).", valueName: "duration"))
    var receiveMaxAge = "10d"

    @Option(
        name: .long,
        help: ArgumentHelp("Raise a banner when no notification arrives for this long (e.g. 90s, 10m, 1h).", valueName: "duration"))
    var expectEvery: String?

    @Argument(help: "Receipt files or folders, or - for standard input (default: the demo receipts).")
    var files: [String] = []

    func validate() throws {
        try TimeArgument.check("--at", at)
        if follow && db == nil { throw ValidationError("--follow needs --db PATH (the database another process writes).") }
        if watch.contains("-") {
            throw ValidationError("--watch takes folders and log files; to read receipts from standard input, pass - as an input instead.")
        }
        if let receive {
            guard (0...65_535).contains(receive) else { throw ValidationError("--receive must be a port, 0…65535.") }
            if follow {
                throw ValidationError("--receive stores notifications and --follow only reads: run `receiptdash receive` for the database you follow.")
            }
            _ = try receiverBundleIDs()
            _ = try Receive.duration(receiveMaxAge, "--receive-max-age")
        }
        if let expectEvery {
            guard let seconds = DurationText.parse(expectEvery), seconds > 0 else {
                throw ValidationError("--expect-every takes a duration such as 90s, 10m or 1h.")
            }
            if receive == nil && !follow {
                throw ValidationError("--expect-every watches notifications: add --receive PORT, or --db PATH --follow.")
            }
        }
        if follow && !watch.isEmpty {
            throw ValidationError("--follow shows what another process records; run `receiptdash watch` there instead of --watch here.")
        }
    }

    /// The embedded receiver's accepted bundle id, as `receive` finds its own.
    func receiverBundleIDs() throws -> [String] {
        try Receive.bundleIDs(api.bundleId.map { [$0] } ?? [], profile: api.apiProfile, flag: "--receive needs --bundle-id")
    }

    func run() async throws {
        // The theme first: a --theme that cannot be found is named even where no terminal is.
        let chosenTheme: Theme
        do {
            chosenTheme = try ThemeCatalog.resolve(theme, environment: ProcessInfo.processInfo.environment)
        } catch {
            // A sentence, not the usage of every subcommand.
            Console.standard.error("receiptdash: \(error)")
            throw ExitCode.validationFailure
        }
        guard isatty(STDOUT_FILENO) != 0 else {
            Console.standard.error("receiptdash: the dashboard needs a terminal (standard output is not one); use `receiptdash inspect`.")
            throw ExitStatus.noTerminal
        }
        var state = DashboardState(now: at.flatMap(TimeArgument.parse) ?? Date())
        state.nowIsChosen = at != nil
        // --root-ca roots judge test data (the simulator's notifications and look-ups) as test.
        let anchors: TrustAnchors
        do {
            anchors = try api.trustAnchors()
        } catch {
            throw ValidationError("\(error)")
        }
        let checks = onlineChecks.make(profile: try api.profile())
        let pipeline = ReceiptPipeline(
            at: state.now, evaluator: TrustEvaluator(anchors: anchors), trustOptions: TrustOptions(now: state.now, onlineChecks: checks))
        // The store an embedded receiver writes when no --db is given.
        let defaultStore = AuditStore.defaultPath(environment: ProcessInfo.processInfo.environment)
        // `e` writes beside the audit database (mode 600, as the database), else here.
        let dbFile = db ?? (receive != nil ? defaultStore : nil)
        if let dbFile, !dbFile.contains("://") {
            let folder = PathNames.parent(of: dbFile)
            state.exportFolder = folder.isEmpty ? "." : folder
        }
        var launch = DashboardLaunch()
        (launch.files, launch.watch, launch.follow, launch.expectEvery) = (files, watch, follow, expectEvery.flatMap(DurationText.parse))
        // One connection (pool) for the dashboard's records, its look-ups and an embedded
        // receiver; SQLite commits durably (synchronous = FULL) when it receives.
        launch.backend = if let db { try await AuditOpening.open(db, readOnly: follow, durable: receive != nil) } else { nil }
        let backend = launch.backend
        // The trail runs (PostgreSQL: its pool) for the whole session and is closed after it.
        try await AuditStoreService.closing(backend) {
            if let receive {
                let store = if let backend { backend } else { try await AuditOpening.open(defaultStore, durable: true) }
                var policy = ReceiverPolicy(
                    allowedBundleIDs: try receiverBundleIDs(), appAppleID: api.appAppleId.flatMap { Int64($0) }, anchors: anchors,
                    environments: Set((receiveEnvironment.isEmpty ? [.production] : receiveEnvironment).map(\.store)),
                    maximumAge: try Receive.duration(receiveMaxAge, "--receive-max-age"))
                policy.onlineChecks = checks
                launch.receiving = .init(host: receiveHost, port: receive, store: store, policy: policy)
            }
            let live = await launch.prepare(&state, pipeline: pipeline)
            let audit = live.audit
            let client = try online.makeClient()
            let verifier = ServiceVerifier(client: client, concurrency: online.concurrency, audit: follow ? nil : audit)
            var lookup: ServiceLookup?
            switch serviceLookup(api, caFile: online.tls.caFile, at: state.now, store: follow ? nil : backend) {
            case .success(let made):
                lookup = made
            case .failure(let error):
                lookup = nil
                // Nothing configured: `l` lists every setting; something given but wrong: `l` says what.
                if api.namesCredentials { state.lookupSetupProblem = error.description }
            }
            // Writes are recorded before they leave: in --db, else in the default audit store.
            let acting = await launch.acting(
                &lookup, readOnlyReason: try api.readOnlyReason(flag: readOnly), state: &state, defaultStore: defaultStore,
                open: { try await AuditOpening.open($0) }, words: AuditStores.words)
            let interruption = await live.run(
                &state, theme: chosenTheme, pipeline: pipeline, verifier: follow ? nil : verifier, lookup: lookup, acting: acting.actions)
            await acting.opened?.close()
            try? await client.shutdown()
            try? await lookup?.service.client.shutdown()
            // Ctrl-C / SIGTERM / SIGHUP ended the loop; the terminal is restored: exit 128 + signal.
            if let interruption { throw ExitStatus.signal(interruption) }
        }
    }
}

struct Keys: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "keys", abstract: "Print the dashboard's keys as a Markdown table.")

    func run() throws {
        print(KeyMap.markdown)
    }
}

extension Dash {
    /// The look-up the options describe, or why there is none (missing credentials, an
    /// unreadable key or root): the dashboard starts all the same and `l` says it.
    func serviceLookup(_ api: APIOptions, caFile: String?, at instant: Date, store: (any AuditBackend)?) -> Result<ServiceLookup, APIOptionsError> {
        do {
            let anchors = try api.trustAnchors()
            let credentials = try api.credentials()
            let client = try api.makeClient(credentials, caFile: caFile)
            let pipeline = ReceiptPipeline(at: instant, evaluator: TrustEvaluator(anchors: anchors))
            return .success(ServiceLookup(service: CustomerLookupService(client: client, pipeline: pipeline), store: store))
        } catch let error as APIOptionsError {
            return .failure(error)
        } catch {
            return .failure(APIOptionsError("\(error)"))
        }
    }
}
