import AppStoreAPI
import AuditTrail
import CustomerTimeline
import Foundation
import PlainWords
import ReceiptCore
import TerminalUI
import UntrustedText

/// The Customer view: one looked-up customer's story (`receiptdash customer` in the
/// dashboard). `l` opens it when its answer arrives; `u` opens it for the selected look-up.
/// `x`, `c` and `a` act from it on the selected event's subscription or transaction, and the
/// answer asked again replaces the story in place. `Enter` shows an event's sources: what each
/// sent and its trust.
extension DashboardState {
    /// The story of a look-up item, built once when its answer arrives (never per frame).
    mutating func tellStory(of id: Int, _ result: CustomerLookupResult, stored: StoredCustomerRecordsBox?) {
        customerStories[id] = CustomerStory.build(
            CustomerInputs(
                at: nowIsChosen ? now : wallClock, pointInTime: nowIsChosen, lookup: result, sent: stored?.sent, sentError: stored?.sentError,
                stored: stored?.records))
    }

    /// Opens the view on look-up item `id` (its story must be told).
    mutating func openCustomer(_ id: Int) {
        guard customerStories[id] != nil else { return }
        customerItemID = id
        customerSideways = 0
        mode = .customer(selected: max(0, (customerStories[id]?.events.count ?? 1) - 1), scroll: 0)
    }

    /// `u`: the view of the selected look-up.
    mutating func openSelectedCustomer() {
        guard let item = selectedItem, item.lookup != nil else {
            message = ("u shows a looked-up customer's story: look the customer up first (l)", .info)
            return
        }
        openCustomer(item.id)
    }

    var customerStory: CustomerStory? { customerItemID.flatMap { customerStories[$0] } }

    mutating func handleCustomer(_ event: KeyEvent, selected: Int, scroll: Int) -> [Effect] {
        let count = customerStory?.events.count ?? 0
        func move(_ delta: Int) { mode = .customer(selected: min(max(0, selected + delta), max(0, count - 1)), scroll: scroll) }
        // The view's own table (``KeyMap/customerBindings``): its keys and its `?` page.
        guard let action = KeyMap.customerAction(for: event) else { return [] }
        switch action {
        case .back: mode = .normal
        case .down: move(1)
        case .up: move(-1)
        case .pageDown: move(max(1, pageSize))
        case .pageUp: move(-max(1, pageSize))
        case .top: move(-count)
        case .bottom: move(count)
        case .columnLeft, .columnRight:
            // Sideways by a step, as far as the widest event needs (`less -S`): the time stays.
            let room = DashboardView.customerTimelineRoom(width: width)
            let widest = customerStory?.events.map { TextWidth.of(DashboardView.customerEventText($0, self)) }.max() ?? 0
            let limit = max(0, widest - room)
            let step = DashboardView.customerSidewaysStep
            let next = action == .columnLeft ? max(0, customerSideways - step) : min(customerSideways + step, (limit + step - 1) / step * step)
            if next != customerSideways {
                customerSideways = next
            } else {
                message = limit == 0 ? ("the timeline fits: nothing to scroll", .info) : ("no more to see that way", .info)
            }
        case .help: mode = .help(HelpPage(customer: .init(selected: selected, scroll: scroll)))
        case .open:
            guard let event = customerStory?.events[safe: selected] else { break }
            mode = .customerEvent(selected: selected, scroll: 0)
            // A notification's payload is judged by the loop (once: the answer is kept), as
            // Enter in the Notifications pane does: its trust steps then show.
            return event.details.compactMap { detail in
                guard detail.source == .notification, let uuid = detail.ref, let payload = detail.payload, notificationDetails[uuid] == nil else { return nil }
                return .inspectNotification(uuid: uuid, signedPayload: payload)
            }
        case .extend, .consume, .setToken: act(event, selected: selected, scroll: scroll)
        case .export:
            // The form takes the screen's last line; the view comes back when it ends.
            returnToCustomer = (selected, scroll)
            mode = .normal
            startExport(.customer)
            if mode == .normal { returnToCustomer = nil; mode = .customer(selected: selected, scroll: scroll) }
        case .copy:
            if let id = customerStory?.events[safe: selected]?.transactionID { return [.copy(id)] }
        case .quit: return [.quit]
        default: break
        }
        return []
    }

    mutating func handleCustomerEvent(_ event: KeyEvent, selected: Int, scroll: Int) -> [Effect] {
        switch event {
        case .escape, .character("q"), .enter: mode = .customer(selected: selected, scroll: 0)
        case .down, .character("j"): mode = .customerEvent(selected: selected, scroll: scroll + 1)
        case .up, .character("k"): mode = .customerEvent(selected: selected, scroll: max(0, scroll - 1))
        case .pageDown: mode = .customerEvent(selected: selected, scroll: scroll + pageSize)
        case .pageUp: mode = .customerEvent(selected: selected, scroll: max(0, scroll - pageSize))
        case .control("c"): return [.quit]
        default: break
        }
        return []
    }

    /// `x`, `c`, `a` in the view: the customer's row selected, the event's subscription or
    /// purchase with it, then the form; the view comes back when the form ends.
    private mutating func act(_ event: KeyEvent, selected: Int, scroll: Int) {
        guard let id = customerItemID, let index = self.index(ofItem: id), let story = customerStory else { return }
        let chosen = story.events[safe: selected]
        select(item: index)
        let item = items[index]
        switch event {
        case .character("x"):
            focus = .subscriptions
            let subscriptions = item.analysis?.subscriptions ?? []
            if let at = subscriptions.firstIndex(where: { $0.originalTransactionID == chosen?.originalTransactionID }) {
                self.scroll[.subscriptions] = ScrollState(selected: at)
            }
            mode = .normal
            startExtend()
        default:
            focus = .purchases
            if let at = rowOrder.firstIndex(where: { item.rows[$0].transactionID == chosen?.transactionID }) {
                self.scroll[.purchases] = ScrollState(selected: at)
            }
            mode = .normal
            if event == .character("c") { startConsumption() } else { startToken() }
        }
        if mode == .normal {
            mode = .customer(selected: selected, scroll: scroll)
        } else {
            returnToCustomer = (selected, scroll)
        }
    }

    /// After a key: a form opened from the view that has ended gives the keyboard back to it.
    mutating func returnToCustomerIfDone() {
        guard let back = returnToCustomer, mode == .normal else { return }
        returnToCustomer = nil
        mode = .customer(selected: back.selected, scroll: back.scroll)
    }
}

/// The records the trail holds for a look-up, handed from the loop (a box: the records are
/// large, and the report enum stays small).
public final class StoredCustomerRecordsBox: Sendable {
    public let records: StoredCustomerRecords
    /// What Apple says it sent (Get Notification History), as `customer` reads it.
    public let sent: [SentNotification]?
    public let sentError: String?

    public init(_ records: StoredCustomerRecords, sent: [SentNotification]? = nil, sentError: String? = nil) {
        self.records = records
        self.sent = sent
        self.sentError = sentError
    }
}

extension Array {
    subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}

extension DashboardView {
    /// The Customer view: the ids, the answer, the issues, then the timeline with the selected
    /// event; only the rows on screen are formatted (a story of 10,000 events draws as fast as
    /// one of ten).
    static func customer(_ s: DashboardState, selected: Int, _ b: inout ScreenBuffer) {
        guard let story = s.customerStory else { return }
        let title = "Customer " + (story.ids.appTransactionIDs.first ?? story.ids.originalTransactionIDs.first ?? "")
        let inner = Widgets.overlay(into: &b, width: b.width - 2, height: b.height - 2, title: SafeText.escaped(title))
        var head: [(String, Style)] = []
        // Trust on top: nothing below reads as Apple's word when the items are not genuine.
        // Whole, on as many lines as it takes: it says why nothing here is Apple's word.
        if let warning = story.trust.warning {
            for line in WordWrap.lines("⚠ " + SafeText.escaped(warning), width: inner.width, indent: 2) {
                head.append((line, Style(.error, bold: true, reverse: true)))
            }
        }
        // A subscription's facts wrap whole (`auto-renew on` is never cut).
        for sub in story.subscriptions {
            let style = Style(sub.state.hasPrefix("active") ? .ok : .overlay, bold: true)
            var line = ""
            for fact in sub.facts(stamp) {
                if !line.isEmpty, TextWidth.of(line) + 2 + TextWidth.of(fact) > inner.width {
                    head.append((line + ",", style))
                    line = "  " + fact
                } else {
                    line += line.isEmpty ? fact : ", " + fact
                }
            }
            head.append((line, style))
        }
        for p in story.products {
            head.append(("\(SafeText.escaped(p.productID ?? "?")): \(p.state)", Style(p.state == "refunded" ? .warning : .overlay)))
        }
        let answered = s.consumptionAnswers
        let issues = story.issues.filter { !($0.code == .consumptionUnanswered && answered[$0.transactionID ?? ""] != nil) }
        // Each issue whole where the timeline keeps five rows, else one line each (cut).
        let issueLines = issues.prefix(4).map { WordWrap.lines("! " + SafeText.escaped($0.summary), width: inner.width, indent: 2, limit: 3) }
        let wrapped = head.count + issueLines.joined().count + (issues.count > 4 ? 1 : 0) + 1 <= inner.height - 5
        for lines in issueLines {
            for line in wrapped ? lines : Array(lines.prefix(1)) { head.append((line, Style(.warning))) }
        }
        if issues.count > 4 { head.append(("! and \(issues.count - 4) more \(CountNoun.issue.word(issues.count - 4))", Style(.warning))) }
        head.append((timelineHint(story.events.count, width: inner.width), Style(.muted)))
        let top = min(head.count, max(0, inner.height - 3))
        _ = Widgets.text(into: &b, rect: Rect(x: inner.x, y: inner.y, width: inner.width, height: top), lines: Array(head.prefix(top)), offset: 0)
        // The latest result (a write taken, refused or failed) on the view's last line: the
        // Log is under the view.
        var resultLine = 0
        if let message = s.message, inner.height - top > 2 {
            resultLine = 1
            b.write(SafeText.escaped(message.text), x: inner.x, y: inner.maxY - 1, limit: inner.width, style: Style(message.role, bold: true))
        }
        let rows = Rect(x: inner.x, y: inner.y + top, width: inner.width, height: inner.height - top - resultLine)
        guard rows.height > 0, !story.events.isEmpty else { return }
        let first = min(max(0, selected - rows.height / 2), max(0, story.events.count - rows.height))
        // The time stays; the rest scrolls sideways (←/→), ◀ and ▶ marking what is off screen.
        let fixed = 21
        let room = customerTimelineRoom(width: b.width)
        for (line, index) in (first..<min(story.events.count, first + rows.height)).enumerated() {
            let e = story.events[index]
            let text = customerEventText(e, s)
            let role: ColorRole = e.trust == "invalid" ? .error : e.outcome == "unknown" ? .warning : .overlay
            let style = Style(index == selected ? .selection : role)
            let y = rows.y + line
            if index == selected { b.fill(Rect(x: rows.x, y: y, width: rows.width, height: 1), style: style) }
            b.write(stamp(e.at) + "  ", x: rows.x, y: y, limit: fixed, style: style)
            let shifted = TextWidth.dropLeading(text, columns: s.customerSideways)
            b.write(shifted, x: rows.x + fixed, y: y, limit: room, style: style)
            if s.customerSideways > 0, !text.isEmpty { b.write("◀", x: rows.x + fixed, y: y, style: Style(.accent, bold: true)) }
            if TextWidth.of(shifted) > room { b.write("▶", x: rows.x + rows.width - 1, y: y, style: Style(.accent, bold: true)) }
        }
    }

    /// The timeline's title and keys, less of them as the view narrows: `e export · Esc back`
    /// and `? keys` stay to the last.
    static func timelineHint(_ count: Int, width: Int) -> String {
        let title = "Timeline (\(CountNoun.event.count(count)))   "
        var keys = ["↑↓ select", "Enter sources", "x extend", "c refund answer", "a token", "←→ scroll", "e export", "Esc back", "? keys"]
        for dropped in ["a token", "c refund answer", "x extend", "←→ scroll", "Enter sources", "↑↓ select"] {
            if TextWidth.of(title + keys.joined(separator: " · ")) <= width { break }
            keys.removeAll { $0 == dropped }
        }
        return title + keys.joined(separator: " · ")
    }

    /// Columns a timeline row's words get beside the time, on a terminal `width` wide.
    static func customerTimelineRoom(width: Int) -> Int { max(1, width - 4 - 21) }

    /// How far ←/→ move the timeline.
    static let customerSidewaysStep = 20

    /// A timeline row after its time: the kind, the summary, a refund request's deadline, the
    /// sources and trust.
    static func customerEventText(_ e: CustomerEvent, _ s: DashboardState) -> String {
        var text = "\(TextWidth.pad(e.kind.rawValue, to: 20))\(SafeText.escaped(e.summary))"
        if e.kind == .consumptionRequest, let id = e.transactionID {
            if let answer = s.consumptionAnswers[id] {
                text += " · answered at \(clock(answer.at))" + (answer.httpStatus.map { " (HTTP \($0))" } ?? "")
            } else {
                let left = e.at.addingTimeInterval(12 * 3600).timeIntervalSince(s.wallClock)
                text += left > 0 ? " · answer within \(Int((left / 3600).rounded(.up))) h" : " · deadline passed"
            }
        }
        return text + "  [\(e.sources.map(\.rawValue).joined(separator: "+"))" + (e.trust.map { ", \(SafeText.escaped($0))" } ?? "") + "]"
    }

    /// `Enter` on an event: each source's lines and payload (a JWS's payload decoded).
    static func customerEvent(_ s: DashboardState, selected: Int, scroll: Int, _ b: inout ScreenBuffer) {
        guard let event = s.customerStory?.events[safe: selected] else { return }
        let inner = Widgets.overlay(into: &b, width: min(120, b.width - 4), height: b.height - 4, title: "\(event.kind.rawValue) \(stamp(event.at))")
        var lines: [(String, Style)] = [(SafeText.escaped(event.summary), Style(.overlay, bold: true))]
        lines.append(("refs: " + event.refs.map(SafeText.escaped).joined(separator: ", "), Style(.muted)))
        for detail in event.details {
            lines.append(("", Style(.overlay)))
            lines.append(("from \(detail.source.rawValue)", Style(.overlay, bold: true)))
            for line in detail.lines { lines.append(("  " + SafeText.escaped(line), Style(.overlay))) }
            if detail.source == .notification, let uuid = detail.ref, detail.payload != nil {
                if let judged = s.notificationDetails[uuid] {
                    if let trust = judged.judged.trust { trustLines("  Trust (judged now)", trust, into: &lines) }
                    for nested in judged.nestedReports { trustLines("  Trust of \(nested.field)", nested.report, into: &lines) }
                } else {
                    lines.append(("  judging the payload…", Style(.muted)))
                }
            }
            if let payload = detail.payload {
                lines.append(("  payload:", Style(.muted)))
                for chunk in payloadLines(payload, width: max(20, inner.width - 4)) { lines.append(("    " + chunk, Style(.muted))) }
            }
        }
        _ = Widgets.text(into: &b, rect: inner, lines: lines, offset: min(scroll, max(0, lines.count - inner.height)))
    }

    /// `2026-11-28 05:11:14` (UTC).
    static func stamp(_ date: Date) -> String {
        String(AppleDate.iso8601(date).prefix(19)).replacingOccurrences(of: "T", with: " ")
    }

    /// A JWS's payload as JSON text (a request body as it is), escaped, in lines of `width`.
    static func payloadLines(_ payload: String, width: Int) -> [String] {
        let parts = payload.split(separator: ".")
        var text = payload
        if parts.count == 3, let bytes = try? Base64Text.decode(Array(parts[1].utf8)), let json = try? JSONValue.parse(bytes) {
            text = json.compactJSON
        }
        let safe = Array(SafeText.escaped(text).prefix(20 * width))
        return stride(from: 0, to: safe.count, by: width).map { String(safe[$0..<min(safe.count, $0 + width)]) }
    }
}
