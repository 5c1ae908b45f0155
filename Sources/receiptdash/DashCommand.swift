import ArgumentParser
import Dashboard
import Foundation
import ReceiptCore
import ReceiptService
import TerminalNcurses
import TerminalUI

struct Dash: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The dashboard: load or paste receipts and browse them in panes (the default command).",
        discussion: """
            With no FILE the bundled demo receipts load, so there is something to look at at once \
            (not with --db or --watch: demo data stays out of an audit database). \
            FILE may be a file, a folder or - for standard input. Keys: press ? in the dashboard, \
            or run `receiptdash keys`.

            Live: --watch DIR lists each file dropped into DIR as it lands; --watch LOG follows \
            a log file (tail -F: rotation and truncation handled) and lists each line that holds \
            a receipt. Add --db to record them, or use `receiptdash watch` with no screen.

            Themes: --theme default|light|high-contrast|colorblind|mono or a path to a .theme \
            file (see Themes/README.md). NO_COLOR or TERM=dumb always give mono.
            """
    )

    @Option(name: .long, help: ArgumentHelp("Colour theme: a name from Themes/ or a path.", valueName: "name|path"))
    var theme: String?

    @Option(name: .long, help: ArgumentHelp("Judge subscriptions at this instant (ISO 8601; default: now).", valueName: "time"))
    var at: String?

    @OptionGroup(title: "Online verification (v / V)") var online: OnlineOptions

    /// Credentials are optional here: without them the dashboard starts and `l` says what to set.
    @OptionGroup(title: "App Store Server API look-up") var api: APIOptions

    @Option(name: .long, help: ArgumentHelp("Record what is loaded and verified in this audit database.", valueName: "path"))
    var db: String?

    @Flag(name: .long, help: "Attach read-only to --db and show what another process (watch, verify) records, live.")
    var follow = false

    @Option(name: .long, help: ArgumentHelp("Watch a folder or follow a log file for new receipts (repeatable).", valueName: "source"))
    var watch: [String] = []

    @Argument(help: "Receipt files or folders, or - for standard input (default: the demo receipts).")
    var files: [String] = []

    func validate() throws {
        if let at, AppleDate.parse(at) == nil {
            throw ValidationError("--at must be an ISO 8601 time such as 2024-03-01T12:00:00Z.")
        }
        if follow && db == nil { throw ValidationError("--follow needs --db PATH (the database another process writes).") }
        if watch.contains("-") {
            throw ValidationError("--watch takes folders and log files; to read receipts from standard input, pass - as an input instead.")
        }
        if follow && !watch.isEmpty {
            throw ValidationError("--follow shows what another process records; run `receiptdash watch` there instead of --watch here.")
        }
    }

    func run() async throws {
        guard isatty(STDOUT_FILENO) != 0 else {
            Standard.error("receiptdash: the dashboard needs a terminal (standard output is not one); use `receiptdash inspect`.")
            throw ExitCode(2)
        }
        let chosenTheme: Theme
        do {
            chosenTheme = try ThemeCatalog.resolve(theme, environment: ProcessInfo.processInfo.environment)
        } catch {
            throw ValidationError("\(error)")
        }
        var state = DashboardState(now: at.flatMap(AppleDate.parse) ?? Date())
        let pipeline = ReceiptPipeline(at: state.now, trustOptions: TrustOptions(now: state.now))
        let audit: StoreAuditLink?
        if let db {
            audit = StoreAuditLink(store: follow ? try AuditStore(readOnlyPath: db) : try AuditStore(path: db), follow: follow)
            state.followingStore = follow
        } else {
            audit = nil
        }
        if follow {
            state.addLog("following \(db ?? "?") read-only", role: .info)
        } else if files.isEmpty, let db {
            // Demo receipts stay out of a real audit database.
            state.addLog("no input: p pastes, o opens, : searches the history in \(db)", role: .info)
        } else if files.isEmpty, !watch.isEmpty {
            state.addLog("no input yet: new receipts appear as they arrive; p pastes, o opens", role: .info)
        } else if files.isEmpty {
            state.add(await pipeline.judge(InputFiles.demo()), from: .startup)
        } else {
            state.add(await pipeline.judge(InputFiles.load(files, limit: pipeline.inputLimit)), from: .startup)
        }
        for source in watch {
            state.addLog("watching \(source)", role: .info)
        }
        let client = try online.makeClient()
        let verifier = ServiceVerifier(client: client, concurrency: online.concurrency, audit: follow ? nil : audit)
        let lookup: ServiceLookup?
        switch ServiceLookup.make(api, caFile: online.caFile, at: state.now, store: follow ? nil : audit?.store) {
        case .success(let made):
            lookup = made
        case .failure(let error):
            lookup = nil
            // Nothing configured: `l` lists every setting; something given but wrong: `l` says what.
            if api.namesCredentials { state.lookupSetupProblem = error.description }
        }
        // One thread owns the terminal for the whole session: the loop, before and after each
        // await, runs there.
        let ui = SingleThreadExecutor(name: "receiptdash-ui")
        let interruption = await withTaskExecutorPreference(ui) {
            let terminal = NcursesTerminal(theme: chosenTheme)
            await DashboardApp.run(
                &state, backend: terminal, pipeline: pipeline, verifier: follow ? nil : verifier, audit: audit,
                feed: watch.isEmpty ? nil : WatchFeed(sources: watch, fromEnd: false), lookup: lookup)
            terminal.shutdown()
            return terminal.interruption
        }
        try? await client.shutdown()
        try? await lookup?.service.client.shutdown()
        // Ctrl-C / SIGTERM / SIGHUP ended the loop; the terminal is restored: exit 128 + signal.
        if let interruption { throw ExitCode(128 + interruption) }
    }
}

struct Keys: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print the dashboard's keys as a Markdown table.")

    func run() throws {
        print(KeyMap.markdown)
    }
}
