import Foundation
import Synchronization
import Testing
import TestSupport

@testable import Dashboard
import TerminalUI

/// What `y` and `Y` hand the clipboard, and the message that says where the text went (inside
/// tmux: tmux's buffer, and the terminal's clipboard when tmux passes it on; outside: OSC 52).
@Suite struct CopyReachesTheClipboardTests {
    final class RecordingClipboard: Clipboard {
        let copies = Mutex<[String]>([])
        let outcome: CopyOutcome
        init(_ outcome: CopyOutcome) { self.outcome = outcome }
        func copy(_ text: String) async -> CopyOutcome {
            copies.withLock { $0.append(text) }
            return outcome
        }
    }

    final class RawTerminal: TerminalBackend {
        var keys: [KeyEvent]
        var sent: [String] = []
        let size = (width: 120, height: 40)
        init(keys: [KeyEvent]) { self.keys = keys }
        func draw(_ buffer: ScreenBuffer) {}
        func readEvent(timeoutMilliseconds: Int?) -> KeyEvent? { keys.isEmpty ? nil : keys.removeFirst() }
        func sendRaw(_ sequence: String) { sent.append(sequence) }
    }

    /// Purchases, the second purchase, the Transaction column, then `y`.
    static let copyTransaction: [KeyEvent] = [.down, .down, .tab, .left, .left, .character("y")]

    @Test(arguments: [
        (CopyOutcome.tmuxBuffer(toTerminal: true), ColorRole.ok),
        (.tmuxBuffer(toTerminal: false), .ok),
        (.failed(reason: "tmux did not answer in 3.0 seconds", fix: "check the tmux server with `tmux info`"), .error),
    ])
    func theMessageSaysWhereTheCopyWent(_ outcome: CopyOutcome, role: ColorRole) async {
        let words = Wording("dashboard-app-loop", case: "\(outcome)")
        var state = await DashboardTests.demoState()
        let clipboard = RecordingClipboard(outcome)
        let terminal = RawTerminal(keys: Self.copyTransaction)
        await DashboardApp.run(&state, backend: terminal, environment: DashboardAppLoopTests.env, clipboard: clipboard)
        #expect(clipboard.copies.withLock { $0 } == ["340001196262039"])
        // The clipboard took it: nothing is written to the terminal for it.
        #expect(terminal.sent == [])
        #expect(state.message?.role == role)
        words.said(state.message?.text)
        words.check()
    }

    @Test func aRowGoesWholeToTheClipboard() async throws {
        let words = Wording("dashboard-app-loop", replacing: [])
        var state = await DashboardTests.demoState()
        let clipboard = RecordingClipboard(.tmuxBuffer(toTerminal: true))
        await DashboardApp.run(
            &state, backend: RawTerminal(keys: [.down, .down, .tab, .character("Y")]), environment: DashboardAppLoopTests.env,
            clipboard: clipboard)
        let row = try #require(clipboard.copies.withLock { $0 }.first)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(row.utf8)) as? [String: Any])
        #expect(object["transaction_id"] as? String == "340001196262039")
        #expect(state.message?.role == .ok)
        words.said(state.message?.text.replacingOccurrences(of: "(\(row.utf8.count) bytes)", with: "(<row> bytes)"))
        words.check()
    }

    @Test func withoutAClipboardTheTerminalGetsOSC52() async {
        let words = Wording("dashboard-app-loop")
        var state = await DashboardTests.demoState()
        let terminal = RawTerminal(keys: Self.copyTransaction)
        await DashboardApp.run(&state, backend: terminal, environment: DashboardAppLoopTests.env)
        // base64("340001196262039"), unwrapped: outside tmux the terminal reads it itself.
        #expect(terminal.sent == ["\u{1B}]52;c;MzQwMDAxMTk2MjYyMDM5\u{07}"])
        #expect(state.message?.role == .ok)
        words.said(state.message?.text)
        words.check()
    }

    @Test func textLongerThanOSC52TakesIsCutAndTheMessageSaysSo() {
        #expect(DashboardApp.osc52(String(repeating: "a", count: osc52Limit + 10), inTmux: false).utf8.count == 7 + 99_992 + 1)
        #expect(CopyOutcome.sentToTerminal(truncatedTo: osc52Limit).message(copying: "the row").role == .warning)
    }
}
