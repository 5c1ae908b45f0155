import AuditTrail
import Foundation
import Testing
@testable import Dashboard
import AppStoreAPI
import ReceiptCore

@Suite struct LiveMetricsTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    func done(_ id: Int, status: Int, latency: Double, env: String = "Production") -> OnlineEvent {
        .done(itemID: id, status: status, environment: env, attempts: [OnlineAttempt(url: "u", result: .apple(status: status), latencyMilliseconds: latency)], response: nil)
    }

    @Test func throughputPercentilesAndMix() {
        var m = LiveMetrics()
        for i in 0..<100 {
            m.record(done(i, status: i % 10 == 0 ? 21007 : 0, latency: Double(i + 1), env: i % 2 == 0 ? "Production" : "Sandbox"), at: t0.addingTimeInterval(Double(i / 10)))
        }
        m.record(.retrying(itemID: 1, inSeconds: 0.5, reason: RetryReason(.apple(status: 21005))), at: t0.addingTimeInterval(9))
        #expect(m.answered == 100)
        #expect(m.retries == 1)
        #expect(m.throughput(endingAt: t0.addingTimeInterval(9), seconds: 10) == Array(repeating: 10, count: 10))
        #expect(m.throughput(endingAt: t0.addingTimeInterval(11), seconds: 3) == [10, 0, 0])
        #expect(m.latencyPercentile(50) == 50)
        #expect(m.latencyPercentile(95) == 95)
        #expect(m.latencyPercentile(99) == 99)
        #expect(m.statusCounts == [0: 90, 21007: 10])
        #expect(m.environments == ["Production": 50, "Sandbox": 50])
        #expect(m.outageSince == nil)
        #expect(LiveMetrics.sparkline([0, 1, 4, 8]) == " ▁▄█")
    }

    /// Temporary failures past 30% over the last minute raise the banner, with when it began;
    /// it clears when answers are healthy again.
    @Test func outageStartsAndEnds() {
        var m = LiveMetrics()
        for i in 0..<10 { m.record(done(i, status: 0, latency: 10), at: t0.addingTimeInterval(Double(i))) }
        #expect(m.outageSince == nil)
        for i in 10..<16 { m.record(done(i, status: 21005, latency: 10), at: t0.addingTimeInterval(Double(i))) }
        #expect(m.outageSince == t0.addingTimeInterval(10))
        let timedOut = VerificationFailure(.retriesExhausted, "gave up after 5 attempts: timed out", last: .transport(TransportFailure(.timeout)))
        for i in 16..<22 { m.record(.failed(itemID: i, reason: timedOut, attempts: []), at: t0.addingTimeInterval(Double(i))) }
        #expect(m.outageSince == t0.addingTimeInterval(10))
        // A minute later, only healthy answers in the window.
        for i in 0..<20 { m.record(done(100 + i, status: 0, latency: 10), at: t0.addingTimeInterval(100 + Double(i))) }
        #expect(m.outageSince == nil)
    }

    @Test func followerRetriesComeFromRecordedAttempts() {
        var m = LiveMetrics()
        m.recordRetries(in: [
            OnlineAttempt(url: "p", result: .apple(status: 21007), latencyMilliseconds: 1),
            OnlineAttempt(url: "s", endpoint: .sandbox, result: .http(status: 503), latencyMilliseconds: 1),
            OnlineAttempt(url: "s", endpoint: .sandbox, result: .apple(status: 0), latencyMilliseconds: 1),
        ])
        #expect(m.retries == 1)
    }

    /// A TLS failure (our side: a proxy, a pinned root) and a cancellation (the operator) are
    /// not an Apple outage: 20 of them after 10 healthy answers raise no banner. Temporary
    /// failures (timeouts after retries, 21005) still do.
    @Test func tlsFailuresAndCancellationsAreNotAnOutage() {
        var m = LiveMetrics()
        for i in 0..<10 { m.record(done(i, status: 0, latency: 10), at: t0.addingTimeInterval(Double(i))) }
        let tls = VerificationFailure(.tls, "TLS failed: certificate verify failed", last: .transport(TransportFailure(.tls, detail: "certificate verify failed")))
        let cancelled = VerificationFailure(.cancelled, "cancelled", last: .transport(TransportFailure(.cancelled)))
        for i in 10..<20 { m.record(.failed(itemID: i, reason: tls, attempts: []), at: t0.addingTimeInterval(Double(i))) }
        for i in 20..<30 { m.record(.failed(itemID: i, reason: cancelled, attempts: []), at: t0.addingTimeInterval(Double(i))) }
        #expect(m.failures == 20)
        #expect(m.outageWindowCounts.temporary == 0)
        #expect(m.outageWindowCounts.total == 30)
        #expect(m.outageSince == nil)
        // A retry for a once-only 21002 is no outage sign either; retries for 21005 are.
        m.record(.retrying(itemID: 40, inSeconds: 0.5, reason: RetryReason(.apple(status: 21002))), at: t0.addingTimeInterval(30))
        #expect(m.outageWindowCounts.temporary == 0)
        let exhausted = VerificationFailure(.retriesExhausted, "gave up after 5 attempts: HTTP 503", last: .http(status: 503))
        for i in 31..<50 { m.record(.failed(itemID: i, reason: exhausted, attempts: []), at: t0.addingTimeInterval(Double(i))) }
        #expect(m.outageSince == t0.addingTimeInterval(31))
    }
}

/// Audit database failures reach the Log pane and the status line (never dropped).
@Suite struct AuditFailureDisplayTests {
    @Test func writeFailureShowsInLogAndStatusLine() async {
        var state = DashboardState(now: Date(timeIntervalSince1970: 1_800_000_000))
        let at = Date(timeIntervalSince1970: 1_800_000_005)
        await state.apply(.auditFailed(AuditError(.writeFailed, "recording the result of #3: SQLite error 13: database or disk is full\u{1B}[2J")), at: at)
        let words = "audit database write failed: recording the result of #3: SQLite error 13: database or disk is full\\x1b[2J"
        #expect(state.log.last?.text == words)
        #expect(state.log.last?.time == at)
        #expect(state.message?.text == words)
        #expect(state.message?.role == .error)
    }

    /// The code names the words above start with.
    @Test func codesPrintTheirNames() {
        #expect(AuditError.Code.writeFailed.description == "write failed")
        #expect(AuditError.Code.readFailed.description == "read failed")
    }
}

/// A follower: receipts and results another process recorded arrive through the audit link.
@Suite struct FollowTests {
    @Test func feedEventsLoadReceiptsAndResults() async throws {
        var state = DashboardState(now: Date(timeIntervalSince1970: 1_800_000_000))
        state.followingStore = true
        let bytes = [UInt8](try Data(contentsOf: DashboardTests.demoFile("production-subscriptions.b64")))
        let at = Date(timeIntervalSince1970: 1_800_000_010)
        await state.apply(.receipt(rowID: 41, source: "incoming/a.b64", bytes: bytes), at: at)
        await state.apply(.receipt(rowID: 41, source: "incoming/a.b64", bytes: bytes), at: at)  // seen twice: one item
        #expect(state.items.count == 1)
        await state.apply(.result(rowID: 41, status: 21005, environment: nil, failure: nil, attempts: []), at: at)
        await state.apply(.result(rowID: 99, status: 0, environment: nil, failure: nil, attempts: []), at: at)  // unknown row: ignored
        guard case .done(let status, _, _)? = state.online[state.items[0].id] else {
            Issue.record("no result")
            return
        }
        #expect(status == 21005)
        #expect(state.metrics.answered == 1)
        _ = state.handle(.resize(width: 140, height: 40))
        let text = DashboardView.render(state, width: 140, height: 40).text
        #expect(text.contains("Metrics"))
        #expect(text.contains("status 21005: 1"))
    }
}

@Suite struct CommandLineTests {
    @Test func historySearchParsing() {
        #expect(HistorySearch(parsing: "tx 1000000472106082") == HistorySearch(parsing: "TX 1000000472106082"))
        #expect(HistorySearch(parsing: "tx 1000000472106082")?.field == .tx)
        #expect(HistorySearch(parsing: "status 21007")?.value == "21007")
        #expect(HistorySearch(parsing: "status many") == nil)
        #expect(HistorySearch(parsing: "tx") == nil)
        #expect(HistorySearch(parsing: "frobnicate 1") == nil)
    }

    /// `:tx ID` finds the receipt holding that transaction and selects the row.
    @Test func colonCommandFindsATransaction() async {
        var state = await DashboardTests.demoState()
        _ = state.handle(.character(":"), environment: DashboardTests.env)
        for c in "tx 340001264290434" { _ = state.handle(.character(c), environment: DashboardTests.env) }
        #expect(DashboardView.render(state, width: 120, height: 40).text.contains(":tx 340001264290434"))
        let effects = state.handle(.enter, environment: DashboardTests.env)
        guard case .search(let search)? = effects.first else {
            Issue.record("no search effect")
            return
        }
        state.showMatches(search)
        #expect(state.selectedItem?.source == "demo/production-subscriptions.b64")
        #expect(state.selectedPurchase?.transactionID == "340001264290434")
        #expect(state.message?.text == "1 receipt match :tx 340001264290434")
        _ = state.handle(.character(":"), environment: DashboardTests.env)
        for c in "nonsense" { _ = state.handle(.character(c), environment: DashboardTests.env) }
        #expect(state.handle(.enter, environment: DashboardTests.env).isEmpty)
        #expect(state.message?.text.hasPrefix("unknown command \"nonsense\"") == true)
    }

    /// Receipts left pending (queued) are resumed with R.
    @Test func resumeKeyVerifiesPendingReceipts() async {
        var state = await DashboardTests.demoState()
        state.onlineAvailable = true
        let pendingID = state.items[2].id
        state.online[pendingID] = .queued
        guard case .verify(let requests)? = state.handle(.character("R"), environment: DashboardTests.env).first else {
            Issue.record("no verify effect")
            return
        }
        #expect(requests.map(\.itemID) == [pendingID])
    }
}
