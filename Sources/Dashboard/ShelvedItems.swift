import AppStoreAPI
import Foundation
import LocalFiles
import ReceiptCore
import ReceiptRendering
import ReceiptTrust
import TerminalUI
import UntrustedText

/// Where a shelved item's details come back from when it is selected.
///
/// A folder of 50,000 receipts would hold every decoded receipt, its trust report, its analysis
/// and its rows: about 105 KB for a 15 KB receipt, seven times the folder. Shelved, an item
/// holds its summary line and a few facts (``LoadedItem/shelved()``); the selected one is
/// judged again from here, which takes under a millisecond.
public enum DetailSource: Sendable, Hashable {
    /// The file it was read from, read again.
    case file(String)
    /// Its bytes, kept (standard input cannot be read twice).
    case bytes([UInt8])

    /// The source for an input read from `origin`.
    static func of(_ origin: InputFiles.Origin, bytes: [UInt8]) -> DetailSource {
        if case .file(let path) = origin { return .file(path) }
        return .bytes(bytes)
    }

    /// The bytes, read again when they are a file's; the error says why they cannot be had.
    func read(source: String, limit: Int) -> LoadedInput {
        switch self {
        case .file(let path): InputFiles.read(.file(path), limit: limit)
        case .bytes(let bytes): LoadedInput(source: source, result: .success(bytes))
        }
    }
}

/// A shelved item's purchase ids, for the `:` searches over what is loaded. Numeric ids (all
/// that Apple issues) are kept as numbers: 8 bytes each, where a 16-digit string takes 48.
struct PurchaseKeys: Sendable, Hashable {
    private var transactions: [UInt64] = []
    private var originals: [UInt64] = []
    /// Ids that are not plain numbers, as sent: `t` or `o` before each.
    private var others: [String] = []
    private var products: [String] = []

    /// The ids of every purchase in these lists.
    init(_ lists: [Purchase]...) {
        var originals: [UInt64] = []
        var products = Set<String>()
        for list in lists {
            for index in list.indices {
                if let id = list[index].transactionID {
                    if let number = Self.number(id) { transactions.append(number) } else { others.append("t" + id) }
                }
                if let id = list[index].originalTransactionID {
                    if let number = Self.number(id) { originals.append(number) } else { others.append("o" + id) }
                }
                if let product = list[index].productID { products.insert(product) }
            }
        }
        transactions.sort()
        originals.sort()
        // A subscription's renewals share one original: kept once.
        self.originals = originals.enumerated().compactMap { $0.offset > 0 && originals[$0.offset - 1] == $0.element ? nil : $0.element }
        self.products = products.sorted()
    }

    /// A decoded input's purchases (``DecodedInput/allPurchases``), without joining them.
    init(_ decoded: DecodedInput) {
        self.init(decoded.receipt?.inApp ?? [], decoded.transactions, decoded.latestReceiptInfo)
    }

    /// The id as a number, when it is written as one exactly: digits only (no sign), and no
    /// leading zero (`0123` is not `123`).
    private static func number(_ id: String) -> UInt64? {
        let utf8 = id.utf8
        guard let first = utf8.first, first != UInt8(ascii: "+"), first != UInt8(ascii: "0") || utf8.count == 1 else { return nil }
        return UInt64(id)
    }

    func has(transaction id: String) -> Bool { Self.number(id).map(transactions.contains) ?? others.contains("t" + id) }
    func has(original id: String) -> Bool { Self.number(id).map(originals.contains) ?? others.contains("o" + id) }
    func has(product id: String) -> Bool { products.contains(id) }
}

extension LoadedItem {
    /// The item as the Receipts pane, the title bar, the receipt filter and the `:` searches
    /// read it, its details let go: what 50,000 of them keep.
    func shelved() -> LoadedItem {
        var item = LoadedItem(id: id, source: source, rows: [])
        item.error = error
        item.summary = summary ?? makeSummary()
        item.bundleID = bundleID
        item.environment = environment
        item.status = status
        item.verdict = verdict
        item.detailSource = detailSource
        item.detailsLost = detailsLost
        item.keys = keys ?? decoded.map(PurchaseKeys.init) ?? PurchaseKeys(rows)
        item.shelvedVerifiable = verifiable
        item.isShelved = true
        return item
    }

    /// Whether verifyReceipt takes it (`v`, `V`), held or shelved.
    var verifiable: Bool { isShelved ? shelvedVerifiable : decoded.map(VerifyReceiptData.takes) ?? false }
}

extension DashboardState {
    /// Reads, judges and makes ready inputs from files (the start's, or opened), every core at
    /// work, in order. Each may then be shelved (``LoadedItem/shelved()``) where it was
    /// judged: its decoded receipt is freed there, and only its summary crosses to the loop.
    public static func prepare(
        _ origins: some Collection<InputFiles.Origin> & Sendable, pipeline: ReceiptPipeline, keepsBytes: Bool, shelves: Bool
    ) async -> [PreparedInput] {
        let origins = Array(origins)
        return await withTaskGroup(of: (Int, PreparedInput).self) { group in
            var next = 0
            var out = [PreparedInput?](repeating: nil, count: origins.count)
            let inflight = 2 * max(1, ProcessInfo.processInfo.activeProcessorCount)
            func start() {
                let index = next
                let origin = origins[index]
                next += 1
                // The shared pool, not the caller's executor: the loop's task prefers its own
                // single thread, which its children would otherwise inherit.
                group.addTask(executorPreference: globalConcurrentExecutor) {
                    (index, await prepare(file: origin, pipeline: pipeline, keepsBytes: keepsBytes, shelves: shelves))
                }
            }
            while next < origins.count && next < inflight { start() }
            for await (index, prepared) in group {
                out[index] = prepared
                // Quitting cancels: nothing more is started, and what was is let go.
                if next < origins.count && !Task.isCancelled { start() }
            }
            return out.compactMap { $0 }
        }
    }

    /// One input, read, judged and made ready where the task runs.
    @concurrent nonisolated static func prepare(
        file origin: InputFiles.Origin, pipeline: ReceiptPipeline, keepsBytes: Bool, shelves: Bool
    ) async -> PreparedInput {
        let input = InputFiles.read(origin, limit: pipeline.inputLimit)
        let judged = await pipeline.judge(input)
        guard case .success(let bytes) = input.result else { return prepare(judged, keepsBytes: keepsBytes) }
        if shelves { return shelved(judged, detailsFrom: .of(origin, bytes: bytes)) }
        var prepared = prepare(judged, keepsBytes: keepsBytes)
        prepared.item?.detailSource = .of(origin, bytes: bytes)
        return prepared
    }

    /// A judged input made ready shelved at once: the same item as ``prepare(_:keepsBytes:)``
    /// then ``LoadedItem/shelved()`` give, without making its rows only to let them go.
    static func shelved(_ judged: JudgedInput, detailsFrom source: DetailSource) -> PreparedInput {
        var item = LoadedItem(id: 0, source: judged.source, rows: [])
        switch judged.result {
        case .success(let decoded):
            item.bundleID = decoded.bundleID
            item.environment = decoded.environment
            item.status = decoded.status
            item.verdict = judged.trust?.verdict
            item.summary = LoadedItem.summary(file: judged.source, decoded: decoded, trust: judged.trust, analysis: judged.analysis, error: nil)
            item.keys = PurchaseKeys(decoded)
            item.shelvedVerifiable = VerifyReceiptData.takes(decoded)
        case .failure(let error):
            item.error = error
            item.summary = LoadedItem.summary(file: judged.source, decoded: nil, trust: nil, analysis: nil, error: error)
            item.keys = PurchaseKeys()
        }
        item.detailSource = source
        item.isShelved = true
        return PreparedInput(item: item, log: logLine(judged), role: item.error == nil ? .ok : .error)
    }

    /// Shelves `items[index]` when it can come back (it has a ``LoadedItem/detailSource``):
    /// for inputs the audit trail has recorded, which needed them whole until then.
    mutating func shelve(_ index: Int) {
        guard items[index].detailSource != nil, !items[index].isShelved else { return }
        items[index] = items[index].shelved()
        if heldDetails == items[index].id { heldDetails = nil }
    }

    /// The selected item, when it is shelved and its details can come back: the loop judges
    /// it again (``restoreDetails(_:of:)``) before the next frame.
    public var detailsWanted: (id: Int, source: DetailSource)? {
        guard let index = selectedItemIndex, items[index].isShelved, items[index].detailsLost == nil,
            let source = items[index].detailSource
        else { return nil }
        return (items[index].id, source)
    }

    /// Where the item with this id is: ids are given in load order and items only appended (a
    /// look-up answered again keeps its place and id), so it is nearly always at `id - 1`.
    func index(ofItem id: Int) -> Int? {
        if items.indices.contains(id - 1), items[id - 1].id == id { return id - 1 }
        return items.firstIndex { $0.id == id }
    }

    /// Gives a shelved item its details back, judged again from its source; the item that had
    /// them before is shelved again, so only the selected one holds them. A file that changed
    /// since it was loaded shows as it is now, and its line with it; one that cannot be read
    /// any more keeps its line and says why its details are missing.
    public mutating func restoreDetails(_ judged: JudgedInput, of id: Int) {
        guard let index = self.index(ofItem: id), items[index].isShelved else { return }
        if let held = heldDetails, held != id, let other = self.index(ofItem: held), !items[other].isShelved {
            items[other] = items[other].shelved()
        }
        heldDetails = nil
        let before = items[index]
        let reveal = revealTransaction
        revealTransaction = nil
        guard judged.bytes != nil else {
            let reason = "could not read \(SafeText.escaped(before.source)) again (\(SafeText.escaped(judged.error?.reason ?? "no data"))): its line is from when it was loaded"
            items[index].detailsLost = reason
            addLog(reason, role: .error)
            message = (reason, .error)
            return
        }
        guard var restored = Self.prepare(judged, keepsBytes: false).item else { return }
        restored.id = id
        restored.detailSource = before.detailSource
        items[index] = restored
        heldDetails = id
        if restored.summary != before.summary {
            tally.count(before, -1)
            tally.count(restored, 1)
            let words = "\(SafeText.escaped(before.source)) changed since it was loaded: shown as it is now"
            addLog(words, role: .warning)
            message = (words, .warning)
            rebuildReceiptOrder(keeping: index)
        } else {
            rebuildRows()
        }
        // The row a `:tx` search found, when its receipt is still the one selected (a file
        // changed since may have left the filter).
        if let reveal, reveal.itemID == id, selectedItemIndex == index { selectRow(transaction: reveal.transaction) }
    }
}

extension DashboardApp {
    /// Gives the selected item its details back when it is shelved: read again and judged, on
    /// the loop, before the frame that shows it (under a millisecond for a receipt).
    static func restoreSelected(_ state: inout DashboardState, pipeline: ReceiptPipeline) async {
        // A file changed since loading may leave the receipt filter, moving the selection to
        // another shelved input: that one is restored too (a few at most, each tried once).
        var tried: Set<Int> = []
        while tried.count < 4, let wanted = state.detailsWanted, tried.insert(wanted.id).inserted, let index = state.index(ofItem: wanted.id) {
            let input = wanted.source.read(source: state.items[index].source, limit: pipeline.inputLimit)
            state.restoreDetails(await pipeline.judge(input), of: wanted.id)
        }
    }

    /// Where each shelved item among `requests` is read again from, with its name.
    static func shelvedSources(_ requests: [OnlineRequest], in state: DashboardState) -> [Int: (name: String, source: DetailSource)] {
        var sources: [Int: (name: String, source: DetailSource)] = [:]
        for request in requests where request.receiptData.isEmpty {
            guard let index = state.index(ofItem: request.itemID), let source = state.items[index].detailSource else { continue }
            sources[request.itemID] = (state.items[index].source, source)
        }
        return sources
    }

    /// Fills in the receipt data of requests for shelved items, read again from their sources,
    /// in the verification's own task (the loop goes on drawing and reading keys). One whose
    /// source cannot be read or decoded any more fails at once, through `report`, saying why:
    /// nothing was sent for it.
    @concurrent static func readShelved(
        _ requests: [OnlineRequest], sources: [Int: (name: String, source: DetailSource)], pipeline: ReceiptPipeline,
        report: @Sendable (OnlineEvent) -> Void
    ) async -> [OnlineRequest] {
        requests.compactMap { request in
            guard request.receiptData.isEmpty else { return request }
            guard let (name, source) = sources[request.itemID] else {
                report(.failed(itemID: request.itemID, reason: VerificationFailure(.invalidRequest, "no receipt data to send"), attempts: []))
                return nil
            }
            let decoded = pipeline.decode(source.read(source: name, limit: pipeline.inputLimit))
            if let data = decoded.decoded.flatMap(VerifyReceiptData.base64) {
                var filled = request
                filled.receiptData = data
                return filled
            }
            let why = decoded.error?.reason ?? "verifyReceipt does not take it now"
            report(.failed(itemID: request.itemID, reason: VerificationFailure(.invalidRequest, "could not read \(name) again: \(why)"), attempts: []))
            return nil
        }
    }
}

/// A chunk of the files being loaded, judged and made ready.
struct LoadedChunk: Sendable {
    var range: Range<Int>
    var batch: [DashboardState.PreparedInput]
}

/// Files being loaded (those named at start, and what `o` opens), as the loop takes them: a
/// chunk per pass, in order, while the next two are judged on every core (so the cores never
/// wait on the loop, nor the loop on the last inputs of a chunk). `judge` starts judging a
/// range of ``origins`` in the background; its answer comes through `chunks`.
struct FileLoad {
    /// Inputs per chunk: about 30 ms of both cores, so keys stay answered.
    static let chunk = 256

    /// Every file asked for, in order.
    private(set) var origins: [InputFiles.Origin] = []
    /// Each request's range of ``origins``, and where it came from.
    private var requests: [(range: Range<Int>, origin: InputOrigin)] = []
    private var chunks: AsyncStream<LoadedChunk>.Iterator
    private var launched: [Range<Int>] = []
    private var ready: [Int: LoadedChunk] = [:]
    private var unlaunched = 0
    private(set) var added = 0

    init(chunks: AsyncStream<LoadedChunk>) {
        self.chunks = chunks.makeAsyncIterator()
    }

    /// What a pass hands the loop: a chunk, the request it belongs to, and whether it is that
    /// request's first and last.
    struct Arrival {
        var batch: [DashboardState.PreparedInput]
        var origin: InputOrigin
        var first: Bool
        var last: Bool
        /// How many files the request names.
        var total: Int
    }

    var isDone: Bool { added >= origins.count }

    /// The request being loaded: how many of its files are judged, of how many.
    var progress: (done: Int, total: Int)? {
        guard !isDone, let request = requests.first(where: { $0.range.contains(added) }) else { return nil }
        return (added - request.range.lowerBound, request.range.count)
    }

    /// Adds files to load after those asked for before; nothing starts until ``launch(_:)``.
    mutating func append(_ more: [InputFiles.Origin], from origin: InputOrigin) {
        guard !more.isEmpty else { return }
        requests.append((origins.count..<origins.count + more.count, origin))
        origins += more
    }

    /// Keeps two chunks being judged ahead of the loop. A chunk never spans two requests.
    mutating func launch(_ judge: (Range<Int>, ArraySlice<InputFiles.Origin>) -> Void) {
        while unlaunched < origins.count && launched.count < 2 {
            let end = requests.first { $0.range.contains(unlaunched) }?.range.upperBound ?? origins.count
            let range = unlaunched..<min(end, unlaunched + Self.chunk)
            judge(range, origins[range])
            launched.append(range)
            unlaunched = range.upperBound
        }
    }

    /// The next chunk in order, waiting for it; nil when nothing is being loaded.
    mutating func next(_ judge: (Range<Int>, ArraySlice<InputFiles.Origin>) -> Void) async -> Arrival? {
        launch(judge)
        guard let range = launched.first else { return nil }
        while ready[range.lowerBound] == nil {
            guard let arrived = await chunks.next() else { return nil }
            ready[arrived.range.lowerBound] = arrived
        }
        launched.removeFirst()
        added = range.upperBound
        let batch = ready.removeValue(forKey: range.lowerBound)?.batch ?? []
        let request = requests.first { $0.range.contains(range.lowerBound) }!
        if request.range.upperBound == added, requests.first?.range == request.range {
            requests.removeFirst()
        }
        launch(judge)
        return Arrival(
            batch: batch, origin: request.origin, first: range.lowerBound == request.range.lowerBound,
            last: range.upperBound == request.range.upperBound, total: request.range.count)
    }
}
