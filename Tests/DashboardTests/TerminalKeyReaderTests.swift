import Foundation
import Testing

@testable import Dashboard
@testable import TerminalUI

/// The key reader's decisions when the terminal goes away: a hang-up, end of input, reads that
/// fail again and again (a background process group whose stop signal cannot stop it, or an
/// orphaned one). The session ends as on SIGHUP instead of polling a dead terminal for ever.
@Suite struct TerminalKeyReaderTests {
    /// Raw input from a script: what each read and each wait returns. When the script runs out,
    /// reads find nothing and waits say `whenDone`. A reader that spins is stopped by a SIGTERM
    /// after `giveUpAfter` waits, so a test of a spinning reader fails instead of hanging.
    final class ScriptedInput: RawTerminalInput {
        var reads: [(code: UInt32, isKey: Bool)?]
        var waitResults: [InputWait]
        let whenDone: InputWait
        let giveUpAfter: Int
        private(set) var readCount = 0
        /// Whether another process group owns the terminal; `onStop` runs when the reader stops
        /// the process as a background read would (it may bring it to the foreground, say).
        var inBackground = false
        var onStop: (ScriptedInput) -> Void = { _ in }
        var signal: Int32?
        private(set) var stops = 0
        private(set) var waits: [Int] = []
        private var clock = 0

        init(reads: [(code: UInt32, isKey: Bool)?] = [], waits: [InputWait] = [], whenDone: InputWait, giveUpAfter: Int = 10_000) {
            self.reads = reads
            self.waitResults = waits
            self.whenDone = whenDone
            self.giveUpAfter = giveUpAfter
        }

        func readAvailable() -> (code: UInt32, isKey: Bool)? {
            readCount += 1
            return reads.isEmpty ? nil : reads.removeFirst()
        }

        func wait(milliseconds: Int) -> InputWait {
            waits.append(milliseconds)
            if !waitResults.isEmpty { return waitResults.removeFirst() }
            // A timed wait on a dead terminal that reports nothing lets the clock run.
            if whenDone == .timedOut { clock += max(0, milliseconds) }
            return whenDone
        }

        func pendingSignal() -> Int32? { signal ?? (waits.count >= giveUpAfter ? SIGTERM : nil) }
        func isInBackground() -> Bool { inBackground }

        func stopUntilContinued() {
            stops += 1
            onStop(self)
        }

        func keyEvent(for code: UInt32) -> KeyEvent? { code == 410 ? .resize(width: 100, height: 30) : nil }
        func monotonicMilliseconds() -> Int { clock }
    }

    /// A terminal whose reads return end of input (read gives 0 bytes) while poll keeps saying
    /// "readable": the pattern of a pty whose master closed without POLLHUP being seen alone, or
    /// of EIO in a background process group.
    @Test func readsThatFindNothingAgainAndAgainEndTheSessionAsOnSIGHUP() {
        let input = ScriptedInput(whenDone: .readable)
        let reader = TerminalKeyReader(input: input)
        #expect(reader.readEvent(timeoutMilliseconds: nil) == nil)
        #expect(reader.interruption == SIGHUP)
        #expect(reader.inputEnded)
        // Bounded: the limit's number of empty reads after "readable", not thousands a second.
        #expect(input.waits.count == TerminalKeyReader.emptyReadLimit)
        #expect(input.readCount == TerminalKeyReader.emptyReadLimit + 1)
        // Once ended, it stays ended without touching the terminal again.
        #expect(reader.readEvent(timeoutMilliseconds: 500) == nil)
        #expect(input.waits.count == TerminalKeyReader.emptyReadLimit)
    }

    /// The same with a timeout (the loop's 500 ms while following a database): no tick for ever.
    @Test func withATimeoutTooTheDeadTerminalEndsTheSessionRatherThanTicking() {
        let input = ScriptedInput(whenDone: .readable)
        let reader = TerminalKeyReader(input: input)
        #expect(reader.readEvent(timeoutMilliseconds: 500) == nil)
        #expect(reader.interruption == SIGHUP)
        #expect(input.waits.count == TerminalKeyReader.emptyReadLimit)
    }

    /// A hang-up that poll reports together with POLLIN (as Linux does for a pty whose master
    /// closed): what the terminal still held is read, then the session ends.
    @Test func aHangUpDeliversWhatWasTypedThenEnds() {
        let input = ScriptedInput(reads: [(0x61, false), nil, (0x62, false)], waits: [.hungUp], whenDone: .hungUp)
        let reader = TerminalKeyReader(input: input)
        #expect(reader.readEvent(timeoutMilliseconds: nil) == .character("a"))
        #expect(reader.readEvent(timeoutMilliseconds: nil) == .character("b"))
        #expect(reader.readEvent(timeoutMilliseconds: nil) == nil)
        #expect(reader.interruption == SIGHUP)
        #expect(input.waits.count == 1)
    }

    /// One read that finds nothing after "readable" (half of a multi-byte character) is not the
    /// end: the next byte completes it.
    @Test func oneEmptyReadIsNotTheEnd() {
        let input = ScriptedInput(reads: [nil, nil, (0xE9, false)], waits: [.readable, .readable], whenDone: .timedOut)
        let reader = TerminalKeyReader(input: input)
        #expect(reader.readEvent(timeoutMilliseconds: nil) == .character("é"))
        #expect(reader.interruption == nil)
        #expect(!reader.inputEnded)
        // Empty reads are counted only in a row: a key in between starts the count again.
        let again = ScriptedInput(
            reads: Array(repeating: nil, count: TerminalKeyReader.emptyReadLimit - 1) + [(0x71, false)]
                + Array(repeating: nil, count: TerminalKeyReader.emptyReadLimit - 1) + [(0x72, false)],
            whenDone: .readable)
        let second = TerminalKeyReader(input: again)
        #expect(second.readEvent(timeoutMilliseconds: nil) == .character("q"))
        #expect(second.readEvent(timeoutMilliseconds: nil) == .character("r"))
        #expect(second.interruption == nil)
    }

    /// Idle is not dead: a wait that times out is a tick, and the terminal is still there.
    @Test func aTimeoutIsATickNotTheEnd() {
        let input = ScriptedInput(whenDone: .timedOut)
        let reader = TerminalKeyReader(input: input)
        #expect(reader.readEvent(timeoutMilliseconds: 500) == .tick)
        #expect(reader.readEvent(timeoutMilliseconds: 500) == .tick)
        #expect(reader.interruption == nil)
        #expect(input.waits == [500, 500])
    }

    /// In a background process group (`timeout 60 receiptdash`, `receiptdash &`) a key typed
    /// at the terminal is not read (EIO, or a stop the kernel repeats after each SIGCONT): the
    /// process stops as job control expects, and reads its keys once brought to the foreground.
    @Test func inTheBackgroundItStopsAndReadsOnceInTheForeground() {
        let input = ScriptedInput(reads: [(0x6A, false)], whenDone: .readable)
        input.inBackground = true
        input.onStop = { $0.inBackground = false }  // `fg`
        let reader = TerminalKeyReader(input: input)
        #expect(reader.readEvent(timeoutMilliseconds: 500) == .character("j"))
        #expect(input.stops == 1)
        #expect(input.readCount == 1)
        #expect(reader.interruption == nil)
    }

    /// Continued but still in the background (`bg`, `kill -CONT`, or an orphaned group, which
    /// the system never stops): the dashboard cannot have its terminal, so it ends as on SIGHUP
    /// instead of stopping for ever or spinning, and never reads.
    @Test func continuedWithoutTheTerminalItEndsAsOnSIGHUP() {
        let input = ScriptedInput(whenDone: .readable)
        input.inBackground = true
        let reader = TerminalKeyReader(input: input)
        #expect(reader.readEvent(timeoutMilliseconds: nil) == nil)
        #expect(reader.interruption == SIGHUP)
        #expect(input.stops == 1)
        #expect(input.readCount == 0)
        #expect(input.waits.count == 1)
    }

    /// `timeout` sends SIGTERM then SIGCONT to a stopped dashboard: it ends with SIGTERM's status.
    @Test func aSignalThatComesWithTheContinueKeepsItsNumber() {
        let input = ScriptedInput(whenDone: .readable)
        input.inBackground = true
        input.onStop = { $0.signal = SIGTERM }
        let reader = TerminalKeyReader(input: input)
        #expect(reader.readEvent(timeoutMilliseconds: nil) == nil)
        #expect(reader.interruption == SIGTERM)
        #expect(input.readCount == 0)
    }

    /// In the background and idle: no stop, ticks as usual (the screen stays drawn).
    @Test func inTheBackgroundAndIdleItTicks() {
        let input = ScriptedInput(whenDone: .timedOut)
        input.inBackground = true
        let reader = TerminalKeyReader(input: input)
        #expect(reader.readEvent(timeoutMilliseconds: 500) == .tick)
        #expect(input.stops == 0)
        #expect(reader.interruption == nil)
    }

    /// A terminal that hangs up while the dashboard is in the background ends it too.
    @Test func inTheBackgroundAHangUpEndsIt() {
        let input = ScriptedInput(whenDone: .hungUp)
        input.inBackground = true
        let reader = TerminalKeyReader(input: input)
        #expect(reader.readEvent(timeoutMilliseconds: nil) == nil)
        #expect(reader.interruption == SIGHUP)
        #expect(input.stops == 0)
    }

    /// A signal keeps its own number (Ctrl-C 130, SIGTERM 143).
    @Test func aSignalEndsTheSessionWithItsNumber() {
        let input = ScriptedInput(whenDone: .interrupted, giveUpAfter: 3)
        let reader = TerminalKeyReader(input: input)
        #expect(reader.readEvent(timeoutMilliseconds: nil) == nil)
        #expect(reader.interruption == SIGTERM)
        #expect(!reader.inputEnded)
    }
}

/// The UI loop over a terminal that is gone: it ends, and the backend says SIGHUP (exit 129).
@Suite struct DeadTerminalLoopTests {
    final class ReaderTerminal: TerminalBackend {
        let input: TerminalKeyReaderTests.ScriptedInput
        let reader: TerminalKeyReader
        var frames = 0
        let size: (width: Int, height: Int) = (120, 40)

        init(_ input: TerminalKeyReaderTests.ScriptedInput) {
            self.input = input
            reader = TerminalKeyReader(input: input)
        }

        func draw(_ buffer: ScreenBuffer) { frames += 1 }
        func readEvent(timeoutMilliseconds: Int?) -> KeyEvent? { reader.readEvent(timeoutMilliseconds: timeoutMilliseconds) }
        func sendRaw(_ sequence: String) {}
    }

    final class NoNotifications: NotificationFeed {
        func poll() async -> [NotificationFeedEvent] { [] }
    }

    @Test func theLoopEndsWhenReadsReturnEndOfInput() async {
        var state = DashboardState(now: DashboardTests.now)
        // Following notifications: the loop wakes twice a second, the case seen at 100% CPU.
        let terminal = ReaderTerminal(TerminalKeyReaderTests.ScriptedInput(reads: [(0x6A, false)], whenDone: .readable))
        await DashboardApp.run(&state, backend: terminal, environment: DashboardAppLoopTests.env, notifications: NoNotifications())
        #expect(terminal.reader.interruption == SIGHUP)
        #expect(terminal.frames == 2)
        #expect(terminal.input.waits.count == TerminalKeyReader.emptyReadLimit)
    }

    @Test func theLoopEndsWhenTheTerminalHangsUp() async {
        var state = DashboardState(now: DashboardTests.now)
        let terminal = ReaderTerminal(TerminalKeyReaderTests.ScriptedInput(whenDone: .hungUp))
        await DashboardApp.run(&state, backend: terminal, environment: DashboardAppLoopTests.env)
        #expect(terminal.reader.interruption == SIGHUP)
        #expect(terminal.frames == 1)
        #expect(terminal.input.waits.count == 1)
    }
}
