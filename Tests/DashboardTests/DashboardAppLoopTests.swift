import Foundation
import Synchronization
import Testing

@testable import Dashboard
import ReceiptCore
import TerminalUI

/// The UI loop itself, driven by a scripted terminal: what it draws, how long it waits, and
/// what it takes in from watched sources.
@Suite struct DashboardAppLoopTests {
    /// A terminal that replays keys and remembers every frame and every wait it was asked for.
    final class ScriptedTerminal: TerminalBackend {
        var keys: [KeyEvent]
        var frames: [ScreenBuffer] = []
        var waits: [Int?] = []
        let size: (width: Int, height: Int)

        init(keys: [KeyEvent], width: Int = 120, height: Int = 40) {
            self.keys = keys
            self.size = (width, height)
        }

        func draw(_ buffer: ScreenBuffer) { frames.append(buffer) }

        func readEvent(timeoutMilliseconds: Int?) -> KeyEvent? {
            waits.append(timeoutMilliseconds)
            return keys.isEmpty ? nil : keys.removeFirst()
        }

        func sendRaw(_ sequence: String) {}

        func text(frame: Int) -> String {
            let buffer = frames[frame]
            return (0..<buffer.height).map { buffer.row(at: $0) }.joined(separator: "\n")
        }
    }

    /// A watched source that hands over prepared inputs on the given polls (0-based).
    final class ScriptedFeed: InputFeed {
        private let polls = Mutex(0)
        let arrivals: [Int: [LoadedInput]]

        init(arrivals: [Int: [LoadedInput]]) { self.arrivals = arrivals }

        func poll() -> [LoadedInput] {
            polls.withLock { count in
                defer { count += 1 }
                return arrivals[count] ?? []
            }
        }

        var pollCount: Int { polls.withLock { $0 } }
    }

    static let env = DashboardEnvironment(listDirectory: { _ in nil }, now: { DashboardTests.now })

    @Test func idleLoopBlocksInsteadOfPolling() async {
        var state = DashboardState(now: DashboardTests.now)
        let terminal = ScriptedTerminal(keys: [.down, .character("q")])
        await DashboardApp.run(&state, backend: terminal, environment: Self.env)
        // Nothing running, nothing watched: every wait is unbounded (no CPU while idle).
        #expect(terminal.waits == [nil, nil])
        #expect(terminal.frames.count == 2)
    }

    @Test func watchedInputsArriveWhileTheScreenIsUp() async throws {
        let demo = DemoCorpus.items()
        let first = try #require(demo.first { $0.name.hasPrefix("production-subscriptions") })
        let second = try #require(demo.first { $0.name.hasPrefix("ios6") })
        let feed = ScriptedFeed(arrivals: [
            1: [LoadedInput(source: "/inbox/\(first.name)", result: .success(first.bytes))],
            3: [
                LoadedInput(source: "/inbox/\(second.name)", result: .success(second.bytes)),
                LoadedInput(source: "/inbox/huge.der", result: .failure(.init(.inputTooLarge, "is 3 GB; the limit is 64 MB"))),
            ],
        ])
        var state = DashboardState(now: DashboardTests.now)
        let terminal = ScriptedTerminal(keys: [.tick, .tick, .tick, .character("q")])
        await DashboardApp.run(&state, backend: terminal, environment: Self.env, feed: feed)

        // Watching polls twice a second rather than blocking.
        #expect(terminal.waits == [500, 500, 500, 500])
        #expect(feed.pollCount == 4)
        #expect(state.items.map(\.source) == ["/inbox/\(first.name)", "/inbox/\(second.name)"])
        #expect(state.items.allSatisfy { $0.decoded != nil })
        // The frame after each arrival shows it, with a message saying where it came from.
        #expect(!terminal.text(frame: 0).contains(first.name))
        #expect(terminal.text(frame: 1).contains(first.name))
        #expect(terminal.text(frame: 1).contains("1 new input from watched sources"))
        #expect(terminal.text(frame: 3).contains(second.name))
        // A file that could not be read is logged, and what was loaded stays.
        #expect(terminal.text(frame: 3).contains("2 new inputs from watched sources"))
        #expect(state.log.contains { $0.text == "could not read /inbox/huge.der: is 3 GB; the limit is 64 MB" && $0.role == .error })
        #expect(state.items.count == 2)
    }

    @Test func endOfInputEndsTheLoop() async {
        var state = DashboardState(now: DashboardTests.now)
        let feed = ScriptedFeed(arrivals: [:])
        let terminal = ScriptedTerminal(keys: [])
        await DashboardApp.run(&state, backend: terminal, environment: Self.env, feed: feed)
        #expect(terminal.frames.count == 1)
        #expect(terminal.waits == [500])
    }
}
