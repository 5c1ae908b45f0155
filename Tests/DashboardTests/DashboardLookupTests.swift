import Foundation
import JSONWriting
import Synchronization
import Testing
import TestSupport

@testable import Dashboard
import AppStoreAPI
import ReceiptRendering
import ReceiptCore
import ReceiptTrust
import TerminalUI

/// `l` / `L`: customer look-up through the App Store Server API, from the key to the new `api`
/// input in the panes, with real signed transactions judged by our own trust.
@Suite struct DashboardLookupTests {
    static let now = DashboardTests.now
    static let bundle = "com.loki-project.loki-messenger"

    func screen(_ state: DashboardState) -> String {
        DashboardView.render(state, width: state.width, height: state.height).text
    }

    @discardableResult
    func press(_ state: inout DashboardState, _ keys: KeyEvent...) -> [Effect] {
        keys.flatMap { state.handle($0, environment: DashboardTests.env) }
    }

    func type(_ state: inout DashboardState, _ text: String) {
        for c in text { press(&state, .character(c)) }
    }

    static func lookupState() async -> DashboardState {
        var state = await DashboardTests.demoState()
        state.lookupAvailable = true
        return state
    }

    // MARK: - A looked-up customer, as CustomerLookupService assembles it

    /// The raw `signedTransactionInfo` / `signedRenewalInfo` of a signed notification.
    static func nestedToken(_ notification: String, _ field: String) throws -> String {
        var payload = notification.split(separator: ".")[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while payload.count % 4 != 0 { payload += "=" }
        let data = try #require(Data(base64Encoded: payload))
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        return try #require((json["data"] as? [String: Any])?[field] as? String)
    }

    /// Decodes and judges one signed item as the service does (our JWS trust, then bundle and
    /// environment against the request).
    static func judge(_ token: String, pipeline: ReceiptPipeline) async throws -> LookedUpItem {
        let decoded = try pipeline.decoder.decode(text: token)
        var item = LookedUpItem(decoded: decoded, trust: await pipeline.evaluator.evaluate(decoded, options: pipeline.trustOptions))
        item.check(bundleID: bundle, environment: .sandbox)
        return item
    }

    /// One signature character changed: the signature no longer verifies.
    static func tampered(_ token: String) -> String {
        var parts = token.split(separator: ".").map(String.init)
        var signature = Array(parts[2])
        signature[10] = signature[10] == "A" ? "B" : "A"
        parts[2] = String(signature)
        return parts.joined(separator: ".")
    }

    static let retryAfter = AppleDate.parse("2026-11-22T17:04:12Z")!

    /// Transaction 2000001025686313 looked up with `auto`: production does not know it,
    /// sandbox does; history was rate limited once. Four transactions (one with a broken
    /// signature), one renewal info, one refund.
    static func customer() async throws -> CustomerLookupResult {
        let pipeline = ReceiptPipeline(at: now, trustOptions: TrustOptions(now: now))
        let demo = try String(decoding: Data(contentsOf: DashboardTests.demoFile("notification-v2-expired.jws")), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        var result = CustomerLookupResult(query: .transactionID("2000001025686313"), at: now, environment: .sandbox)
        result.transactions = [
            try await judge(LookupFixtures.renewed, pipeline: pipeline),
            try await judge(try nestedToken(demo, "signedTransactionInfo"), pipeline: pipeline),
            try await judge(LookupFixtures.threeMonths, pipeline: pipeline),
            try await judge(tampered(LookupFixtures.monthlyAgain), pipeline: pipeline),
        ]
        result.renewals = [try await judge(try nestedToken(demo, "signedRenewalInfo"), pipeline: pipeline)]
        result.refunds = ["2000001024998954"]
        result.apiStatuses = ["2000001024993299": .expired]
        result.analysis = PurchaseAnalysis.analyze((result.transactions + result.renewals).map(\.decoded), at: now)
        let base = "https://api.storekit-sandbox.apple.com/inApps"
        result.records = [
            APIRequestRecord(
                endpoint: .transactionInfo, environment: .production, url: "https://api.storekit.apple.com/inApps/v1/transactions/2000001025686313",
                result: .apiError(httpStatus: 404, code: .transactionIDNotFound), latencyMilliseconds: 41.6),
            APIRequestRecord(
                endpoint: .transactionInfo, environment: .sandbox, url: "\(base)/v1/transactions/2000001025686313",
                result: .success(httpStatus: 200), latencyMilliseconds: 52.2),
            APIRequestRecord(
                endpoint: .transactionHistory, environment: .sandbox, url: "\(base)/v2/history/2000001025686313",
                result: .http(status: 429), latencyMilliseconds: 12, retryAfter: retryAfter, waitSeconds: 1.5),
            APIRequestRecord(
                endpoint: .transactionHistory, environment: .sandbox, url: "\(base)/v2/history/2000001025686313",
                result: .success(httpStatus: 200), latencyMilliseconds: 80.4),
            APIRequestRecord(
                endpoint: .subscriptionStatuses, environment: .sandbox, url: "\(base)/v1/subscriptions/2000001025686313",
                result: .success(httpStatus: 200), latencyMilliseconds: 60),
            APIRequestRecord(
                endpoint: .refundHistory, environment: .sandbox, url: "\(base)/v2/refund/lookup/2000001025686313",
                result: .success(httpStatus: 200), latencyMilliseconds: 45.5),
        ]
        return result
    }

    // MARK: - Keys

    @Test func lOpensTheBoxAndEnterLooksUpAnOrderID() async {
        let words = Wording("dashboard-lookup")
        var state = await Self.lookupState()
        #expect(press(&state, .character("l")).isEmpty)
        #expect(state.mode == .lookup(""))
        type(&state, "MQ5X7ABCDE")
        let box = screen(state)
        words.said(box)
        #expect(press(&state, .enter) == [.lookUp(.orderID("MQ5X7ABCDE"))])
        #expect(state.mode == .normal)
        #expect(state.lookupsRunning == [.orderID("MQ5X7ABCDE")])
        words.said(state.message?.text)
        words.said(state.log.last?.text)
        // The same look-up again while it runs: nothing sent twice.
        press(&state, .character("l"))
        type(&state, "MQ5X7ABCDE")
        #expect(press(&state, .enter).isEmpty)
        words.said(state.message?.text)
        words.check()
    }

    @Test func digitsAreATransactionIDAndOtherTextIsRefused() async {
        let words = Wording("dashboard-lookup")
        var state = await Self.lookupState()
        press(&state, .character("l"))
        press(&state, .paste(" 2000001025686313\n"))
        #expect(press(&state, .enter) == [.lookUp(.transactionID("2000001025686313"))])

        // Esc cancels without an effect.
        press(&state, .character("l"))
        type(&state, "MQ5X7ABCDF")
        #expect(press(&state, .escape).isEmpty)
        #expect(state.mode == .normal)
        #expect(state.lookupsRunning == [.transactionID("2000001025686313")])

        // Neither an order ID nor a transaction ID: said, not sent.
        for bad in ["MQ5X7ABCD", "MQ5X7-ABCD", "ÄQ5X7ABCDE", "2000 0010"] {
            press(&state, .character("l"))
            type(&state, bad)
            #expect(press(&state, .enter).isEmpty, "\(bad)")
            words.said(state.message?.text)
        }
        #expect(LookupQuery(typed: "mq5x7abcde") == .orderID("mq5x7abcde"))
        #expect(LookupQuery(typed: "1234567890") == .transactionID("1234567890"))
        words.check()
    }

    /// The receipt's newest purchase (2023-09-19T23:26:23Z, `inspect` shows it), not the first row.
    @Test func capitalLLooksUpTheSelectedReceiptsNewestTransaction() async {
        let words = Wording("dashboard-lookup")
        var state = await Self.lookupState()
        press(&state, .down, .down)
        #expect(state.selectedItem?.source == "demo/production-subscriptions.b64")
        let effects = press(&state, .character("L"))
        #expect(effects == [.lookUp(.receipt(source: "demo/production-subscriptions.b64", transactionID: "340001311555626", verdict: .valid))])
        words.said(state.log.last?.text)
        // A receipt without purchases has nothing to look up.
        press(&state, .up, .up)
        #expect(state.selectedItem?.decoded?.allPurchases.isEmpty == false)
        words.check()
    }

    @Test func withoutCredentialsLAndCapitalLSayWhatToConfigure() async {
        let words = Wording("dashboard-lookup")
        var state = await DashboardTests.demoState()
        #expect(press(&state, .character("l")).isEmpty)
        #expect(state.mode == .normal)
        words.said(state.message?.text)
        words.said(state.log.suffix(5).map(\.text))
        let logged = state.log.count
        #expect(press(&state, .down, .down, .character("L")).isEmpty)
        words.said(state.message?.text)
        #expect(state.log.count == logged)  // listed once
        // Something configured but wrong: the loader's words.
        state.lookupSetupProblem = "the private key file /keys/a.p8 cannot be read"
        press(&state, .character("l"))
        words.said(state.message?.text)
        words.check()
    }

    @Test func footerAndHelpListTheKeys() async {
        let words = Wording("dashboard-lookup")
        var state = await Self.lookupState()
        let footer = screen(state).split(separator: "\n").last.map(String.init) ?? ""
        words.said(footer)
        words.said(footer)
        press(&state, .character("?"))
        let help = screen(state)
        words.said(help)
        words.said(help)
        words.check()
    }

    // MARK: - The answer

    @Test func theAnswerIsANewAPIInputInThePanes() async throws {
        let words = Wording("dashboard-lookup")
        var state = await Self.lookupState()
        // The widest terminal before the Receipts pane widens (at 160): the Purchases table whole.
        press(&state, .resize(width: 159, height: 60))
        state.lookupsRunning = [.transactionID("2000001025686313")]
        let id = state.add(try await Self.customer())
        let item = try #require(state.selectedItem)
        #expect(item.id == id)
        #expect(state.items.count == 7)
        #expect(item.source == "lookup transaction 2000001025686313")
        #expect(item.decoded?.format == .api)
        words.said(item.decoded?.format.displayName)
        #expect(item.decoded?.transactions.count == 4)
        #expect(item.decoded?.pendingRenewalInfo.count == 1)
        #expect(item.trust?.verdict == .invalid)
        #expect(state.lookupsRunning.isEmpty)
        words.said(state.message?.text)
        let text = screen(state)
        // Receipts: the new input, its worst verdict, environment, counts and latest expiry.
        #expect(text.contains("│✗  …000001025686313 Sbx   0/1/0 2025-10-06││"))
        #expect(text.contains("7 inputs · 7 decoded │ valid 3 · test 1 · invalid 1 · unverifiable 2"))
        // Purchases: every looked-up transaction, oldest first; products cut in the middle, so
        // the upgrade to the three-month plan shows.
        for row in [
            "│com.getsess…org.pro_sub auto-renew  2000001024998954 2000001024993299 2025-10-01 07:09 2025-10-01 07:12 expired  │",
            "│com.getsess…org.pro_sub auto-renew  2000001025686313 2000001024993299 2025-10-02 07:06 2025-10-02 07:09 expired  │",
            "│com.getsess…ub_3_months auto-renew  2000001027701898 2000001024993299 2025-10-06 05:16 2025-10-06 05:25 expired  │",
            "│com.getsess…org.pro_sub auto-renew  2000001027701928 2000001024993299 2025-10-06 05:16 2025-10-06 05:19 expired  │",
        ] {
            #expect(text.contains(row), "\(row)")
        }
        #expect(text.contains("Purchases [4]"))
        // Subscriptions: the analysis of transactions and renewal info (auto-renew turned off).
        #expect(text.contains("Subscriptions [1]"))
        #expect(text.contains("││● com.getsession.org.pro_sub_3_months  expired               ││"))
        #expect(text.contains("││  Expired on 2025-10-06T05:25:18Z (411 days ago): the        ││"))
        #expect(text.contains("││  customer cancelled (turned auto-renew off); a win-back     ││"))
        // Status: what was asked, trust with the untrusted item named, Apple's status, refunds, requests.
        for row in [
            "││lookup transaction 2000001025686313               │",
            "││App Store Server API look-up, Sandbox             │",
            "││Trust: invalid: 1 of 5 signed items not trusted   │",
            "││✗ transaction 2000001027701928                    │",
            "││Apple: subscription 2000001024993299 is expired   │",
            "││Refunds (1): 2000001024998954                     │",
            "││Requests (6):                                     │",
            "││  transaction-history Sandbox: HTTP 429, 12 ms,   │",
            "││  waited 1.5 s (Retry-After 17:04:12)             │",
        ] {
            #expect(text.contains(row), "\(row)")
        }
        words.said(DashboardView.lookupLines(item.lookup!).map(\.0))
        // L on the answer looks its customer up again by its newest transaction id.
        #expect(press(&state, .character("L")) == [.lookUp(.transactionID("2000001027701928"))])
        words.check()
    }

    /// The same customer asked again (after `x`, `c` or `a`) replaces its row in place: one
    /// row per look-up, with the newer answer, never a stale copy beside it.
    @Test func aLookupAskedAgainReplacesItsRowInPlace() async throws {
        var state = await Self.lookupState()
        let first = try await Self.customer()
        let id = state.add(first)
        let rows = state.items.count
        var newer = first
        newer.transactions.removeLast()
        #expect(state.add(newer) == id)
        #expect(state.items.count == rows)
        let item = try #require(state.items.first { $0.id == id })
        #expect(item.lookup?.transactions.count == first.transactions.count - 1)
        #expect(state.selectedItem?.id == id)
        #expect(state.log.last?.text.hasPrefix("lookup transaction 2000001025686313 (updated): ") == true)
        // Another customer is a row of its own.
        var other = first
        other.query = .transactionID("2000000000000042")
        #expect(state.add(other) != id)
        #expect(state.items.count == rows + 1)
    }

    @Test func exportWritesTheLookupJSON() async throws {
        let words = Wording("dashboard-lookup")
        var state = await Self.lookupState()
        let result = try await Self.customer()
        state.add(result)
        state.focus = .status
        press(&state, .character("e"))
        let effects = press(&state, .enter)
        var expected = JSONOutput()
        LookupJSON.write(result, into: &expected)
        guard effects.count == 1, case .save(let file)? = effects.first else {
            Issue.record("not one save: \(effects)")
            return
        }
        #expect(file.folder == "." && file.fileName == "receiptdash-export-7.json" && file.contents == expected.text)
        words.said(file.what)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(expected.text.utf8)) as? [String: Any])
        #expect(json["query"] as? [String: String] == ["transaction_id": "2000001025686313"])
        #expect(json["refunds"] as? [String] == ["2000001024998954"])
        #expect(json["environment"] as? String == "Sandbox")
        #expect((json["transactions"] as? [Any])?.count == 4)
        words.check()
    }

    @Test func aFailedLookupIsKeptAndExplained() async {
        let words = Wording("dashboard-lookup")
        var state = await Self.lookupState()
        // The widest terminal before the Receipts pane widens (at 160): the Purchases table whole.
        press(&state, .resize(width: 159, height: 60))
        var result = CustomerLookupResult(query: .orderID("MQ5X7ABCDE"), at: Self.now, environment: .production)
        result.records = [
            APIRequestRecord(
                endpoint: .lookUpOrderID, environment: .production, url: "https://api.storekit.apple.com/inApps/v1/lookup/MQ5X7ABCDE",
                result: .http(status: 401), latencyMilliseconds: 30)
        ]
        result.failure = APIFailure.unauthorized(environment: .production)
        state.add(result)
        words.said(state.selectedItem?.source)
        #expect(state.selectedItem?.trust == nil)
        let reason = APIFailure.unauthorized(environment: .production).reason
        words.said(state.message?.text)
        words.said(state.log.last?.text)
        words.said(DashboardView.lookupLines(result).map(\.0))
        #expect(DashboardView.lookupLines(result).first?.0.hasSuffix(reason) == true)
        let text = screen(state)
        #expect(text.contains("││Look-up failed (unauthorized): Production         │"))
        #expect(text.contains("│!  …rder MQ5X7ABCDE Prod  0/0/0 -         ││"))
        words.said(text)
        words.check()
    }

    @Test func progressEventsBecomeLogLines() async {
        let words = Wording("dashboard-lookup")
        var state = await Self.lookupState()
        let query = LookupQuery.orderID("MQ5X7ABCDE")
        let at = AppleDate.parse("2026-11-22T17:04:10Z")!
        state.apply(.sending(endpoint: .lookUpOrderID, environment: .production, attempt: 1), for: query, at: at)
        state.apply(
            .retrying(endpoint: .transactionHistory, inSeconds: 2, until: Self.retryAfter, after: .http(status: 429)), for: query, at: at)
        state.apply(
            .retrying(endpoint: .transactionHistory, inSeconds: 1.2, until: nil, after: .http(status: 503)), for: .transactionID("42"), at: at)
        state.apply(.switchingToSandbox(endpoint: .transactionInfo), for: .transactionID("42"), at: at)
        words.said(state.log.suffix(3).map(\.text))
        #expect(state.log.suffix(3).map(\.time) == [at, at, at])
        words.said(screen(state))
        words.check()
    }
}

/// The `l` flow through the UI loop itself: the look-up runs in a task of its own, and its
/// progress and answer reach the screen only through the loop.
@Suite struct DashboardLookupLoopTests {
    /// Answers every query with a prepared result after reporting a 429 wait and the sandbox hop.
    final class PreparedLookup: CustomerLookingUp {
        let answer: CustomerLookupResult
        let asked = Mutex<[LookupQuery]>([])
        /// Signalled when an answer is handed back.
        let answered = DispatchSemaphore(value: 0)

        init(answer: CustomerLookupResult) { self.answer = answer }

        func lookUp(_ query: LookupQuery, onEvent: @escaping @Sendable (LookupEvent) -> Void) async -> CustomerLookupResult {
            asked.withLock { $0.append(query) }
            onEvent(.sending(endpoint: .transactionInfo, environment: .production, attempt: 1))
            onEvent(.switchingToSandbox(endpoint: .transactionInfo))
            onEvent(.retrying(endpoint: .transactionHistory, inSeconds: 2, until: DashboardLookupTests.retryAfter, after: .http(status: 429)))
            var result = answer
            result.query = query
            answered.signal()
            return result
        }
    }

    /// Types the keys, waits until the look-up has answered (as a real terminal's read blocks
    /// while nothing happens), then answers ticks until a frame shows `until`, then quits (Ctrl-C).
    final class TypingTerminal: TerminalBackend {
        var keys: [KeyEvent]
        let until: String
        let answered: DispatchSemaphore
        var waitedForAnswer = false
        var frames: [String] = []
        var waits: [Int?] = []
        var ticks = 0
        let size: (width: Int, height: Int) = (160, 60)

        init(keys: [KeyEvent], until: String, answered: DispatchSemaphore) {
            self.keys = keys
            self.until = until
            self.answered = answered
        }

        func draw(_ buffer: ScreenBuffer) { frames.append(buffer.text) }
        func sendRaw(_ sequence: String) {}

        func readEvent(timeoutMilliseconds: Int?) -> KeyEvent? {
            waits.append(timeoutMilliseconds)
            if !keys.isEmpty { return keys.removeFirst() }
            if !waitedForAnswer {
                // A safety net, not a delay: it returns as soon as the look-up answers.
                _ = answered.wait(timeout: .now() + 60)
                waitedForAnswer = true
            }
            // Ctrl-C quits from any view (q would only close the Customer view).
            if frames.last?.contains(until) == true || ticks >= 100_000 { return .control("c") }
            ticks += 1
            return .tick
        }
    }

    @Test func lTypedEnterAndTheAnswerArrivesThroughTheLoop() async throws {
        let words = Wording("dashboard-lookup")
        let lookup = PreparedLookup(answer: try await DashboardLookupTests.customer())
        let keys: [KeyEvent] = [.character("l")] + "2000001025686313".map { KeyEvent.character($0) } + [.enter]
        let terminal = TypingTerminal(keys: keys, until: "Timeline (6 events)", answered: lookup.answered)
        var state = DashboardState(now: DashboardTests.now)
        // The loop on a thread of its own, as the executable runs it: waiting for keys never
        // holds up the look-up task on the shared pool.
        let ui = SingleThreadExecutor(name: "lookup-loop-test")
        await withTaskExecutorPreference(ui) {
            await DashboardApp.run(&state, backend: terminal, environment: DashboardAppLoopTests.env, lookup: lookup)
        }

        #expect(lookup.asked.withLock { $0 } == [.transactionID("2000001025686313")])
        #expect(state.lookupAvailable)
        #expect(state.lookupsRunning.isEmpty)
        #expect(state.items.map(\.source) == ["lookup transaction 2000001025686313"])
        #expect(state.items.first?.decoded?.format == .api)
        words.said(state.log.map(\.text))
        // Idle before the look-up: blocking reads (while it runs the loop wakes every 100 ms,
        // but this prepared answer may be back before the next read).
        #expect(terminal.waits.prefix(keys.count) == ArraySlice(Array(repeating: nil, count: keys.count)))
        #expect(Set(terminal.waits.dropFirst(keys.count)).isSubset(of: [100, nil]))
        #expect(terminal.ticks < 100_000)
        // The answer opens the Customer view: the answer on top, then the timeline.
        let last = try #require(terminal.frames.last)
        #expect(last.contains("Timeline (6 events)"))
        #expect(state.mode == .customer(selected: 5, scroll: 0))
        words.check()
    }
}
