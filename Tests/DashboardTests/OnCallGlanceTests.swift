import AppStoreAPI
import AuditTrail
import Foundation
import Testing
import TestSupport

@testable import Dashboard
import ReceiptRendering
import ReceiptCore
import TerminalUI

/// On call at a glance: notifications per minute over the last hour as a sparkline, each
/// forwarding target's deliveries, the product told apart by its tail, and `f` in the
/// Notifications pane filtering by type, product and words.
@Suite struct OnCallGlanceTests {
    /// 09:30:00, on a minute's start.
    static let t0 = NotificationPaneTests.t0

    static func entry(_ uuid: String, type: String = "DID_RENEW", subtype: String? = nil, product: String? = "pro.monthly", at: Date = t0)
        -> NotificationEntry
    {
        NotificationPaneTests.entry(uuid, type: type, subtype: subtype, product: product, at: at)
    }

    func paneLines(_ state: DashboardState) -> [String] {
        let rect = state.layout(width: state.width, height: state.height)!.panes[.notifications]!.inset
        let b = DashboardView.render(state, width: state.width, height: state.height)
        return (rect.y..<rect.maxY).map { y in
            String(b.row(at: y).dropFirst(rect.x).prefix(rect.width)).replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression)
        }
    }

    @Test func notificationsAreCountedInTheMinuteTheyWereReceived() {
        var traffic = NotificationTraffic()
        for seconds in [-3_541.0, -3_540, -1, -1, 10, 60] { traffic.count(receivedAt: Self.t0 + seconds) }
        // At 09:30:30 the hour is 08:31 … 09:30: 08:30:59 is out, 09:31:00 is not yet.
        let buckets = traffic.buckets(endingAt: Self.t0 + 30)
        #expect(buckets.count == 60)
        #expect(buckets[0] == 1)
        #expect(buckets[58] == 2)
        #expect(buckets[59] == 1)
        #expect(buckets.reduce(0, +) == 4)
        // A minute on, 08:31 has left the hour and 09:31 has come in.
        let later = traffic.buckets(endingAt: Self.t0 + 60)
        #expect(later[0] == 0)
        #expect(later[57] == 2)
        #expect(later[58] == 1)
        #expect(later[59] == 1)
        #expect(later.reduce(0, +) == 4)
    }

    @Test func theSparklineHasEightLevelsAndADotForAnEmptyMinute() {
        #expect(OnCallGlance.sparkline([0, 1, 2, 3, 4, 5, 6, 7, 8]) == "·▁▂▃▄▅▆▇█")
        #expect(OnCallGlance.sparkline([0, 0, 0]) == "···")
        var buckets = [Int](repeating: 0, count: 60)
        buckets[0] = 3
        buckets[59] = 12
        let line = OnCallGlance.sparkline(buckets)
        let wide = OnCallGlance.trafficLine(buckets, width: 198)
        #expect(wide == "notifications/min, last hour ▂" + String(repeating: "·", count: 58) + "█ peak 12/min · 15 in the hour")
        #expect(OnCallGlance.trafficLine(buckets, width: 90) == "\(line) peak 12/min · 15 in the hour")
        // 80 columns: the pane's inside is 78.
        let narrow = OnCallGlance.trafficLine(buckets, width: 78)
        #expect(narrow == "\(line) peak 12 · 15/h")
        #expect(TextWidth.of(narrow) <= 78)
    }

    @Test func theBandShowsTheHoursTrafficAsTheyArrive() {
        var state = NotificationPaneTests.receiving(width: 200, height: 50)
        state.apply(
            [
                .received(Self.entry("a", at: Self.t0 - 1_800)), .received(Self.entry("b", at: Self.t0 - 1)),
                .received(Self.entry("c", at: Self.t0 - 1)), .received(Self.entry("d", at: Self.t0 + 5)),
            ], at: Self.t0 + 5)
        state.wallClock = Self.t0 + 5
        let line = paneLines(state)[1]
        let bars = "notifications/min, last hour " + String(repeating: "·", count: 29) + "▄" + String(repeating: "·", count: 28) + "█▄"
        #expect(line == bars + " peak 2/min · 4 in the hour")
    }

    @Test func aProductIsWholeWhereItFitsAndCutFromTheLeftWhereNot() {
        #expect(TextWidth.truncateHead("com.example.receiptdash.pro.monthly", to: 12) == "…pro.monthly")
        #expect(TextWidth.truncateHead("com.example.receiptdash.coins100", to: 12) == "…sh.coins100")
        #expect(TextWidth.truncateHead("pro.monthly", to: 12) == "pro.monthly")
        #expect(TextWidth.truncateHead("ab", to: 1) == "…")
        // The widest product where it fits, at most half of what it shares with the
        // Notification column, which keeps 24.
        #expect(OnCallGlance.productWidth(widest: 35, inner: 198, fixed: 33) == 35)
        #expect(OnCallGlance.productWidth(widest: 35, inner: 78, fixed: 33) == 20)
        #expect(OnCallGlance.productWidth(widest: 3, inner: 78, fixed: 33) == 7)

        let products = ["com.example.receiptdash.pro.monthly", "com.example.receiptdash.coins100"]
        for (width, height, shown) in [(200, 50, products), (80, 24, ["…iptdash.pro.monthly", "…eceiptdash.coins100"])] {
            var state = NotificationPaneTests.receiving(width: width, height: height)
            state.apply(products.enumerated().map { .received(Self.entry("u-\($0.offset)", product: $0.element)) }, at: Self.t0)
            let rows = paneLines(state).filter { $0.hasPrefix("09:30:00") }
            #expect(rows.count == 2)
            for (row, product) in zip(rows, shown) { #expect(row.contains(" \(product) "), "\(width): \(row)") }
        }
    }

    @Test func fInNotificationsFiltersByTypeProductAndWords() {
        let words = Wording("on-call-glance")
        var state = NotificationPaneTests.receiving()
        state.apply(
            [
                .received(Self.entry("u-1", type: "DID_RENEW", product: "com.example.pro.monthly")),
                .received(Self.entry("u-2", type: "REFUND", product: "com.example.coins100")),
                .received(Self.entry("u-3", type: "DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_DISABLED", product: "com.example.pro.yearly")),
            ], at: Self.t0)
        func type(_ text: String) {
            _ = state.handle(.character("f"), environment: DashboardTests.env)
            _ = state.handle(.control("u"), environment: DashboardTests.env)
            _ = state.handle(.paste(text), environment: DashboardTests.env)
            _ = state.handle(.enter, environment: DashboardTests.env)
        }
        func listed() -> [String] {
            (0..<state.listedNotificationCount).compactMap { state.listedNotificationIndex(at: $0) }.map { state.notifications[$0].row.notificationUUID }
        }
        type("type:refund")
        #expect(state.mode == .normal)
        #expect(state.focus == .notifications)
        #expect(listed() == ["u-2"])
        #expect(state.selectedNotification?.row.notificationUUID == "u-2")
        #expect(DashboardView.render(state, width: state.width, height: state.height).text.contains("Notifications [1 of 3]"))
        type("product:*.pro.*")
        #expect(listed() == ["u-1", "u-3"])
        type("type:did_change_renewal_status/auto_renew_disabled")
        #expect(listed() == ["u-3"])
        // Every term must hold; words are found in the row in any case.
        type("product:*.pro.* Monthly")
        #expect(listed() == ["u-1"])
        // What arrives is listed when it matches.
        state.apply([.received(Self.entry("u-4", product: "com.example.pro.monthly")), .received(Self.entry("u-5", type: "REFUND"))], at: Self.t0)
        #expect(listed() == ["u-1", "u-4"])
        #expect(state.selectedNotification?.row.notificationUUID == "u-4")
        // A key notifications do not have: said, and the filter in force stays.
        type("state:active")
        if case .notificationFilter = state.mode {} else { Issue.record("the filter box closed on a filter that does not read") }
        #expect(state.message?.role == .warning)
        words.said(state.message?.text)
        _ = state.handle(.escape, environment: DashboardTests.env)
        #expect(listed() == ["u-1", "u-2", "u-3", "u-4", "u-5"])
        words.check()
    }

    @Test func eachForwardTargetShowsItsCountsAndOldestPendingAge() {
        let words = Wording("on-call-glance")
        defer { words.check() }
        var state = NotificationPaneTests.receiving(width: 200, height: 50)
        state.apply([.received(Self.entry("u-1"))], at: Self.t0)
        state.apply(
            [
                .forwarding([
                    ForwardTargetCounts(target: "https://hooks.example.com/apple", delivered: 120, pending: 2, dead: 0, oldestPendingQueuedAt: Self.t0 - 185),
                    ForwardTargetCounts(target: "https://warehouse.example.com/in", delivered: 7, pending: 0, dead: 1),
                ])
            ], at: Self.t0)
        let lines = paneLines(state)
        #expect(lines[2] == "→ https://hooks.example.com/apple   delivered 120 · pending 2 (oldest 3m 05s) · dead 0")
        #expect(lines[3] == "→ https://warehouse.example.com/in  delivered 7 · pending 0 · dead 1")
        #expect(lines[4].hasPrefix("Received Notification"))
        // The age grows with the clock.
        state.wallClock = Self.t0 + 60
        #expect(paneLines(state)[2].hasSuffix("pending 2 (oldest 4m 05s) · dead 0"))
        words.said(OnCallGlance.forwardLines([], now: Self.t0, width: 78, rows: 2).map(\.0))
    }

    @Test func atEightyByTwentyFourTargetsBeyondTheRoomAreSummed() {
        var state = NotificationPaneTests.receiving(width: 80, height: 24)
        state.apply([.received(Self.entry("u-1"))], at: Self.t0)
        let targets = (1...6).map {
            ForwardTargetCounts(target: "https://t\($0).example.com/", delivered: $0, pending: $0 == 6 ? 1 : 0, dead: $0 == 5 ? 2 : 0, oldestPendingQueuedAt: $0 == 6 ? Self.t0 - 30 : nil)
        }
        state.apply([.forwarding(targets)], at: Self.t0)
        let lines = paneLines(state)
        #expect(lines.allSatisfy { TextWidth.of($0) <= 78 })
        #expect(lines[2] == "→ https://t1.example.com/  delivered 1 · pending 0 · dead 0")
        #expect(lines[5] == "→ 3 more targets: delivered 15 · pending 1 (oldest 30s) · dead 2")
        #expect(lines[6].hasPrefix("Received Notification"))
        #expect(lines[7].hasPrefix("09:30:00"))
        let roles = OnCallGlance.forwardLines(targets, now: Self.t0, width: 78, rows: 4).map(\.1)
        #expect(roles == [.ok, .ok, .ok, .error])
    }

    /// The open refund requests and the nearest deadline, above forwarding's lines at 80×24: a
    /// warning under two hours left, an error once one passed, muted when none is open.
    @Test func openRefundRequestsShowTheNearestDeadline() {
        let words = Wording("on-call-glance")
        defer { words.check() }
        var state = NotificationPaneTests.receiving(width: 80, height: 24)
        state.apply([.received(Self.entry("u-1"))], at: Self.t0)
        state.apply(
            [
                .consumption(ConsumptionOpenSummary(open: 3, nearestDeadline: Self.t0 + 5400, oldestRequestedAt: Self.t0 - 37_800)),
                .forwarding([ForwardTargetCounts(target: "https://hooks.example.com/apple", delivered: 1, pending: 0, dead: 0)]),
            ], at: Self.t0)
        let lines = paneLines(state)
        #expect(lines.allSatisfy { TextWidth.of($0) <= 78 })
        words.said(lines[2])
        #expect(lines[3].hasPrefix("→ https://hooks.example.com/apple"))
        #expect(lines[4].hasPrefix("Received Notification"))
        let roles = [Self.t0 + 9000, Self.t0 + 5400, Self.t0 - 1].map {
            OnCallGlance.consumptionLine(ConsumptionOpenSummary(open: 1, nearestDeadline: $0, oldestRequestedAt: nil), now: Self.t0).1
        }
        #expect(roles == [.info, .warning, .error])
        let none = OnCallGlance.consumptionLine(ConsumptionOpenSummary(open: 0, nearestDeadline: nil, oldestRequestedAt: nil), now: Self.t0)
        #expect(none.1 == .muted)
        words.said(none.0)
    }
}
