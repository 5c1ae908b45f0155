import Foundation
import AppStoreAPI
import LocalFiles
import PlainWords
import ReceiptCore
import ReceiptRendering
import ReceiptTrust
import Synchronization
import TerminalUI
import UntrustedText

/// The UI loop: render, draw, wait for a key (blocking: no CPU while idle), update, and carry
/// out the effects the update asked for.
///
/// Inputs go through the one pipeline (``ReceiptPipeline``: decode, trust, analysis), awaited
/// in the loop: they are on screen in the very next frame. The caller decides which thread the
/// loop runs on (the executable pins it to one thread that owns the terminal, see
/// ``SingleThreadExecutor``); online verification and customer look-ups run in tasks of their
/// own and report through inboxes the loop drains (only the loop touches the state).
public enum DashboardApp {
    public static func run(
        _ state: inout DashboardState, backend: TerminalBackend, environment: DashboardEnvironment = .live,
        pipeline: ReceiptPipeline? = nil, verifier: (any OnlineVerifying)? = nil, audit: (any AuditLink)? = nil,
        feed: (any InputFeed)? = nil, lookup: (any CustomerLookingUp)? = nil, notifications: (any NotificationFeed)? = nil,
        acting: (any CustomerActing)? = nil, clipboard: (any Clipboard)? = nil, startup: [InputFiles.Origin] = []
    ) async {
        let pipeline = pipeline ?? ReceiptPipeline(at: state.now, trustOptions: TrustOptions(now: state.now))
        let (w, h) = backend.size
        _ = state.handle(.resize(width: w, height: h), environment: environment)
        state.onlineAvailable = verifier != nil
        // Without an audit trail nothing needs an input's bytes once judged.
        state.keepsSourceBytes = audit != nil
        if audit == nil { for index in state.items.indices { state.items[index].sourceBytes = nil } }
        state.lookupAvailable = lookup != nil
        state.actionsAvailable = acting != nil && lookup != nil
        if notifications != nil { state.notificationWatchStarted = state.notificationWatchStarted ?? environment.now() }
        if let audit {
            let pending = await audit.pending()
            await apply(pending, to: &state, pipeline: pipeline)
            for case .receipt(let row, _, _) in pending {
                if let id = state.auditRows[row] { state.online[id] = .queued }
            }
            if !pending.isEmpty {
                state.message = ("\(CountNoun.receipt.count(pending.count)) \(pending.count == 1 ? "was" : "were") left pending by an interrupted run: press R to resume", .warning)
            }
        }
        let inbox = EventInbox<OnlineEvent>()
        let lookups = EventInbox<LookupReport>()
        let replies = EventInbox<ActionReply>()
        // Writes in a group of their own that quitting waits for, never cancels: a write Apple
        // may have taken is recorded before the run returns (and the caller closes the store).
        // Verifications and look-ups in a group quitting cancels, then waits for. Both groups'
        // tasks run on the shared pool, not on the loop's thread, which blocks reading keys.
        await withDiscardingTaskGroup { writes in
            await withDiscardingTaskGroup { background in
                defer { background.cancelAll() }
                /// A look-up in the background; its progress and answer come back through `lookups`.
                func startLookUp(_ query: LookupQuery, with lookup: any CustomerLookingUp) {
                    lookups.begin()
                    background.addTask(executorPreference: globalConcurrentExecutor) {
                        let result = await lookup.lookUp(query) { lookups.post(.progress(query, $0)) }
                        // The same sources `customer` reads: the trail's rows and what Apple says it sent.
                        let sent = await lookup.sentNotifications(for: result)
                        let stored = await lookup.storedRecords(for: result).map {
                            StoredCustomerRecordsBox($0, sent: sent.items, sentError: sent.error)
                        }
                        lookups.post(.finished(result, stored))
                        lookups.end()
                    }
                }
                /// A write in the background; its answer comes back through `replies`.
                func act(_ write: @escaping @Sendable () async -> ActionReply) {
                    replies.begin()
                    writes.addTask(executorPreference: globalConcurrentExecutor) {
                        replies.post(await write())
                        replies.end()
                    }
                }
                func verify(_ requests: [OnlineRequest], from shelved: [Int: (name: String, source: DetailSource)], with verifier: any OnlineVerifying) {
                    inbox.begin()
                    background.addTask(executorPreference: globalConcurrentExecutor) {
                        // A batch at a time: shelved receipts are read again just before they
                        // are sent, and only a batch's data is held (not 50,000 receipts').
                        for start in stride(from: 0, to: requests.count, by: verifyBatch) where !Task.isCancelled {
                            let batch = Array(requests[start..<min(requests.count, start + verifyBatch)])
                            let filled = await readShelved(batch, sources: shelved, pipeline: pipeline) { inbox.post($0) }
                            await verifier.verify(filled) { inbox.post($0) }
                        }
                        inbox.end()
                    }
                }
                // Files (the start's, and what o opens), a chunk at a time, judged on every
                // core ahead of the loop: shelved where judged, unless the audit trail must
                // record them first (it takes the decoded receipt).
                let (chunks, chunkSink) = AsyncStream<LoadedChunk>.makeStream()
                let shelves = audit == nil
                let keepsBytes = state.keepsSourceBytes
                func judge(_ range: Range<Int>, _ origins: ArraySlice<InputFiles.Origin>) {
                    MemoryTuning.forBulkWork()
                    background.addTask(executorPreference: globalConcurrentExecutor) {
                        let batch = await DashboardState.prepare(origins, pipeline: pipeline, keepsBytes: keepsBytes, shelves: shelves)
                        chunkSink.yield(LoadedChunk(range: range, batch: batch))
                    }
                }
                var files = FileLoad(chunks: chunks)
                files.append(startup, from: .startup)
                await loop(
                    &state, backend: backend, environment: environment, pipeline: pipeline, verifier: verifier, audit: audit,
                    feed: feed, lookup: lookup, notifications: notifications, acting: acting, clipboard: clipboard, files: files, judge: judge,
                    inboxes: (inbox, lookups, replies), startLookUp: startLookUp(_:with:), act: act, verify: verify(_:from:with:))
            }
            let unanswered = replies.active
            if unanswered > 0 {
                state.message = ("quitting once \(unanswered == 1 ? "the write" : "\(unanswered) writes") sent to Apple \(unanswered == 1 ? "is" : "are") answered and recorded", .warning)
                backend.draw(DashboardView.render(state, width: state.width, height: state.height))
            }
        }
    }

    /// Requests handed to the verifier at a time by `v`/`V`: their receipts' data (about 20 KB
    /// each) is what is held while they are verified.
    static let verifyBatch = 512

    /// The loop itself: until `q` or the end of input.
    private static func loop(
        _ state: inout DashboardState, backend: TerminalBackend, environment: DashboardEnvironment, pipeline: ReceiptPipeline,
        verifier: (any OnlineVerifying)?, audit: (any AuditLink)?, feed: (any InputFeed)?, lookup: (any CustomerLookingUp)?,
        notifications: (any NotificationFeed)?, acting: (any CustomerActing)?, clipboard: (any Clipboard)?, files: FileLoad,
        judge: (Range<Int>, ArraySlice<InputFiles.Origin>) -> Void,
        inboxes: (EventInbox<OnlineEvent>, EventInbox<LookupReport>, EventInbox<ActionReply>),
        startLookUp: (LookupQuery, any CustomerLookingUp) -> Void, act: (@escaping @Sendable () async -> ActionReply) -> Void,
        verify: ([OnlineRequest], [Int: (name: String, source: DetailSource)], any OnlineVerifying) -> Void
    ) async {
        let (inbox, lookups, replies) = inboxes
        // Items are only ever appended: each pass offers the audit store only those added since.
        var offeredToAudit = 0
        // Files are added a chunk per pass, so the first frame comes at once and keys work
        // while a folder of 50,000 loads; the next chunks are judged meanwhile.
        var files = files
        while true {
            state.wallClock = environment.now()
            if let arrival = await files.next(judge) { state.add(arrival) }
            state.loadingStartup = files.progress
            for event in inbox.drain() { state.apply(event, at: state.wallClock) }
            for report in lookups.drain() {
                switch report {
                case .progress(let query, let event): state.apply(event, for: query, at: state.wallClock)
                case .finished(let result, let stored): state.add(result, stored: stored)
                }
            }
            for reply in replies.drain() {
                // A taken extension or token asks the look-up again, so the change shows.
                for case .lookUp(let query) in state.apply(reply.answer, lookingUpAgain: reply.lookUpAgain) {
                    if let lookup { startLookUp(query, lookup) }
                }
            }
            if let notifications { state.apply(await notifications.poll(), at: state.wallClock) }
            if let feed {
                let arrived = feed.poll()
                if !arrived.isEmpty { state.add(await pipeline.judge(arrived), from: .watch) }
            }
            if let audit {
                // Record what was loaded here; in follow mode, take in what others wrote.
                for index in state.items.indices.dropFirst(offeredToAudit) where !state.auditedItems.contains(state.items[index].id) {
                    let item = state.items[index]
                    state.auditedItems.insert(item.id)
                    // Recorded: the trail has the bytes, the dashboard no longer needs them, nor
                    // the details of an input it can read again (the selected one comes back
                    // before the frame).
                    state.items[index].sourceBytes = nil
                    state.shelve(index)
                    guard let decoded = item.decoded, let bytes = item.sourceBytes else { continue }
                    if let row = await audit.record(source: item.source, bytes: bytes, decoded: decoded) { state.auditRows[row] = item.id }
                }
                offeredToAudit = state.items.count
                await apply(await audit.poll(), to: &state, pipeline: pipeline)
            }
            await restoreSelected(&state, pipeline: pipeline)
            backend.draw(DashboardView.render(state, width: state.width, height: state.height))
            // Block while idle (no CPU); wake 10 times a second while verifying, twice a second
            // while watching sources or following another process's database.
            let verifying = inbox.active > 0 || inbox.pending || lookups.active > 0 || lookups.pending || replies.active > 0 || replies.pending
            let timeout: Int? =
                !files.isDone ? 0 : verifying ? 100 : (state.followingStore || feed != nil || notifications != nil ? 500 : nil)
            guard let event = backend.readEvent(timeoutMilliseconds: timeout) else { return }
            for effect in state.handle(event, environment: environment) {
                switch effect {
                case .quit: return
                case .search(let search):
                    if let audit { await apply(await audit.search(search), to: &state, pipeline: pipeline) }
                    state.showMatches(search)
                case .verify(let requests):
                    guard let verifier else { continue }
                    verify(requests, shelvedSources(requests, in: state), verifier)
                case .lookUp(let query):
                    guard let lookup else {
                        state.lookupsRunning.remove(query)
                        continue
                    }
                    startLookUp(query, lookup)
                case .extend(let order):
                    guard let acting else { continue }
                    act { ActionReply(answer: await acting.extend(order), lookUpAgain: order.query) }
                case .setToken(let order):
                    guard let acting else { continue }
                    act { ActionReply(answer: await acting.setToken(order), lookUpAgain: order.query) }
                case .consume(let order):
                    guard let acting else { continue }
                    act { ActionReply(answer: await acting.consume(order), lookUpAgain: nil) }
                case .copy(let value):
                    // The update said what it copied ("copied X"); the clipboard says where it went.
                    let what = state.message.map { $0.text.hasPrefix("copied ") ? String($0.text.dropFirst(7)) : $0.text } ?? "the text"
                    let outcome: CopyOutcome
                    if let clipboard {
                        outcome = await clipboard.copy(value)
                    } else {
                        backend.sendRaw(osc52(value, inTmux: false))
                        outcome = .sentToTerminal(truncatedTo: value.utf8.count > osc52Limit ? osc52Limit : nil)
                    }
                    state.message = outcome.message(copying: what)
                case .save(let file):
                    switch ExportWriter.write(file) {
                    case .success(let path):
                        state.message = ("exported \(file.what) to \(SafeText.escaped(path)) (mode 600)", .ok)
                        state.addLog("exported \(file.what) to \(SafeText.escaped(path))", role: .ok)
                    case .failure(let error):
                        state.message = ("could not export: \(SafeText.escaped(error.reason)); type another folder after e", .error)
                    }
                case .load(let path):
                    // Loaded by the passes that follow, with the start's files' progress.
                    files.append(InputFiles.origins([path]), from: .open(path: path))
                case .judge(let inputs, let origin):
                    state.add(await pipeline.judge(inputs), from: origin)
                case .inspectNotification(let uuid, let payload):
                    state.notificationDetails[uuid] = await inspect(notification: uuid, payload: payload, pipeline: pipeline)
                }
            }
        }
    }

    /// Applies audit feed events in order, taking each receipt through the pipeline first.
    private static func apply(_ events: [AuditFeedEvent], to state: inout DashboardState, pipeline: ReceiptPipeline) async {
        for event in events {
            var judged: JudgedInput?
            if case .receipt(_, let source, let bytes) = event { judged = await pipeline.judge(source: source, bytes: bytes) }
            state.apply(event, judged: judged, at: state.wallClock)
        }
    }

    /// Decodes and judges a notification's payload for the `Enter` overlay: the envelope through
    /// the pipeline (chain, nested tokens summarised), then each nested token on its own for its
    /// every step.
    static func inspect(notification uuid: String, payload: String, pipeline: ReceiptPipeline) async -> NotificationDetail {
        let judged = await pipeline.judge(source: "notification \(uuid)", bytes: Array(payload.utf8))
        var nested: [(field: String, report: TrustReport)] = []
        for item in judged.decoded?.nested ?? [] {
            nested.append((item.field, await pipeline.evaluator.evaluate(item.input, options: pipeline.trustOptions)))
        }
        return NotificationDetail(judged: judged, nestedReports: nested)
    }

    /// The OSC 52 clipboard sequence (works over ssh); `inTmux` wraps it for tmux's passthrough
    /// (which tmux 3.3 and later drop unless `allow-passthrough` is on: inside tmux the dashboard
    /// copies through ``Clipboard`` instead).
    /// Payloads are capped as k9s does, since terminals drop longer ones.
    public static func osc52(_ text: String, inTmux: Bool) -> String {
        let payload = Data(text.utf8.prefix(osc52Limit)).base64EncodedString()
        let sequence = "\u{1B}]52;c;\(payload)\u{07}"
        return inTmux ? "\u{1B}Ptmux;\u{1B}\(sequence)\u{1B}\\" : sequence
    }
}

/// What a look-up task hands the loop: its progress, then its answer.
enum LookupReport: Sendable {
    case progress(LookupQuery, LookupEvent)
    case finished(CustomerLookupResult, StoredCustomerRecordsBox?)
}

/// Events from background tasks (verification, look-ups), handed to the UI loop (which alone
/// touches the state).
final class EventInbox<Event: Sendable>: Sendable {
    private struct Contents {
        var events: [Event] = []
        var running = 0
    }

    private let contents: Mutex<Contents> = Mutex(Contents())

    func post(_ event: Event) {
        contents.withLock { $0.events.append(event) }
    }

    func drain() -> [Event] {
        contents.withLock { contents in
            defer { contents.events.removeAll(keepingCapacity: true) }
            return contents.events
        }
    }

    func begin() { contents.withLock { $0.running += 1 } }
    func end() { contents.withLock { $0.running -= 1 } }
    var active: Int { contents.withLock { $0.running } }
    var pending: Bool { contents.withLock { !$0.events.isEmpty } }
}

/// Finds and loads themes: a path, or a name looked up in `./Themes`, the `Themes` folder of
/// the package the binary was built in (found from the binary's real path, whichever symlink
/// or `PATH` entry started it), `share/receiptdash/themes` beside an installed binary's `bin`,
/// and `$XDG_CONFIG_HOME/receiptdash/themes`; then the themes compiled into the binary.
public enum ThemeCatalog {
    public static func folders() -> [String] {
        var folders = [FileManager.default.currentDirectoryPath + "/Themes"]
        if var dir = executableURL()?.deletingLastPathComponent() {
            folders.append(dir.deletingLastPathComponent().appendingPathComponent("share/receiptdash/themes").path)
            for _ in 0..<5 {
                folders.append(dir.appendingPathComponent("Themes").path)
                dir.deleteLastPathComponent()
            }
        }
        let env = ProcessInfo.processInfo.environment
        let config = env["XDG_CONFIG_HOME"].map { $0 + "/receiptdash/themes" }
            ?? env["HOME"].map { $0 + "/.config/receiptdash/themes" }
        if let config { folders.append(config) }
        var seen = Set<String>()
        return folders.map { ($0 as NSString).standardizingPath }.filter { seen.insert($0).inserted }
    }

    /// The running binary's real path: `argv[0]` is only what the shell was given (a bare
    /// `receiptdash` found on `PATH`, or a symlink), so the kernel's record comes first.
    static func executableURL() -> URL? {
        #if os(Linux)
        if let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            return URL(fileURLWithPath: path)
        }
        #endif
        if let url = Bundle.main.executableURL { return url.resolvingSymlinksInPath() }
        guard let first = CommandLine.arguments.first, first.contains("/") else { return nil }
        return URL(fileURLWithPath: first).resolvingSymlinksInPath()
    }

    /// The theme to use: `NO_COLOR` (non-empty) and `TERM=dumb` give `mono` whatever is asked.
    public static func resolve(_ request: String?, environment: [String: String]) throws -> Theme {
        guard Theme.coloursAllowed(environment) else { return .mono }
        guard let request, request != "default" || folders().contains(where: { FileManager.default.fileExists(atPath: $0 + "/default.theme") }) else {
            return .builtinDefault
        }
        if request == "mono" { return .mono }
        let path: String?
        if request.contains("/") || request.hasSuffix(".theme") {
            path = request
        } else {
            path = folders().map { "\($0)/\(request).theme" }.first { FileManager.default.fileExists(atPath: $0) }
        }
        guard let path, let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            if request == "default" { return .builtinDefault }
            // A name no folder has: the copy compiled into the binary.
            if path == nil, let bundled = BundledThemes.files[request] { return try Theme.parse(bundled, name: request) }
            throw Theme.ParseError(line: 0, message: "theme \(request.debugDescription) not found (looked in \(folders().joined(separator: ", ")))")
        }
        let name = ((path as NSString).lastPathComponent as NSString).deletingPathExtension
        do {
            return try Theme.parse(text, name: name)
        } catch let error as Theme.ParseError {
            throw Theme.ParseError(line: error.line, message: "\(path): \(error.message)")
        }
    }
}
