import Foundation
import ReceiptCore
import TerminalUI

/// The UI loop: render, draw, wait for a key (blocking: no CPU while idle), update, and carry
/// out the effects the update asked for.
public enum DashboardApp {
    public static func run(
        _ state: inout DashboardState, backend: TerminalBackend, environment: DashboardEnvironment = .live,
        verifier: (any OnlineVerifying)? = nil, audit: (any AuditLink)? = nil, feed: (any InputFeed)? = nil
    ) {
        let (w, h) = backend.size
        _ = state.handle(.resize(width: w, height: h), environment: environment)
        state.onlineAvailable = verifier != nil
        if let audit {
            let pending = audit.pending()
            for event in pending { state.apply(event, at: environment.now()) }
            for case .receipt(let row, _, _) in pending {
                if let id = state.auditRows[row] { state.online[id] = .queued }
            }
            if !pending.isEmpty {
                state.message = ("\(pending.count) receipt\(pending.count == 1 ? " was" : "s were") left pending by an interrupted run: press R to resume", .warning)
            }
        }
        let inbox = EventInbox()
        var tasks: [Task<Void, Never>] = []
        defer { tasks.forEach { $0.cancel() } }
        // Items are only ever appended: each pass offers the audit store only those added since.
        var offeredToAudit = 0
        while true {
            state.wallClock = environment.now()
            for event in inbox.drain() { state.apply(event, at: state.wallClock) }
            if let feed {
                let arrived = feed.poll()
                for input in arrived { state.load(input) }
                if !arrived.isEmpty {
                    state.message = ("\(arrived.count) new input\(arrived.count == 1 ? "" : "s") from watched sources", .info)
                }
            }
            if let audit {
                // Record what was loaded here; in follow mode, take in what others wrote.
                for item in state.items[offeredToAudit...] where !state.auditedItems.contains(item.id) {
                    state.auditedItems.insert(item.id)
                    guard let decoded = item.decoded, let bytes = item.sourceBytes else { continue }
                    if let row = audit.record(source: item.source, bytes: bytes, decoded: decoded) { state.auditRows[row] = item.id }
                }
                offeredToAudit = state.items.count
                for event in audit.poll() { state.apply(event, at: state.wallClock) }
            }
            backend.draw(DashboardView.render(state, width: state.width, height: state.height))
            // Block while idle (no CPU); wake 10 times a second while verifying, twice a second
            // while watching sources or following another process's database.
            let verifying = inbox.active > 0 || inbox.pending
            let timeout: Int? = verifying ? 100 : (state.followingStore || feed != nil ? 500 : nil)
            guard let event = backend.readEvent(timeoutMilliseconds: timeout) else { return }
            for effect in state.handle(event, environment: environment) {
                switch effect {
                case .quit: return
                case .search(let search):
                    if let audit {
                        for event in audit.search(search) { state.apply(event, at: environment.now()) }
                    }
                    state.showMatches(search)
                case .verify(let requests):
                    guard let verifier else { continue }
                    inbox.begin()
                    tasks.append(Task.detached {
                        await verifier.verify(requests) { inbox.post($0) }
                        inbox.end()
                    })
                case .copy(let value): backend.sendRaw(osc52(value, inTmux: ProcessInfo.processInfo.environment["TMUX"] != nil))
                case .export(let json, let fileName):
                    do {
                        try Data(json.utf8).write(to: URL(fileURLWithPath: fileName))
                        state.message = ("exported to \(fileName)", .ok)
                        state.addLog("exported \(fileName)", role: .ok)
                    } catch {
                        state.message = ("could not write \(fileName): \(error.localizedDescription)", .error)
                    }
                case .load(let path):
                    let before = state.items.count
                    for input in InputFiles.load([path], limit: DecodingLimits.default.maximumInputBytes) {
                        if let reason = state.load(input) { state.message = (reason, .error) }
                    }
                    let added = state.items.count - before
                    if added > 0 {
                        state.message = ("loaded \(added) input\(added == 1 ? "" : "s") from \(path)", .ok)
                    }
                }
            }
        }
    }

    /// The OSC 52 clipboard sequence (works over ssh), wrapped for tmux when inside it.
    /// Payloads are capped as k9s does, since terminals drop longer ones.
    public static func osc52(_ text: String, inTmux: Bool) -> String {
        let payload = Data(text.utf8.prefix(74_994)).base64EncodedString()
        let sequence = "\u{1B}]52;c;\(payload)\u{07}"
        return inTmux ? "\u{1B}Ptmux;\u{1B}\(sequence)\u{1B}\\" : sequence
    }
}

/// Events from verification tasks, handed to the UI loop (which alone touches the state).
final class EventInbox: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [OnlineEvent] = []
    private var running = 0

    func post(_ event: OnlineEvent) {
        lock.lock()
        events.append(event)
        lock.unlock()
    }

    func drain() -> [OnlineEvent] {
        lock.lock()
        defer { lock.unlock() }
        let out = events
        events.removeAll(keepingCapacity: true)
        return out
    }

    func begin() {
        lock.lock()
        running += 1
        lock.unlock()
    }

    func end() {
        lock.lock()
        running -= 1
        lock.unlock()
    }

    var active: Int {
        lock.lock()
        defer { lock.unlock() }
        return running
    }

    var pending: Bool {
        lock.lock()
        defer { lock.unlock() }
        return !events.isEmpty
    }
}

/// Finds and loads themes: a path, or a name looked up in `./Themes`, the `Themes` folder of
/// the package the binary was built in, and `$XDG_CONFIG_HOME/receiptdash/themes`.
public enum ThemeCatalog {
    public static func folders() -> [String] {
        var folders = [FileManager.default.currentDirectoryPath + "/Themes"]
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<5 {
            folders.append(dir.appendingPathComponent("Themes").path)
            dir.deleteLastPathComponent()
        }
        let env = ProcessInfo.processInfo.environment
        let config = env["XDG_CONFIG_HOME"].map { $0 + "/receiptdash/themes" }
            ?? env["HOME"].map { $0 + "/.config/receiptdash/themes" }
        if let config { folders.append(config) }
        return folders
    }

    /// The theme to use: `NO_COLOR` (non-empty) and `TERM=dumb` give `mono` whatever is asked.
    public static func resolve(_ request: String?, environment: [String: String]) throws -> Theme {
        if let noColor = environment["NO_COLOR"], !noColor.isEmpty { return .mono }
        if environment["TERM"] == "dumb" { return .mono }
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
