import Dashboard
import DashboardLive
import Foundation
import Testing
import TestSupport

/// A tmux server of the test's own (its own socket), for the clipboard to copy into.
private struct TmuxServer {
    let name = "receiptdash-copy-\(UUID().uuidString.prefix(8))"

    static var installed: Bool {
        (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").contains {
            FileManager.default.isExecutableFile(atPath: "\($0)/tmux")
        }
    }

    /// Starts the server with one detached session. The server tmux forks keeps every open
    /// descriptor it inherits, among them one Foundation's `Process` waits on (and other tests'
    /// pipes): bash closes all but the standard three first, or waiting would last the server's life.
    func start() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        let closeInherited = #"for fd in /proc/$$/fd/*; do n=${fd##*/}; [ "$n" -gt 2 ] && eval "exec $n>&-"; done 2>/dev/null"#
        process.arguments = ["bash", "-c", "\(closeInherited); exec tmux -L \(name) new-session -d -x 80 -y 24 'sleep 900'"]
        (process.standardInput, process.standardOutput, process.standardError) = (FileHandle.nullDevice, FileHandle.nullDevice, FileHandle.nullDevice)
        try process.run()
        process.waitUntilExit()
    }

    @discardableResult
    func tmux(_ arguments: String...) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["tmux", "-L", name] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    /// `TMUX` as tmux sets it for a pane of this server: the socket, the server's pid, the session.
    func environment() throws -> [String: String] {
        let socket = try tmux("display-message", "-p", "#{socket_path},#{pid},0").trimmingCharacters(in: .whitespacesAndNewlines)
        var environment = ProcessInfo.processInfo.environment
        environment["TMUX"] = socket
        return environment
    }
}

/// `y` and `Y` inside tmux copy through tmux itself, and say where the text went.
@Suite(.enabled(if: TmuxServer.installed, "needs tmux on PATH"))
struct CopyThroughTmuxTests {
    @Test func theCopiedTextIsInTmuxsBufferByteForByte() async throws {
        let server = TmuxServer()
        try server.start()
        defer { _ = try? server.tmux("kill-server") }
        let clipboard = try #require(TmuxClipboard(environment: try server.environment(), limit: .seconds(600)))
        let text = "{\"product\":\"com.example.pro.monthly\",\"note\":\"é ✓\"}\nsecond line"
        #expect(await clipboard.copy(text) == .tmuxBuffer(toTerminal: true))
        #expect(try server.tmux("show-buffer") == text)
    }

    @Test func withSetClipboardOffTheCopyStaysInTmuxAndTheMessageSaysHowToPassItOn() async throws {
        let server = TmuxServer()
        try server.start()
        defer { _ = try? server.tmux("kill-server") }
        try server.tmux("set-option", "-g", "set-clipboard", "off")
        let clipboard = try #require(TmuxClipboard(environment: try server.environment(), limit: .seconds(600)))
        let outcome = await clipboard.copy("340001196262039")
        #expect(outcome == .tmuxBuffer(toTerminal: false))
        #expect(try server.tmux("show-buffer") == "340001196262039")
        #expect(outcome.message(copying: "340001196262039").text.contains("set -g set-clipboard on"))
    }

    @Test func aTmuxServerThatIsNotThereIsAFailureNotACopy() async throws {
        var environment = ProcessInfo.processInfo.environment
        environment["TMUX"] = TemporaryFolder("tmux-gone").path + "/socket,1,0"
        let clipboard = try #require(TmuxClipboard(environment: environment))
        // Long enough not to fit a pipe: tmux exits without reading it, and the dashboard lives on.
        let outcome = await clipboard.copy(String(repeating: "x", count: 200_000))
        guard case .failed = outcome else {
            Issue.record("a copy with no tmux server to take it was reported as \(outcome)")
            return
        }
    }

    @Test func outsideTmuxThereIsNoTmuxClipboard() {
        var environment = ProcessInfo.processInfo.environment
        environment["TMUX"] = nil
        #expect(TmuxClipboard(environment: environment) == nil)
    }
}
