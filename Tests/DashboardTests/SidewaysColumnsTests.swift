import Foundation
import Testing
import TestSupport
@testable import Dashboard
import TerminalUI

/// Tables keep their facts at 80×24 (product, expiry, state; the file and its latest expiry;
/// the customer's `auto-renew on`) and scroll sideways with ←/→ to the columns that did not
/// fit, the header counting those off screen; when everything fits ←/→ change pane as before.
@Suite struct SidewaysColumnsTests {
    let dashboard = DashboardTests()

    func lines(_ state: DashboardState) -> [String] {
        DashboardView.render(state, width: state.width, height: state.height).text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    @Test func receiptsKeepTheFileAndExpiryAndScrollToTheVerdict() async {
        let words = Wording("sideways-columns")
        defer { words.check() }
        var state = await DashboardTests.demoState(width: 80, height: 24)
        dashboard.press(&state, .down, .down, .down)
        var screen = lines(state)
        #expect(screen[2].hasPrefix("│   File    4▶ Expires   ││"))
        // Names cut keep their end, without the extension.
        #expect(screen[6].hasPrefix("│✓  …kly-intro 2020-07-22││"))
        dashboard.press(&state, .right)
        #expect(state.focus == .receipts)
        #expect(state.sideways[.receipts] == 1)
        screen = lines(state)
        #expect(screen[2].hasPrefix("│   File    ◀1 3▶ Verdict││"))
        #expect(screen[6].hasPrefix("│✓  …weekly-intro valid  ││"))
        dashboard.press(&state, .right, .right, .right)
        screen = lines(state)
        #expect(screen[2].hasPrefix("│   File         ◀4 A/E/R││"))
        #expect(screen[6].hasPrefix("│✓  …x-weekly-intro 0/1/0││"))
        // At the end: it stays, and says so; ← goes back.
        dashboard.press(&state, .right)
        #expect(state.sideways[.receipts] == 4)
        #expect(state.focus == .receipts)
        words.said(state.message?.text)
        dashboard.press(&state, .left, .left, .left, .left)
        #expect(lines(state)[2].hasPrefix("│   File    4▶ Expires   ││"))
    }

    @Test func purchasesKeepProductExpiryStateAndTheCursorScrollsToTransaction() async throws {
        var state = await DashboardTests.demoState(width: 80, height: 24)
        dashboard.press(&state, .down, .down, .down, .tab)
        var screen = lines(state)
        #expect(screen[2].hasSuffix("││Product                4▶ Expires          State    │"))
        #expect(screen[3].hasSuffix("││com.revenuec…1_week_intro 2020-07-14 19:36 expired  │"))
        // ←←: the cursor from Purchased to Transaction, which scrolls into view.
        dashboard.press(&state, .left, .left)
        #expect(state.columnCursor == .transaction)
        screen = lines(state)
        #expect(screen[2].hasSuffix("││Product      ◀3 1▶ Transaction      Original        │"))
        #expect(screen[3].hasSuffix("││com.reve…eek_intro 1000000692878476 =               │"))
        dashboard.press(&state, .right, .right)
        #expect(lines(state)[2].hasSuffix("││Product         ◀4 Original         Purchased ▲     │"))
    }

    @Test func everythingFitsAt200x50AndArrowsChangePane() async {
        var state = await DashboardTests.demoState(width: 200, height: 50)
        dashboard.press(&state, .down, .down, .down)
        let screen = lines(state).joined(separator: "\n")
        #expect(screen.contains("│Product            Type        Transaction      Original         Purchased ▲      Expires          State    │"))
        #expect(!screen.contains("▶ "))
        dashboard.press(&state, .right)
        #expect(state.focus == .purchases)
        dashboard.press(&state, .tab, .left)
        #expect(state.focus == .purchases)
    }

    @Test func theCustomerViewKeepsAutoRenewAndItsHintAt80x24AndScrollsTheTimeline() async throws {
        var state = try await CustomerViewTests().lookedUp()
        dashboard.press(&state, .resize(width: 80, height: 24))
        var screen = lines(state).joined(separator: "\n")
        // The facts wrap whole: `auto-renew off` is not cut to `auto`.
        #expect(screen.contains("││  auto-renew off, Apple's status expired"))
        // Issues and the trust warning wrap whole while the timeline keeps five rows; the
        // timeline's hint keeps `e export · Esc back · ? keys`.
        let words = Wording("sideways-columns")
        words.said(lines(state).filter { ($0.contains("! ") || $0.contains("NOT GENUINE") || $0.hasPrefix("││  ") || $0.contains("Timeline (")) && $0.contains(where: \.isLetter) })
        words.check()
        dashboard.press(&state, .right, .right, .right)
        #expect(state.customerSideways == 60)
        screen = lines(state).joined(separator: "\n")
        #expect(screen.contains("││2025-10-02 07:06:07  ◀ 2025-10-02T07:09:07Z (DID_RENEW)  [api+notification,▶│"))
        dashboard.press(&state, .right)
        #expect(lines(state).joined(separator: "\n").contains(" (DID_RENEW)  [api+notification, valid]"))
    }
}
