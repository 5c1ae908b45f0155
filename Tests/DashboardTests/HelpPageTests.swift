import Foundation
import Testing
import TestSupport
@testable import Dashboard
import TerminalUI

/// `?` is a page: every key of the focused view (or the Customer view) is on it, reached by
/// scrolling at 80×24 as at 200×50; `/` finds a key; only Esc, q and ? close it.
@Suite struct HelpPageTests {
    let dashboard = DashboardTests()

    /// Every page of the help, from the first to the last (PgDn until it stops moving).
    func pages(_ state: inout DashboardState) -> [String] {
        var pages = [DashboardView.render(state, width: state.width, height: state.height).text]
        for _ in 0..<20 {
            let before = state.mode
            dashboard.press(&state, .pageDown)
            if state.mode == before { break }
            pages.append(DashboardView.render(state, width: state.width, height: state.height).text)
        }
        return pages
    }

    /// How the page writes a key's first line: the label in eight columns, then the words.
    func opening(_ binding: KeyBinding) -> String {
        TextWidth.pad(binding.label, to: 8) + " " + String(binding.description.prefix(16))
    }

    @Test(arguments: [(80, 24), (200, 50)])
    func everyKeyOfEachPaneIsReachable(size: (Int, Int)) async {
        for pane in [Pane.receipts, .purchases, .subscriptions, .status, .log] {
            var state = await DashboardTests.demoState(width: size.0, height: size.1)
            state.focus = pane
            dashboard.press(&state, .character("?"))
            let all = pages(&state).joined(separator: "\n")
            let (here, everywhere) = KeyMap.helpBindings(for: pane)
            for binding in here + everywhere where !binding.action.writes {
                #expect(all.contains(opening(binding)), "\(pane) \(size): \(binding.label)")
            }
            // The last page ends with quit and the themes; its last line says where it is.
            let last = DashboardView.render(state, width: state.width, height: state.height).text
            #expect(last.contains("q        quit"), "\(pane) \(size)")
            #expect(last.contains("Themes: --theme NAME|PATH"), "\(pane) \(size)")
            guard case .help(let page) = state.mode else {
                Issue.record("help closed")
                continue
            }
            let (lines, rows) = state.helpGeometry(page)
            #expect(last.contains("\(lines.count - rows + 1)–\(lines.count) of \(lines.count) · ↑↓ jk PgUp PgDn g G"), "\(pane) \(size)")
            // Writes are left out without credentials, and the page says so.
            let writes = here.filter(\.action.writes).map(\.label)
            if !writes.isEmpty {
                #expect(all.contains("\(writes.joined(separator: ", ")) (writes to Apple) are hidden: writes need"), "\(pane)")
            }
        }
    }

    @Test func aKeyOfAnotherPaneIsNotListedAndWritesShowWhenAvailable() async {
        var state = await DashboardTests.demoState(width: 80, height: 24)
        state.focus = .subscriptions
        dashboard.press(&state, .character("?"))
        var all = pages(&state).joined(separator: "\n")
        #expect(!all.contains("f        filter receipts"))
        #expect(!all.contains(opening(KeyMap.bindings.first { $0.action == .extend }!)))
        state.actionsAvailable = true
        dashboard.press(&state, .character("g"))
        all = pages(&state).joined(separator: "\n")
        #expect(all.contains("x        extend a looked-up"))
        #expect(!all.contains("(writes to Apple) are hidden"))
    }

    @Test func searchFindsAKeyAndOnlyEscQOrQuestionMarkClose() async {
        let words = Wording("help-page")
        defer { words.check() }
        var state = await DashboardTests.demoState(width: 80, height: 24)
        state.focus = .receipts
        dashboard.press(&state, .character("?"))
        // Keys that are not the page's do nothing (they used to close it).
        dashboard.press(&state, .character("x"), .character("p"), .tab)
        guard case .help = state.mode else {
            Issue.record("a key closed the help")
            return
        }
        dashboard.press(&state, .character("/"))
        for c in "export" { dashboard.press(&state, .character(c)) }
        #expect(DashboardView.render(state, width: 80, height: 24).text.contains("/export▏  Enter finds · Esc cancels"))
        dashboard.press(&state, .enter)
        guard case .help(let page) = state.mode else {
            Issue.record("help closed")
            return
        }
        let (lines, rows) = state.helpGeometry(page)
        let found = try! #require(page.match)
        #expect(lines[found].text.hasPrefix("e        export the view"))
        #expect(found >= page.offset && found < page.offset + rows)
        let screen = DashboardView.render(state, width: 80, height: 24)
        #expect(screen.text.contains("e        export the view"))
        // The match is marked: its label's cell is drawn as a match.
        let at = (0..<screen.height).lazy.flatMap { y in (0..<screen.width).lazy.map { (x: $0, y: y) } }.first { p in
            (0..<14).map { String(screen[p.x + $0, p.y].character) }.joined() == "e        expor"
        }
        #expect(at.map { screen[$0.x, $0.y].style.role } == .match)
        // n: the next line saying "export" (the Customer view's export in "e"'s words), N back.
        let matches = DashboardState.helpMatches(lines, "export")
        dashboard.press(&state, .character("n"))
        if case .help(let next) = state.mode { #expect(next.match == matches.first { $0 > found } ?? matches[0]) }
        dashboard.press(&state, .character("N"))
        if case .help(let back) = state.mode { #expect(back.match == found) }
        // A search that finds nothing says so.
        dashboard.press(&state, .character("/"), .character("z"), .character("z"), .character("z"), .enter)
        words.said(DashboardView.render(state, width: 80, height: 24).text.split(separator: "\n").last { $0.contains("zzz") })
        dashboard.press(&state, .character("q"))
        #expect(state.mode == .normal)
        dashboard.press(&state, .character("?"), .escape)
        #expect(state.mode == .normal)
        dashboard.press(&state, .character("?"), .character("?"))
        #expect(state.mode == .normal)
    }

    @Test(arguments: [(80, 24), (200, 50)])
    func theCustomerViewListsItsOwnKeys(size: (Int, Int)) async throws {
        var state = try await CustomerViewTests().lookedUp()
        dashboard.press(&state, .resize(width: size.0, height: size.1))
        guard case .customer(let selected, _) = state.mode else {
            Issue.record("not in the Customer view")
            return
        }
        dashboard.press(&state, .character("?"))
        let all = pages(&state).joined(separator: "\n")
        #expect(all.contains("Keys: Customer"))
        for binding in KeyMap.customerBindings where !binding.action.writes {
            #expect(all.contains(opening(binding)), "\(size): \(binding.label)")
        }
        #expect(all.contains("Esc/q    back to the dashboard"))
        dashboard.press(&state, .escape)
        #expect(state.mode == .customer(selected: selected, scroll: 0))
    }
}
