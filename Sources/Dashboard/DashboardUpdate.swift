import Foundation
import JSONWriting
import LocalFiles
import PlainWords
import ReceiptRendering
import ReceiptCore
import TerminalUI
import UntrustedText

extension DashboardState {
    /// Applies one key event; returns what the shell must do.
    public mutating func handle(_ event: KeyEvent, environment: DashboardEnvironment = .live) -> [Effect] {
        if case .tick = event { return [] }
        if case .resize(let w, let h) = event {
            width = w
            height = h
            pageSize = layout(width: w, height: h)?.purchaseRows ?? 1
            keepFocusVisible()
            rebuildRows()
            return []
        }
        keepFocusVisible()
        // A pop-up takes the key that closes it, and nothing else happens.
        if popup != nil {
            popup = nil
            return []
        }
        let effects = handleMode(event, environment: environment)
        returnToCustomerIfDone()
        return effects
    }

    private mutating func handleMode(_ event: KeyEvent, environment: DashboardEnvironment) -> [Effect] {
        switch mode {
        case .customer(let selected, let scroll): return handleCustomer(event, selected: selected, scroll: scroll)
        case .customerEvent(let selected, let scroll): return handleCustomerEvent(event, selected: selected, scroll: scroll)
        case .normal: return handleNormal(event)
        case .help(let page): return handleHelp(event, page: page)
        case .filter(let text): return handleFilter(event, text: text)
        case .receiptFilter(let text): return handleFilterLine(event, text: text, list: .receipts)
        case .export(let form): return handleExport(event, form: form)
        case .paste(let text): return handlePaste(event, text: text)
        case .open(let text): return handleOpen(event, text: text, environment: environment)
        case .detail(let row, let scroll): return handleDetail(event, row: row, scroll: scroll)
        case .command(let text): return handleCommand(event, text: text)
        case .lookup(let text): return handleLookupBox(event, text: text)
        case .extendForm(let form): return handleExtendForm(event, form: form)
        case .consumptionForm(let form): return handleConsumptionForm(event, form: form)
        case .tokenForm(let form): return handleTokenForm(event, form: form)
        case .notificationDetail(let uuid, let scroll): return handleNotificationDetail(event, uuid: uuid, scroll: scroll)
        case .notificationFilter(let text): return handleFilterLine(event, text: text, list: .notifications)
        }
    }

    private mutating func handleNormal(_ event: KeyEvent) -> [Effect] {
        if case .paste(let text) = event {
            // A paste with no box open: take it as receipts all the same.
            let inputs = pasteInputs(text)
            return inputs.isEmpty ? [] : [.judge(inputs, from: .paste)]
        }
        guard let action = KeyMap.action(for: event) else { return [] }
        message = nil
        switch action {
        case .quit: return [.quit]
        case .help: mode = .help(HelpPage())
        case .up: move(-1)
        case .down: move(1)
        case .pageUp: move(-max(1, pageSize - 1))
        case .pageDown: move(max(1, pageSize - 1))
        case .top: move(-Int.max / 2)
        case .bottom: move(Int.max / 2)
        case .nextPane, .previousPane:
            let all = visiblePanes
            let delta = action == .nextPane ? 1 : all.count - 1
            focus = all[((all.firstIndex(of: focus) ?? 0) + delta) % all.count]
        case .columnLeft, .columnRight:
            let delta = action == .columnLeft ? -1 : 1
            if focus == .purchases {
                let all = PurchaseColumn.allCases
                columnCursor = all[(columnCursor.rawValue + delta + all.count) % all.count]
                message = ("column \(columnCursor.title): press s to sort by it", .info)
                // The table scrolls sideways to keep the cursor's column on screen.
                if let window = tableWindow(.purchases, offset: sideways[.purchases] ?? 0, reveal: columnCursor.rawValue) {
                    sideways[.purchases] = window.offset
                }
            } else if let window = tableWindow(focus, offset: (sideways[focus] ?? 0) + delta), window.scrolls {
                // A table wider than its pane scrolls sideways; Tab still goes to the next pane.
                if window.offset != sideways[focus] ?? 0 {
                    sideways[focus] = window.offset
                } else {
                    message = ("no more columns \(delta < 0 ? "to the left" : "to the right"); Tab: next pane", .info)
                }
            } else {
                let all = visiblePanes
                focus = all[((all.firstIndex(of: focus) ?? 0) + delta + all.count) % all.count]
            }
        case .open:
            if focus == .receipts {
                focus = .purchases
            } else if focus == .purchases, selectedPurchase != nil {
                mode = .detail(row: scroll[.purchases]?.selected ?? 0, scroll: 0)
            } else if focus == .notifications, let entry = selectedNotification {
                return openNotification(entry)
            }
        case .back:
            if focus == .receipts, !receiptFilterText.isEmpty {
                clearReceiptFilter()
                message = ("receipt filter cleared", .info)
            } else if focus == .notifications, !onCall.filterText.isEmpty {
                clearNotificationFilter()
                message = ("notification filter cleared", .info)
            } else if !filter.isEmpty {
                filter = ""
                rebuildRows()
                message = ("filter cleared", .info)
            }
        case .filter:
            focus = .purchases
            mode = .filter(filter)
        case .receiptFilter where focus == .notifications:
            mode = .notificationFilter(onCall.filterText)
        case .receiptFilter:
            focus = .receipts
            mode = .receiptFilter(receiptFilterText)
        case .nextMatch, .previousMatch:
            guard !filter.isEmpty, visibleRowCount > 0 else {
                message = ("no filter: press / to filter purchases", .info)
                break
            }
            var s = scroll[.purchases] ?? ScrollState()
            s.selected = (s.selected + (action == .nextMatch ? 1 : -1) + visibleRowCount) % visibleRowCount
            s.reveal(visible: pageSize, count: visibleRowCount)
            scroll[.purchases] = s
            focus = .purchases
        case .sort where focus == .receipts:
            sortReceiptsByNextColumn()
            message = (
                receiptSort == .loaded ? "receipts in load order" : "receipts by \(receiptSort.title), \(receiptDescending ? "most first" : "A to Z"); s: next column",
                .info)
        case .sort:
            if sortColumn == columnCursor {
                ascending.toggle()
            } else {
                sortColumn = columnCursor
                ascending = true
            }
            rebuildRows()
            message = ("sorted by \(sortColumn.title) \(ascending ? "ascending" : "descending")", .info)
        case .command: mode = .command("")
        case .resume:
            guard onlineAvailable else {
                message = ("online verification is not set up", .warning)
                break
            }
            let pendingIDs = Set(online.compactMap { id, state in
                if case .queued = state { return id }
                return nil
            })
            let requests = requests(for: items.filter { pendingIDs.contains($0.id) })
            if requests.isEmpty {
                message = ("nothing pending to resume", .info)
                break
            }
            message = ("resuming pending \(CountNoun.receipt.count(requests.count))", .info)
            return [.verify(requests)]
        case .paste: mode = .paste("")
        case .load: mode = .open("")
        case .lookUp:
            guard lookupAvailable else {
                explainLookupSetup()
                break
            }
            mode = .lookup("")
        case .extend:
            startExtend()
        case .consume:
            startConsumption()
        case .setToken:
            startToken()
        case .customer:
            openSelectedCustomer()
        case .lookUpReceipt:
            guard lookupAvailable else {
                explainLookupSetup()
                break
            }
            return lookUpSelectedReceipt()
        case .verify, .verifyAll:
            guard onlineAvailable else {
                message = ("online verification is not set up: start with --production-url/--sandbox-url (or Apple's defaults)", .warning)
                break
            }
            let requests = verificationRequests(all: action == .verifyAll)
            if requests.isEmpty {
                message = ("nothing to verify: only app receipts and iOS 6 receipts go to verifyReceipt, and not twice at once", .info)
                break
            }
            message = ("verifying \(CountNoun.receipt.count(requests.count)) online…", .info)
            return [.verify(requests)]
        case .copy:
            if let value = copyCell() {
                message = ("copied \(SafeText.escaped(value.count > 40 ? String(value.prefix(40)) + "…" : value))", .ok)
                return [.copy(value)]
            }
            message = ("nothing to copy here", .info)
        case .copyRow:
            if let json = copyRow() {
                message = ("copied the row as JSON (\(json.utf8.count) bytes)", .ok)
                return [.copy(json)]
            }
            message = ("no row to copy here: Y copies a row of Receipts, Purchases, Subscriptions or Notifications", .info)
        case .export:
            startExport()
        }
        return []
    }

    /// The columns `pane`'s table shows at `offset` sideways on this terminal (nil: the pane has
    /// no table that can scroll sideways, or every column fits).
    func tableWindow(_ pane: Pane, offset: Int, reveal: Int? = nil) -> ColumnWindow? {
        guard let rect = layout(width: width, height: height)?.panes[pane] else { return nil }
        let inner = rect.inset
        switch pane {
        case .purchases:
            return Widgets.window(DashboardView.purchaseColumns, width: inner.width, offset: offset, reveal: reveal)
        case .notifications:
            return Widgets.window(DashboardView.notificationColumns(self, width: inner.width), width: inner.width, offset: offset, reveal: reveal)
        case .receipts:
            guard !DashboardView.ReceiptColumns(width: inner.width - 3, wide: width >= DashboardView.ReceiptColumns.wideTerminal).showsAll else { return nil }
            return Widgets.window(DashboardView.ReceiptColumns.table, width: inner.width - 3, offset: offset, reveal: reveal)
        default:
            return nil
        }
    }

    private mutating func move(_ delta: Int) {
        let count: Int
        switch focus {
        case .receipts: count = receiptOrder.count
        case .purchases: count = visibleRowCount
        case .subscriptions: count = selectedItem?.analysis?.subscriptions.count ?? 0
        case .status: count = 10_000
        case .notifications: count = listedNotificationCount
        case .log: count = log.count
        }
        var s = scroll[focus] ?? ScrollState()
        let before = s.selected
        s.move(delta, count: count)
        s.reveal(visible: max(1, pageSize), count: count)
        scroll[focus] = s
        if focus == .receipts, before != s.selected { select(position: s.selected) }
    }

    /// The selected input as `inspect --format json` writes it (the same writer, analysis
    /// merged in), or `{"error": {"code", "message", "offset"}, "source"}` when it did not decode.
    /// A look-up's answer is written as `lookup --format json` writes it.
    func exportJSON(_ item: LoadedItem) -> String {
        var out = JSONOutput()
        if let lookup = item.lookup {
            LookupJSON.write(lookup, into: &out)
        } else if let decoded = item.decoded {
            InspectJSON.write(decoded, source: item.source, trust: item.trust, analysis: item.analysis, into: &out)
        } else if item.isShelved {
            // Its file could not be read again: its line is all there is.
            var summaries = JSONOutput()
            item.summary.map { $0.json(into: &summaries) }
            return summaries.text
        } else {
            let error = item.error ?? ReceiptDecodingError(.emptyInput, "unknown")
            InspectJSON.write(error: error, source: item.source, into: &out)
        }
        return out.text
    }

    /// The lists `f` filters, in one language (ReceiptFilter's keys): Receipts, and
    /// Notifications (`type:` too).
    enum FilteredList { case receipts, notifications }

    /// `f`: a list's filter, applied as typed when it reads (one half typed, `state:ex`, waits
    /// for Enter); Enter keeps it (or says why it cannot be read), Esc clears it. One line
    /// editor for every filtered list.
    mutating func handleFilterLine(_ event: KeyEvent, text: String, list: FilteredList) -> [Effect] {
        func apply(_ text: String) -> String? {
            switch list {
            case .receipts: applyReceiptFilter(text)
            case .notifications: applyNotificationFilter(text)
            }
        }
        let noun = list == .receipts ? "receipt" : "notification"
        var typed = text
        switch event {
        case .escape:
            mode = .normal
            _ = apply("")
            message = ("\(noun) filter cleared", .info)
            return []
        case .enter:
            if let problem = apply(text) {
                message = (problem, .warning)
                return []
            }
            mode = .normal
            let (shown, all, kept) =
                list == .receipts
                ? (receiptOrder.count, items.count, receiptFilterText) : (listedNotificationCount, notifications.count, onCall.filterText)
            message = kept.isEmpty
                ? ("\(noun) filter cleared", .info)
                : ("\(shown) of \((list == .receipts ? CountNoun.receipt : .notification).count(all)) match \"\(SafeText.escaped(kept))\"; Esc clears", .info)
            return []
        case .backspace: typed = String(text.dropLast())
        case .character(let c): typed = text + String(c)
        case .paste(let pasted): typed = text + pasted.replacingOccurrences(of: "\n", with: " ")
        case .control("u"): typed = ""
        case .control("c"): return [.quit]
        default: return []
        }
        mode = list == .receipts ? .receiptFilter(typed) : .notificationFilter(typed)
        message = nil
        _ = apply(typed)
        return []
    }

    private mutating func handleFilter(_ event: KeyEvent, text: String) -> [Effect] {
        switch event {
        case .escape:
            filter = ""
            mode = .normal
        case .enter:
            mode = .normal
            message = filter.isEmpty ? nil : ("\(visibleRowCount) purchases match \"\(filter)\"; n/N to step, Esc to clear", .info)
            return []
        case .backspace:
            mode = .filter(String(text.dropLast()))
        case .character(let c):
            mode = .filter(text + String(c))
        case .paste(let pasted):
            mode = .filter(text + pasted.replacingOccurrences(of: "\n", with: " "))
        case .control("c"): return [.quit]
        default: return []
        }
        if case .filter(let current) = mode { filter = current }
        scroll[.purchases] = ScrollState()
        rebuildRows()
        return []
    }

    private mutating func handlePaste(_ event: KeyEvent, text: String) -> [Effect] {
        switch event {
        case .escape: mode = .normal
        case .paste(let pasted): mode = .paste(text + pasted)
        case .character(let c): mode = .paste(text + String(c))
        case .backspace: mode = .paste(String(text.dropLast()))
        case .control("u"): mode = .paste("")
        case .enter:
            if text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
                mode = .normal
            } else {
                mode = .normal
                let inputs = pasteInputs(text)
                if inputs.isEmpty {
                    message = ("pasted 0 inputs", .warning)
                } else {
                    return [.judge(inputs, from: .paste)]
                }
            }
        case .control("c"): return [.quit]
        default: break
        }
        return []
    }

    private mutating func handleOpen(_ event: KeyEvent, text: String, environment: DashboardEnvironment) -> [Effect] {
        switch event {
        case .escape: mode = .normal
        case .enter:
            mode = .normal
            guard !text.isEmpty else { return [] }
            return [.load(path: (text as NSString).expandingTildeInPath)]
        case .tab: mode = .open(Self.complete(text, environment: environment))
        case .backspace: mode = .open(String(text.dropLast()))
        case .character(let c): mode = .open(text + String(c))
        case .paste(let pasted): mode = .open(text + pasted.trimmingCharacters(in: .whitespacesAndNewlines))
        case .control("c"): return [.quit]
        default: break
        }
        return []
    }

    /// Tab completion of a path: the longest common prefix of the matching entries, with `/`
    /// after a single folder match.
    public static func complete(_ text: String, environment: DashboardEnvironment) -> String {
        let expanded = (text as NSString).expandingTildeInPath
        let folder: String
        let prefix: String
        if expanded.hasSuffix("/") {
            folder = expanded
            prefix = ""
        } else {
            folder = PathNames.parent(of: expanded)
            prefix = (expanded as NSString).lastPathComponent
        }
        let listed = environment.listDirectory(folder.isEmpty ? "." : folder) ?? []
        let matches = listed.filter { $0.hasPrefix(prefix) && !($0.hasPrefix(".") && !prefix.hasPrefix(".")) }.sorted()
        guard var common = matches.first else { return text }
        for m in matches.dropFirst() {
            while !m.hasPrefix(common) { common.removeLast() }
        }
        let base = folder.isEmpty ? "" : (folder.hasSuffix("/") ? folder : folder + "/")
        var completed = base + common
        if matches.count == 1, environment.listDirectory(completed) != nil { completed += "/" }
        return completed
    }

    private mutating func handleCommand(_ event: KeyEvent, text: String) -> [Effect] {
        switch event {
        case .escape: mode = .normal
        case .backspace: mode = .command(String(text.dropLast()))
        case .character(let c): mode = .command(text + String(c))
        case .paste(let pasted): mode = .command(text + pasted.replacingOccurrences(of: "\n", with: " "))
        case .control("c"): return [.quit]
        case .enter:
            mode = .normal
            let trimmed = text.trimmingCharacters(in: .whitespaces)
            if trimmed == "q" || trimmed == "quit" { return [.quit] }
            guard let search = HistorySearch(parsing: trimmed) else {
                message = ("unknown command \"\(trimmed)\": try :tx ID, :otx ID, :bundle B, :product P, :status N", .warning)
                return []
            }
            return [.search(search)]
        default: break
        }
        return []
    }

    /// Selects the first loaded item matching `search` and says how many match.
    public mutating func showMatches(_ search: HistorySearch) {
        let matches = items.indices.filter { search.matches(items[$0]) }
        guard let first = matches.first else {
            message = ("no receipt matches :\(search.field.rawValue) \(search.value)", .warning)
            return
        }
        select(item: first)
        focus = .purchases
        // A shelved receipt's rows come back before the next frame: the row is selected then.
        if search.field == .tx, items[first].isShelved { revealTransaction = (items[first].id, search.value) }
        if search.field == .tx { selectRow(transaction: search.value) }
        message = ("\(CountNoun.receipt.count(matches.count)) match :\(search.field.rawValue) \(search.value)", .ok)
    }

    /// Selects the selected receipt's purchase row with this transaction id, when listed.
    mutating func selectRow(transaction: String) {
        guard let item = selectedItem, let row = rowOrder.firstIndex(where: { item.rows[$0].transactionID == transaction }) else { return }
        var s = scroll[.purchases] ?? ScrollState()
        s.selected = row
        s.reveal(visible: pageSize, count: visibleRowCount)
        scroll[.purchases] = s
    }

    private mutating func handleDetail(_ event: KeyEvent, row: Int, scroll: Int) -> [Effect] {
        switch event {
        case .escape, .character("q"), .enter: mode = .normal
        case .down, .character("j"): mode = .detail(row: row, scroll: scroll + 1)
        case .up, .character("k"): mode = .detail(row: row, scroll: max(0, scroll - 1))
        case .pageDown: mode = .detail(row: row, scroll: scroll + pageSize)
        case .pageUp: mode = .detail(row: row, scroll: max(0, scroll - pageSize))
        case .character("y"):
            if let p = selectedPurchase, let value = p.transactionID { return [.copy(value)] }
        case .control("c"): return [.quit]
        default: break
        }
        return []
    }

    /// `Enter` on a notification: the overlay opens at once; its payload is judged by the loop
    /// (once: the answer is kept) unless there is none to judge (V1).
    private mutating func openNotification(_ entry: NotificationEntry) -> [Effect] {
        let uuid = entry.row.notificationUUID
        mode = .notificationDetail(uuid: uuid, scroll: 0)
        guard notificationDetails[uuid] == nil, let payload = entry.signedPayload else { return [] }
        return [.inspectNotification(uuid: uuid, signedPayload: payload)]
    }

    private mutating func handleNotificationDetail(_ event: KeyEvent, uuid: String, scroll: Int) -> [Effect] {
        switch event {
        case .escape, .character("q"), .enter: mode = .normal
        case .down, .character("j"): mode = .notificationDetail(uuid: uuid, scroll: scroll + 1)
        case .up, .character("k"): mode = .notificationDetail(uuid: uuid, scroll: max(0, scroll - 1))
        case .pageDown: mode = .notificationDetail(uuid: uuid, scroll: scroll + pageSize)
        case .pageUp: mode = .notificationDetail(uuid: uuid, scroll: max(0, scroll - pageSize))
        case .character("y"): return [.copy(uuid)]
        case .control("c"): return [.quit]
        default: break
        }
        return []
    }

    /// A notificationUUID as a file-name part: letters, digits and dashes only.
    static func fileSafe(_ text: String) -> String {
        String(text.unicodeScalars.prefix(64).map { CharacterSet.alphanumerics.contains($0) && $0.isASCII || $0 == "-" ? Character($0) : "_" })
    }
}
