import Foundation
import Synchronization
import Testing
import TestSupport

@testable import Dashboard
import AppStoreAPI
import ReceiptDemo
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
        let words = Wording("dashboard-app-loop")
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
        words.said(terminal.text(frame: 1))
        #expect(terminal.text(frame: 3).contains(second.name))
        // A file that could not be read is logged, and what was loaded stays.
        words.said(terminal.text(frame: 3))
        #expect(state.log.contains { $0.text == "could not read /inbox/huge.der: is 3 GB; the limit is 64 MB" && $0.role == .error })
        #expect(state.items.count == 2)
        words.check()
    }

    @Test func endOfInputEndsTheLoop() async {
        var state = DashboardState(now: DashboardTests.now)
        let feed = ScriptedFeed(arrivals: [:])
        let terminal = ScriptedTerminal(keys: [])
        await DashboardApp.run(&state, backend: terminal, environment: Self.env, feed: feed)
        #expect(terminal.frames.count == 1)
        #expect(terminal.waits == [500])
    }

    /// A write whose answer comes only once `q` was pressed: the run returns after the write is
    /// answered and recorded, never before (the executable closes the audit store next).
    final class GatedActing: CustomerActing {
        let gate = AsyncStream<Void>.makeStream()
        /// The audit rows written, by request id (what the live adapter records after the answer).
        let recorded = Mutex<[String]>([])

        func extend(_ order: ExtendOrder) async -> ActionAnswer {
            for await _ in gate.stream { break }
            recorded.withLock { $0.append(order.requestID) }
            return ActionAnswer(ok: true, line: "extended \(order.originalTransactionID)")
        }
        func consume(_ order: ConsumptionOrder) async -> ActionAnswer { ActionAnswer(ok: false, line: "not asked") }
        func setToken(_ order: TokenOrder) async -> ActionAnswer { ActionAnswer(ok: false, line: "not asked") }
    }

    /// Hands out `y` (send) and `q`; Apple's answer to the write is let through only once the
    /// screen says the dashboard is waiting for it, after `q`.
    final class QuittingTerminal: TerminalBackend {
        var keys: [KeyEvent] = [.character("y"), .character("q")]
        let acting: GatedActing
        var frames: [String] = []
        let size: (width: Int, height: Int) = (120, 40)

        init(acting: GatedActing) { self.acting = acting }

        func draw(_ buffer: ScreenBuffer) {
            frames.append(buffer.text)
            if buffer.text.contains("quitting once the write sent to Apple is answered and recorded") { acting.gate.continuation.yield() }
        }
        func sendRaw(_ sequence: String) {}
        func readEvent(timeoutMilliseconds: Int?) -> KeyEvent? { keys.isEmpty ? nil : keys.removeFirst() }
    }

    @Test func quittingRightAfterAWriteWaitsForItsRecord() async throws {
        let words = Wording("dashboard-app-loop")
        let acting = GatedActing()
        let terminal = QuittingTerminal(acting: acting)
        var state = DashboardState(now: DashboardTests.now)
        var form = ExtendForm(
            originalTransactionID: "2000000900000001", productID: "pro.monthly", expires: nil, environment: .sandbox,
            query: .transactionID("2000000900000001"), requestID: "6d1c9f3e-0000-4000-8000-000000000001")
        (form.days, form.confirming) = ("3", true)
        state.mode = .extendForm(form)
        let ui = SingleThreadExecutor(name: "quit-after-write-test")
        await withTaskExecutorPreference(ui) {
            await DashboardApp.run(&state, backend: terminal, environment: Self.env, lookup: PreparedLookupStub(), acting: acting)
        }
        #expect(acting.recorded.withLock { $0 } == ["6d1c9f3e-0000-4000-8000-000000000001"])
        words.said(terminal.frames.last)
        words.check()
    }

    /// A look-up that answers nothing: the loop needs one for writes to be allowed.
    struct PreparedLookupStub: CustomerLookingUp {
        func lookUp(_ query: LookupQuery, onEvent: @escaping @Sendable (LookupEvent) -> Void) async -> CustomerLookupResult {
            CustomerLookupResult(query: query, at: DashboardTests.now, environment: .sandbox)
        }
    }
}
