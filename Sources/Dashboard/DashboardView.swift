import Foundation
import AppStoreAPI
import PlainWords
import ReceiptRendering
import ReceiptCore
import ReceiptTrust
import TerminalUI
import UntrustedText

/// Renders the dashboard: a pure function of the state and the size.
public enum DashboardView {
    public static func render(_ state: DashboardState, width: Int, height: Int) -> ScreenBuffer {
        var b = ScreenBuffer(width: width, height: height)
        guard let layout = state.layout(width: width, height: height) else {
            tooSmall(&b)
            return b
        }
        titleBar(state, layout.title, &b)
        if let rect = layout.panes[.receipts] { receipts(state, rect, &b) }
        if let rect = layout.panes[.purchases] { purchases(state, rect, &b) }
        if let rect = layout.panes[.subscriptions] { subscriptions(state, rect, &b) }
        if let rect = layout.panes[.status] { status(state, rect, &b) }
        if let rect = layout.panes[.log] { log(state, rect, &b) }
        if let rect = layout.panes[.notifications] { notifications(state, rect, &b) }
        if let rect = layout.metrics { metrics(state, rect, &b) }
        messageLine(state, layout.message, &b)
        Widgets.footer(into: &b, y: layout.footer.y, hints: KeyMap.hints(for: state.focus, actions: state.actionsAvailable))
        switch state.mode {
        case .help(let page):
            if let back = page.customer { customer(state, selected: back.selected, &b) }
            help(page, state, &b)
        case .extendForm(let form): extendForm(form, &b)
        case .consumptionForm(let form): consumptionForm(form, &b)
        case .tokenForm(let form): tokenForm(form, &b)
        case .paste(let text): pasteBox(text, &b)
        case .detail(_, let scroll): detail(state, scroll, &b)
        case .notificationDetail(let uuid, let scroll): notificationDetail(state, uuid: uuid, scroll: scroll, &b)
        case .customer(let selected, _): customer(state, selected: selected, &b)
        case .customerEvent(let selected, let scroll): customerEvent(state, selected: selected, scroll: scroll, &b)
        default: break
        }
        if let popup = state.popup { Self.popup(popup, &b) }
        return b
    }

    /// A refusal or an error over everything, its words wrapped, until any key.
    static func popup(_ popup: Popup, _ b: inout ScreenBuffer) {
        let width = min(72, b.width - 4)
        // Rows the words take once wrapped (a continued line is indented by two).
        let room = max(1, width - 6)
        let rows = popup.lines.reduce(0) { $0 + max(1, (TextWidth.of(SafeText.escaped($1)) + room - 1) / room) }
        let inner = Widgets.overlay(into: &b, width: width, height: rows + 4, title: SafeText.escaped(popup.title))
        var lines = popup.lines.map { ($0, Style(popup.role, bold: true)) }
        lines += [("", Style(.overlay)), ("any key closes this", Style(.muted))]
        wrapAndDraw(lines, inner, offset: 0, &b)
    }

    static func tooSmall(_ b: inout ScreenBuffer) {
        let need = "need \(DashboardLayout.minimumWidth)×\(DashboardLayout.minimumHeight)"
        let lines = ["Terminal too small: \(b.width)×\(b.height)", need, "enlarge the window, or press q to quit"]
        for (i, line) in lines.enumerated() {
            let y = b.height / 2 - 1 + i
            b.write(line, x: max(0, (b.width - TextWidth.of(line)) / 2), y: y, style: Style(i == 0 ? .error : .text, bold: i == 0))
        }
    }

    static func titleBar(_ s: DashboardState, _ r: Rect, _ b: inout ScreenBuffer) {
        b.fill(r, style: Style(.statusBar))
        // Counted as inputs arrive (``DashboardState/tally``): a frame reads no item.
        let decoded = s.tally.decoded
        let failed = s.items.count - decoded
        let verdicts = s.tally.verdicts
        let order: [TrustReport.Verdict] = [.valid, .test, .invalid, .unverifiable]
        let mix = order.compactMap { v in verdicts[v].map { "\(v.rawValue) \($0)" } }
        var text = " receiptdash │ \(CountNoun.input.count(s.items.count)) · \(decoded) decoded"
        if failed > 0 { text += " · \(failed) failed" }
        if !mix.isEmpty { text += " │ " + mix.joined(separator: " · ") }
        b.write(text, x: 0, y: r.y, limit: r.width, style: Style(.statusBar, bold: true))
        var bannerX = TextWidth.of(text) + 1
        if let since = s.metrics.outageSince {
            let banner = " ⚠ APPLE OUTAGE since \(AppleDate.iso8601(since).dropFirst(11).prefix(8)) "
            bannerX = b.write(banner, x: bannerX, y: r.y, style: Style(.error, bold: true, reverse: true)) + 1
        }
        if let since = s.receiverDownSince {
            let banner = " ⚠ RECEIVER DOWN since \(AppleDate.iso8601(since).dropFirst(11).prefix(8)) (no heartbeat for \(DurationWords.short(s.wallClock.timeIntervalSince(since)))) "
            bannerX = b.write(banner, x: bannerX, y: r.y, style: Style(.error, bold: true, reverse: true)) + 1
        }
        if let silence = s.notificationSilence, let expected = s.expectNotificationEvery {
            let banner = " ⚠ NO NOTIFICATIONS for \(DurationWords.short(silence)) (expected every \(DurationWords.short(expected))) "
            bannerX = b.write(banner, x: bannerX, y: r.y, style: Style(.error, bold: true, reverse: true)) + 1
        }
        if bannerX > TextWidth.of(text) + 1 { return }
        let clock = " judged at \(AppleDate.iso8601(s.now).prefix(16).replacingOccurrences(of: "T", with: " ")) UTC "
        if TextWidth.of(text) + TextWidth.of(clock) < r.width {
            b.write(clock, x: r.width - TextWidth.of(clock), y: r.y, style: Style(.statusBar))
        }
    }

    static func icon(_ item: LoadedItem) -> (String, ColorRole) {
        if item.error != nil { return ("!", .error) }
        if let lookup = item.lookup, lookup.failure != nil, lookup.transactions.isEmpty { return ("!", .error) }
        switch item.verdict {
        case .valid: return ("✓", .ok)
        case .test: return ("T", .info)
        case .invalid: return ("✗", .error)
        case .unverifiable, nil: return ("?", .warning)
        }
    }

    /// Which of the Receipts pane's columns fit `width` (after the two marks), kept in this
    /// order as the pane narrows: the name, the latest expiry, the subscription counts
    /// (active/expired/refunded), the environment, the verdict, the bundle.
    struct ReceiptColumns: Hashable {
        var name: Int
        var expiry = false
        var counts = false
        var environment = false
        var verdict = false
        var bundle = 0

        /// The terminal width from which the bundle always has a column (receipts of two apps
        /// told apart), and names are given what they need first.
        static let wideTerminal = 160

        /// - Parameters:
        ///   - longestName: the widest name of the list (nil: not known).
        ///   - wide: the terminal is ``wideTerminal`` columns or more: whole names where they
        ///     fit beside a bundle column of 15 (10 when tight) to 32 columns, any room left to
        ///     the names.
        init(width: Int, longestName: Int? = nil, wide: Bool = false) {
            self.init(width: width)
            guard wide, verdict else { return }
            // Undo the narrow split of name and bundle, and share that room again.
            var room = name + (bundle > 0 ? bundle + 1 : 0)
            guard room >= 10 + 1 + 10 else { return }
            // A bundle of 15 columns reads (`com.exa…mpleapp`); 10 when that is all there is.
            let least = room >= 10 + 1 + 15 ? 15 : 10
            let wanted = max(10, longestName ?? room)
            let names = min(wanted, room - 1 - least)
            room -= names + 1
            bundle = min(32, room)
            name = names + (room - bundle)
        }

        private init(width: Int) {
            var left = width - 10
            func take(_ w: Int) -> Bool {
                guard left >= w + 1 else { return false }
                left -= w + 1
                return true
            }
            expiry = take(10)
            counts = expiry && take(5)
            environment = counts && take(5)
            verdict = environment && take(7)
            if verdict, left >= 10 + 13 {
                bundle = min(28, left - 10 - 1)
                left -= bundle + 1
            }
            name = 10 + max(0, left)
        }

        /// Whether every column has its place (else the pane scrolls sideways: ``table``).
        var showsAll: Bool { verdict && bundle > 0 }

        /// The columns as a table that scrolls sideways, in the order the pane shows them;
        /// the priorities keep them in the order above as it narrows.
        static let table: [TableColumn] = [
            TableColumn("File", width: 0, priority: 10, minimumWidth: 10, keepTail: true, frozen: true),
            TableColumn("Verdict", width: 7, priority: 6), TableColumn("Env", width: 5, priority: 7),
            TableColumn("Bundle", width: 15, priority: 5, cutInTheMiddle: true), TableColumn("A/E/R", width: 5, priority: 8),
            TableColumn("Expires", width: 10, priority: 9),
        ]

        /// One line of ``table`` as `window` shows it.
        static func line(_ window: ColumnWindow, _ text: (Int) -> String) -> String {
            window.order.map { i in
                let cut = i == 0 ? fit(text(i), to: window.widths[i]) : table[i].cut(text(i), to: window.widths[i])
                return TextWidth.pad(cut, to: window.widths[i])
            }.joined(separator: " ")
        }

        /// The text of ``table``'s column `column` for `item`.
        static func cell(_ item: LoadedItem, _ column: Int) -> String {
            let summary = item.summary
            switch column {
            case 0: return SafeText.escaped(name(item))  // cut by ``fit(_:to:)`` in ``line(_:_:)``
            case 1: return verdict(summary?.verdict)
            case 2: return item.environment.map { DashboardView.shortEnvironment($0) } ?? ""
            case 3: return SafeText.escaped(item.bundleID ?? "")
            case 4: return TextWidth.truncate(summary.map { "\($0.activeSubscriptions)/\($0.expiredSubscriptions)/\($0.refunds)" } ?? "", to: 5)
            default: return summary?.latestExpiry.map { String(AppleDate.iso8601($0).prefix(10)) } ?? "-"
            }
        }

        /// A name cut to `columns`: without its extension first, then kept at its end, where
        /// the names of a folder differ (`…ekly-intro` rather than `sand…o.b64`).
        static func fit(_ name: String, to columns: Int) -> String {
            guard TextWidth.of(name) > columns else { return name }
            let stem = (name as NSString).deletingPathExtension
            return TextWidth.truncateHead(stem.isEmpty ? name : stem, to: columns)
        }

        func header() -> String {
            var text = TextWidth.pad("File", to: name)
            if verdict { text += " " + TextWidth.pad("Verdict", to: 7) }
            if environment { text += " " + TextWidth.pad("Env", to: 5) }
            if bundle > 0 { text += " " + TextWidth.pad("Bundle", to: bundle) }
            if counts { text += " " + TextWidth.pad("A/E/R", to: 5) }
            if expiry { text += " " + "Expires" }
            return text
        }

        func row(_ item: LoadedItem) -> String {
            let summary = item.summary
            let name = Self.name(item)
            var text = TextWidth.pad(Self.fit(SafeText.escaped(name), to: self.name), to: self.name)
            if verdict { text += " " + TextWidth.pad(Self.verdict(summary?.verdict), to: 7) }
            if environment { text += " " + TextWidth.pad(item.environment.map { DashboardView.shortEnvironment($0) } ?? "", to: 5) }
            if bundle > 0 { text += " " + TextWidth.pad(TextWidth.truncateMiddle(SafeText.escaped(item.bundleID ?? ""), to: bundle), to: bundle) }
            if counts {
                let counted = summary.map { "\($0.activeSubscriptions)/\($0.expiredSubscriptions)/\($0.refunds)" } ?? ""
                text += " " + TextWidth.pad(TextWidth.truncate(counted, to: 5), to: 5)
            }
            if expiry { text += " " + (summary?.latestExpiry.map { String(AppleDate.iso8601($0).prefix(10)) } ?? "-") }
            return text
        }

        /// What the name column shows: a file's name, or the id a look-up was asked by.
        static func name(_ item: LoadedItem) -> String {
            item.lookup != nil ? item.source : (item.source as NSString).lastPathComponent
        }

        static func verdict(_ verdict: String?) -> String {
            switch verdict {
            case "unverifiable": "unverif"
            case "unchecked", nil: "-"
            case "undecodable": "error"
            case let other?: other
            }
        }
    }

    static func receipts(_ s: DashboardState, _ r: Rect, _ b: inout ScreenBuffer) {
        b.box(r, title: s.receiptsTitle, focused: s.focus == .receipts)
        let inner = r.inset
        let top = inner.y + (inner.height > 4 ? 1 : 0)
        let listHeight = max(0, inner.maxY - 2 - top - 1)
        var scroll = s.scroll[.receipts] ?? ScrollState()
        scroll.reveal(visible: listHeight, count: s.receiptOrder.count)
        // On a wide terminal the names shown get the room they need (the rows on screen: a
        // folder of 50,000 is not measured at every frame).
        let wide = b.width >= ReceiptColumns.wideTerminal
        let shown = scroll.offset..<min(s.receiptOrder.count, scroll.offset + listHeight)
        let longest = wide ? shown.lazy.map { TextWidth.of(SafeText.escaped(ReceiptColumns.name(s.items[s.receiptOrder[$0]]))) }.max() : nil
        let columns = ReceiptColumns(width: inner.width - 3, longestName: longest, wide: wide)
        // When not every column fits, a table that scrolls sideways (←/→): the name stays.
        let window = columns.showsAll ? nil : Widgets.window(ReceiptColumns.table, width: inner.width - 3, offset: s.sideways[.receipts] ?? 0)
        if inner.height > 4, !s.items.isEmpty {
            let header = window.map { ReceiptColumns.line($0) { ReceiptColumns.table[$0].title } } ?? columns.header()
            b.write(header, x: inner.x + 3, y: inner.y, limit: inner.width - 3, style: Style(.muted))
            if let window {
                Widgets.header(indicator: window, columns: ReceiptColumns.table, into: &b, rect: Rect(x: inner.x + 3, y: inner.y, width: inner.width - 3, height: 1))
            }
        }
        for line in 0..<listHeight {
            let position = scroll.offset + line
            guard position < s.receiptOrder.count else { break }
            let item = s.items[s.receiptOrder[position]]
            let y = top + line
            let selected = position == scroll.selected
            if selected {
                b.fill(Rect(x: inner.x, y: y, width: inner.width, height: 1), style: Style(s.focus == .receipts ? .selection : .selectionInactive))
            }
            let (mark, role) = icon(item)
            let base = selected ? Style(s.focus == .receipts ? .selection : .selectionInactive) : Style(.text)
            b.write(mark, x: inner.x, y: y, style: selected ? base : Style(role, bold: true))
            let (onlineMark, onlineRole) = onlineGlyph(s.online[item.id])
            b.write(onlineMark, x: inner.x + 1, y: y, style: selected ? base : Style(onlineRole, bold: true))
            let row = window.map { ReceiptColumns.line($0) { ReceiptColumns.cell(item, $0) } } ?? columns.row(item)
            b.write(row, x: inner.x + 3, y: y, limit: inner.width - 3, style: base)
        }
        if s.receiptOrder.isEmpty, !s.items.isEmpty, listHeight > 0 {
            b.write("no receipt matches; Esc clears", x: inner.x, y: top, limit: inner.width, style: Style(.muted))
        }
        // Counts and progress: decoding and offline checks happen as inputs load; online
        // verification (v / V) reports queued, verifying, done and failed live.
        let y = inner.maxY - 2
        let counts = s.onlineCounts
        let total = counts.queued + counts.verifying + counts.done + counts.failed
        if let (done, all) = s.loadingStartup {
            b.write("loading \(done) of \(all)", x: inner.x, y: y, limit: inner.width, style: Style(.muted))
            Widgets.progress(
                into: &b, x: inner.x, y: y + 1, width: inner.width, fraction: Double(done) / Double(max(1, all)), label: "\(done)/\(all) judged")
        } else if total == 0 {
            let failed = s.tally.failed
            b.write("decoded \(s.items.count - failed) · failed \(failed)", x: inner.x, y: y, limit: inner.width, style: Style(.muted))
            Widgets.progress(
                into: &b, x: inner.x, y: y + 1, width: inner.width, fraction: s.items.isEmpty ? 0 : 1,
                label: s.items.isEmpty ? "nothing loaded" : s.onlineAvailable ? "v/V verify online" : "offline checks done")
        } else {
            b.write("queued \(counts.queued) · verifying \(counts.verifying)", x: inner.x, y: y - 1, limit: inner.width, style: Style(.muted))
            b.write(
                "done \(counts.done) · failed \(counts.failed)", x: inner.x, y: y, limit: inner.width,
                style: Style(counts.failed > 0 ? .warning : .muted))
            let finished = counts.done + counts.failed
            Widgets.progress(
                into: &b, x: inner.x, y: y + 1, width: inner.width, fraction: Double(finished) / Double(total),
                label: "\(finished)/\(total) online")
        }
    }

    /// One character for where an item stands online (blank: not sent).
    static func onlineGlyph(_ state: OnlineState?) -> (String, ColorRole) {
        switch state {
        case nil: return (" ", .text)
        case .queued?: return ("…", .muted)
        case .sending?: return ("⇄", .info)
        case .retrying?: return ("↻", .warning)
        case .done(let status, _, _)?: return status == 0 ? ("●", .ok) : ("◆", .warning)
        case .failed?: return ("✗", .error)
        }
    }

    static func shortFormat(_ f: ReceiptFormat) -> String {
        switch f {
        case .pkcs7: "pkcs7"
        case .legacy: "ios6"
        case .verifyResponse: "resp"
        case .notificationV1: "notif1"
        case .jwsTransaction: "jws-tx"
        case .jwsRenewal: "jws-rn"
        case .jwsAppTransaction: "jws-app"
        case .jwsNotification: "notif2"
        case .api: "api"
        case .realtimeRequest: "rt-req"
        case .unknown: "jws-?"
        }
    }

    static func shortEnvironment(_ e: StoreEnvironment) -> String {
        switch e {
        case .production: "Prod"
        case .sandbox: "Sbx"
        case .xcode: "Xcode"
        case .localTesting: "Local"
        }
    }

    static func purchases(_ s: DashboardState, _ r: Rect, _ b: inout ScreenBuffer) {
        let total = s.selectedItem?.rows.count ?? 0
        var title = "\(Pane.purchases.title) [\(s.visibleRowCount)"
        if !s.filter.isEmpty { title += " of \(total), filter \"\(s.filter)\"" }
        title += "]"
        b.box(r, title: title, focused: s.focus == .purchases)
        let inner = r.inset
        guard let item = s.selectedItem else {
            b.write("No input loaded: press p to paste a receipt or o to open a file.", x: inner.x, y: inner.y, limit: inner.width, style: Style(.muted))
            return
        }
        if let error = item.error {
            b.write(DashboardState.verdictLine(error), x: inner.x, y: inner.y, limit: inner.width, style: Style(.error, bold: true))
            b.write("Could not decode \(SafeText.escaped(item.source)):", x: inner.x, y: inner.y + 1, limit: inner.width, style: Style(.error))
            b.write(error.reason, x: inner.x, y: inner.y + 2, limit: inner.width, style: Style(.error))
            return
        }
        if item.isShelved {
            b.write(item.detailsLost ?? "Reading \(SafeText.escaped(item.source)) again…", x: inner.x, y: inner.y, limit: inner.width, style: Style(item.detailsLost == nil ? .muted : .error))
            return
        }
        if item.rows.isEmpty, let failure = item.lookup?.failure {
            b.write("No transactions: the look-up failed (\(failure.code)); the Status pane says why.", x: inner.x, y: inner.y, limit: inner.width, style: Style(.error))
            return
        }
        if item.rows.isEmpty {
            b.write("No purchases in this input (not an error: a receipt can have none).", x: inner.x, y: inner.y, limit: inner.width, style: Style(.muted))
            return
        }
        // As the pane narrows, Original, Type, Purchased and Transaction go first: the product,
        // its state and its expiry are the facts, and stay to the last (80×24 keeps them).
        let columns = purchaseColumns
        var scroll = s.scroll[.purchases] ?? ScrollState()
        scroll.reveal(visible: inner.height - 1, count: s.visibleRowCount)
        let now = s.now
        let window = Widgets.table(
            into: &b, rect: inner, columns: columns, rowCount: s.visibleRowCount, scroll: scroll,
            sortColumn: s.sortColumn.rawValue, ascending: s.ascending, focused: s.focus == .purchases, sideways: s.sideways[.purchases] ?? 0
        ) { row, column in
            let p = item.rows[s.rowOrder[row]]
            switch PurchaseColumn(rawValue: column)! {
            case .product: return (p.productID ?? "?", nil)
            case .type: return (DashboardState.typeText(p), .muted)
            case .transaction: return (p.transactionID ?? "", nil)
            case .original: return (p.originalTransactionID == p.transactionID ? "=" : p.originalTransactionID ?? "", .muted)
            case .purchased: return (shortDate(p.purchaseDate), nil)
            case .expires: return (shortDate(p.expiresDate), nil)
            case .state:
                let (text, role) = DashboardState.rowState(p, now: now)
                return (text, role)
            }
        }
        if s.focus == .purchases, s.columnCursor != s.sortColumn, let x = window.x(of: s.columnCursor.rawValue) {
            // Mark the header the cursor is on.
            let width = window.widths[s.columnCursor.rawValue]
            b.write(TextWidth.pad(s.columnCursor.title, to: width), x: inner.x + x, y: inner.y, limit: width, style: Style(.match, bold: true))
        }
    }

    /// The purchase table's columns, in ``PurchaseColumn`` order. As the pane narrows,
    /// Original, Type, Purchased and Transaction go first (to the right of the strip that
    /// ←/→ scroll): the product, its state and its expiry are the facts, and stay to the last
    /// (80×24 keeps them).
    static let purchaseColumns = [
        TableColumn("Product", width: 0, priority: 10, minimumWidth: 16, cutInTheMiddle: true, frozen: true), TableColumn("Type", width: 11, priority: 2),
        TableColumn("Transaction", width: 16, priority: 6), TableColumn("Original", width: 16, priority: 1),
        TableColumn("Purchased", width: 16, priority: 5), TableColumn("Expires", width: 16, priority: 8),
        TableColumn("State", width: 9, priority: 9),
    ]

    /// The Notifications table's columns (the time stays when it scrolls sideways).
    /// The Notifications table's columns on a table `width` wide: the product whole where it
    /// fits, else cut from the left (`…pro.monthly`), its width balanced against the Notification
    /// column's (Received, Transaction, V, × and five separators take 33).
    static func notificationColumns(_ s: DashboardState, width: Int) -> [TableColumn] {
        let productWidth = OnCallGlance.productWidth(widest: s.onCall.widestProduct, inner: width, fixed: 33)
        return [
            TableColumn("Received", width: 8, priority: 8, frozen: true), TableColumn("Notification", width: 0, priority: 9, minimumWidth: 24),
            TableColumn("Product", width: productWidth, priority: 6, keepTail: true), TableColumn("Transaction", width: 16, priority: 7),
            TableColumn("V", width: 1, priority: 9, minimumWidth: 1), TableColumn("×", width: 3, alignRight: true, priority: 5, minimumWidth: 3),
        ]
    }

    static func shortDate(_ d: Date?) -> String {
        DashboardState.shortDate(d) ?? ""
    }

    static func subscriptions(_ s: DashboardState, _ r: Rect, _ b: inout ScreenBuffer) {
        let subs = s.selectedItem?.analysis?.subscriptions ?? []
        b.box(r, title: "\(Pane.subscriptions.title) [\(subs.count)]", focused: s.focus == .subscriptions)
        let inner = r.inset
        var lines: [(String, Style)] = []
        let selected = s.scroll[.subscriptions]?.selected ?? 0
        // Only the subscriptions that can be on screen: a receipt may have thousands.
        for (i, sub) in subs.enumerated().dropFirst(max(0, selected - 1)) {
            if lines.count >= inner.height { break }
            let role: ColorRole
            switch sub.state {
            case .active: role = .ok
            case .activeWillNotRenew, .inGracePeriod, .inBillingRetry: role = .warning
            case .expired: role = .muted
            case .refunded, .refundedProrated, .revokedFamilySharing: role = .error
            case .upgraded: role = .info
            }
            let head = "\(i == selected && s.focus == .subscriptions ? "▶" : "●") \(sub.productID ?? "?")  \(sub.state.rawValue)"
            lines.append((head, Style(role, bold: true)))
            lines.append(("  " + sub.explanation, Style(.text)))
            if let (bar, _, range) = AnalysisRendering.timeline(sub, at: s.now, width: max(10, min(40, inner.width - 26))) {
                lines.append(("  " + bar + " " + range, Style(.accent)))
            }
            if let offers = AnalysisRendering.offers(sub) { lines.append(("  " + offers, Style(.info))) }
            for warning in sub.warnings.prefix(2) { lines.append(("  note: " + warning, Style(.muted))) }
        }
        if subs.isEmpty {
            let oneTime = s.selectedItem?.analysis?.oneTimePurchases ?? []
            lines.append((oneTime.isEmpty ? "No subscriptions." : "No subscriptions; \(CountNoun.oneTimePurchase.count(oneTime.count)):", Style(.muted)))
            for p in oneTime.prefix(20) {
                lines.append(("  \(p.productID ?? "?"): \(p.explanation)", Style(p.refunded ? .error : .text)))
            }
        }
        wrapAndDraw(lines, inner, offset: 0, &b)
    }

    static func status(_ s: DashboardState, _ r: Rect, _ b: inout ScreenBuffer) {
        b.box(r, title: Pane.status.title, focused: s.focus == .status)
        let inner = r.inset
        var lines: [(String, Style)] = []
        if let item = s.selectedItem {
            lines.append((item.source, Style(.title, bold: true)))
            if let error = item.error {
                lines.append((DashboardState.verdictLine(error), Style(.error, bold: true)))
                lines.append(("decode error: " + error.reason, Style(.error)))
            }
            if item.isShelved {
                if let summary = item.summary {
                    let facts = "\(summary.environment ?? "environment unknown") · bundle \(summary.bundleID ?? "-") · \(summary.verdict)"
                    lines.append((SafeText.escaped(facts), Style(.text)))
                    lines.append((SafeText.escaped(summary.why), Style(.text)))
                }
                lines.append((item.detailsLost ?? "its details are read again when it is selected", Style(item.detailsLost == nil ? .muted : .error)))
            }
            if let d = item.decoded {
                lines.append(("\(d.format.displayName), \(d.environment?.rawValue ?? d.rawEnvironment ?? "environment unknown")", Style(.text)))
                if let bundle = item.bundleID {
                    var text = "bundle \(bundle)"
                    if let version = d.receipt?.applicationVersion { text += " · version \(version)" }
                    lines.append((text, Style(.text)))
                }
                if let status = d.status {
                    let explained = AppleStatus.explain(status, isRetryable: d.isRetryable)
                    lines.append(("Apple status \(status): \(explained.title)", Style(status == 0 ? .ok : .warning, bold: true)))
                    lines.append((explained.explanation, Style(.text)))
                    lines.append(("Next: " + explained.nextStep, Style(.info)))
                }
            }
            if let state = s.online[item.id] {
                switch state {
                case .queued: lines.append(("Online: queued", Style(.muted)))
                case .sending(let attempt): lines.append(("Online: sending attempt \(attempt)…", Style(.info)))
                case .retrying(let seconds, let reason):
                    lines.append((String(format: "Online: retrying in %.1f s (%@)", seconds, reason), Style(.warning)))
                case .done(let status, let environment, let attempts):
                    let explained = AppleStatus.explain(status)
                    lines.append(
                        ("Online: status \(status) \(explained.title)\(environment.map { " (\($0))" } ?? ""), \(CountNoun.attempt.count(attempts.count))",
                         Style(status == 0 ? .ok : .warning, bold: true)))
                    for a in attempts { lines.append(("  \(a.url): \(a.result), \(Int(a.latencyMilliseconds)) ms", Style(.muted))) }
                    lines.append((explained.explanation, Style(.text)))
                    lines.append(("Next: " + explained.nextStep, Style(.info)))
                case .failed(let reason, let attempts):
                    lines.append(("Online: failed: \(reason)", Style(.error, bold: true)))
                    for a in attempts { lines.append(("  \(a.url): \(a.result), \(Int(a.latencyMilliseconds)) ms", Style(.muted))) }
                }
            }
            if let lookup = item.lookup {
                lines += lookupLines(lookup)
            } else if let trust = item.trust {
                trustLines("Trust", trust, indent: "", details: false, into: &lines)
            }
            for warning in item.decoded?.warnings ?? [] { lines.append(("warning: " + warning, Style(.warning))) }
        } else {
            lines.append(("Nothing selected.", Style(.muted)))
        }
        wrapAndDraw(lines, inner, offset: s.scroll[.status]?.selected ?? 0, &b)
    }

    static func metrics(_ s: DashboardState, _ r: Rect, _ b: inout ScreenBuffer) {
        let m = s.metrics
        b.box(r, title: "Metrics", focused: false)
        let inner = r.inset
        var lines: [(String, Style)] = []
        if let since = m.outageSince {
            let (temporary, total) = m.outageWindowCounts
            lines.append((
                "OUTAGE since \(AppleDate.iso8601(since).dropFirst(11).prefix(8)): \(temporary)/\(total) temporary failures in \(Int(LiveMetrics.outageWindow)) s",
                Style(.error, bold: true, reverse: true)))
        }
        lines.append(("answered \(m.answered) · failed \(m.failures) · retries \(m.retries)", Style(.text)))
        let width = max(4, inner.width - 9)
        let series = m.throughput(endingAt: s.wallClock, seconds: width)
        let perSecond = Double(series.suffix(10).reduce(0, +)) / 10
        lines.append(("/s " + String(format: "%5.1f ", perSecond) + LiveMetrics.sparkline(series), Style(.accent)))
        if let p = m.latencyPercentiles([50, 95, 99]) {
            lines.append((String(format: "latency p50 %.0f · p95 %.0f · p99 %.0f ms", p[0], p[1], p[2]), Style(.text)))
        } else {
            lines.append(("latency: no answers yet", Style(.muted)))
        }
        let statuses = m.statusCounts.sorted { $0.value > $1.value }.prefix(4).map { "\($0.key): \($0.value)" }
        if !statuses.isEmpty { lines.append(("status " + statuses.joined(separator: " · "), Style(.text))) }
        let environments = m.environments.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
        if !environments.isEmpty { lines.append(("env " + environments.joined(separator: " · "), Style(.muted))) }
        Widgets.text(into: &b, rect: inner, lines: lines, offset: 0)
    }

    static func log(_ s: DashboardState, _ r: Rect, _ b: inout ScreenBuffer) {
        b.box(r, title: Pane.log.title, focused: s.focus == .log)
        let inner = r.inset
        let count = s.log.count
        var scroll = s.scroll[.log] ?? ScrollState(selected: max(0, count - 1))
        scroll.reveal(visible: inner.height, count: count)
        for line in 0..<inner.height {
            let index = scroll.offset + line
            guard index < count else { break }
            let entry = s.log[index]
            let time = AppleDate.iso8601(entry.time).dropFirst(11).prefix(8)
            b.write("\(time) \(entry.text)", x: inner.x, y: inner.y + line, limit: inner.width, style: Style(entry.role))
        }
    }

    static func messageLine(_ s: DashboardState, _ r: Rect, _ b: inout ScreenBuffer) {
        switch s.mode {
        case .filter(let text):
            b.fill(r, style: Style(.input))
            b.write("/" + text + "▏", x: 0, y: r.y, limit: r.width, style: Style(.input))
        case .export(let form):
            b.fill(r, style: Style(.input))
            let other = form.format == .json ? "CSV" : "JSON"
            let x = b.write(
                s.exportTitle(form) + " to folder: " + SafeText.escaped(form.folder) + "▏", x: 0, y: r.y, limit: r.width, style: Style(.input))
            let tab = form.view == .input ? "" : "Tab: \(other) · "
            b.write("  \(tab)Enter writes (mode 600) · Esc cancels", x: x, y: r.y, limit: max(0, r.width - x), style: Style(.input))
        case .receiptFilter(let text):
            // The typed text first, then why it does not read yet (or the keys).
            b.fill(r, style: Style(.input))
            let x = b.write("Filter receipts: " + text + "▏", x: 0, y: r.y, limit: r.width, style: Style(.input))
            let hint = s.message?.text ?? "state:expired verdict:invalid env:sandbox product:ID bundle:ID file:GLOB words · Enter keeps · Esc clears"
            b.write("  " + hint, x: x, y: r.y, limit: max(0, r.width - x), style: Style(.input))
        case .command(let text):
            b.fill(r, style: Style(.input))
            b.write(":" + text + "▏", x: 0, y: r.y, limit: r.width, style: Style(.input))
        case .notificationFilter(let text):
            b.fill(r, style: Style(.input))
            let x = b.write("Filter notifications: " + SafeText.escaped(text) + "▏", x: 0, y: r.y, limit: r.width, style: Style(.input))
            let hint = s.message?.text ?? "type:DID_RENEW product:*.monthly words · Enter keeps · Esc clears"
            b.write("  " + hint, x: x, y: r.y, limit: max(0, r.width - x), style: Style(.input))
        case .open(let text):
            b.fill(r, style: Style(.input))
            b.write("Open (Tab completes, Enter loads, Esc cancels): " + text + "▏", x: 0, y: r.y, limit: r.width, style: Style(.input))
        case .lookup(let text):
            // The typed text first, so it stays visible on narrow screens; the hint after it.
            b.fill(r, style: Style(.input))
            let x = b.write("Look up order ID or transaction ID: " + text + "▏", x: 0, y: r.y, limit: r.width, style: Style(.input))
            b.write(
                "  10 letters/digits with a letter: order ID · digits only: transaction ID · Enter looks up · Esc cancels", x: x, y: r.y,
                limit: max(0, r.width - x), style: Style(.input))
        default:
            if let message = s.message {
                b.write(message.text, x: 1, y: r.y, limit: r.width - 1, style: Style(message.role))
            }
        }
    }

    /// A write's plan, then how to send it or not.
    static func planLines(_ plan: [String], trust: TrustReport.Verdict? = nil) -> [(String, Style)] {
        let keys =
            trust == .invalid
            ? "the data is not genuine: y is refused · F sends it anyway (as --force-untrusted) · n or Esc cancels"
            : "y sends it · n or Esc cancels (nothing is sent)"
        let refused = trust == .invalid ? ActionDataGate.dataLine(.invalid, forced: false) : nil
        return plan.map { (SafeText.escaped($0), Style($0 == refused ? .error : .overlay)) }
            + [("", Style(.overlay)), (keys, Style(trust == .invalid ? .error : .warning, bold: true))]
    }

    /// A write's form or plan in an overlay as tall as its lines.
    static func formOverlay(_ title: String, _ lines: [(String, Style)], _ b: inout ScreenBuffer) {
        let inner = Widgets.overlay(into: &b, width: min(100, b.width - 4), height: min(lines.count + 2, b.height - 2), title: title)
        Widgets.text(into: &b, rect: inner, lines: lines, offset: 0)
    }

    /// The `x` form, then its plan: what is sent, and `y` to send.
    static func extendForm(_ form: ExtendForm, _ b: inout ScreenBuffer) {
        var lines: [(String, Style)]
        if form.confirming {
            lines = planLines(form.plan, trust: form.dataTrust)
        } else {
            let reasons = ExtendReason.allCases.map { $0 == form.reason ? "[\($0.name)]" : $0.name }.joined(separator: " ")
            lines = [
                ("subscription: \(SafeText.escaped(form.productID ?? "?")) (original \(SafeText.escaped(form.originalTransactionID)))", Style(.overlay)),
                ("Days (1-90): \(form.days)▏", Style(.input)),
                ("Reason: \(reasons)", Style(.overlay)),
                ("", Style(.overlay)),
                ("type the days · Tab changes the reason · Enter shows the plan · Esc cancels", Style(.muted)),
            ]
            if let problem = form.problem { lines.append((problem, Style(.error))) }
        }
        formOverlay("Extend renewal date", lines, &b)
    }

    /// The `c` form, then its plan.
    static func consumptionForm(_ form: ConsumptionForm, _ b: inout ScreenBuffer) {
        var lines: [(String, Style)]
        if form.confirming {
            lines = planLines(form.plan, trust: form.dataTrust)
        } else {
            lines = form.lines.map { (SafeText.escaped($0), Style($0.hasPrefix("▶") ? .input : .overlay)) }
            lines += [
                ("", Style(.overlay)),
                ("Tab/↑↓ field · ←→ or Space change · digits for % · Enter shows the plan · Esc cancels", Style(.muted)),
            ]
            if let problem = form.problem { lines.append((problem, Style(.error))) }
        }
        formOverlay("Answer a refund request (consumption)", lines, &b)
    }

    /// The `a` form, then its plan.
    static func tokenForm(_ form: TokenForm, _ b: inout ScreenBuffer) {
        var lines: [(String, Style)]
        if form.confirming {
            lines = planLines(form.plan, trust: form.dataTrust)
        } else {
            lines = [
                ("purchase: original transaction \(SafeText.escaped(form.order.originalTransactionID))", Style(.overlay)),
                ("token now: \(SafeText.escaped(form.current ?? "none"))", Style(.overlay)),
                ("new token (UUID): \(form.order.token)▏", Style(.input)),
                ("", Style(.overlay)),
                ("type or paste the UUID · Enter shows the plan · Esc cancels", Style(.muted)),
            ]
            if let problem = form.problem { lines.append((problem, Style(.error))) }
        }
        formOverlay("App account token", lines, &b)
    }

    static func pasteBox(_ text: String, _ b: inout ScreenBuffer) {
        let inner = Widgets.overlay(into: &b, width: min(100, b.width - 4), height: 12, title: "Paste receipts")
        b.write("Paste one or more receipts (base64, JSON, JWS, plist). Enter loads, Esc cancels, Ctrl-U clears.", x: inner.x, y: inner.y, limit: inner.width, style: Style(.muted))
        let chars = text.count
        let lineCount = text.split(separator: "\n", omittingEmptySubsequences: false).count
        b.write("\(chars) characters, \(CountNoun.line.count(lineCount))", x: inner.x, y: inner.y + 1, limit: inner.width, style: Style(.info))
        // Show the tail of what was pasted, never the whole multi-megabyte text.
        let tail = text.suffix(inner.width * (inner.height - 3)).split(separator: "\n", omittingEmptySubsequences: false).suffix(inner.height - 3)
        for (i, line) in tail.enumerated() {
            b.write(String(line.suffix(inner.width)), x: inner.x, y: inner.y + 2 + i, limit: inner.width, style: Style(.input))
        }
    }

    static func detail(_ s: DashboardState, _ scroll: Int, _ b: inout ScreenBuffer) {
        guard let p = s.selectedPurchase else { return }
        var lines: [(String, Style)] = []
        func row(_ name: String, _ value: String?) {
            guard let value, !value.isEmpty else { return }
            lines.append((TextWidth.pad(name, to: 30) + value, Style(.overlay)))
        }
        for field in PurchaseField.all { row(field.label, field.displayText(in: p)) }
        for field in p.otherFields { row(field.name, field.value) }
        for attribute in p.unknownAttributes {
            row("ASN.1 type \(attribute.type) v\(attribute.version)", Hex.encode(attribute.value, separator: " "))
        }
        let inner = Widgets.overlay(into: &b, width: min(110, b.width - 4), height: b.height - 4, title: "Purchase \(p.transactionID ?? "")")
        Widgets.text(into: &b, rect: inner, lines: lines, offset: min(scroll, max(0, lines.count - inner.height)))
    }

    /// Draws lines, wrapping long ones at the pane width.
    static func wrapAndDraw(_ lines: [(String, Style)], _ rect: Rect, offset: Int, _ b: inout ScreenBuffer) {
        var wrapped: [(String, Style)] = []
        for (text, style) in lines {
            if wrapped.count >= offset + rect.height { break }
            for line in WordWrap.lines(SafeText.escaped(text), width: rect.width, indent: 2, limit: 500) { wrapped.append((line, style)) }
        }
        Widgets.text(into: &b, rect: rect, lines: wrapped, offset: min(offset, max(0, wrapped.count - rect.height)))
    }

    // MARK: - Notifications

    static func notifications(_ s: DashboardState, _ r: Rect, _ b: inout ScreenBuffer) {
        let m = s.notificationMetrics
        var title = "\(Pane.notifications.title) [\(s.onCall.matches == nil ? "\(s.notifications.count)" : "\(s.listedNotificationCount) of \(s.notifications.count)")]"
        if let source = s.notificationSource { title += " · \(source)" }
        if let since = s.receiverDownSince {
            title += " · receiver down since \(AppleDate.iso8601(since).dropFirst(11).prefix(8))"
        } else if let silence = s.notificationSilence {
            title += " · nothing for \(DurationWords.short(silence))"
        }
        b.box(r, title: title, focused: s.focus == .notifications)
        let inner = r.inset
        guard inner.height >= 2 else { return }
        // The live line: arrivals per second with a sparkline, the busiest types, refusals and
        // redeliveries.
        let series = m.throughput(endingAt: s.wallClock, seconds: 20)
        let perSecond = Double(series.suffix(10).reduce(0, +)) / 10
        var live = String(format: "%.1f/s ", perSecond) + LiveMetrics.sparkline(series)
        let types = m.typeRates(endingAt: s.wallClock)
        if !types.isEmpty { live += " · " + types.joined(separator: " · ") }
        // By reason (the receiver's class), the busiest first would reorder as counts change:
        // in name order.
        let refusals = m.refusalsByReason.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
        live += " · refused \(m.refusalCount)" + (refusals.isEmpty ? "" : " (" + refusals.joined(separator: ", ") + ")")
        live += " · redeliveries \(m.redeliveries)"
        b.write(live, x: inner.x, y: inner.y, limit: inner.width, style: Style(m.refusalCount > 0 ? .warning : .accent))
        // On call: the hour's traffic and forwarding, where the table keeps a header and two rows.
        let glance = onCallLines(s, width: inner.width, rows: inner.height - 4)
        for (i, line) in glance.enumerated() {
            b.write(line.0, x: inner.x, y: inner.y + 1 + i, limit: inner.width, style: Style(line.1))
        }
        let table = Rect(x: inner.x, y: inner.y + 1 + glance.count, width: inner.width, height: inner.height - 1 - glance.count)
        guard !s.notifications.isEmpty else {
            b.write(
                s.expectNotificationEvery == nil ? "No notifications yet: they appear here as the receiver stores them."
                    : "No notifications yet (a banner shows when none arrives for the --expect-every time).",
                x: table.x, y: table.y, limit: table.width, style: Style(.muted))
            return
        }
        guard s.listedNotificationCount > 0 else {
            b.write(
                "No notification matches \"\(SafeText.escaped(s.onCall.filterText))\": f changes the filter, Esc clears it.", x: table.x, y: table.y,
                limit: table.width, style: Style(.muted))
            return
        }
        let columns = notificationColumns(s, width: table.width)
        var scroll = s.scroll[.notifications] ?? ScrollState()
        scroll.reveal(visible: table.height - 1, count: s.listedNotificationCount)
        Widgets.table(
            into: &b, rect: table, columns: columns, rowCount: s.listedNotificationCount, scroll: scroll, sortColumn: nil, ascending: true,
            focused: s.focus == .notifications, sideways: s.sideways[.notifications] ?? 0
        ) { position, column in
            let row = s.notifications[s.listedNotificationIndex(at: position) ?? 0].row
            switch column {
            case 0: return (String(AppleDate.iso8601(row.receivedAt).dropFirst(11).prefix(8)), .muted)
            case 1:
                // A refund request says its reason and the time left to answer.
                let answered = row.transactionID.flatMap { s.consumptionAnswers[$0] }
                if let note = row.consumptionNote(now: s.wallClock, answered: answered) { return ("\(note) · \(row.explanation)", .warning) }
                return (row.explanation, nil)
            case 2: return (SafeText.escaped(row.productID ?? ""), nil)  // cut from the left by its column
            case 3: return (row.transactionID ?? "", .muted)
            case 4:
                let (glyph, role) = verdictGlyph(row.verdict)
                return (glyph, role)
            default: return (row.deliveries > 1 ? "×\(row.deliveries)" : "", row.deliveries > 1 ? .warning : nil)
            }
        }
    }

    /// The traffic sparkline and forwarding's lines, in at most `rows` lines (none when no room):
    /// forwarding only once it was read (a followed store, or the embedded receiver's).
    static func onCallLines(_ s: DashboardState, width: Int, rows: Int) -> [(String, ColorRole)] {
        guard rows > 0 else { return [] }
        var lines = [(OnCallGlance.trafficLine(s.onCall.traffic.buckets(endingAt: s.wallClock), width: width), ColorRole.accent)]
        if let open = s.onCall.consumption, rows > 2 {
            let (text, role) = OnCallGlance.consumptionLine(open, now: s.wallClock)
            lines.append((TextWidth.truncate(text, to: width), role))
        }
        if let targets = s.onCall.forwarding {
            // The table keeps half the rows left for itself.
            let room = min(rows - lines.count, max(1, (rows - 1) / 2))
            lines += OnCallGlance.forwardLines(targets, now: s.wallClock, width: width, rows: room)
        }
        return lines
    }

    /// One character for a notification's verdict: ✓ valid, T test (a --root-ca chain), ?
    /// unverifiable (V1, unsigned), ✗ anything else.
    static func verdictGlyph(_ verdict: TrustReport.Verdict?) -> (String, ColorRole) {
        switch verdict {
        case .valid: ("✓", .ok)
        case .test: ("T", .info)
        case .unverifiable: ("?", .warning)
        case .invalid, nil: ("✗", .error)
        }
    }

    /// The `Enter` overlay: the envelope, the outer token's trust steps, then each nested token
    /// decoded with its own steps.
    static func notificationDetail(_ s: DashboardState, uuid: String, scroll: Int, _ b: inout ScreenBuffer) {
        guard let index = s.notificationIndex[uuid] else { return }
        let entry = s.notifications[index]
        let inner = Widgets.overlay(into: &b, width: min(120, b.width - 4), height: b.height - 4, title: "Notification \(uuid)")
        let lines = notificationDetailLines(entry, detail: s.notificationDetails[uuid])
        Widgets.text(into: &b, rect: inner, lines: lines, offset: min(scroll, max(0, lines.count - inner.height)))
    }

    /// The verdict and why, the verdict said once: a reason that is a trust headline starts
    /// with the verdict already ("test: chains to …").
    static func verdictText(_ verdict: TrustReport.Verdict?, reason: String?) -> String? {
        guard let verdict = verdict?.rawValue else { return reason }
        guard let reason, !reason.isEmpty else { return verdict }
        return reason.hasPrefix(verdict + ":") ? reason : "\(verdict): \(reason)"
    }

    static func notificationDetailLines(_ entry: NotificationEntry, detail: NotificationDetail?) -> [(String, Style)] {
        var lines: [(String, Style)] = []
        func row(_ name: String, _ value: String?, _ role: ColorRole = .overlay) {
            guard let value, !value.isEmpty else { return }
            lines.append((TextWidth.pad(name, to: 24) + value, Style(role)))
        }
        let r = entry.row
        lines.append((r.explanation, Style(.overlay, bold: true)))
        row("notificationType", r.notificationType)
        row("subtype", r.subtype)
        row("bundleId", r.bundleID)
        row("environment", r.environment)
        row("signedDate", r.signedDate.map(AppleDate.iso8601))
        row("received", AppleDate.iso8601(r.receivedAt))
        row("deliveries", "\(r.deliveries)", r.deliveries > 1 ? .warning : .overlay)
        // One verdict: once the payload is judged here, the judgement the trust steps below
        // show; what the receiver stored, with its own trust roots, is said apart when it differs.
        if let judged = detail?.judged.trust {
            row("verdict", judged.headline, judged.verdict == .valid ? .ok : judged.verdict == .invalid ? .error : .warning)
            if judged.verdict != r.verdict {
                row("receiver's verdict", (verdictText(r.verdict, reason: entry.reason) ?? "not recorded") + " (judged when stored, with the receiver's trust roots)", .muted)
            }
        } else {
            row("verdict", verdictText(r.verdict, reason: entry.reason))
        }
        guard entry.signedPayload != nil else {
            lines.append(("", Style(.overlay)))
            lines.append(("A V1 notification is not signed and its body is not kept (it carries the shared secret).", Style(.muted)))
            return lines
        }
        guard let detail else {
            lines.append(("", Style(.overlay)))
            lines.append(("decoding and judging the payload…", Style(.muted)))
            return lines
        }
        if let error = detail.judged.error {
            lines.append(("payload: \(error.reason)", Style(.error, bold: true)))
            return lines
        }
        if let trust = detail.judged.trust { trustLines("Trust", trust, into: &lines) }
        guard let decoded = detail.judged.decoded else { return lines }
        for nested in decoded.nested {
            lines.append(("", Style(.overlay)))
            lines.append(("── \(nested.field) (\(nested.input.format.displayName)) ──", Style(.title, bold: true)))
            // Is it genuine first, then what it says.
            if let report = detail.nestedReports.first(where: { $0.field == nested.field })?.report {
                trustLines("Trust of \(nested.field)", report, into: &lines)
            }
            for p in nested.input.transactions {
                for field in PurchaseField.all { row(field.label, field.displayText(in: p)) }
                for field in p.otherFields { row(field.name, field.value) }
            }
            for renewal in nested.input.pendingRenewalInfo { renewalRows(renewal, row) }
        }
        return lines
    }

    private static func renewalRows(_ r: RenewalInfo, _ row: (String, String?, ColorRole) -> Void) {
        func date(_ d: Date?) -> String? { d.map(AppleDate.iso8601) }
        row("originalTransactionId", r.originalTransactionID, .overlay)
        row("productId", r.productID, .overlay)
        row("autoRenewProductId", r.autoRenewProductID, .overlay)
        row(
            "autoRenewStatus", r.autoRenewStatus.map { $0 ? "1 (will renew)" : "0 (will not renew)" } ?? r.autoRenewStatusAsSent.map(AppleValue.undefined),
            .overlay)
        row("expirationIntent", r.expirationIntent.map { "\($0) (\(ExpirationIntent.explain($0)))" }, .overlay)
        row("isInBillingRetryPeriod", r.isInBillingRetryPeriod.map { $0 ? "true" : "false" }, .overlay)
        row("gracePeriodExpiresDate", date(r.gracePeriodExpiresDate), .warning)
        row("renewalDate", date(r.renewalDate), .overlay)
        row("recentSubscriptionStartDate", date(r.recentSubscriptionStartDate), .overlay)
        row("offerType", r.offerType.map { "\($0) (\(OfferWords.type($0)))" }, .overlay)
        row("offerIdentifier", r.offerIdentifier, .overlay)
        row("offerDiscountType", r.offerDiscountType.map { "\($0) (\(OfferWords.discount($0)))" }, .overlay)
        row("offerPeriod", r.offerPeriod.map { p in OfferWords.period(p).map { "\(p) (\($0))" } ?? p }, .overlay)
        row("eligibleWinBackOfferIds", r.eligibleWinBackOfferIDs?.joined(separator: ", "), .overlay)
        row("appTransactionId", r.appTransactionID, .overlay)
        row("renewalBillingPlanType", r.renewalBillingPlanType.map { "\($0) (\(OfferWords.billingPlan($0)))" }, .overlay)
        if let c = r.commitmentInfo {
            row("commitmentAutoRenewStatus", c.autoRenewStatus.map { $0 ? "1 (a new commitment follows)" : "0 (no new commitment)" }, .overlay)
            row("commitmentAutoRenewProductId", c.autoRenewProductID, .overlay)
            row("commitmentRenewalBillingPlanType", c.renewalBillingPlanType, .overlay)
            row("commitmentRenewalDate", date(c.renewalDate), .overlay)
            row("commitmentRenewalPrice", c.renewalPrice.map { "\($0) milliunits" }, .overlay)
        }
        row("advancedCommerceInfo", r.advancedCommerceInfo?.compactJSON, .overlay)
        row("renewalPrice", r.renewalPriceMilliunits.map { "\($0) milliunits\(r.currency.map { " \($0)" } ?? "")" }, .overlay)
        row("environment", r.environment, .overlay)
        row("signedDate", date(r.signedDate), .overlay)
        for field in r.otherFields { row(field.name, field.value, .overlay) }
    }

    /// A trust report as lines: the headline, then a mark and the words of every step; with
    /// `details`, the particulars of each step that did not pass.
    static func trustLines(
        _ title: String, _ trust: TrustReport, indent: String = "  ", details: Bool = true, into lines: inout [(String, Style)]
    ) {
        let role: ColorRole = trust.verdict == .valid ? .ok : trust.verdict == .invalid ? .error : .warning
        lines.append(("\(title): \(trust.headline)", Style(role, bold: true)))
        for step in trust.steps {
            let (mark, stepRole): (String, ColorRole) =
                switch step.outcome {
                case .pass: ("✓", .ok)
                case .fail: ("✗", .error)
                case .warning: ("!", .warning)
                case .skipped: ("-", .muted)
                }
            lines.append(("\(indent)\(mark) \(step.name): \(step.reason)", Style(stepRole)))
            // Certificate particulars of a passing step would bury the verdicts: only what went wrong.
            guard details, step.outcome != .pass, step.kind != .nested else { continue }
            for detail in step.details { lines.append(("      \(detail.name): \(detail.value)", Style(.muted))) }
        }
    }
}
