import CustomerTimeline
import Foundation
import AppStoreAPI
import LocalFiles
import PlainWords
import ReceiptCore
import ReceiptRendering
import ReceiptTrust
import TerminalUI
import UntrustedText

/// One loaded input with everything the panes show about it.
public struct LoadedItem: Sendable {
    public var id: Int
    public var source: String
    /// Held behind a reference (``Boxed``): a decoded input takes 1,136 bytes inline, which
    /// 50,000 shelved items would each carry empty.
    public var decoded: DecodedInput? {
        get { decodedBox.value }
        set {
            decodedBox = Boxed(newValue)
            bundleID = newValue?.bundleID
            environment = newValue?.environment
            status = newValue?.status
        }
    }
    private var decodedBox = Boxed<DecodedInput>.none
    /// `decoded?.bundleID`, kept: finding it may read every purchase row (an input whose rows
    /// carry none), which a frame must not do. Kept too while the item is shelved.
    public internal(set) var bundleID: String?
    /// `decoded?.environment` and `decoded?.status`, kept while the item is shelved.
    public internal(set) var environment: StoreEnvironment?
    public internal(set) var status: Int?
    public var error: ReceiptDecodingError?
    public var trust: TrustReport? { didSet { verdict = trust?.verdict } }
    /// `trust?.verdict`, kept while the item is shelved (the icon and the title bar's mix).
    public internal(set) var verdict: TrustReport.Verdict?
    public var analysis: PurchaseAnalysis?
    /// Every purchase row, in source order.
    public var rows: [Purchase]
    /// What verifyReceipt takes for this input, when it takes it: made when asked for, from the
    /// receipt the decoded input keeps (a copy in base64 per item would be a third more than the
    /// folder itself).
    public var receiptData: String? { decoded.flatMap(VerifyReceiptData.base64) }
    /// The bytes as loaded, kept only until the audit trail has them (and not at all without
    /// one: ``DashboardState/keepsSourceBytes``).
    public var sourceBytes: [UInt8]?
    /// For a customer looked up through the App Store Server API (format `api`): the whole
    /// answer, which the Status pane and the export show.
    public var lookup: CustomerLookupResult? {
        get { lookupBox.value }
        set { lookupBox = Boxed(newValue) }
    }
    private var lookupBox = Boxed<CustomerLookupResult>.none
    /// Its line in the Receipts pane, as `inspect --summary` gives it: what the receipt filter
    /// (`f`) and sort (`s`) read. Made once, when the item is added.
    public internal(set) var summary: ReceiptSummary? { didSet { searchText = summary?.searchText ?? "" } }
    /// The summary's words, lowercased, for the filter's plain words: made once.
    var searchText = ""
    /// Where the details come back from, for an item that may be shelved (a file named at
    /// start or opened: ``DetailSource``); nil for one that always holds them.
    public internal(set) var detailSource: DetailSource?
    /// True while the item holds only its summary and the facts the Receipts pane and the
    /// searches read (``LoadedItem/shelved()``): `decoded`, `trust`, `analysis` and `rows`
    /// are let go until it is selected, when the loop judges it again from ``detailSource``.
    public internal(set) var isShelved = false
    /// While shelved: its purchases' ids, for `:tx`, `:otx` and `:product`.
    var keys: PurchaseKeys?
    /// While shelved: whether verifyReceipt takes it (``verifiable``).
    var shelvedVerifiable = false
    /// Why its details could not come back (its file unreadable since): the pane says so and
    /// the loop does not try again.
    public internal(set) var detailsLost: String?

    public init(id: Int, source: String, rows: [Purchase]) {
        self.id = id
        self.source = source
        self.rows = rows
    }

    /// Whether it was decoded (held or shelved).
    var isDecoded: Bool { decoded != nil || (isShelved && error == nil) }

    /// The summary for what the item holds now.
    func makeSummary() -> ReceiptSummary {
        Self.summary(file: source, decoded: decoded, trust: trust, analysis: analysis, error: error)
    }

    /// An input's summary from its parts (held, or straight from the pipeline when shelved).
    static func summary(
        file: String, decoded: DecodedInput?, trust: TrustReport?, analysis: PurchaseAnalysis?, error: ReceiptDecodingError?
    ) -> ReceiptSummary {
        if let decoded, let analysis { return ReceiptSummary(file: file, decoded: decoded, trust: trust, analysis: analysis) }
        if let error { return ReceiptSummary(file: file, error: error) }
        return ReceiptSummary(file: file, error: ReceiptDecodingError(.unrecognisedFormat, "nothing decoded"))
    }
}

/// An optional value held behind one reference: 8 bytes inline whatever the value's size.
enum Boxed<Value: Sendable>: Sendable {
    case none
    indirect case some(Value)

    init(_ value: Value?) { self = value.map { .some($0) } ?? .none }

    var value: Value? {
        if case .some(let value) = self { return value }
        return nil
    }
}

/// A line in the Log pane.
public struct LogEntry: Sendable, Hashable {
    public var time: Date
    public var text: String
    public var role: ColorRole
}

/// Where the keyboard goes.
public enum Mode: Sendable, Hashable {
    case normal
    /// `?`: the keys of the view it was opened from, paged and searched.
    case help(HelpPage)
    case filter(String)
    /// `f`: the receipt filter being typed.
    case receiptFilter(String)
    /// `e`: the view's export: format and folder.
    case export(ExportForm)
    case paste(String)
    case open(String)
    case detail(row: Int, scroll: Int)
    /// The `:` command line.
    case command(String)
    /// The `l` box: an order ID or a transaction ID to look up.
    case lookup(String)
    /// `x` on a looked-up subscription: days and reason, then the plan and `y`.
    case extendForm(ExtendForm)
    /// `c` on a refund request or a looked-up purchase: what was delivered and consumed, the
    /// preference, the consent; then the plan and `y`.
    case consumptionForm(ConsumptionForm)
    /// `a` on a looked-up purchase: the app account token, then the plan and `y`.
    case tokenForm(TokenForm)
    /// `Enter` on a notification: its payload decoded, nested tokens and every trust step.
    case notificationDetail(uuid: String, scroll: Int)
    /// The Customer view of a look-up (`l`'s answer, `u`): the answer, the issues, the timeline.
    case customer(selected: Int, scroll: Int)
    /// `Enter` on a Customer view event: each source's lines and payload.
    case customerEvent(selected: Int, scroll: Int)
    /// `f` in Notifications: the notification filter being typed.
    case notificationFilter(String)
}

/// Where inputs handed to the pipeline came from, which decides what the dashboard says and
/// selects when they arrive.
public enum InputOrigin: Sendable, Hashable {
    /// Named on the command line (or the demo).
    case startup
    /// Pasted: the first one is selected.
    case paste
    /// Opened with `o`.
    case open(path: String)
    /// A watched folder or log file.
    case watch
}

/// What the shell around the pure update must do.
public enum Effect: Sendable, Hashable {
    case quit
    /// Copy to the clipboard (OSC 52).
    case copy(String)
    /// Write a file with mode 0600 (`e`), never over an existing one.
    case save(ExportFile)
    /// Read a file or folder and load it.
    case load(path: String)
    /// Take these inputs through the pipeline (decode, trust, analysis) and add them.
    case judge([LoadedInput], from: InputOrigin)
    /// Verify these receipts online.
    case verify([OnlineRequest])
    /// Search the audit history and load what matches.
    case search(HistorySearch)
    /// Look a customer up through the App Store Server API (`l` / `L`); the answer comes back
    /// through `DashboardState.add(_:)`.
    case lookUp(LookupQuery)
    /// Extend a subscription's renewal date (`x`, then `y`); the answer comes back through
    /// `DashboardState.apply(_:for:)`.
    case extend(ExtendOrder)
    /// Send consumption information (`c`, then `y`).
    case consume(ConsumptionOrder)
    /// Set a purchase's app account token (`a`, then `y`).
    case setToken(TokenOrder)
    /// Decode and judge a notification's signed payload for the detail overlay; the answer
    /// comes back through `DashboardState.notificationDetails`.
    case inspectNotification(uuid: String, signedPayload: String)
}

/// What the update may ask of the outside world, injectable for tests.
public struct DashboardEnvironment: Sendable {
    /// Entries of a folder, or nil when it cannot be read.
    public var listDirectory: @Sendable (String) -> [String]?
    public var now: @Sendable () -> Date

    public init(listDirectory: @escaping @Sendable (String) -> [String]?, now: @escaping @Sendable () -> Date) {
        self.listDirectory = listDirectory
        self.now = now
    }

    public static let live = DashboardEnvironment(
        listDirectory: { try? FileManager.default.contentsOfDirectory(atPath: $0) }, now: { Date() })
}

/// The purchase table's columns.
public enum PurchaseColumn: Int, Sendable, CaseIterable {
    case product, type, transaction, original, purchased, expires, state

    public var title: String {
        switch self {
        case .product: "Product"
        case .type: "Type"
        case .transaction: "Transaction"
        case .original: "Original"
        case .purchased: "Purchased"
        case .expires: "Expires"
        case .state: "State"
        }
    }
}

/// The whole dashboard state. Rendering is a pure function of it (``DashboardView``), and
/// ``handle(_:environment:)`` is the only way it changes in response to keys.
public struct DashboardState: Sendable {
    /// Every input, in load order. Only this module adds them, so ``receiptOrder`` always holds.
    public internal(set) var items: [LoadedItem] = []
    /// Indices into ``items``: the receipts the receipt filter lets through, in the receipt
    /// sort's order. The Receipts pane lists these, and its selection is a position in it.
    public internal(set) var receiptOrder: [Int] = []
    /// `f`: the receipt filter as typed, and as read (``ReceiptFilter``: `state:`, `verdict:`,
    /// `env:`, `product:`, `bundle:`, `file:` and words, all of which must hold).
    public internal(set) var receiptFilterText = ""
    public internal(set) var receiptFilter = ReceiptFilter.everything
    /// `s` in Receipts: the column the receipts are sorted by, and which way.
    public internal(set) var receiptSort: ReceiptColumn = .loaded
    public internal(set) var receiptDescending = false
    public var focus: Pane = .receipts
    public var mode: Mode = .normal
    /// Where `e` offers to write (the audit database's folder, when there is one).
    public var exportFolder: String?
    /// What the title bar and the Receipts pane count, kept as inputs arrive or are replaced
    /// (a frame over 50,000 inputs then reads none of them).
    public struct Tally: Sendable, Hashable {
        public var decoded = 0
        public var failed = 0
        public var verdicts: [TrustReport.Verdict: Int] = [:]

        mutating func count(_ item: LoadedItem, _ sign: Int) {
            if item.isDecoded { decoded += sign }
            if item.error != nil { failed += sign }
            if let verdict = item.verdict { verdicts[verdict, default: 0] += sign }
        }
    }

    public internal(set) var tally = Tally()

    /// While files load (those named at start, or a folder `o` opened): how many are judged
    /// of how many.
    public var loadingStartup: (done: Int, total: Int)?
    /// Whether inputs keep their bytes for the audit trail (false when there is none: a folder
    /// of 50,000 receipts then costs what is shown, not every byte twice).
    public var keepsSourceBytes = true
    public var scroll: [Pane: ScrollState] = [:]
    public var sortColumn: PurchaseColumn = .purchased
    /// The column the header cursor is on (chosen with ←/→ in Purchases).
    public var columnCursor: PurchaseColumn = .purchased
    public var ascending = true
    public var filter = ""
    /// Indices into the selected item's rows, filtered and sorted.
    public private(set) var rowOrder: [Int] = []
    public var log: [LogEntry] = []
    /// Online verification state by item id.
    public var online: [Int: OnlineState] = [:]
    /// Whether online verification is wired in (a verifier was given).
    public var onlineAvailable = false
    /// Whether customer look-up through the App Store Server API is wired in (`l` / `L`).
    public var lookupAvailable = false
    /// Writes to Apple (`x`) are wired in and allowed.
    public var actionsAvailable = false
    /// Why they are not (read-only, no credentials), said when `x` is pressed.
    public var actionsUnavailableReason: String?
    /// Writes whose outcome is unknown, by target (``ActionAnswer/target(_:_:)``), with their
    /// request id: the same write again reuses it.
    public var unknownWrites: [String: String] = [:]
    /// Consumption information Apple took this session, by transaction id: when, and its HTTP
    /// status. A refund request for that transaction reads "answered" from then on.
    public var consumptionAnswers: [String: (at: Date, httpStatus: Int?)] = [:]
    /// Why look-up is not available, when the executable knows more than "no credentials"
    /// (e.g. an unreadable key file); `l` says it.
    public var lookupSetupProblem: String?
    /// Look-ups sent and not yet answered.
    public var lookupsRunning: Set<LookupQuery> = []
    /// Each look-up item's story (the Customer view), told when its answer arrives.
    public var customerStories: [Int: CustomerStory] = [:]
    /// The look-up item the Customer view shows.
    public var customerItemID: Int?
    /// How far the Customer view's timeline is scrolled sideways, in columns (←/→).
    public var customerSideways = 0
    /// How far each pane's table is scrolled sideways, in columns of the table (←/→ when its
    /// columns do not fit: ``Widgets/window(_:width:offset:reveal:)``).
    public var sideways: [Pane: Int] = [:]
    /// Look-ups asked with `l`: their answers open the Customer view.
    var openCustomerOnArrival: Set<LookupQuery> = []
    /// Where the Customer view was when a form opened from it: it comes back when the form ends.
    var returnToCustomer: (selected: Int, scroll: Int)?
    /// Whether the settings look-up needs were listed in the Log already.
    var lookupSetupLogged = false
    /// Live validation metrics (throughput, latency, status mix, outage).
    public var metrics = LiveMetrics()
    /// True while attached to an audit database that another process writes (the loop polls).
    public var followingStore = false
    /// Audit row id → dashboard item id, for results that arrive by row.
    public var auditRows: [Int64: Int] = [:]
    /// Items already offered to the audit database.
    public var auditedItems: Set<Int> = []
    /// Whether the Notifications pane is on screen (an embedded receiver, or a receiver's
    /// database followed).
    public var notificationsShown = false
    /// Notifications in arrival order (at most ``notificationLimit``).
    public var notifications: [NotificationEntry] = []
    /// notificationUUID → index in ``notifications``.
    public var notificationIndex: [String: Int] = [:]
    public var notificationMetrics = NotificationMetrics()
    /// The on-call view's traffic, forwarding counts and notification filter.
    public var onCall = OnCallState()
    /// `--expect-every`: a banner when no notification arrived for this long.
    public var expectNotificationEvery: TimeInterval?
    /// When watching for notifications began (the silence clock's start before the first one).
    public var notificationWatchStarted: Date?
    /// Where notifications come from (the embedded receiver's URL, the database followed).
    public var notificationSource: String?
    /// The newest heartbeat of any receiver writing the followed store (nil: none ever seen,
    /// as with a receiver older than schema v11).
    public var receiverLastBeat: Date?
    /// Decoded and judged payloads for the `Enter` overlay, by notificationUUID.
    public var notificationDetails: [String: NotificationDetail] = [:]
    /// The wall clock, for the metrics window (the loop updates it; tests set it).
    public var wallClock: Date
    public var message: (text: String, role: ColorRole)?
    /// The instant subscriptions are judged at.
    public var now: Date
    /// ``now`` was chosen (`--at`): a customer's story is as of it (`customer --at`), not of
    /// the wall clock.
    public var nowIsChosen = false
    /// A refusal or an error said over whatever is open, until a key closes it (as lazygit's).
    public var popup: Popup?
    public var width = 120
    public var height = 40
    /// Page size used by PgUp/PgDn (the view sets it from the layout).
    public var pageSize = 10
    private var nextID = 0
    /// The shelved item given its details back (``restoreDetails(_:of:)``): shelved again when
    /// another one is.
    var heldDetails: Int?
    /// A `:tx` search's receipt and transaction, to select once that receipt, shelved, has its
    /// rows back (and only if it is still the one selected).
    var revealTransaction: (itemID: Int, transaction: String)?
    /// The folder `o` is loading: how many of its inputs were added, and whether one was
    /// selected (the first added is).
    var opening: (added: Int, selected: Bool) = (0, false)

    public init(now: Date) {
        self.now = now
        wallClock = now
    }

    public var selectedItem: LoadedItem? {
        selectedItemIndex.map { items[$0] }
    }

    /// The selected receipt's index in ``items``.
    var selectedItemIndex: Int? {
        let position = scroll[.receipts]?.selected ?? 0
        return receiptOrder.indices.contains(position) ? receiptOrder[position] : nil
    }

    /// The selected purchase row, if the table has one.
    public var selectedPurchase: Purchase? {
        guard let item = selectedItem else { return nil }
        let s = scroll[.purchases]?.selected ?? 0
        guard rowOrder.indices.contains(s) else { return nil }
        return item.rows[rowOrder[s]]
    }

    // MARK: - Loading

    /// Adds one input judged by the pipeline (``ReceiptPipeline``): decoded, its trust checked,
    /// its purchases analysed. An input that could not be decoded is kept as an item with its
    /// error, so nothing already loaded is lost; one that could not even be read is only logged.
    /// Returns the new item's id, or nil when nothing was added.
    @discardableResult
    public mutating func add(_ judged: JudgedInput) -> Int? {
        add(Self.prepare(judged, keepsBytes: keepsSourceBytes))
    }

    /// An input judged and made ready to list (its item without an id yet, its summary made,
    /// and its Log line), so the work can be done off the loop's thread.
    public struct PreparedInput: Sendable {
        /// Nil when the input could not even be read.
        var item: LoadedItem?
        var log: String
        var role: ColorRole
    }

    /// Makes a judged input's item and Log line; pure, so any core may do it.
    public static func prepare(_ judged: JudgedInput, keepsBytes: Bool) -> PreparedInput {
        guard let bytes = judged.bytes else {
            return PreparedInput(item: nil, log: "could not read \(judged.source): \(judged.error?.reason ?? "no data")", role: .error)
        }
        var item = LoadedItem(id: 0, source: judged.source, rows: [])
        if keepsBytes { item.sourceBytes = bytes }
        switch judged.result {
        case .success(let decoded):
            item.rows = decoded.allPurchases
            item.decoded = decoded
            item.trust = judged.trust
            item.analysis = judged.analysis
        case .failure(let error):
            item.error = error
        }
        item.summary = item.makeSummary()
        return PreparedInput(item: item, log: logLine(judged), role: item.error == nil ? .ok : .error)
    }

    /// The Log pane's line for a judged input that was read.
    static func logLine(_ judged: JudgedInput) -> String {
        switch judged.result {
        case .success(let decoded):
            "loaded \(judged.source): \(decoded.format.rawValue), \(decoded.bundleID ?? "no bundle id"), \(judged.trust?.verdict.rawValue ?? "?")"
        case .failure(let error):
            "could not decode \(judged.source): \(error.reason)"
        }
    }

    /// Adds an input made ready by ``prepare(_:keepsBytes:)``. Returns the new item's id, or
    /// nil when nothing was added (the input could not be read: only logged).
    @discardableResult
    public mutating func add(_ prepared: PreparedInput) -> Int? {
        guard var item = prepared.item else {
            addLog(prepared.log, role: .error)
            message = (prepared.log, .error)
            return nil
        }
        nextID += 1
        item.id = nextID
        addLog(prepared.log, role: prepared.role)
        append(item)
        if items.count == 1 { rebuildRows() }
        return item.id
    }

    /// Adds a customer looked up through the App Store Server API as an input of format `api`,
    /// selects it and says what was found. The same query asked again (after a write, or by
    /// hand) replaces its earlier answer in place: one row per customer, never a stale copy.
    /// Returns the item's id.
    @discardableResult
    public mutating func add(_ lookup: CustomerLookupResult, stored: StoredCustomerRecordsBox? = nil) -> Int {
        let id: Int
        if let index = items.firstIndex(where: { $0.lookup?.query == lookup.query }) {
            id = items[index].id
            tally.count(items[index], -1)
            var item = LoadedItem(lookup: lookup, id: id)
            item.summary = item.makeSummary()
            tally.count(item, 1)
            items[index] = item
            rebuildReceiptOrder(keeping: index)
            tellStory(of: id, lookup, stored: stored)
            lookupArrived(lookup, at: index, updated: true)
        } else {
            nextID += 1
            id = nextID
            append(LoadedItem(lookup: lookup, id: id))
            tellStory(of: id, lookup, stored: stored)
            lookupArrived(lookup, at: items.count - 1)
        }
        if openCustomerOnArrival.remove(lookup.query) != nil, mode == .normal { openCustomer(id) }
        // The view on this customer shows the new story in place, its selection kept in range.
        if case .customer(let selected, let scroll) = mode, customerItemID == id {
            mode = .customer(selected: min(selected, max(0, (customerStories[id]?.events.count ?? 1) - 1)), scroll: scroll)
        }
        return id
    }

    /// Adds a batch the pipeline judged, and says what arrived from where.
    public mutating func add(_ batch: [JudgedInput], from origin: InputOrigin) {
        add(batch.map { Self.prepare($0, keepsBytes: keepsSourceBytes) }, from: origin)
    }

    /// Adds a batch made ready off the loop's thread, and says what arrived from where.
    public mutating func add(_ batch: [PreparedInput], from origin: InputOrigin) {
        let before = items.count
        for prepared in batch { add(prepared) }
        let added = items.count - before
        let inputs = "\(CountNoun.input.count(added))"
        switch origin {
        case .startup:
            break
        case .paste:
            message = ("pasted \(inputs)", added > 0 ? .ok : .warning)
            focus = .receipts
            if added > 0 { select(item: before) }
        case .open(let path):
            // What was opened is what is selected (L then looks up that one, not the last).
            if added > 0 {
                message = ("loaded \(inputs) from \(SafeText.escaped(path))", .ok)
                focus = .receipts
                select(item: before)
            }
        case .watch:
            if !batch.isEmpty { message = ("\(CountNoun.newInput.count(batch.count)) from watched sources", .info) }
        }
    }

    /// Adds a chunk of files being loaded (``FileLoad``). Of a folder `o` opened, the first
    /// input added is selected, as `o` selects what it opened, and the message says how many
    /// are loading, then how many were added (counted from its chunks alone: a watched or
    /// pasted input arriving meanwhile is not one of them).
    mutating func add(_ arrival: FileLoad.Arrival) {
        guard case .open(let path) = arrival.origin else { return add(arrival.batch, from: arrival.origin) }
        if arrival.first { opening = (0, false) }
        let before = items.count
        add(arrival.batch, from: .startup)
        let added = items.count - before
        opening.added += added
        if added > 0, !opening.selected {
            opening.selected = true
            focus = .receipts
            select(item: before)
        }
        if !arrival.last {
            message = ("loading \(arrival.total) inputs from \(SafeText.escaped(path))…", .info)
        } else if opening.added > 0 {
            message = ("loaded \(CountNoun.input.count(opening.added)) from \(SafeText.escaped(path))", .ok)
        }
    }

    /// Splits pasted text into inputs for the pipeline (see ``InputFiles/paste(_:firstNumber:decoder:)``),
    /// numbering pastes on from the last one.
    mutating func pasteInputs(_ text: String) -> [LoadedInput] {
        let inputs = InputFiles.paste(text, firstNumber: pasteCount + 1)
        pasteCount += inputs.count
        return inputs
    }

    private var pasteCount = 0

    /// Adds a log line at the time of its event: `time`, or the wall clock when the line is
    /// about what happens now (never the judged-at instant, which may be the start or `--at`).
    /// Lines stay in time order: one whose event came earlier goes before later ones.
    public mutating func addLog(_ text: String, role: ColorRole = .text, at time: Date? = nil) {
        let entry = LogEntry(time: time ?? wallClock, text: text, role: role)
        var index = log.endIndex
        while index > log.startIndex, log[index - 1].time > entry.time { index -= 1 }
        log.insert(entry, at: index)
        // Trimmed to the newest 5,000 a thousand at a time: loading 50,000 inputs does not move
        // 5,000 lines for each one.
        if log.count > 6000 { log.removeFirst(log.count - 5000) }
        var s = scroll[.log] ?? ScrollState()
        s.selected = log.count - 1
        scroll[.log] = s
    }

    /// Adds an input the panes show: its summary made, counted in the tally, listed where the
    /// receipt filter and sort put it.
    private mutating func append(_ item: LoadedItem) {
        var item = item
        if item.summary == nil { item.summary = item.makeSummary() }
        tally.count(item, 1)
        items.append(item)
        placeInReceiptOrder(items.count - 1)
    }

    /// Selects `items[index]`; one the receipt filter hides clears the filter first (and says so),
    /// so what was opened, pasted or found is always what is selected.
    mutating func select(item index: Int) {
        guard items.indices.contains(index) else { return }
        if let position = receiptOrder.firstIndex(of: index) { return select(position: position) }
        clearReceiptFilter()
        message = ("receipt filter cleared to show \(SafeText.escaped(items[index].source))", .info)
        select(position: receiptOrder.firstIndex(of: index) ?? 0)
    }

    /// Selects the receipt at `position` in the Receipts pane's list.
    mutating func select(position: Int) {
        scroll[.receipts] = ScrollState(selected: position, offset: scroll[.receipts]?.offset ?? 0)
        scroll[.purchases] = ScrollState()
        scroll[.subscriptions] = ScrollState()
        scroll[.status] = ScrollState()
        rebuildRows()
    }

    // MARK: - Rows

    /// Recomputes the filtered, sorted row order (only when the receipt, filter or sort
    /// changes: never per frame).
    public mutating func rebuildRows() {
        guard let item = selectedItem else {
            rowOrder = []
            return
        }
        let needle = filter
        let caseSensitive = needle.contains { $0.isUppercase }
        var order = Array(item.rows.indices)
        if !needle.isEmpty {
            let lowered = needle.lowercased()
            let now = self.now
            order = order.filter { i in
                // Every column the table shows, as it shows it: `/expired`, `/auto-renew` and
                // `/2023-11-23` find their rows.
                Self.searchableCells(item.rows[i], now: now).contains { value in
                    guard let value else { return false }
                    return caseSensitive ? value.contains(needle) : value.lowercased().contains(lowered)
                }
            }
        }
        let column = sortColumn
        let now = self.now
        let keys = order.map { i -> (String, Double, Int) in
            let r = item.rows[i]
            switch column {
            case .product: return (r.productID ?? "", 0, i)
            case .type: return (Self.typeText(r), 0, i)
            case .transaction: return ("", Double(r.transactionID ?? "") ?? 0, i)
            case .original: return ("", Double(r.originalTransactionID ?? "") ?? 0, i)
            case .purchased: return ("", r.purchaseDate?.timeIntervalSince1970 ?? -1e12, i)
            case .expires: return ("", r.expiresDate?.timeIntervalSince1970 ?? -1e12, i)
            case .state: return (Self.rowState(r, now: now).0, 0, i)
            }
        }
        let asc = ascending
        rowOrder = keys.sorted { a, b in
            if a.0 != b.0 { return asc ? a.0 < b.0 : a.0 > b.0 }
            if a.1 != b.1 { return asc ? a.1 < b.1 : a.1 > b.1 }
            return a.2 < b.2
        }.map(\.2)
        var s = scroll[.purchases] ?? ScrollState()
        s.reveal(visible: max(1, pageSize), count: rowOrder.count)
        scroll[.purchases] = s
    }

    /// A row's cells as the Purchases table shows them (and the web order line item id), for `/`.
    static func searchableCells(_ r: Purchase, now: Date) -> [String?] {
        [
            r.productID, typeText(r), r.transactionID, r.originalTransactionID, r.webOrderLineItemID, shortDate(r.purchaseDate),
            shortDate(r.expiresDate), rowState(r, now: now).0,
        ]
    }

    /// A date as the tables show it: `2023-11-23 09:41` (UTC).
    static func shortDate(_ d: Date?) -> String? {
        d.map { String(AppleDate.iso8601($0).prefix(16)).replacingOccurrences(of: "T", with: " ") }
    }

    static func typeText(_ p: Purchase) -> String {
        switch p.productType {
        case .autoRenewable: "auto-renew"
        case .nonRenewing: "non-renew"
        case .consumable: "consumable"
        case .nonConsumable: "non-consum"
        case .unknown, nil: p.expiresDate != nil ? "auto-renew?" : "one-time?"
        }
    }

    /// A row's own state at `now`, with its colour.
    static func rowState(_ p: Purchase, now: Date) -> (String, ColorRole) {
        if let cancelled = p.cancellationDate, cancelled <= now {
            return p.isUpgraded == true ? ("upgraded", .info) : ("refunded", .error)
        }
        if let expires = p.expiresDate {
            if p.purchaseDate.map({ $0 > now }) == true { return ("future", .warning) }
            return expires > now ? ("active", .ok) : ("expired", .muted)
        }
        return ("owned", .text)
    }

    public var visibleRowCount: Int { rowOrder.count }
}

/// A box over the screen that says a refusal or an error; any key closes it.
public struct Popup: Sendable, Hashable {
    public var title: String
    public var lines: [String]
    public var role: ColorRole

    public init(title: String, lines: [String], role: ColorRole) {
        self.title = title
        self.lines = lines
        self.role = role
    }
}
