import AppStoreAPI
import Foundation
import Testing
import TestSupport

@testable import Dashboard
import ReceiptRendering
import ReceiptCore
import ReceiptTrust
import ReceiptDemo
import LocalFiles
import TerminalUI

/// The Notifications pane as the on-call operator reads it: rows as they arrive, redeliveries
/// and refusals counted, the silence banner, and `Enter` on a genuine Apple notification.
@Suite struct NotificationPaneTests {
    static let now = DashboardTests.now
    static let t0 = AppleDate.parse("2026-11-22T09:30:00Z")!

    static func entry(
        _ uuid: String, type: String, subtype: String? = nil, product: String? = "pro.monthly", transaction: String? = "2000000000000001",
        deliveries: Int = 1, verdict: TrustReport.Verdict = .valid, at: Date = t0, payload: String? = nil
    ) -> NotificationEntry {
        NotificationEntry(
            row: NotificationRow(
                notificationUUID: uuid, notificationType: type, subtype: subtype, bundleID: "com.example.app", environment: "Production",
                signedDate: at, receivedAt: at, deliveries: deliveries, verdict: verdict, transactionID: transaction,
                originalTransactionID: transaction, productID: product,
                explanation: NotificationExplanation.explain(type: type, subtype: subtype)),
            signedPayload: payload)
    }

    /// An operator's dashboard: no receipts, the pane on.
    static func receiving(width: Int = 120, height: Int = 40) -> DashboardState {
        var state = DashboardState(now: now)
        state.notificationsShown = true
        state.focus = .notifications
        state.wallClock = t0
        state.notificationWatchStarted = t0
        _ = state.handle(.resize(width: width, height: height), environment: DashboardTests.env)
        return state
    }

    func screen(_ state: DashboardState) -> ScreenBuffer {
        DashboardView.render(state, width: state.width, height: state.height)
    }

    /// The rows of the Notifications pane's inside (the band above the log).
    func paneLines(_ state: DashboardState) -> [String] {
        let rect = state.layout(width: state.width, height: state.height)!.panes[.notifications]!.inset
        let b = screen(state)
        return (rect.y..<rect.maxY).map { y in
            String(b.row(at: y).dropFirst(rect.x).prefix(rect.width)).replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression)
        }
    }

    /// `c` answers a refund request: once Apple takes the consumption information for its
    /// transaction, the row says when and with which status instead of counting down. A refused
    /// answer, or one for another transaction, leaves the countdown.
    @Test func aRefundRequestReadsAnsweredOnceConsumptionIsTaken() {
        let words = Wording("notification-pane")
        var state = Self.receiving()
        state.apply([.received(Self.entry("u-9", type: "CONSUMPTION_REQUEST"))], at: Self.t0)
        state.wallClock = Self.t0 + 600
        words.said(paneLines(state)[3])
        _ = state.apply(ActionAnswer(ok: false, line: "consumption: refused", target: "consumption|2000000000000001"), lookingUpAgain: nil)
        _ = state.apply(ActionAnswer(ok: true, line: "done", target: "consumption|2000000000000999", httpStatus: 202), lookingUpAgain: nil)
        words.said(paneLines(state)[3])
        _ = state.apply(ActionAnswer(ok: true, line: "done", target: "consumption|2000000000000001", httpStatus: 202), lookingUpAgain: nil)
        words.said(paneLines(state)[3])
        words.check()
    }

    @Test func rowsShowTimeExplanationProductTransactionVerdictAndDeliveries() {
        let words = Wording("notification-pane")
        var state = Self.receiving()
        state.apply(
            [
                .received(Self.entry("u-1", type: "DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD")),
                .received(Self.entry("u-2", type: "REFUND", product: "coins.100", transaction: "2000000000000002", verdict: .test, at: Self.t0 + 1)),
            ], at: Self.t0 + 1)
        state.wallClock = Self.t0 + 1
        let lines = paneLines(state)
        #expect(lines[0] == "0.2/s                    █ · DID_FAIL_TO_RENEW 1/min · REFUND 1/min · refused 0 · redeliveries 0")
        #expect(lines[2].hasPrefix("Received Notification"))
        #expect(
            lines[3]
                == "09:30:00 DID_FAIL_TO_RENEW / GRACE_PERIOD: billing failed; access continues while … pro.monthly 2000000000000001 ✓")
        words.said(lines[4])
        #expect(screen(state).text.contains("Notifications [2]"))
        state.apply([.source("receiving at http://127.0.0.1:8098/notifications")], at: Self.t0 + 1)
        words.said(screen(state).text)
        words.said(state.log.last?.text)
        #expect(state.notificationMetrics.received == 2)
        #expect(state.notificationMetrics.byType == ["DID_FAIL_TO_RENEW": 1, "REFUND": 1])
        // At a rate of one a second or more (over the last ten seconds) a type reads per second.
        state.apply((0..<90).map { .received(Self.entry("r-\($0)", type: "DID_RENEW")) }, at: Self.t0 + 1)
        #expect(paneLines(state)[0].contains("· DID_RENEW 9.0/s · DID_FAIL_TO_RENEW 1/min · REFUND 1/min ·"))
        words.check()
    }

    /// In silence the rates fall to zero: per second within ten seconds, per minute within a
    /// minute (the issue's `DID_RENEW 1.8/s` after 30 s of silence).
    @Test func ratesDecayToZeroInSilence() {
        var state = Self.receiving()
        for second in 0..<30 {
            state.apply((0..<2).map { .received(Self.entry("r-\(second)-\($0)", type: "DID_RENEW")) }, at: Self.t0 + Double(second))
        }
        state.wallClock = Self.t0 + 29
        #expect(paneLines(state)[0].hasPrefix("2.0/s "))
        #expect(paneLines(state)[0].contains("· DID_RENEW 2.0/s ·"))
        state.wallClock = Self.t0 + 59
        #expect(paneLines(state)[0].hasPrefix("0.0/s "))
        #expect(paneLines(state)[0].contains("· DID_RENEW 60/min ·"))
        state.wallClock = Self.t0 + 90
        #expect(!paneLines(state)[0].contains("DID_RENEW"))
        #expect(paneLines(state)[0].hasPrefix("0.0/s "))
    }

    /// A followed receiver that stops beating is said to be down from its last beat, instead of
    /// "no notifications for …"; when it beats again it is back.
    @Test func aReceiverThatStopsBeatingIsDownNotSilent() {
        let words = Wording("notification-pane")
        var state = Self.receiving()
        state.expectNotificationEvery = 60
        state.apply([.receiverBeat(Self.t0 + 10)], at: Self.t0 + 10)
        state.wallClock = Self.t0 + 30
        #expect(state.receiverDownSince == nil)
        #expect(!screen(state).text.contains("RECEIVER DOWN"))
        state.wallClock = Self.t0 + 100
        #expect(state.receiverDownSince == Self.t0 + 10)
        #expect(state.notificationSilence == nil)
        words.said(screen(state).row(at: 0))
        #expect(!screen(state).text.contains("NO NOTIFICATIONS"))
        words.said(screen(state).text)
        state.apply([.receiverBeat(Self.t0 + 101)], at: Self.t0 + 101)
        state.wallClock = Self.t0 + 101
        #expect(state.receiverDownSince == nil)
        words.said(state.log.last?.text)
        words.said(screen(state).row(at: 0))
        words.check()
    }

    /// Refusals are shown by the receiver's reason, as /metrics and `notifications --refusals`
    /// count them.
    @Test func refusalsAreShownByReason() {
        let words = Wording("notification-pane")
        var state = Self.receiving()
        state.apply(
            [
                .refused(at: Self.t0, status: 403, reason: "signature: the signature is not trusted", peer: "10.1.2.3", count: 87, kind: "signature"),
                .refused(at: Self.t0, status: 400, reason: "the body is not JSON", peer: "10.9.9.9", count: 3, kind: "not-json"),
                .refused(at: Self.t0, status: 403, reason: "stale: signedDate is older than --max-age", peer: "17.0.0.5", kind: "stale"),
            ], at: Self.t0)
        #expect(paneLines(state)[0].hasSuffix("refused 91 (not-json 3, signature 87, stale 1) · redeliveries 0"))
        words.said(state.log.first?.text)
        words.check()
    }

    @Test func aRedeliveryUpdatesItsRowAndIsCountedOnce() {
        var state = Self.receiving()
        state.apply([.received(Self.entry("u-1", type: "DID_RENEW")), .received(Self.entry("u-2", type: "EXPIRED", subtype: "VOLUNTARY"))], at: Self.t0)
        state.apply([.received(Self.entry("u-1", type: "DID_RENEW", deliveries: 2))], at: Self.t0 + 5)
        // The same row polled again (a follower looks back a few seconds) changes nothing.
        state.apply([.received(Self.entry("u-1", type: "DID_RENEW", deliveries: 2))], at: Self.t0 + 6)
        #expect(state.notifications.map(\.row.notificationUUID) == ["u-1", "u-2"])
        #expect(state.notifications.map(\.row.deliveries) == [2, 1])
        #expect(state.notificationMetrics.redeliveries == 1)
        #expect(state.notificationMetrics.received == 2)
        #expect(state.log.filter { $0.text.contains("delivered again") }.map(\.text) == ["notification u-1 delivered again (2 deliveries): DID_RENEW"])
        #expect(paneLines(state)[3].hasSuffix("✓  ×2"))
        #expect(paneLines(state)[0].hasSuffix("refused 0 · redeliveries 1"))
    }

    @Test func refusalsAreCountedByStatusAndLogged() {
        let words = Wording("notification-pane")
        var state = Self.receiving()
        state.apply(
            [
                .refused(at: Self.t0, status: 403, reason: "root: the chain does not end at a trusted root", peer: "10.1.2.3:5000"),
                .refused(at: Self.t0, status: 400, reason: "the body is not JSON", peer: nil),
                .refused(at: Self.t0, status: 403, reason: "bundle: bundleId is com.other, not one of --bundle-id com.example.app", peer: "10.1.2.3:5001"),
            ], at: Self.t0)
        #expect(state.notificationMetrics.refusals == [403: 2, 400: 1])
        #expect(paneLines(state)[0].hasSuffix("refused 3 (400 1, 403 2) · redeliveries 0"))
        words.said(state.log.map(\.text))
        words.said(paneLines(state)[2])
        words.check()
    }

    @Test func theSelectionFollowsTheNewestUnlessMovedAway() {
        var state = Self.receiving()
        state.apply((1...3).map { .received(Self.entry("u-\($0)", type: "DID_RENEW")) }, at: Self.t0)
        #expect(state.selectedNotification?.row.notificationUUID == "u-3")
        state.apply([.received(Self.entry("u-4", type: "DID_RENEW"))], at: Self.t0)
        #expect(state.selectedNotification?.row.notificationUUID == "u-4")
        _ = state.handle(.up, environment: DashboardTests.env)
        _ = state.handle(.up, environment: DashboardTests.env)
        state.apply([.received(Self.entry("u-5", type: "DID_RENEW"))], at: Self.t0)
        #expect(state.selectedNotification?.row.notificationUUID == "u-2")
        _ = state.handle(.character("G"), environment: DashboardTests.env)
        #expect(state.selectedNotification?.row.notificationUUID == "u-5")
    }

    @Test func tabReachesTheNotificationsPaneOnlyWhenItIsShown() async {
        var plain = await DashboardTests.demoState()
        var seen: [Pane] = []
        for _ in 0..<6 {
            _ = plain.handle(.tab, environment: DashboardTests.env)
            seen.append(plain.focus)
        }
        #expect(seen == [.purchases, .subscriptions, .status, .log, .receipts, .purchases])
        #expect(!screen(plain).text.contains("Notifications"))

        // On call with nothing loaded, the receipt panes fold away: Tab goes between the
        // Notifications band and the Log, and a focus on a folded pane moves to the band.
        var state = Self.receiving()
        #expect(state.foldsReceiptPanes)
        #expect(state.visiblePanes == [.notifications, .log])
        state.focus = .status
        _ = state.handle(.tab, environment: DashboardTests.env)
        #expect(state.focus == .log)
        _ = state.handle(.tab, environment: DashboardTests.env)
        #expect(state.focus == .notifications)
        #expect(!screen(state).text.contains("Receipts ["))
        // An input loaded: every pane is back, in the usual order.
        await state.load(source: "demo/a.b64", bytes: try! InputFiles.demo()[2].result.get())
        #expect(!state.foldsReceiptPanes)
        state.focus = .status
        _ = state.handle(.tab, environment: DashboardTests.env)
        #expect(state.focus == .notifications)
        _ = state.handle(.tab, environment: DashboardTests.env)
        #expect(state.focus == .log)
    }

    @Test func aFollowedDatabaseShowsThePaneWithItsFirstNotification() async {
        var state = await DashboardTests.demoState()
        #expect(!state.notificationsShown)
        state.apply([.note("following")], at: Self.t0)
        #expect(!state.notificationsShown)
        state.apply([.received(Self.entry("u-1", type: "TEST"))], at: Self.t0)
        #expect(state.notificationsShown)
        #expect(screen(state).text.contains("Notifications [1]"))
    }

    @Test func silenceBannerAfterTheExpectedInterval() {
        let words = Wording("notification-pane")
        var state = Self.receiving()
        state.expectNotificationEvery = 300
        state.wallClock = Self.t0 + 299
        #expect(state.notificationSilence == nil)
        #expect(!screen(state).text.contains("NO NOTIFICATIONS"))
        state.wallClock = Self.t0 + 301
        #expect(state.notificationSilence == 301)
        let title = screen(state).row(at: 0)
        words.said(title)
        #expect(screen(state).text.contains("Notifications [0] · nothing for 5m 01s"))
        // One arrives: the banner goes.
        state.apply([.received(Self.entry("u-1", type: "DID_RENEW", at: Self.t0 + 301))], at: Self.t0 + 301)
        #expect(state.notificationSilence == nil)
        #expect(!screen(state).row(at: 0).contains("NO NOTIFICATIONS"))
        // A redelivery is Apple talking too.
        state.wallClock = Self.t0 + 700
        #expect(state.notificationSilence == 399)
        state.apply([.received(Self.entry("u-1", type: "DID_RENEW", deliveries: 2, at: Self.t0 + 700))], at: Self.t0 + 700)
        #expect(state.notificationSilence == nil)
        words.check()
    }

    /// A follower attaches to a database whose newest notification came an hour ago, with
    /// `--expect-every 10m`: the alarm is up at once (counted from that row's received_at, not
    /// from the attach), and the rows already there are listed but are not arrivals now.
    @Test func theSilenceCountsFromTheNewestReceivedAtAndOldRowsAreNoArrivals() {
        let words = Wording("notification-pane")
        var state = Self.receiving()  // attached at t0
        state.expectNotificationEvery = 600
        // The follower's first poll: 50 rows received from 1h49m to 1h ago, one of them
        // delivered three times (before the attach too).
        var old: [NotificationFeedEvent] = (0..<49).map {
            .received(Self.entry("old-\($0)", type: "DID_RENEW", at: Self.t0 - 3600 - Double(49 - $0) * 120))
        }
        old.append(.received(Self.entry("old-49", type: "EXPIRED", deliveries: 3, at: Self.t0 - 3600)))
        state.apply(old, at: Self.t0)
        #expect(state.notifications.count == 50)
        #expect(state.notificationSilence == 3600)
        words.said(screen(state).row(at: 0))
        #expect(screen(state).text.contains("Notifications [50] · nothing for 1h 00m"))
        #expect(paneLines(state)[0] == "0.0/s " + String(repeating: " ", count: 20) + " · refused 0 · redeliveries 0")
        #expect(state.notificationMetrics.received == 0)
        #expect(state.notificationMetrics.redeliveries == 0)
        #expect(state.notificationMetrics.byType == [:])
        // One arrives (received 5 s after the attach, seen by the next poll): the alarm goes,
        // the rate counts that one alone, and the silence counts from its received_at.
        state.wallClock = Self.t0 + 5.4
        state.apply([.received(Self.entry("new-1", type: "REFUND", at: Self.t0 + 5))], at: Self.t0 + 5.4)
        #expect(state.notificationSilence == nil)
        #expect(paneLines(state)[0] == "0.1/s " + String(repeating: " ", count: 19) + "█ · REFUND 1/min · refused 0 · redeliveries 0")
        #expect(state.notificationMetrics.received == 1)
        state.wallClock = Self.t0 + 5 + 601
        #expect(state.notificationSilence == 601)
        words.check()
    }

    /// The newest row was received 100 s before the attach: with `--expect-every 10m` the alarm
    /// rises 500 s after the attach (600 s after that row), not 600 s after the attach.
    @Test func theSilenceOfAFollowedDatabaseStartsAtItsNewestRow() {
        let words = Wording("notification-pane")
        var state = Self.receiving()
        state.expectNotificationEvery = 600
        state.apply([.received(Self.entry("u-1", type: "DID_RENEW", at: Self.t0 - 100))], at: Self.t0)
        state.wallClock = Self.t0 + 499
        #expect(state.notificationSilence == nil)
        state.wallClock = Self.t0 + 501
        #expect(state.notificationSilence == 601)
        words.said(screen(state).row(at: 0))
        words.check()
    }

    /// A refusal row stands for `count` refusals of its class, address and minute: the pane
    /// counts refusals, not rows.
    @Test func refusalRowsCountTheirCount() {
        let words = Wording("notification-pane")
        var state = Self.receiving()
        state.apply(
            [
                .refused(at: Self.t0, status: 400, reason: "the body is not JSON", peer: "10.1.2.3", count: 37),
                .refused(at: Self.t0, status: 403, reason: "signature: the signature is not trusted", peer: "*", count: 1200),
                .refused(at: Self.t0, status: 400, reason: "the body is not JSON", peer: "10.9.9.9"),
            ], at: Self.t0)
        #expect(state.notificationMetrics.refusals == [400: 38, 403: 1200])
        #expect(state.notificationMetrics.refusalCount == 1238)
        #expect(paneLines(state)[0].hasSuffix("refused 1238 (400 38, 403 1200) · redeliveries 0"))
        words.said(state.log.map(\.text))
        words.check()
    }

    /// A refusal row reported again with a larger count (its minute goes on) adds only the
    /// growth, and is logged once.
    @Test func aRefusalRowReportedAgainAddsOnlyItsGrowth() {
        let words = Wording("notification-pane")
        var state = Self.receiving()
        let key = "not-json|10.1.2.3|29530530"
        state.apply([.refused(at: Self.t0, status: 400, reason: "the body is not JSON", peer: "10.1.2.3", count: 3, sample: key)], at: Self.t0)
        state.apply([.refused(at: Self.t0, status: 400, reason: "the body is not JSON", peer: "10.1.2.3", count: 8, sample: key)], at: Self.t0 + 1)
        state.apply([.refused(at: Self.t0, status: 400, reason: "the body is not JSON", peer: "10.1.2.3", count: 8, sample: key)], at: Self.t0 + 2)
        state.apply([.refused(at: Self.t0 + 60, status: 400, reason: "the body is not JSON", peer: "10.1.2.3", count: 2, sample: "not-json|10.1.2.3|29530531")], at: Self.t0 + 61)
        #expect(state.notificationMetrics.refusals == [400: 10])
        #expect(paneLines(state)[0].hasSuffix("refused 10 (400 10) · redeliveries 0"))
        words.said(state.log.map(\.text))
        words.check()
    }

    /// The payload view's verdict line says the verdict once ("test: chains to …", not
    /// "test: test: chains to …"), whatever the reason starts with.
    @Test func theVerdictLineSaysTheVerdictOnce() {
        let words = Wording("notification-pane")
        var test = Self.entry("u-1", type: "DID_RENEW", verdict: .test)
        test.reason = "test: chains to a root given for test data (--root-ca), not to Apple's: never from the App Store"
        let lines = DashboardView.notificationDetailLines(test, detail: nil).map(\.0)
        words.said(lines.filter { $0.hasPrefix("verdict") })
        var v1 = Self.entry("v1:ab12", type: "DID_RENEW", verdict: .unverifiable)
        v1.reason = "a V1 notification is not signed"
        words.said(DashboardView.notificationDetailLines(v1, detail: nil).map(\.0).filter { $0.hasPrefix("verdict") })
        #expect(
            DashboardView.notificationDetailLines(Self.entry("u-2", type: "DID_RENEW"), detail: nil).map(\.0).filter { $0.hasPrefix("verdict") } == [
                "verdict                 valid"
            ])
        words.check()
    }

    /// One verdict in the payload view: once the payload is judged here, the verdict row is
    /// that judgement (the trust steps under it agree), and what the receiver stored with its
    /// own roots is said apart, labelled, only when it differs.
    @Test func thePayloadViewShowsOneVerdictConsistentWithItsSteps() {
        let words = Wording("notification-pane")
        var entry = Self.entry("u-1", type: "DID_RENEW", verdict: .test, payload: "eyJhbGciOiJFUzI1NiJ9.e30.c2ln")
        entry.reason = "test: chains to a root given for test data (--root-ca), not to Apple's: never from the App Store"
        let invalid = TrustReport(verdict: .invalid, steps: [TrustReport.Step(.root, failing: "root-not-apple", reason: "the root is not Apple's (NOT APPLE)")])
        let detail = NotificationDetail(
            judged: JudgedInput(source: "u-1", bytes: nil, result: .success(DecodedInput(format: .jwsNotification)), trust: invalid), nestedReports: [])
        let lines = DashboardView.notificationDetailLines(entry, detail: detail).map(\.0)
        words.said(lines.filter { $0.hasPrefix("verdict") || $0.hasPrefix("receiver's verdict") || $0.hasPrefix("Trust:") })
        // The same verdict both ways: one line.
        var same = entry
        same.row.verdict = .invalid
        #expect(DashboardView.notificationDetailLines(same, detail: detail).map(\.0).filter { $0.hasPrefix("receiver's verdict") }.isEmpty)
        words.check()
    }

    /// The live signal sits above the Log/Metrics row, full width, as docs/dashboard.md says: the
    /// receipt panes on top, then Notifications, then the log.
    @Test func theNotificationsBandIsAboveTheLogRow() throws {
        let layout = try #require(DashboardLayout(width: 120, height: 40, notifications: true))
        #expect(layout.panes[.receipts] == Rect(x: 0, y: 1, width: 36, height: 21))
        #expect(layout.panes[.purchases] == Rect(x: 36, y: 1, width: 84, height: 11))
        #expect(layout.panes[.subscriptions] == Rect(x: 36, y: 12, width: 46, height: 10))
        #expect(layout.panes[.status] == Rect(x: 82, y: 12, width: 38, height: 10))
        #expect(layout.panes[.notifications] == Rect(x: 0, y: 22, width: 120, height: 11))
        #expect(layout.panes[.log] == Rect(x: 0, y: 33, width: 74, height: 5))
        #expect(layout.metrics == Rect(x: 74, y: 33, width: 46, height: 5))
        // The smallest screen keeps the order, and the band its rows.
        let small = try #require(DashboardLayout(width: 80, height: 20, notifications: true))
        #expect(small.panes[.notifications] == Rect(x: 0, y: 7, width: 80, height: 6))
        #expect(small.panes[.log] == Rect(x: 0, y: 13, width: 80, height: 5))
        #expect(small.metrics == nil)

        var state = Self.receiving()
        state.apply(
            [
                .received(Self.entry("u-1", type: "DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD")),
                .received(Self.entry("u-2", type: "REFUND", product: "coins.100", transaction: "2000000000000002", verdict: .test, at: Self.t0 + 1)),
                .source("receiving at http://127.0.0.1:8098/notifications"),
            ], at: Self.t0 + 1)
        state.wallClock = Self.t0 + 1
        assertSnapshot(screen(state).text, named: "notifications-120x40")
    }

    @Test func enterJudgesAGenuineNotificationOnceAndShowsEveryTrustStep() async throws {
        let words = Wording("notification-pane")
        let token = try String(decoding: Data(contentsOf: DashboardTests.demoFile("notification-v2-expired.jws")), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        var state = Self.receiving()
        state.apply([.received(Self.entry("u-1", type: "EXPIRED", subtype: "VOLUNTARY", payload: token))], at: Self.t0)
        let effects = state.handle(.enter, environment: DashboardTests.env)
        #expect(effects == [.inspectNotification(uuid: "u-1", signedPayload: token)])
        #expect(state.mode == .notificationDetail(uuid: "u-1", scroll: 0))
        words.said(screen(state).text)

        let pipeline = ReceiptPipeline(at: Self.now, trustOptions: TrustOptions(now: Self.now))
        state.notificationDetails["u-1"] = await DashboardApp.inspect(notification: "u-1", payload: token, pipeline: pipeline)
        let lines = DashboardView.notificationDetailLines(state.notifications[0], detail: state.notificationDetails["u-1"]).map(\.0)
        words.said(lines.first)
        #expect(lines.contains { $0.hasPrefix("Trust: ") })
        #expect(lines.filter { $0.hasPrefix("──") } == [
            "── data.signedTransactionInfo (StoreKit 2 transaction (JWS)) ──", "── data.signedRenewalInfo (StoreKit 2 renewal info (JWS)) ──",
        ])
        words.said(lines)
        words.said(lines)
        #expect(lines.contains("transaction_id          2000001025686313"))
        words.said(lines)
        #expect(lines.contains { $0.hasPrefix("  ✓ nested data.signedTransactionInfo: ") })
        #expect(lines.contains { $0.hasPrefix("  ✓ signature: ") })
        #expect(screen(state).text.contains("Notification u-1"))

        // Closed and opened again: judged once.
        _ = state.handle(.escape, environment: DashboardTests.env)
        #expect(state.mode == .normal)
        #expect(state.handle(.enter, environment: DashboardTests.env).isEmpty)
        #expect(state.mode == .notificationDetail(uuid: "u-1", scroll: 0))
        #expect(state.handle(.character("y"), environment: DashboardTests.env) == [.copy("u-1")])
        words.check()
    }

    @Test func aV1NotificationHasNothingToJudge() {
        let words = Wording("notification-pane")
        var state = Self.receiving()
        state.apply([.received(Self.entry("v1:ab12", type: "DID_RENEW", verdict: .unverifiable))], at: Self.t0)
        #expect(paneLines(state)[3].hasSuffix(" ?"))
        #expect(state.handle(.enter, environment: DashboardTests.env).isEmpty)
        #expect(state.mode == .notificationDetail(uuid: "v1:ab12", scroll: 0))
        let lines = DashboardView.notificationDetailLines(state.notifications[0], detail: nil).map(\.0)
        words.said(lines.last)
        words.check()
    }

    @Test func exportWritesTheListingsJSON() throws {
        let words = Wording("notification-pane")
        var state = Self.receiving()
        state.apply([.received(Self.entry("u-9/../x", type: "REFUND"))], at: Self.t0)
        _ = state.handle(.character("e"), environment: DashboardTests.env)
        let effects = state.handle(.enter, environment: DashboardTests.env)
        guard case .save(let file)? = effects.first else {
            Issue.record("no export: \(effects)")
            return
        }
        let json = file.contents
        #expect(file.fileName == "receiptdash-notifications-\(DashboardState.fileStamp(state.wallClock)).json")
        #expect(file.what == "1 notification")
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]])
        #expect(parsed.first?["notification_uuid"] as? String == "u-9/../x")
        words.said(parsed.first?["explanation"] as? String)
        #expect(Set(parsed.first?.keys.map { $0 } ?? []) == Set(NotificationListing.columns))
        words.check()
    }

    @Test func hostileTextFromAPayloadIsEscapedOnScreen() {
        var state = Self.receiving()
        state.apply([.received(Self.entry("u-1", type: "DID_RENEW\u{1B}[2J\u{7}", product: "x\u{1B}]52;c;AAAA\u{7}"))], at: Self.t0)
        let text = screen(state).text
        #expect(!text.contains("\u{1B}"))
        #expect(!text.contains("\u{7}"))
        #expect(text.contains("DID_RENEW\\x1b[2J"))
    }
}
