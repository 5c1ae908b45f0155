@testable import Dashboard
import Foundation
import LocalFiles
import ReceiptCore
import ReceiptDemo
import Testing
import TestSupport
import TerminalUI

/// The Receipts pane as a list made for questions (issue 42): `f` filters with the
/// `inspect --summary --where` language, `s` steps through the sort columns, the title counts
/// what is listed, the selection stays on its receipt, and the columns follow the width. On the
/// six demo inputs, whose summaries `inspect --summary` gives (one expired subscription each but
/// the iOS 6 one, which has none).
@Suite struct ReceiptListTests {
    typealias Fixture = DashboardTests

    func press(_ state: inout DashboardState, _ keys: KeyEvent...) {
        for key in keys { _ = state.handle(key, environment: Fixture.env) }
    }

    func type(_ state: inout DashboardState, _ text: String) {
        for character in text { press(&state, .character(character)) }
    }

    /// The listed receipts' file names, in order.
    func listed(_ state: DashboardState) -> [String] {
        state.receiptOrder.map { (state.items[$0].source as NSString).lastPathComponent }
    }

    func filtered(_ filter: String) async -> DashboardState {
        var state = await Fixture.demoState()
        press(&state, .character("f"))
        type(&state, filter)
        press(&state, .enter)
        return state
    }

    static let all = [
        "ios6-transaction.b64", "notification-v2-expired.jws", "production-subscriptions.b64", "sandbox-weekly-intro.b64",
        "verify-response.json", "xcode-storekit-test.der",
    ]

    @Test func everyFilterTermNarrowsTheList() async {
        let cases: [(String, [String])] = [
            ("state:expired", Array(Self.all.dropFirst())),
            ("verdict:test", ["xcode-storekit-test.der"]),
            ("verdict:unverifiable", ["ios6-transaction.b64", "verify-response.json"]),
            ("env:sandbox", ["ios6-transaction.b64", "notification-v2-expired.jws", "sandbox-weekly-intro.b64", "verify-response.json"]),
            ("env:XCODE", ["xcode-storekit-test.der"]),
            ("product:org.getpure.pure.Week", ["production-subscriptions.b64"]),
            ("product:*intro", ["sandbox-weekly-intro.b64"]),
            ("bundle:com.*", ["ios6-transaction.b64", "notification-v2-expired.jws", "sandbox-weekly-intro.b64", "verify-response.json"]),
            ("file:*.b64", ["ios6-transaction.b64", "production-subscriptions.b64", "sandbox-weekly-intro.b64"]),
            ("file:demo/x*", ["xcode-storekit-test.der"]),
            ("getpure", ["production-subscriptions.b64"]),
            ("state:expired env:sandbox verdict:valid", ["notification-v2-expired.jws", "sandbox-weekly-intro.b64"]),
            ("state:active", []),
        ]
        for (filter, expected) in cases {
            let state = await filtered(filter)
            #expect(listed(state) == expected, "\(filter)")
            #expect(state.mode == .normal, "\(filter)")
            #expect(state.receiptFilterText == filter)
        }
    }

    @Test func theTitleAndMessageCountTheFilteredView() async {
        let words = Wording("receipt-list")
        var state = await filtered("state:expired env:sandbox")
        #expect(state.message?.text == "3 of 6 receipts match \"state:expired env:sandbox\"; Esc clears")
        let title = DashboardView.render(state, width: 120, height: 40).text.split(separator: "\n")[1].prefix(30)
        #expect(title.hasPrefix("┌─ Receipts [3 of 6] ─"))
        // Esc in Receipts clears it.
        press(&state, .escape)
        #expect(listed(state) == Self.all)
        words.said(state.message?.text)
        let none = await filtered("state:active")
        let empty = DashboardView.render(none, width: 120, height: 40).text.split(separator: "\n")[3].prefix(36)
        words.said(empty)
        words.check()
    }

    @Test func aFilterThatDoesNotReadSaysWhatItTakesAndKeepsTheList() async {
        let words = Wording("receipt-list")
        var state = await Fixture.demoState()
        press(&state, .character("f"))
        type(&state, "state:bogus")
        press(&state, .enter)
        #expect(state.mode == .receiptFilter("state:bogus"))
        words.said(state.message?.text)
        // As typed, the last text that read is in force: here the word "state", found nowhere.
        #expect(state.receiptFilterText == "state")
        #expect(listed(state) == [])
        let line = DashboardView.render(state, width: 120, height: 40).text.split(separator: "\n")[38]
        words.said(line)
        press(&state, .control("u"))
        type(&state, "unknown:x")
        press(&state, .enter)
        words.said(state.message?.text)
        // Esc: nothing filtered, everything listed.
        press(&state, .escape)
        #expect(state.mode == .normal)
        #expect(listed(state) == Self.all)
        words.check()
    }

    @Test func sortStepsThroughTheColumnsAndKeepsTheSelection() async {
        let words = Wording("receipt-list")
        var state = await Fixture.demoState()
        state.focus = .receipts
        press(&state, .down, .down)
        #expect(state.selectedItem?.source == "demo/production-subscriptions.b64")
        var orders: [ReceiptColumn: [String]] = [:]
        for _ in ReceiptColumn.allCases.dropFirst() {
            press(&state, .character("s"))
            orders[state.receiptSort] = listed(state)
            #expect(state.selectedItem?.source == "demo/production-subscriptions.b64", "\(state.receiptSort)")
        }
        #expect(orders[.file] == Self.all)
        #expect(orders[.verdict] == [
            "xcode-storekit-test.der", "ios6-transaction.b64", "verify-response.json", "notification-v2-expired.jws",
            "production-subscriptions.b64", "sandbox-weekly-intro.b64",
        ])
        #expect(orders[.environment] == [
            "production-subscriptions.b64", "ios6-transaction.b64", "notification-v2-expired.jws", "sandbox-weekly-intro.b64",
            "verify-response.json", "xcode-storekit-test.der",
        ])
        #expect(orders[.bundle] == [
            "notification-v2-expired.jws", "ios6-transaction.b64", "verify-response.json", "sandbox-weekly-intro.b64",
            "xcode-storekit-test.der", "production-subscriptions.b64",
        ])
        // Counts most first; ties keep load order.
        #expect(orders[.expired] == Array(Self.all.dropFirst()) + ["ios6-transaction.b64"])
        #expect(orders[.expiry] == [
            "notification-v2-expired.jws", "production-subscriptions.b64", "xcode-storekit-test.der", "sandbox-weekly-intro.b64",
            "verify-response.json", "ios6-transaction.b64",
        ])
        #expect(state.receiptSort == .expiry)
        words.said(DashboardView.render(state, width: 120, height: 40).text)
        press(&state, .character("s"))
        #expect(state.receiptSort == .loaded)
        #expect(listed(state) == Self.all)
        words.check()
    }

    @Test func aReceiptLoadedIntoASortedFilteredListTakesItsPlace() async {
        var state = await filtered("env:sandbox")
        press(&state, .character("s"))
        #expect(state.receiptSort == .file)
        // Loaded while the filter is on: the sandbox one goes in its sorted place, the
        // production one is not listed.
        state.add(await state.pipeline.judge([InputFiles.demo()[3], InputFiles.demo()[2]].map { var i = $0; i.source = "b-" + i.source; return i }), from: .startup)
        #expect(state.receiptOrder.map { state.items[$0].source } == [
            "b-demo/sandbox-weekly-intro.b64", "demo/ios6-transaction.b64", "demo/notification-v2-expired.jws",
            "demo/sandbox-weekly-intro.b64", "demo/verify-response.json",
        ])
        // Pasting one the filter hides clears the filter and selects it.
        let judged = await state.pipeline.judge([InputFiles.demo()[2]])
        state.add(judged, from: .paste)
        #expect(state.receiptFilterText == "")
        #expect(state.selectedItem?.source == "demo/production-subscriptions.b64")
        #expect(state.selectedItem?.id == state.items.last?.id)
    }

    @Test func columnsFollowTheWidth() async {
        for (width, header, row) in [
            // Narrower, the columns that do not fit are counted (`4▶`: ←/→ scroll to them), and
            // names keep their end, without the extension.
            (80, "│   File    4▶ Expires   │", "│✓  …criptions 2023-10-19│"),
            (120, "│   File        3▶ A/E/R Expires   │", "│✓  …subscriptions 0/1/0 2023-10-19│"),
            (159, "│   File          2▶ Env   A/E/R Expires   │", "│✓  …n-subscriptions Prod  0/1/0 2023-10-19│"),
            // From 160 columns: whole names where they fit, and the bundle.
            (
                160, "│   File                         Verdict Env   Bundle          A/E/R Expires   │",
                "│✓  production-subscriptions.b64 valid   Prod  org.get…-iphone 0/1/0 2023-10-19│"
            ),
            (
                200, "│   File                         Verdict Env   Bundle                    A/E/R Expires   │",
                "│✓  production-subscriptions.b64 valid   Prod  org.getpure.pure-iphone   0/1/0 2023-10-19│"
            ),
        ] {
            let state = await Fixture.demoState(width: width, height: 40)
            let text = DashboardView.render(state, width: width, height: 40).text
            #expect(text.contains(header), "\(width)")
            #expect(text.contains(row), "\(width)")
        }
    }

    @Test func textIsShortenedInTheMiddleKeepingItsEnds() {
        #expect(TextWidth.truncateMiddle("com.revenuecat.monthly_4.99.1_week_intro", to: 20) == "com.reven…week_intro")
        #expect(TextWidth.truncateMiddle("short", to: 20) == "short")
        #expect(TextWidth.truncateMiddle("abcdefgh", to: 4) == "abc…")
        #expect(TextWidth.of(TextWidth.truncateMiddle("日本語のプロダクト名前", to: 9)) <= 9)
    }
}
