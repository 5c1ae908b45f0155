import Foundation
import LocalFiles
import Testing
import TestSupport
@testable import Dashboard
import AppStoreAPI
import ReceiptDemo
import ReceiptCore
import TerminalUI

/// The dashboard driven by keys, read back from the cell buffer, as a person would see it.
@Suite struct DashboardTests {
    static let now = AppleDate.parse("2026-11-22T00:00:00Z")!

    static func demoState(width: Int = 120, height: Int = 40) async -> DashboardState {
        var state = DashboardState(now: now)
        state.add(await state.pipeline.judge(InputFiles.demo()), from: .startup)
        // Log times are the judged-at instant, so snapshots do not depend on the clock.
        _ = state.handle(.resize(width: width, height: height), environment: env)
        return state
    }

    static let env = DashboardEnvironment(
        listDirectory: { path in
            switch path {
            case "/data": ["receipts", "responses", "notes.txt"]
            case "/data/receipts": ["a.der", "b.der"]
            case "/data/responses": ["r.json"]
            default: nil
            }
        }, now: { now })

    func screen(_ state: DashboardState) -> ScreenBuffer {
        DashboardView.render(state, width: state.width, height: state.height)
    }

    @discardableResult
    func press(_ state: inout DashboardState, _ keys: KeyEvent...) -> [Effect] {
        keys.flatMap { state.handle($0, environment: Self.env) }
    }

    @Test func firstScreenSnapshot() async {
        let state = await Self.demoState()
        assertSnapshot(screen(state).text, named: "demo-120x40")
    }

    @Test func purchasesOfAReceiptSnapshot() async {
        var state = await Self.demoState()
        press(&state, .down, .down, .tab)
        #expect(state.focus == .purchases)
        #expect(state.selectedItem?.source == "demo/production-subscriptions.b64")
        assertSnapshot(screen(state).text, named: "production-purchases-120x40")
    }

    @Test func narrowScreenSnapshot() async {
        var state = await Self.demoState(width: 80, height: 24)
        press(&state, .down, .down, .down)
        assertSnapshot(screen(state).text, named: "sandbox-80x24")
    }

    @Test func tooSmallScreen() async {
        let words = Wording("dashboard")
        var state = await Self.demoState()
        press(&state, .resize(width: 60, height: 15))
        let text = screen(state).text
        words.said(text)
        #expect(text.contains("need 80×20"))
        press(&state, .resize(width: 120, height: 40))
        #expect(screen(state).text.contains("Receipts [6]"))
        words.check()
    }

    /// The receipts list names an input by its bundle id, kept with the item (found once, not
    /// per frame: an input whose rows carry none would be read whole on every frame).
    @Test func anItemKeepsItsBundleIDAsItsDecodedInputChanges() {
        var item = LoadedItem(id: 1, source: "x.json", rows: [])
        #expect(item.bundleID == nil)
        var decoded = DecodedInput(format: .verifyResponse)
        var unnamed = Purchase(source: .latestReceiptInfo)
        unnamed.transactionID = "1"
        var named = unnamed
        named.bundleID = "com.example.later"
        decoded.latestReceiptInfo = [unnamed, named]
        item.decoded = decoded
        #expect(item.bundleID == "com.example.later")
        decoded.latestReceiptInfo = [unnamed]
        item.decoded = decoded
        #expect(item.bundleID == nil)
        item.decoded = nil
        #expect(item.bundleID == nil)
    }

    @Test func bundleIDsAndProductsAreOnScreen() async {
        var state = await Self.demoState()
        let first = screen(state).text
        for bundle in ["com.mindmobapp.Mi", "org.getpure.pure-", "com.revenuecat.sa", "net.zachariadis.c"] {
            #expect(first.contains(bundle), "\(bundle)")
        }
        press(&state, .down, .down)
        #expect(screen(state).text.contains("org.getpure.pure.Week"))
        #expect(screen(state).text.contains("Trust: valid: genuine Apple"))
    }

    @Test func helpListsTheViewsKeysAndSaysWhyOneCannotWork() async {
        var state = await Self.demoState(width: 140, height: 60)
        press(&state, .character("?"))
        var text = screen(state).text
        // The Receipts pane's keys and those of everywhere; one that cannot work here says why.
        let (here, everywhere) = KeyMap.helpBindings(for: .receipts)
        #expect(here.map(\.label) == ["f", "s", "v", "L", "u"])
        for binding in here + everywhere where !binding.action.writes {
            #expect(text.contains(binding.description), "\(binding.description)")
        }
        let writes = KeyMap.bindings.filter(\.action.writes)
        #expect(writes.map(\.label) == ["x", "c", "a"])
        #expect(text.components(separatedBy: "unavailable: needs an In-App Purchase key: --issuer-id, --key-id, --private-key-file, --bundle-id").count - 1 == 3)
        #expect(text.components(separatedBy: "unavailable: a follower (--follow) only reads: verify where the store is written").count - 1 == 3)
        // Writes are left out without credentials, as in the footer, and one line says why.
        press(&state, .escape, .tab, .character("?"))
        text = screen(state).text
        #expect(!text.contains("answer a refund request"))
        #expect(text.contains("c, a (writes to Apple) are hidden: writes need API credentials (--issuer-id, --key-id,"))
        state.actionsAvailable = true
        state.lookupAvailable = true
        state.onlineAvailable = true
        text = screen(state).text
        #expect(!text.contains("unavailable:"))
        #expect(text.contains("c        answer a refund request"))
        state.actionsAvailable = false
        state.actionsUnavailableReason = "read-only: started with --read-only"
        #expect(screen(state).text.contains("c, a (writes to Apple) are hidden: read-only: started with --read-only"))
    }

    @Test func openSelectsWhatItOpenedAndATamperedReceiptIsNotGenuine() async throws {
        let words = Wording("dashboard")
        var state = await Self.demoState()
        #expect(state.selectedItem?.source == "demo/ios6-transaction.b64")
        var input = InputFiles.demo()[2]
        let bytes = try input.result.get()
        // The base64 receipt cut short: its ASN.1 lengths run past the end.
        input.result = .success(Array(bytes.prefix(bytes.count * 2 / 3)))
        input.source = "/tmp/cut.b64"
        state.add(await state.pipeline.judge([input]), from: .open(path: "/tmp/cut.b64"))
        #expect(state.selectedItem?.source == "/tmp/cut.b64")
        #expect(state.focus == .receipts)
        #expect(state.message?.text == "loaded 1 input from /tmp/cut.b64")
        let error = try #require(state.selectedItem?.error)
        #expect(error.code == .invalidASN1)
        let text = screen(state).text
        words.said(text)
        words.said(DashboardState.verdictLine(ReceiptDecodingError(.invalidJSON, "x")))
        words.check()
    }

    @Test func filterAndMatches() async {
        var state = await Self.demoState()
        press(&state, .down, .down, .down, .character("/"))
        for c in "annual" { press(&state, .character(c)) }
        #expect(state.visibleRowCount == 1)
        press(&state, .enter)
        #expect(state.mode == .normal)
        #expect(screen(state).text.contains("Purchases [1 of 9, filter \"annual\"]"))
        #expect(state.selectedPurchase?.productID == "com.revenuecat.annual_39.99.2_week_intro")
        press(&state, .escape)
        #expect(state.filter.isEmpty)
        #expect(state.visibleRowCount == 9)
    }

    /// `/` matches every column shown: the state, the type and the dates as the table writes
    /// them, not only the ids.
    @Test func theFilterMatchesEveryColumnShown() async throws {
        var state = await Self.demoState()
        press(&state, .down, .down, .down)
        let item = try #require(state.selectedItem)
        func count(_ needle: String) -> Int {
            state.filter = needle
            state.rebuildRows()
            return state.visibleRowCount
        }
        let expired = item.rows.filter { DashboardState.rowState($0, now: state.now).0 == "expired" }.count
        #expect(expired > 0)
        #expect(count("expired") == expired)
        #expect(count("auto-renew") == item.rows.filter { DashboardState.typeText($0) == "auto-renew" }.count)
        let purchased = try #require(item.rows.first?.purchaseDate)
        let day = String(AppleDate.iso8601(purchased).prefix(10))
        #expect(count(day) >= 1)
        #expect(count("no such thing") == 0)
    }

    @Test func sortByColumnAndReverse() async {
        var state = await Self.demoState()
        press(&state, .down, .down, .down, .tab)
        press(&state, .right)  // column cursor: Expires
        #expect(state.columnCursor == .expires)
        press(&state, .character("s"))
        let ascending = state.rowOrder.map { state.selectedItem!.rows[$0].expiresDate! }
        #expect(ascending == ascending.sorted())
        press(&state, .character("s"))
        #expect(!state.ascending)
        let descending = state.rowOrder.map { state.selectedItem!.rows[$0].expiresDate! }
        #expect(descending == ascending.reversed())
        #expect(screen(state).text.contains("Expires ▼"))
    }

    @Test func detailShowsEveryFieldAndUnknownAttributesInHex() async {
        var state = await Self.demoState()
        press(&state, .down, .down, .tab, .enter)
        guard case .detail = state.mode else {
            Issue.record("no detail")
            return
        }
        let text = screen(state).text
        #expect(text.contains("web_order_line_item_id        340000558053130"))
        #expect(text.contains("ASN.1 type 1710 v1"))
        press(&state, .escape)
        #expect(state.mode == .normal)
    }

    /// The overlay lists every field of ``PurchaseField/all`` the purchase has, under its label
    /// (a StoreKit 2 transaction fills most of them, `storefront_id` included).
    @Test func detailListsEveryFieldOfTheTable() async throws {
        var state = DashboardState(now: Self.now)
        await state.load(source: "jws", bytes: try [UInt8](Data(contentsOf: Self.demoFile("notification-v2-expired.jws"))))
        _ = state.handle(.resize(width: 120, height: 60), environment: Self.env)
        press(&state, .tab, .enter)
        let purchase = try #require(state.selectedPurchase)
        guard case .detail = state.mode else {
            Issue.record("no detail")
            return
        }
        let text = screen(state).text
        let shown = PurchaseField.all.compactMap { field in field.displayText(in: purchase).map { (field.label, $0) } }
        #expect(shown.count >= 20)
        for (label, value) in shown {
            #expect(text.contains(TextWidth.pad(label, to: 30) + value), "\(label)")
        }
        #expect(text.contains("storefront_id                 143460"))
        #expect(text.contains("price (milliunits)"))
    }

    @Test func pasteSeveralReceiptsAtOnce() async throws {
        var state = await Self.demoState()
        let production = try String(decoding: Data(contentsOf: Self.demoFile("production-subscriptions.b64")), as: UTF8.self)
        let jws = try String(decoding: Data(contentsOf: Self.demoFile("notification-v2-expired.jws")), as: UTF8.self)
        press(&state, .character("p"))
        press(&state, .paste(production.trimmingCharacters(in: .whitespacesAndNewlines) + "\n\n" + jws))
        #expect(screen(state).text.contains("Paste receipts"))
        let effects = press(&state, .enter)
        // The update only asks for the pasted text to be judged; nothing is decoded in the keystroke.
        #expect(state.items.count == 6)
        guard case .judge(let inputs, from: .paste)? = effects.first else {
            Issue.record("no judge effect: \(effects)")
            return
        }
        #expect(inputs.map(\.source) == ["paste 1", "paste 2"])
        await state.perform(effects)
        #expect(state.items.count == 8)
        #expect(state.items[6].source == "paste 1")
        #expect(state.items[6].decoded?.format == .pkcs7)
        #expect(state.items[7].decoded?.format == .jwsNotification)
        #expect(state.message?.text == "pasted 2 inputs")
        // A bad paste is kept as an error item; nothing already loaded is lost.
        await state.perform(press(&state, .character("p"), .paste("MIIT!!!not base64"), .enter))
        #expect(state.items.count == 9)
        #expect(state.items[8].error?.code == .invalidBase64)
        #expect(state.items.prefix(8).allSatisfy { $0.decoded != nil })
    }

    static func demoFile(_ name: String) -> URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/ReceiptDemo/Demo/\(name)")
    }

    @Test func openWithTabCompletion() async {
        var state = await Self.demoState()
        press(&state, .character("o"))
        for c in "/data/re" { press(&state, .character(c)) }
        press(&state, .tab)
        #expect(state.mode == .open("/data/re"))  // receipts and responses share "re"
        press(&state, .character("c"), .tab)
        #expect(state.mode == .open("/data/receipts/"))
        #expect(press(&state, .enter) == [.load(path: "/data/receipts/")])
    }

    @Test func copyAndExportEffects() async throws {
        var state = await Self.demoState()
        press(&state, .down, .down, .tab)
        // y: the cell under the column cursor (Purchased, by default); ← moves it.
        #expect(press(&state, .character("y")) == [.copy("2023-05-09T23:20:55Z")])
        press(&state, .left, .left)
        #expect(state.columnCursor == .transaction)
        #expect(press(&state, .character("y")) == [.copy("340001196262039")])
        // Y: the row as JSON.
        guard case .copy(let row)? = press(&state, .character("Y")).first else {
            Issue.record("no row copied")
            return
        }
        let object = try #require(try JSONSerialization.jsonObject(with: Data(row.utf8)) as? [String: Any])
        #expect(object["transaction_id"] as? String == "340001196262039")
        #expect(object["state"] as? String == "expired")
        #expect(Set(object.keys) == Set(DashboardState.purchaseColumns))
        // e on the Status pane: the selected input, whole, as JSON.
        state.focus = .status
        press(&state, .character("e"))
        guard case .export(let form) = state.mode else {
            Issue.record("no export form")
            return
        }
        #expect(form == ExportForm(view: .input, format: .json, folder: "."))
        let effects = press(&state, .enter)
        guard case .save(let file)? = effects.first else {
            Issue.record("no export")
            return
        }
        #expect(file.fileName == "receiptdash-export-3.json")
        let input = try JSONSerialization.jsonObject(with: Data(file.contents.utf8)) as? [String: Any]
        #expect(input?["format"] as? String == "pkcs7")
        #expect((input?["trust"] as? [String: Any])?["verdict"] as? String == "valid")
        #expect((input?["subscriptions"] as? [[String: Any]])?.first?["state"] as? String == "expired")
        #expect(DashboardApp.osc52("ab", inTmux: false) == "\u{1B}]52;c;YWI=\u{07}")
        #expect(DashboardApp.osc52("ab", inTmux: true) == "\u{1B}Ptmux;\u{1B}\u{1B}]52;c;YWI=\u{07}\u{1B}\\")
    }

    @Test func verifyWithoutAVerifierSaysSoRatherThanFaking() async {
        let words = Wording("dashboard")
        var state = await Self.demoState()
        #expect(press(&state, .character("v")).isEmpty)
        words.said(state.message?.text)
        words.check()
    }

    @Test func verifySelectedOrAllAndShowProgress() async throws {
        var state = await Self.demoState()
        state.onlineAvailable = true
        press(&state, .down, .down)  // production receipt
        guard case .verify(let one)? = press(&state, .character("v")).first else {
            Issue.record("no verify effect")
            return
        }
        #expect(one.map(\.itemID) == [state.selectedItem!.id])
        let fileBytes = [UInt8](try Data(contentsOf: Self.demoFile("production-subscriptions.b64")))
        #expect(one.first?.receiptData == Data(try Base64Text.decode(fileBytes)).base64EncodedString())
        // V: every input verifyReceipt takes (not JWS, not responses), not the one in flight.
        guard case .verify(let rest)? = press(&state, .character("V")).first else {
            Issue.record("no verify-all effect")
            return
        }
        let sources = rest.map { id in state.items.first { $0.id == id.itemID }!.source }
        #expect(sources == ["demo/ios6-transaction.b64", "demo/sandbox-weekly-intro.b64", "demo/xcode-storekit-test.der"])
        // Events drive counts, glyphs, the Status pane and the log.
        let id = one[0].itemID
        let at = Self.now.addingTimeInterval(5)
        state.apply(.queued(itemID: id), at: at)
        state.apply(.sending(itemID: id, attempt: 1, url: "http://sim/production"), at: at)
        #expect(state.onlineCounts.verifying == 1)
        state.apply(.retrying(itemID: id, inSeconds: 0.5, reason: RetryReason(.apple(status: 21005))), at: at)
        state.apply(
            .done(itemID: id, status: 0, environment: "Production", attempts: [
                OnlineAttempt(url: "http://sim/production", result: .apple(status: 21005), latencyMilliseconds: 12),
                OnlineAttempt(url: "http://sim/production", result: .apple(status: 0), latencyMilliseconds: 9),
            ], response: nil), at: at)
        for other in rest { state.apply(.failed(itemID: other.itemID, reason: VerificationFailure(.retriesExhausted, "timed out"), attempts: []), at: at) }
        #expect(state.onlineCounts.done == 1)
        #expect(state.onlineCounts.failed == 3)
        let text = screen(state).text
        #expect(text.contains("queued 0 · verifying 0"))
        #expect(text.contains("done 1 · failed 3"))
        #expect(text.contains("4/4 online"))
        #expect(text.contains("Online: status 0 Valid"))
        #expect(state.log.contains { $0.text == "demo/production-subscriptions.b64: retrying in 0.5 s (21005 receipt server unavailable)" && $0.time == at })
        #expect(text.contains("│✓● …subscriptions 0/1/0 2023-10-19│"))
        #expect(text.contains("│?✗ …6-transaction 0/0/0 -         │"))
    }

    @Test func quit() async {
        var state = await Self.demoState()
        #expect(press(&state, .character("q")) == [.quit])
    }

    /// A product id carrying an escape sequence is shown escaped: no cell holds ESC.
    @Test func escapeSequencesInReceiptTextAreShownEscaped() async {
        var state = DashboardState(now: Self.now)
        let row = #"{"transaction_id": "1", "product_id": "evil\u001b[2J\u001b]0;owned\u0007", "purchase_date_ms": "1700000000000"}"#
        await state.load(source: "evil.json", bytes: Array(#"{"status": 0, "receipt": {"bundle_id": "x\u001b[31m", "in_app": [\#(row)]}}"#.utf8))
        _ = state.handle(.resize(width: 120, height: 40), environment: Self.env)
        _ = state.handle(.tab, environment: Self.env)
        let buffer = screen(state)
        #expect(!buffer.cells.contains { $0.character.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F } })
        #expect(buffer.text.contains(#"evil\x1b[2J\x1b]0;owned\x07"#))
        #expect(buffer.text.contains(#"x\x1b[31m"#))
    }

    /// Wide characters take two columns and keep the table aligned.
    @Test func wideCharactersKeepColumnsAligned() async {
        var state = DashboardState(now: Self.now)
        let rows = ["订阅高级版", "プレミアム", "premium", "🎁 gift"].enumerated().map { i, name in
            #"{"transaction_id": "\#(i + 1)", "product_id": "\#(name)", "purchase_date_ms": "1700000000000"}"#
        }
        await state.load(source: "wide.json", bytes: Array(#"{"status": 0, "receipt": {"bundle_id": "w", "in_app": [\#(rows.joined(separator: ","))]}}"#.utf8))
        _ = state.handle(.resize(width: 120, height: 40), environment: Self.env)
        let buffer = screen(state)
        let lines = buffer.text.split(separator: "\n").filter { $0.contains("1700") || $0.contains("2023-11-14") }
        #expect(lines.count == 4)
        let columns = lines.map { line -> Int in
            let prefix = line[..<line.range(of: "2023-11-14")!.lowerBound]
            return TextWidth.of(String(prefix))
        }
        #expect(Set(columns).count == 1, "dates start at columns \(columns)")
    }

    /// 100,000 rows: only the visible ones are drawn, and moving to the end is instant.
    @Test func hundredThousandRows() async {
        var state = DashboardState(now: Self.now)
        var input = DecodedInput(format: .verifyResponse)
        for i in 0..<100_000 {
            var p = Purchase(source: .latestReceiptInfo)
            p.transactionID = String(1_000_000 + i)
            p.productID = "p\(i % 10)"
            p.purchaseDate = Date(timeIntervalSince1970: 1_600_000_000 + Double(i) * 60)
            input.latestReceiptInfo.append(p)
        }
        await state.loadDecoded(source: "big", input)
        _ = state.handle(.resize(width: 200, height: 60), environment: Self.env)
        _ = state.handle(.tab, environment: Self.env)
        _ = state.handle(.character("G"), environment: Self.env)
        #expect(state.selectedPurchase?.transactionID == "1099999")
        #expect(screen(state).text.contains("1099999"))
    }
}
