import Foundation
import Synchronization
import Testing

@testable import Dashboard
import AppStoreAPI
import LocalFiles
import ReceiptCore
import ReceiptDemo
import ReceiptTrust
import TerminalUI
import TestSupport

/// Items loaded from files are shelved (issue 42: 50,000 receipts in bounded memory): each
/// keeps its summary and the facts the Receipts pane and the searches read, and the selected
/// one is judged again from its file before the frame that shows it. What a person sees, finds
/// and verifies is what a fully held item gives; on the six demo inputs, written to a folder.
@Suite struct ShelvedItemsTests {
    typealias Terminal = DashboardAppLoopTests.ScriptedTerminal
    static let env = DashboardAppLoopTests.env

    /// A folder holding the demo inputs, removed when the test ends.
    final class Folder {
        let path: String
        init() throws {
            path = TemporaryFolder("shelved").path
            for item in DemoCorpus.items() {
                try Data(item.bytes).write(to: URL(fileURLWithPath: path + "/" + item.name))
            }
        }
        deinit { try? FileManager.default.removeItem(atPath: path) }
        func file(_ prefix: String) -> String {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
            return path + "/" + names.first { $0.hasPrefix(prefix) }!
        }
    }

    /// The folder loaded as the loop loads the start's files: judged on every core and shelved.
    static func shelvedState(_ folder: Folder) async -> DashboardState {
        var state = DashboardState(now: DashboardTests.now)
        state.keepsSourceBytes = false
        let prepared = await DashboardState.prepare(
            InputFiles.origins([folder.path]), pipeline: state.pipeline, keepsBytes: false, shelves: true)
        state.add(prepared, from: .startup)
        _ = state.handle(.resize(width: 120, height: 40), environment: env)
        return state
    }

    /// The same folder with every item holding its details, as before shelving.
    static func heldState(_ folder: Folder) async -> DashboardState {
        var state = DashboardState(now: DashboardTests.now)
        state.keepsSourceBytes = false
        state.add(await state.pipeline.judge(InputFiles.load([folder.path], limit: 1 << 26)), from: .startup)
        _ = state.handle(.resize(width: 120, height: 40), environment: env)
        return state
    }

    static func text(_ state: DashboardState) -> String {
        let buffer = DashboardView.render(state, width: state.width, height: state.height)
        return (0..<buffer.height).map { buffer.row(at: $0) }.joined(separator: "\n")
    }

    @Test func everyFrameIsWhatHeldItemsGive() async throws {
        let folder = try Folder()
        let keys: [KeyEvent] = [.down, .down, .down, .down, .down, .character("s"), .up, .tab, .down]
        // The loop, with the folder named at start.
        var shelved = DashboardState(now: DashboardTests.now)
        let terminal = Terminal(keys: keys)
        await DashboardApp.run(&shelved, backend: terminal, environment: Self.env, startup: InputFiles.origins([folder.path]))
        // The same keys over held items.
        var held = await Self.heldState(folder)
        var expected = [Self.text(held)]
        for key in keys {
            _ = held.handle(key, environment: Self.env)
            expected.append(Self.text(held))
        }
        #expect(terminal.frames.count == expected.count)
        for (index, frame) in expected.enumerated() where index < terminal.frames.count {
            #expect(terminal.text(frame: index) == frame, "frame \(index)")
        }
        // Only the selected item holds its details.
        let selected = try #require(shelved.selectedItem)
        #expect(!selected.isShelved && selected.decoded != nil)
        #expect(shelved.items.filter { !$0.isShelved }.map(\.id) == [selected.id])
        #expect(shelved.items.map(\.summary) == held.items.map(\.summary))
        #expect(shelved.tally == held.tally)
    }

    /// `o` on a folder of 520 inputs: three chunks, judged while keys are read, with progress;
    /// the first opened is selected, and the message counts them all.
    @Test func oLoadsAFolderAChunkAPassAndSelectsItsFirst() async throws {
        let folder = try Folder()
        let demo = DemoCorpus.items()
        let big = folder.path + "/big"
        try FileManager.default.createDirectory(atPath: big, withIntermediateDirectories: true)
        for n in 0..<520 {
            let item = demo[n % demo.count]
            try Data(item.bytes).write(to: URL(fileURLWithPath: big + "/" + String(format: "%03d-", n) + item.name))
        }
        var state = DashboardState(now: DashboardTests.now)
        let keys: [KeyEvent] = [.character("o")] + big.map { KeyEvent.character($0) } + [.enter, .tick, .tick, .tick]
        let terminal = Terminal(keys: keys)
        await DashboardApp.run(&state, backend: terminal, environment: Self.env)
        #expect(state.items.count == 520)
        #expect(state.selectedItem?.source == big + "/000-" + demo[0].name)
        #expect(state.message?.text == "loaded 520 inputs from \(big)")
        #expect(state.items.filter { !$0.isShelved }.map(\.source) == [big + "/000-" + demo[0].name])
        #expect(state.loadingStartup == nil)
        // A frame per chunk, each saying how far the load is; keys were read without waiting.
        let frames = (0..<terminal.frames.count).map { terminal.text(frame: $0) }
        let enter = keys.count - 4
        #expect(frames[enter + 1].contains("loading 256 of 520"))
        #expect(frames[enter + 1].contains("loading 520 inputs from \(big)…"))
        #expect(frames[enter + 2].contains("loading 512 of 520"))
        #expect(!frames[enter + 3].contains("loading"))
        #expect(terminal.waits.suffix(4) == [0, 0, nil, nil])
    }

    /// An audit trail that remembers what it was asked to record.
    final class RecordingAudit: AuditLink {
        let recorded = Mutex<[(source: String, bytes: Int, format: ReceiptFormat)]>([])
        func record(source: String, bytes: [UInt8], decoded: DecodedInput) async -> Int64? {
            recorded.withLock { $0.append((source, bytes.count, decoded.format)) }
            return Int64(recorded.withLock { $0.count })
        }
        func poll() async -> [AuditFeedEvent] { [] }
        func search(_ query: HistorySearch) async -> [AuditFeedEvent] { [] }
        func pending() async -> [AuditFeedEvent] { [] }
    }

    /// With an audit trail, inputs are recorded whole (bytes and decoded receipt) first, and
    /// shelved once recorded.
    @Test func withAnAuditTrailInputsAreShelvedOnceRecorded() async throws {
        let folder = try Folder()
        let audit = RecordingAudit()
        var state = DashboardState(now: DashboardTests.now)
        let terminal = Terminal(keys: [.down])
        await DashboardApp.run(&state, backend: terminal, environment: Self.env, audit: audit, startup: InputFiles.origins([folder.path]))
        let recorded = audit.recorded.withLock { $0 }
        let sizes = try InputFiles.origins([folder.path]).map { try Data(contentsOf: URL(fileURLWithPath: $0.source)).count }
        #expect(recorded.map(\.source) == state.items.map(\.source))
        #expect(recorded.map(\.bytes) == sizes)
        #expect(state.auditRows.count == 6)
        #expect(state.items.allSatisfy { $0.sourceBytes == nil })
        #expect(state.items.filter { !$0.isShelved }.map(\.id) == [state.items[1].id])
        #expect(state.selectedItem?.id == state.items[1].id && state.items[1].decoded != nil)
    }

    /// A verifier that remembers each batch it was handed, answers status 0, and signals once
    /// it has seen `expected` requests.
    final class RecordingVerifier: OnlineVerifying {
        let batches = Mutex<[[OnlineRequest]]>([])
        let expected: Int
        let done = DispatchSemaphore(value: 0)
        init(expecting expected: Int) { self.expected = expected }
        func verify(_ requests: [OnlineRequest], onEvent: @escaping @Sendable (OnlineEvent) -> Void) async {
            let seen = batches.withLock { batches in
                batches.append(requests)
                return batches.joined().count
            }
            for request in requests {
                onEvent(.done(itemID: request.itemID, status: 0, environment: "Sandbox", attempts: [], response: nil))
            }
            if seen >= expected { done.signal() }
        }
    }

    /// A scripted terminal whose input ends only once the verifier has seen everything.
    final class TerminalUntilVerified: TerminalBackend {
        let script: Terminal
        let verifier: RecordingVerifier
        init(_ script: Terminal, _ verifier: RecordingVerifier) {
            self.script = script
            self.verifier = verifier
        }
        var size: (width: Int, height: Int) { script.size }
        func draw(_ buffer: ScreenBuffer) { script.draw(buffer) }
        func sendRaw(_ sequence: String) {}
        func readEvent(timeoutMilliseconds: Int?) -> KeyEvent? {
            if let key = script.readEvent(timeoutMilliseconds: timeoutMilliseconds) { return key }
            // The end of input, once every batch was handed over (or after 60 s, to fail).
            _ = verifier.done.wait(timeout: .now() + 60)
            return nil
        }
    }

    /// `V` over 520 shelved receipts hands the verifier 512, then 8, each read again just
    /// before: never every receipt's data at once.
    @Test func verifyAllSendsShelvedReceiptsABatchAtATime() async throws {
        let folder = try Folder()
        let demo = DemoCorpus.items()
        let receipt = try #require(demo.first { $0.name.hasPrefix("production-subscriptions") })
        let copies = folder.path + "/copies"
        try FileManager.default.createDirectory(atPath: copies, withIntermediateDirectories: true)
        for n in 0..<520 {
            try Data(receipt.bytes).write(to: URL(fileURLWithPath: copies + "/" + String(format: "%03d", n) + "-" + receipt.name))
        }
        let verifier = RecordingVerifier(expecting: 520)
        var state = DashboardState(now: DashboardTests.now)
        let terminal = TerminalUntilVerified(Terminal(keys: [.tick, .tick, .tick, .character("V")]), verifier)
        await DashboardApp.run(&state, backend: terminal, environment: Self.env, verifier: verifier, startup: InputFiles.origins([copies]))
        let batches = verifier.batches.withLock { $0 }
        #expect(batches.map(\.count) == [512, 8])
        let decoded = try #require(state.pipeline.decode(LoadedInput(source: "x", result: .success(receipt.bytes))).decoded)
        let expected = try #require(VerifyReceiptData.base64(decoded))
        #expect(batches.joined().allSatisfy { $0.receiptData == expected })
        #expect(Set(batches.joined().map(\.itemID)).count == 520)
    }

    @Test func aShelvedItemKeepsOnlyItsLineAndFacts() async throws {
        let folder = try Folder()
        let state = await Self.shelvedState(folder)
        let held = await Self.heldState(folder)
        #expect(state.items.count == 6)
        for (item, whole) in zip(state.items, held.items) {
            #expect(item.isShelved)
            #expect(item.decoded == nil && item.trust == nil && item.analysis == nil && item.rows.isEmpty && item.sourceBytes == nil)
            #expect(item.summary == whole.summary)
            #expect(item.verdict == whole.trust?.verdict)
            #expect(item.environment == whole.decoded?.environment)
            #expect(item.bundleID == whole.bundleID)
            #expect(item.status == whole.decoded?.status)
            #expect(item.verifiable == (whole.receiptData != nil))
            #expect(item.detailSource == .file(item.source))
        }
        #expect(state.tally == held.tally)
        #expect(state.tally.decoded == 6 && state.tally.verdicts == [.valid: 3, .test: 1, .unverifiable: 2])
    }

    @Test func selectingGivesDetailsBackAndShelvesThePreviousOne() async throws {
        let folder = try Folder()
        var state = await Self.shelvedState(folder)
        let held = await Self.heldState(folder)
        let first = try #require(state.detailsWanted)
        #expect(first.id == state.items[0].id)
        await DashboardApp.restoreSelected(&state, pipeline: state.pipeline)
        #expect(state.detailsWanted.map(\.id) == nil)
        #expect(state.items[0].rows.map(\.transactionID) == held.items[0].rows.map(\.transactionID))
        _ = state.handle(.down, environment: Self.env)
        #expect(state.detailsWanted?.id == state.items[1].id)
        await DashboardApp.restoreSelected(&state, pipeline: state.pipeline)
        #expect(state.items[0].isShelved && !state.items[1].isShelved)
        #expect(state.rowOrder == held.items[1].rows.indices.map { $0 }.sorted { a, b in
            let x = held.items[1].rows[a].purchaseDate ?? .distantPast
            let y = held.items[1].rows[b].purchaseDate ?? .distantPast
            return x != y ? x < y : a < b
        })
        #expect(state.items[1].analysis?.subscriptions.count == held.items[1].analysis?.subscriptions.count)
    }

    @Test func aFileChangedSinceLoadingShowsAsItIsNow() async throws {
        let folder = try Folder()
        var state = await Self.shelvedState(folder)
        let held = await Self.heldState(folder)
        // The production receipt's file now holds the sandbox one.
        let production = try #require(state.items.firstIndex { $0.source.hasSuffix("production-subscriptions.b64") })
        let sandbox = try #require(held.items.firstIndex { $0.source.hasSuffix("sandbox-weekly-intro.b64") })
        try Data(contentsOf: URL(fileURLWithPath: state.items[sandbox].source)).write(to: URL(fileURLWithPath: state.items[production].source))
        state.select(item: production)
        await DashboardApp.restoreSelected(&state, pipeline: state.pipeline)
        let item = state.items[production]
        #expect(!item.isShelved)
        #expect(item.summary?.bundleID == held.items[sandbox].summary?.bundleID)
        #expect(item.summary?.environment == "Sandbox")
        #expect(state.tally.verdicts == [.valid: 3, .test: 1, .unverifiable: 2])
        #expect(state.message?.role == .warning)
        #expect(state.selectedItem?.id == item.id)
    }

    @Test func aFileGoneKeepsItsLineAndSaysWhy() async throws {
        let words = Wording("shelved-items")
        let folder = try Folder()
        var state = await Self.shelvedState(folder)
        let gone = state.items[2]
        try FileManager.default.removeItem(atPath: gone.source)
        state.select(item: 2)
        await DashboardApp.restoreSelected(&state, pipeline: state.pipeline)
        let item = state.items[2]
        #expect(item.isShelved && item.detailsLost != nil)
        #expect(item.summary == gone.summary)
        // Not tried again on every frame.
        #expect(state.detailsWanted.map(\.id) == nil)
        #expect(state.message?.role == .error)
        words.said(Self.text(state))
        #expect(state.tally.decoded == 6)
        // Nothing to export or look up from it, and each says why.
        state.focus = .status
        _ = state.handle(.character("e"), environment: Self.env)
        #expect(state.mode == .normal)
        words.said(state.message?.text)
        state.lookupAvailable = true
        #expect(state.handle(.character("L"), environment: Self.env).isEmpty)
        words.said(state.message?.text)
        words.check()
    }

    /// A `:tx` search finds a shelved receipt whose file has since been cut short: it leaves
    /// the filter, the selection moves to another receipt, and that one's rows are not moved
    /// to the search's row (nor read past their end), and it has its details too.
    @Test func aSearchedReceiptThatLeavesTheFilterMovesNoOtherRow() async throws {
        let folder = try Folder()
        var state = await Self.shelvedState(folder)
        for key in "fverdict:valid" { _ = state.handle(.character(key), environment: Self.env) }
        _ = state.handle(.enter, environment: Self.env)
        await DashboardApp.restoreSelected(&state, pipeline: state.pipeline)
        let production = try #require(state.items.firstIndex { $0.source.hasSuffix("production-subscriptions.b64") })
        let held = await Self.heldState(folder)
        let last = try #require(held.items[production].rows.last?.transactionID)
        #expect(state.receiptOrder.contains(production) && state.receiptOrder.first != production)
        state.showMatches(try #require(HistorySearch(parsing: "tx \(last)")))
        #expect(state.revealTransaction?.itemID == state.items[production].id)
        try Data("MIIB".utf8).write(to: URL(fileURLWithPath: state.items[production].source))
        await DashboardApp.restoreSelected(&state, pipeline: state.pipeline)
        #expect(state.items[production].summary?.verdict == "undecodable")
        #expect(!state.receiptOrder.contains(production))
        #expect(state.revealTransaction == nil)
        #expect(state.detailsWanted.map(\.id) == nil)
        #expect(state.selectedItem?.isShelved == false)
        #expect(state.scroll[.purchases]?.selected ?? 0 == 0)
    }

    /// The `o` message counts the folder's own inputs, and the first one added is selected
    /// even when the first chunk added none.
    @Test func anOpenedFolderCountsItsOwnInputsAndSelectsItsFirst() async throws {
        let pipeline = DashboardState(now: DashboardTests.now).pipeline
        let demo = DemoCorpus.items()
        func judged(_ n: Int) async -> DashboardState.PreparedInput {
            DashboardState.prepare(await pipeline.judge(source: "/qa/\(n)-\(demo[n].name)", bytes: demo[n].bytes), keepsBytes: false)
        }
        let unreadable = DashboardState.prepare(
            JudgedInput(source: "/qa/0-gone.der", bytes: nil, result: .failure(.init(.emptyInput, "no such file"))), keepsBytes: false)
        var state = DashboardState(now: DashboardTests.now)
        state.add(await pipeline.judge(source: "earlier/\(demo[5].name)", bytes: demo[5].bytes))
        state.add(FileLoad.Arrival(batch: [unreadable], origin: .open(path: "/qa"), first: true, last: false, total: 4))
        #expect(state.message?.text == "loading 4 inputs from /qa…")
        #expect(state.selectedItem?.source.hasPrefix("/qa/") == false)
        state.add(FileLoad.Arrival(batch: [await judged(1)], origin: .open(path: "/qa"), first: false, last: false, total: 4))
        #expect(state.selectedItem?.source == "/qa/1-\(demo[1].name)")
        // A pasted input arriving meanwhile is not one of the folder's.
        state.add(await pipeline.judge(source: "paste 1", bytes: demo[0].bytes))
        state.add(FileLoad.Arrival(batch: [await judged(2), await judged(3)], origin: .open(path: "/qa"), first: false, last: true, total: 4))
        #expect(state.message?.text == "loaded 3 inputs from /qa")
        #expect(state.selectedItem?.source == "/qa/1-\(demo[1].name)")
    }

    @Test func searchesFindShelvedReceipts() async throws {
        let folder = try Folder()
        var state = await Self.shelvedState(folder)
        var held = await Self.heldState(folder)
        let production = try #require(held.items.first { $0.source.hasSuffix("production-subscriptions.b64") })
        let row = try #require(production.rows.last)
        let searches = [
            HistorySearch(parsing: "tx \(row.transactionID!)")!, HistorySearch(parsing: "otx \(row.originalTransactionID!)")!,
            HistorySearch(parsing: "product \(row.productID!)")!, HistorySearch(parsing: "bundle \(production.bundleID!)")!,
            HistorySearch(parsing: "status 0")!, HistorySearch(parsing: "tx 0\(row.transactionID!)")!,
        ]
        for search in searches {
            #expect(state.items.map { search.matches($0) } == held.items.map { search.matches($0) }, "\(search)")
        }
        // `:tx` selects the receipt, and its row once the rows are back.
        state.showMatches(searches[0])
        held.showMatches(searches[0])
        await DashboardApp.restoreSelected(&state, pipeline: state.pipeline)
        #expect(state.selectedItem?.source == production.source)
        #expect(state.selectedPurchase?.transactionID == row.transactionID)
        #expect(state.scroll[.purchases]?.selected == held.scroll[.purchases]?.selected)
    }

    @Test func verifyAllReadsShelvedReceiptsAgain() async throws {
        let words = Wording("shelved-items")
        let folder = try Folder()
        var state = await Self.shelvedState(folder)
        state.onlineAvailable = true
        let held = await Self.heldState(folder)
        let gone = try #require(state.items.firstIndex { $0.source.hasSuffix("xcode-storekit-test.der") })
        try FileManager.default.removeItem(atPath: state.items[gone].source)
        let effects = state.handle(.character("V"), environment: Self.env)
        guard case .verify(let requests)? = effects.first else {
            Issue.record("V asked for \(effects)")
            return
        }
        #expect(requests.allSatisfy { $0.receiptData.isEmpty })
        let reported = Mutex<[OnlineEvent]>([])
        let filled = await DashboardApp.readShelved(
            requests, sources: DashboardApp.shelvedSources(requests, in: state), pipeline: state.pipeline
        ) { event in reported.withLock { $0.append(event) } }
        for event in reported.withLock({ $0 }) { state.apply(event, at: DashboardTests.now) }
        let expected = held.items.filter { !$0.source.hasSuffix("xcode-storekit-test.der") }.compactMap { item in
            item.receiptData.map { (item.id, $0) }
        }
        #expect(filled.map(\.itemID) == expected.map(\.0))
        #expect(filled.map(\.receiptData) == expected.map(\.1))
        // Nothing was sent for the file gone: it failed at once, with no attempt, naming it.
        guard case .failed(let reason, let attempts)? = state.online[state.items[gone].id] else {
            Issue.record("\(String(describing: state.online[state.items[gone].id]))")
            return
        }
        #expect(attempts.isEmpty)
        words.said(reason)
        #expect(reported.withLock { $0.count } == 1)
        words.check()
    }

    @Test func shelvingAtOnceGivesWhatShelvingAfterGives() async throws {
        let pipeline = DashboardState(now: DashboardTests.now).pipeline
        var inputs = DemoCorpus.items().map { LoadedInput(source: "demo/\($0.name)", result: .success($0.bytes)) }
        inputs.append(LoadedInput(source: "cut.der", result: .success(Array(DemoCorpus.items()[2].bytes.prefix(300)))))
        for input in inputs {
            let judged = await pipeline.judge(input)
            let bytes = try input.result.get()
            let atOnce = DashboardState.shelved(judged, detailsFrom: .bytes(bytes))
            var whole = DashboardState.prepare(judged, keepsBytes: false)
            whole.item?.detailSource = .bytes(bytes)
            let after = try #require(whole.item).shelved()
            let item = try #require(atOnce.item)
            #expect(atOnce.log == whole.log && atOnce.role == whole.role, "\(input.source)")
            #expect(item.summary == after.summary && item.keys == after.keys && item.verifiable == after.verifiable, "\(input.source)")
            #expect(item.bundleID == after.bundleID && item.environment == after.environment && item.status == after.status)
            #expect(item.verdict == after.verdict && item.error?.code == after.error?.code && item.isShelved && after.isShelved)
            #expect(item.detailSource == after.detailSource)
        }
    }

    @Test func purchaseKeysCompareIdsAsWritten() {
        var purchase = Purchase(source: .receiptInApp)
        purchase.transactionID = "1000000472106082"
        purchase.originalTransactionID = "txn-A"
        purchase.productID = "pro.monthly"
        let keys = PurchaseKeys([purchase])
        #expect(keys.has(transaction: "1000000472106082"))
        #expect(!keys.has(transaction: "01000000472106082"))
        #expect(!keys.has(original: "1000000472106082"))
        #expect(keys.has(original: "txn-A") && !keys.has(transaction: "txn-A"))
        #expect(keys.has(product: "pro.monthly") && !keys.has(product: "pro"))
        for id in ["+1000000472106082", "0", "00", "18446744073709551616", ""] {
            var other = purchase
            other.transactionID = id
            #expect(PurchaseKeys([other]).has(transaction: id), "\(id)")
            #expect(!PurchaseKeys([other]).has(transaction: "1000000472106082"), "\(id)")
        }
    }
}
