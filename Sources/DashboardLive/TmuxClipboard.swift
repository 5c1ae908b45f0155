import Dashboard
import Foundation

/// Copies through tmux itself: `tmux load-buffer -w -` puts the text in tmux's paste buffer and,
/// where tmux's `set-clipboard` allows, passes it on to the outer terminal's clipboard. An OSC 52
/// sequence written inside tmux is dropped unless `allow-passthrough` is on (off by default
/// since tmux 3.3), which is why `y` said "copied" and nothing arrived.
public struct TmuxClipboard: Clipboard {
    /// The environment tmux runs with (`TMUX` names the server the dashboard runs in).
    let environment: [String: String]
    /// How long tmux may take before the copy is said to have failed.
    let limit: Duration

    /// The clipboard for a dashboard running inside tmux; nil outside it.
    public init?(environment: [String: String] = ProcessInfo.processInfo.environment, limit: Duration = .seconds(3)) {
        guard let tmux = environment["TMUX"], !tmux.isEmpty else { return nil }
        self.environment = environment
        self.limit = limit
    }

    public func copy(_ text: String) async -> CopyOutcome {
        // -w (tmux 3.2+) also sends it to the outer terminal; older tmux takes the buffer only.
        var loaded = await run(["load-buffer", "-w", "-"], input: Array(text.utf8))
        if case .finished(let status, let errors, _) = loaded, status != 0, errors.contains("-w") || errors.contains("usage") {
            loaded = await run(["load-buffer", "-"], input: Array(text.utf8))
        }
        switch loaded {
        case .couldNotStart(let why):
            return .failed(reason: "tmux could not be started (\(why))", fix: "put tmux on PATH, or run the dashboard outside tmux")
        case .timedOut:
            return .failed(reason: "tmux did not answer in \(limit)", fix: "check the tmux server with `tmux info`")
        case .finished(let status, let errors, _) where status != 0:
            let said = errors.split(separator: "\n").first.map(String.init) ?? "exit status \(status)"
            return .failed(reason: "tmux load-buffer said: \(said)", fix: "check the tmux server with `tmux info`")
        case .finished:
            break
        }
        let setting: String =
            if case .finished(0, _, let output) = await run(["show-options", "-gv", "set-clipboard"], input: [], capture: true) {
                output.trimmingCharacters(in: .whitespacesAndNewlines)
            } else { "" }
        return .tmuxBuffer(toTerminal: setting == "on" || setting == "external")
    }

    enum Run {
        case couldNotStart(String)
        case timedOut
        /// Exit status, standard error, standard output.
        case finished(Int32, String, String)
    }

    /// Runs tmux with `arguments`, `input` on its standard input; at most `limit`.
    func run(_ arguments: [String], input: [UInt8], capture: Bool = false) async -> Run {
        // A tmux that exits before reading (no server) must fail the write, not end the dashboard.
        _ = signal(SIGPIPE, SIG_IGN)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["tmux"] + arguments
        process.environment = environment
        let stdin = Pipe(), stdout = Pipe(), stderr = Pipe()
        (process.standardInput, process.standardOutput, process.standardError) = (stdin, stdout, stderr)
        let exited = AsyncStream<Int32>.makeStream()
        process.terminationHandler = { exited.continuation.yield($0.terminationStatus) }
        do { try process.run() } catch { return .couldNotStart("\(error.localizedDescription)") }
        let status: Int32? = await withTaskGroup(of: Int32?.self) { group in
            group.addTask {
                // Off the loop's thread: a tmux that does not read cannot stall the screen. Once
                // it is ended, the write fails (SIGPIPE is ignored) instead of blocking.
                try? stdin.fileHandleForWriting.write(contentsOf: input)
                try? stdin.fileHandleForWriting.close()
                return await exited.stream.first { _ in true }
            }
            group.addTask {
                try? await Task.sleep(for: limit)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        guard let status else {
            process.terminate()
            return .timedOut
        }
        let errors = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let output = capture ? String(decoding: stdout.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) : ""
        return .finished(status, errors, output)
    }
}
