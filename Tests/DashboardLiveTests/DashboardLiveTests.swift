import APITestSupport
import AppStoreClients
import AuditTrail
import AuditTrailSQLite
import Dashboard
import DashboardLive
import Foundation
import LocalFiles
import OnlineRevocation
import ReceiptDemo
import ReceiptCore
import ReceiptSimulator
import ReceiptTrust
import RetryEngine
import TerminalUI
import Synchronization
import Testing
import TestSupport

private func scratchFolder() throws -> String {
    let path = TemporaryFolder("dashboard-live").path
    return path
}

private func demoBytes(_ name: String) throws -> [UInt8] {
    try #require(InputFiles.demo().first { $0.source.hasSuffix(name) }).result.get()
}

/// What `dash` shows before its first frame, as `DashboardLaunch` sets it up.
@Suite struct DashboardLaunchTests {
    @Test func withNothingGivenTheDemoReceiptsLoadAndNothingLiveStarts() async {
        var state = DashboardState(now: Date())
        let live = await DashboardLaunch().prepare(&state, pipeline: ReceiptPipeline(at: state.now))
        #expect(state.items.map(\.source) == InputFiles.demo().map(\.source))
        #expect(state.items.allSatisfy { $0.error == nil })
        #expect(live.audit == nil)
        #expect(live.notifications == nil)
        #expect(live.watchFeed == nil)
        #expect(!state.notificationsShown)
        await live.stop()
    }

    @Test func anAuditDatabaseKeepsTheDemoReceiptsOut() async throws {
        let words = Wording("dashboard-live")
        let store: any AuditBackend = try AuditStore(path: try scratchFolder() + "/audit.sqlite")
        var launch = DashboardLaunch()
        launch.backend = store
        var state = DashboardState(now: Date())
        let live = await launch.prepare(&state, pipeline: ReceiptPipeline(at: state.now))
        #expect(state.items.isEmpty)
        words.said(state.log.map(\.text))
        #expect(live.audit?.follow == false)
        #expect(!state.followingStore)
        await live.stop()
        await store.close()
        words.check()
    }

    @Test func followingAttachesReadOnlyAndShowsTheNotificationPaneOnlyWhenExpected() async throws {
        let path = try scratchFolder() + "/audit.sqlite"
        let writer: any AuditBackend = try AuditStore(path: path)
        for expectEvery in [nil, 600.0] {
            let reader: any AuditBackend = try AuditStore(readOnlyPath: path)
            var launch = DashboardLaunch()
            (launch.backend, launch.follow, launch.expectEvery) = (reader, true, expectEvery)
            var state = DashboardState(now: Date())
            let live = await launch.prepare(&state, pipeline: ReceiptPipeline(at: state.now))
            #expect(state.log.map(\.text) == ["following \(reader.location) read-only"])
            #expect(state.followingStore)
            #expect(live.audit?.follow == true)
            // The followed notifications, with forwarding's counts read beside them.
            #expect(live.notifications is ForwardingFeed)
            #expect(state.notificationsShown == (expectEvery != nil))
            #expect(state.expectNotificationEvery == expectEvery)
            #expect(state.items.isEmpty)
            await live.stop()
            await reader.close()
        }
        await writer.close()
    }

    /// The on-call view's forwarding counts: read from the followed store at once, then once
    /// every five seconds of the feed's clock, beside the loop, and taken into the state.
    @Test func forwardingCountsAreReadEveryFiveSecondsBesideTheLoop() async throws {
        let path = try scratchFolder() + "/forward.sqlite"
        let writer: any AuditBackend = try AuditStore(path: path)
        let t0 = Date(timeIntervalSince1970: 1_800_000_000)
        try await writer.registerForwardTargets(["https://hooks.example.com/apple"], types: [], at: t0)
        _ = try await writer.writeNotifications([
            .notification(NotificationRecord(notificationUUID: "n-1", version: .v2, notificationType: "DID_RENEW", receivedAt: t0, verdict: .test))
        ])
        let reader: any AuditBackend = try AuditStore(readOnlyPath: path)
        let feed = ForwardingFeed(FollowedNotifications(follower: NotificationFollower(backend: reader)), outbox: reader)
        func counts(_ events: [NotificationFeedEvent]) -> [[ForwardTargetCounts]] {
            events.compactMap { if case .forwarding(let counts) = $0 { counts } else { nil } }
        }
        // Nothing read before the feed runs: a poll never waits for the count.
        #expect(counts(await feed.poll()).isEmpty)
        let clock = SteppedClock()
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await feed.run(clock: clock) }
            await clock.sleepsBegun(1)
            let first = await feed.poll()
            #expect(counts(first) == [[ForwardTargetCounts(target: "https://hooks.example.com/apple", pending: 1, oldestPendingQueuedAt: t0)]])
            #expect(counts(await feed.poll()).isEmpty)
            clock.advance(by: .milliseconds(4_900))
            #expect(counts(await feed.poll()).isEmpty)
            clock.advance(by: .milliseconds(100))
            await clock.sleepsBegun(2)
            #expect(counts(await feed.poll()).count == 1)
            var state = DashboardState(now: t0)
            state.apply(first, at: t0)
            #expect(state.onCall.forwarding?.first?.pending == 1)
            group.cancelAll()
        }
        await reader.close()
        await writer.close()
    }

    @Test func watchedSourcesAreNamedAndFedAsFilesSettle() async throws {
        let words = Wording("dashboard-live")
        let folder = try scratchFolder()
        var launch = DashboardLaunch()
        launch.watch = [folder]
        var state = DashboardState(now: Date())
        let live = await launch.prepare(&state, pipeline: ReceiptPipeline(at: state.now))
        words.said(state.log.map(\.text))
        let feed = try #require(live.watchFeed)
        #expect(feed.poll().isEmpty)
        let file = folder + "/dropped.b64"
        #expect(FileManager.default.createFile(atPath: file, contents: Data(try demoBytes("production-subscriptions.b64"))))
        // A file is taken once its size holds between two looks (it may still be being written).
        #expect(feed.poll().isEmpty)
        let fed = feed.poll()
        #expect(fed.map(\.source) == [file])
        #expect(try fed.first?.result.get() == (try demoBytes("production-subscriptions.b64")))
        #expect(feed.poll().isEmpty)
        await live.stop()
        words.check()
    }
}

@Suite struct WatchFeedTests {
    @Test func aFollowedLogFeedsOnlyTheLinesThatHoldAReceipt() async throws {
        let log = try scratchFolder() + "/app.log"
        let receipt = String(decoding: try demoBytes("production-subscriptions.b64"), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        let text = "starting up\nuser 42 paid: \(receipt)\nGET /health 200\n"
        #expect(FileManager.default.createFile(atPath: log, contents: Data(text.utf8)))
        let feed = WatchFeed(sources: [log], fromEnd: false)
        let fed = feed.poll()
        #expect(fed.map(\.source) == [log])
        let decoded = try ReceiptDecoder().decode(try #require(try fed.first?.result.get()))
        #expect(decoded.format == .pkcs7)
        #expect(feed.poll().isEmpty)
    }
}

@Suite struct StoreAuditLinkTests {
    @Test func whatOneLinkRecordsAFollowingLinkReports() async throws {
        let path = try scratchFolder() + "/audit.sqlite"
        let store: any AuditBackend = try AuditStore(path: path)
        let writing = StoreAuditLink(store: store, follow: false)
        let bytes = try demoBytes("production-subscriptions.b64")
        let decoded = try ReceiptDecoder().decode(bytes)
        let row = try #require(await writing.record(source: "paste 1", bytes: bytes, decoded: decoded))
        #expect(await writing.poll().isEmpty)

        let reader: any AuditBackend = try AuditStore(readOnlyPath: path)
        let following = StoreAuditLink(store: reader, follow: true)
        let events = await following.poll()
        #expect(events.count == 1)
        guard case .receipt(let rowID, let source, _) = events.first else {
            Issue.record("expected the recorded receipt, got \(events)")
            return
        }
        #expect(rowID == row)
        #expect(source == "paste 1")
        // A follower never writes, and has read everything once.
        #expect(await following.record(source: "paste 2", bytes: bytes, decoded: decoded) == nil)
        #expect(await following.poll().isEmpty)
        await reader.close()
        await store.close()
    }

    @Test func aWriteThatFailsReachesTheNextPollAndIsNotDropped() async throws {
        let path = try scratchFolder() + "/audit.sqlite"
        let writer: any AuditBackend = try AuditStore(path: path)
        await writer.close()
        // A link that records into a store opened read-only: every write fails.
        let reader: any AuditBackend = try AuditStore(readOnlyPath: path)
        let link = StoreAuditLink(store: reader, follow: false)
        let bytes = try demoBytes("production-subscriptions.b64")
        #expect(await link.record(source: "paste 1", bytes: bytes, decoded: try ReceiptDecoder().decode(bytes)) == nil)
        let events = await link.poll()
        guard events.count == 1, case .auditFailed(let error) = events[0] else {
            Issue.record("expected one audit failure, got \(events)")
            return
        }
        #expect(error.code == .writeFailed)
        #expect(error.reason.hasPrefix("recording paste 1: "))
        #expect(await link.poll().isEmpty)
        await reader.close()
    }
}

@Suite struct ServiceVerifierTests {
    @Test func resultsAreRecordedBeforeTheDashboardHearsOfThem() async throws {
        let simulator = try await VerifyReceiptSimulator.start(SimulatorConfiguration())
        let client = VerifyReceiptClient(endpoints: try simulator.endpoints)
        let store: any AuditBackend = try AuditStore(path: try scratchFolder() + "/audit.sqlite")
        let link = StoreAuditLink(store: store, follow: false)
        let bytes = try demoBytes("production-subscriptions.b64")
        let row = try #require(await link.record(source: "paste 1", bytes: bytes, decoded: try ReceiptDecoder().decode(bytes)))
        let receiptData = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        let heard = Mutex<[(status: Int, pending: Int)]>([])
        await ServiceVerifier(client: client, concurrency: 2, audit: link).verify([OnlineRequest(itemID: 7, receiptData: receiptData, auditID: row)]) {
            event in
            if case .done(let id, let status, _, _, _) = event, id == 7 {
                // By now the result is in the store: nothing is pending any more.
                let pending = (try? AuditStore(readOnlyPath: store.location).pendingCountNow()) ?? -1
                heard.withLock { $0.append((status, pending)) }
            }
        }
        let done = heard.withLock { $0 }
        #expect(done.count == 1)
        #expect(done.first?.status == 0)
        #expect(done.first?.pending == 0)
        let rows = try await store.history(HistoryQuery())
        #expect(rows.map(\.status) == [0])
        try await client.shutdown()
        try await simulator.stop()
        await store.close()
    }
}

/// `x` on a looked-up subscription, through the real adapter and the API simulator: the form,
/// the plan, `y`, the write recorded, the look-up asked again.
@Suite struct ExtendFromTheDashboardTests {
    /// The API simulator, a client trusting its root, a pipeline that judges its payloads
    /// test, and a scratch audit store.
    static func live() async throws -> (ServerAPISimulator, AppStoreServerAPIClient, ReceiptPipeline, any AuditBackend) {
        let (credentials, key) = makeTestCredentials(bundleID: ServerAPIData.demoBundleID)
        let simulator = try await ServerAPISimulator.start(ServerAPIConfiguration(publicKey: key.publicKey))
        let client = AppStoreServerAPIClient(credentials: credentials, hosts: try simulator.hosts, requestTimeout: .seconds(60))
        let anchors = try TrustAnchors.apple.addingTestRoots([simulator.pki.rootDER])
        let pipeline = ReceiptPipeline(at: Date(), evaluator: TrustEvaluator(anchors: anchors))
        return (simulator, client, pipeline, try AuditStore(path: try scratchFolder() + "/audit.sqlite"))
    }

    @Test func xFormPlanYesSendsRecordsAndLooksUpAgain() async throws {
        let words = Wording("dashboard-live", matching: Wording.runVariables)
        let (simulator, client, pipeline, store) = try await Self.live()
        // Whatever happens, the client and the simulator end (a client left running crashes
        // the test process).
        var closed = false
        defer { if !closed { Issue.record("ended early: the client was left running") } }

        var state = DashboardState(now: Date())
        _ = state.handle(.resize(width: 140, height: 42))
        state.lookupAvailable = true
        // Without the adapter (read-only): x says why and opens nothing.
        state.actionsUnavailableReason = "read-only (--read-only): x would write to Apple"
        state.add(await CustomerLookupService(client: client, pipeline: pipeline).lookUp(.orderID("MQ5X7ABCDE")))
        state.focus = .subscriptions
        #expect(state.handle(.character("x")).isEmpty)
        words.said(state.message?.text)
        #expect(state.mode == .normal)

        state.actionsAvailable = true
        _ = state.handle(.character("x"))
        guard case .extendForm(let opened) = state.mode else {
            Issue.record("x did not open the form: \(state.mode), \(state.message?.text ?? "")")
            try await client.shutdown()
            try await simulator.stop()
            closed = true
            return
        }
        #expect(opened.originalTransactionID == "2000000900000001")
        #expect(opened.productID == "com.example.receiptdash.pro.monthly")
        // Days out of range do not go on; Tab changes the reason.
        for key: KeyEvent in [.character("9"), .character("5"), .enter] { _ = state.handle(key) }
        guard case .extendForm(let refused) = state.mode else { throw FormClosed() }
        words.said(refused.problem)
        #expect(!refused.confirming)
        for key: KeyEvent in [.backspace, .backspace, .character("7"), .tab, .enter] { _ = state.handle(key) }
        guard case .extendForm(let confirming) = state.mode else { throw FormClosed() }
        #expect(confirming.confirming)
        #expect(confirming.reason == .undeclared)
        let expires = try #require(opened.expires)
        #expect(confirming.plan.contains("expires \(AppleDate.iso8601(expires)) → \(AppleDate.iso8601(expires.addingTimeInterval(7 * 86_400))) (+7 days)"))
        words.said(overlayLines(DashboardView.render(state, width: 140, height: 42).text, titled: "Extend renewal date"))
        #expect(simulator.service.writes.isEmpty)

        let effects = state.handle(.character("y"))
        guard effects.count == 1, case .extend(let order) = effects[0] else {
            Issue.record("y gave \(effects): \(state.message?.text ?? "")")
            try await client.shutdown()
            try await simulator.stop()
            closed = true
            return
        }
        #expect(order.days == 7)
        #expect(order.environment == .production)
        let answer = await ServiceActions(actions: CustomerActions(client: client, pipeline: pipeline), store: store).extend(order)
        #expect(answer.ok)
        #expect(answer.line == "extended 2000000900000001 by 7 days: expires \(AppleDate.iso8601(expires.addingTimeInterval(7 * 86_400))) (request id \(order.requestID))")
        #expect(state.apply(answer, lookingUpAgain: order.query) == [.lookUp(.orderID("MQ5X7ABCDE"))])
        words.said(state.log.suffix(2).map(\.text))
        let rows = try await store.actions(AuditActionQuery(transactionID: "2000000900000001"))
        #expect(rows.map(\.result) == ["success"])
        #expect(rows.first?.requestID == order.requestID)
        words.said(rows.first?.plan)
        #expect(simulator.service.writes.count == 1)

        // A write whose outcome is unknown is repeated with its own request id: Apple applies
        // an id once. A known outcome lets the next write have a new one.
        _ = state.apply(
            ActionAnswer(ok: false, line: "unknown", target: ActionAnswer.target("extend", "2000000900000001"), unknownRequestID: "lost-1"),
            lookingUpAgain: nil)
        // It is said in a pop-up where the person is; a key closes it and does nothing else.
        #expect(state.popup == Popup(title: "The write did not go through", lines: ["unknown"], role: .error))
        words.said(overlayLines(DashboardView.render(state, width: 140, height: 42).text, titled: "The write did not go through"))
        state.mode = .normal
        state.focus = .subscriptions
        _ = state.handle(.character("x"))
        #expect(state.popup == nil)
        #expect(state.mode == .normal)
        _ = state.handle(.character("x"))
        guard case .extendForm(let repeated) = state.mode else { throw FormClosed() }
        #expect(repeated.requestID == "lost-1")
        _ = state.apply(ActionAnswer(ok: true, line: "done", target: ActionAnswer.target("extend", "2000000900000001")), lookingUpAgain: nil)
        state.mode = .normal
        _ = state.handle(.character("x"))
        guard case .extendForm(let fresh) = state.mode else { throw FormClosed() }
        #expect(fresh.requestID != "lost-1")

        try await client.shutdown()
        try await simulator.stop()
        await store.close()
        closed = true
        words.check()
    }

    /// A write that cannot be recorded first is not sent: the Log says why.
    @Test func aWriteThatCannotBeRecordedIsNotSent() async throws {
        let words = Wording("dashboard-live")
        let (simulator, client, pipeline, store) = try await Self.live()
        let refusing = ActionRecording(location: "/nowhere/audit.sqlite") { _ in
            .failure(ActionRecording.Failure(code: "audit-unwritable", words: "the write could not be recorded in /nowhere/audit.sqlite: disk full"))
        } complete: { _, _ in nil }
        let order = ExtendOrder(
            originalTransactionID: "2000000900000001", productID: nil, days: 3, reason: .other, requestID: "r-unrecorded", environment: .production,
            query: .orderID("MQ5X7ABCDE"))
        let answer = await ServiceActions(actions: CustomerActions(client: client, pipeline: pipeline), recording: refusing).extend(order)
        #expect(!answer.ok)
        words.said(answer.line)
        #expect(simulator.service.writes.isEmpty)
        try await client.shutdown()
        try await simulator.stop()
        await store.close()
        words.check()
    }
}

extension ExtendFromTheDashboardTests {
    /// `c` on a looked-up purchase: the form refuses without consent or with a percentage for an
    /// undelivered item, then the plan, `y`, Apple's 202, the audit row.
    @Test func cFormChecksApplesRulesThenSendsAndRecords() async throws {
        let words = Wording("dashboard-live")
        let (simulator, client, pipeline, store) = try await Self.live()
        var state = DashboardState(now: Date())
        _ = state.handle(.resize(width: 140, height: 42))
        (state.lookupAvailable, state.actionsAvailable) = (true, true)
        state.add(await CustomerLookupService(client: client, pipeline: pipeline).lookUp(.transactionID("2000000900000010")))
        state.focus = .purchases
        // Select the consumable's row.
        for _ in 0..<10 where state.selectedPurchase?.transactionID != "2000000900000010" { _ = state.handle(.down) }
        #expect(state.selectedPurchase?.transactionID == "2000000900000010")
        _ = state.handle(.character("c"))
        guard case .consumptionForm(let opened) = state.mode else {
            Issue.record("c did not open the form: \(state.message?.text ?? "")")
            return
        }
        #expect(opened.transactionID == "2000000900000010")
        #expect(opened.environment == .production)
        func form() throws -> ConsumptionForm {
            guard case .consumptionForm(let form) = state.mode else { throw FormClosed() }
            return form
        }
        // Without consent, nothing goes on.
        _ = state.handle(.enter)
        words.said(try form().problem)
        // Not delivered, 20 % consumed, consent given: Apple's rule refuses the percentage.
        for key: KeyEvent in [.right, .tab, .tab, .character("2"), .character("0"), .tab, .tab, .character(" "), .enter] { _ = state.handle(key) }
        #expect(try form().delivery == .undeliveredQualityIssue)
        words.said(try form().problem)
        // Delivered after all: the plan, then y.
        for key: KeyEvent in [.tab, .left, .enter] { _ = state.handle(key) }
        #expect(try form().confirming)
        #expect(try form().plan.contains("consumed: 20.0 % (sent as 20000 milliunits)"))
        let effects = state.handle(.character("y"))
        guard effects.count == 1, case .consume(let order) = effects[0] else {
            Issue.record("y gave \(effects)")
            return
        }
        let answer = await ServiceActions(actions: CustomerActions(client: client, pipeline: pipeline), store: store).consume(order)
        #expect(answer.ok, "\(answer.line)")
        #expect(answer.line.hasSuffix("(request id \(order.requestID))"))
        words.said(answer.line.replacingOccurrences(of: order.requestID, with: "<request id>"))
        #expect(simulator.service.writes.map(\.body) == [#"{"consumptionPercentage":20000,"customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":false}"#])
        #expect(try await store.actions(AuditActionQuery(transactionID: "2000000900000010")).map(\.action) == ["consumption"])
        try await client.shutdown()
        try await simulator.stop()
        await store.close()
        words.check()
    }
}

extension ExtendFromTheDashboardTests {
    /// `a` on a looked-up purchase: a token that is not a UUID is refused in the form, then the
    /// plan, `y`, and a later look-up carries the token.
    @Test func aFormSetsTheTokenALaterLookUpSees() async throws {
        let words = Wording("dashboard-live")
        let (simulator, client, pipeline, store) = try await Self.live()
        var state = DashboardState(now: Date())
        _ = state.handle(.resize(width: 140, height: 42))
        (state.lookupAvailable, state.actionsAvailable) = (true, true)
        let lookups = CustomerLookupService(client: client, pipeline: pipeline)
        state.add(await lookups.lookUp(.transactionID("2000000900000001")))
        state.focus = .purchases
        for _ in 0..<10 where state.selectedPurchase?.transactionID != "2000000900000003" { _ = state.handle(.down) }
        _ = state.handle(.character("a"))
        guard case .tokenForm(let opened) = state.mode else {
            Issue.record("a did not open the form: \(state.message?.text ?? "")")
            return
        }
        #expect(opened.order.originalTransactionID == "2000000900000001")
        #expect(opened.current == nil)
        for c in "abc" { _ = state.handle(.character(c)) }
        _ = state.handle(.enter)
        guard case .tokenForm(let refused) = state.mode else { throw FormClosed() }
        words.said(refused.problem)
        _ = state.handle(.paste("7E3FB20B-4CDB-47CC-936D-99D65F608138\n"))
        _ = state.handle(.enter)
        guard case .tokenForm(let confirming) = state.mode else { throw FormClosed() }
        #expect(confirming.plan.contains("token: none → 7e3fb20b-4cdb-47cc-936d-99d65f608138"))
        let effects = state.handle(.character("y"))
        guard effects.count == 1, case .setToken(let order) = effects[0] else {
            Issue.record("y gave \(effects)")
            return
        }
        let answer = await ServiceActions(actions: CustomerActions(client: client, pipeline: pipeline), store: store).setToken(order)
        #expect(answer.ok, "\(answer.line)")
        let after = await lookups.lookUp(.transactionID("2000000900000001"))
        #expect(Set(after.transactions.compactMap(\.transaction).filter { $0.originalTransactionID == "2000000900000001" }.map(\.appAccountToken)) == ["7e3fb20b-4cdb-47cc-936d-99d65f608138"])
        #expect(try await store.actions(AuditActionQuery(transactionID: "2000000900000001")).map(\.action) == ["app-account-token"])
        try await client.shutdown()
        try await simulator.stop()
        await store.close()
        words.check()
    }
}

private struct FormClosed: Error {}

/// `dash --online-checks`: the dashboard's pipeline asks the simulator's OCSP responder, and a
/// look-up of a customer whose payloads are signed by a revoked leaf shows them invalid, with
/// the code, on screen and in the item's trust.
@Suite struct DashboardOnlineChecksTests {
    @Test func aLookUpSignedByARevokedLeafIsInvalidOnScreen() async throws {
        // The responder asked in process: its answer is never late because the machine is busy.
        let responder = OCSPResponder()
        let pki = try AppleTestPKI(ocspURL: "http://ocsp.receiptdash.invalid/ocsp")
        responder.serve(pki)
        responder.revoke(named: "leaf", at: Date(timeIntervalSince1970: 1_790_000_000))
        let (credentials, key) = makeTestCredentials(bundleID: ServerAPIData.demoBundleID)
        let simulator = try await ServerAPISimulator.start(ServerAPIConfiguration(publicKey: key.publicKey, pki: pki))
        let client = AppStoreServerAPIClient(credentials: credentials, hosts: try simulator.hosts, requestTimeout: .seconds(60))
        let anchors = try TrustAnchors.apple.addingTestRoots([pki.rootDER])
        let now = Date()
        // As DashCommand builds it with --online-checks, on a clock where the 5 s bound never
        // passes: a busy machine never makes an answer late.
        let pipeline = ReceiptPipeline(
            at: now, evaluator: TrustEvaluator(anchors: anchors),
            trustOptions: TrustOptions(now: now, onlineChecks: OnlineChecks(transport: InProcessOCSPTransport(responder), clock: StillClock())))

        var state = DashboardState(now: now)
        _ = state.handle(.resize(width: 140, height: 42))
        state.add(await CustomerLookupService(client: client, pipeline: pipeline).lookUp(.transactionID("2000000900000001")))
        let item = try #require(state.items.first)
        #expect(item.trust?.verdict == .invalid)
        // Each transaction's own report, summarised as a step of the look-up's item.
        let steps = try #require(item.trust?.steps)
        #expect(steps.count == 7)
        #expect(
            steps.allSatisfy {
                $0.kind == .lookedUpItem && $0.outcome == .fail
                    && $0.reason
                        == "invalid: online check: OCSP: the leaf ReceiptDash Simulator StoreKit Signing (NOT APPLE) was revoked on 2026-09-21T14:13:20Z (keyCompromise)"
            })
        #expect(DashboardView.render(state, width: 140, height: 42).text.contains("trust invalid"))
        #expect(responder.requestCount >= 1)

        try await client.shutdown()
        try await simulator.stop()
    }
}

/// The words in the overlay titled `title` on a rendered screen (its box's inside, each line
/// without its padding): what a form, plan or pop-up says, without the panes behind it.
func overlayLines(_ screen: String, titled title: String) -> [String] {
    let lines = screen.components(separatedBy: "\n").map(Array.init)
    guard let top = lines.firstIndex(where: { String($0).contains("┌─ \(title) ") }),
        let left = lines[top].firstIndex(of: "┌"), let right = lines[top][left...].firstIndex(of: "┐")
    else { return ["(no overlay \(title))"] }
    var inside: [String] = []
    for line in lines[(top + 1)...] {
        guard line.count > right, line[left] == "│" else { break }
        inside.append(String(line[(left + 1)..<right]).replacingOccurrences(of: #"\s+$"#, with: "", options: .regularExpression))
    }
    return inside
}

