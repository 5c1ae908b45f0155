import Foundation
import TerminalUI

/// What a key does.
public enum Action: String, Sendable, CaseIterable {
    case up, down, pageUp, pageDown, top, bottom
    case nextPane, previousPane, columnLeft, columnRight
    case open, back, filter, receiptFilter, nextMatch, previousMatch, sort
    case help, quit, paste, load, verify, verifyAll, resume, command, copy, copyRow, export
    case lookUp, lookUpReceipt, extend, consume, setToken, customer
}

extension Action {
    /// Whether the key writes to Apple (hidden when writes are not wired in or read-only).
    public var writes: Bool { self == .extend || self == .consume || self == .setToken }
}

/// The panes of the dashboard.
public enum Pane: String, Sendable, CaseIterable {
    case receipts, purchases, subscriptions, status, notifications, log

    public var title: String {
        switch self {
        case .receipts: "Receipts"
        case .purchases: "Purchases"
        case .subscriptions: "Subscriptions"
        case .status: "Status"
        case .notifications: "Notifications"
        case .log: "Log"
        }
    }
}

/// One key binding: the keys, what they do, and where the footer shows them.
public struct KeyBinding: Sendable {
    public var keys: [KeyEvent]
    /// How the key is written in the footer, the `?` overlay and docs/dashboard.md.
    public var label: String
    public var action: Action
    public var description: String
    /// Panes where the footer offers it (empty: everywhere).
    public var footerPanes: Set<Pane>
    public var inFooter: Bool

    /// The footer's short word for it.
    public var hint: String {
        switch action {
        case .nextPane: "pane"
        case .open: "fields"
        case .filter: "filter"
        case .receiptFilter: "filter"
        case .sort: "sort"
        case .paste: "paste"
        case .load: "open"
        case .copy: "copy"
        case .export: "export"
        case .verify: "verify"
        case .lookUp: "look up"
        case .lookUpReceipt: "look up receipt"
        case .extend: "extend"
        case .consume: "answer refund"
        case .setToken: "token"
        case .customer: "customer"
        case .help: "help"
        case .quit: "quit"
        default: description
        }
    }
}

/// The one keymap table: it drives key handling, the footer hints, the `?` overlay and the
/// key list in docs/dashboard.md (`receiptdash keys`).
public enum KeyMap {
    public static let bindings: [KeyBinding] = [
        .init(keys: [.up, .character("k")], label: "↑/k", action: .up, description: "move up", footerPanes: [], inFooter: false),
        .init(keys: [.down, .character("j")], label: "↓/j", action: .down, description: "move down", footerPanes: [], inFooter: false),
        .init(keys: [.pageUp, .control("b")], label: "PgUp", action: .pageUp, description: "page up", footerPanes: [], inFooter: false),
        .init(keys: [.pageDown, .control("f")], label: "PgDn", action: .pageDown, description: "page down", footerPanes: [], inFooter: false),
        .init(keys: [.character("g"), .home], label: "g", action: .top, description: "first row", footerPanes: [], inFooter: false),
        .init(keys: [.character("G"), .end], label: "G", action: .bottom, description: "last row", footerPanes: [], inFooter: false),
        .init(keys: [.tab], label: "Tab", action: .nextPane, description: "next pane", footerPanes: [], inFooter: true),
        .init(keys: [.backTab], label: "S-Tab", action: .previousPane, description: "previous pane", footerPanes: [], inFooter: false),
        .init(
            keys: [.left, .character("h")], label: "←/h", action: .columnLeft,
            description: "scroll the table left when its columns do not fit, else previous pane (Purchases: previous sort column)", footerPanes: [.purchases], inFooter: false),
        .init(
            keys: [.right], label: "→", action: .columnRight,
            description: "scroll the table right when its columns do not fit, else next pane (Purchases: next sort column)", footerPanes: [.purchases], inFooter: false),
        .init(
            keys: [.enter], label: "Enter", action: .open,
            description: "open every field of the purchase (Notifications: the payload and every trust step)",
            footerPanes: [.purchases, .notifications], inFooter: true),
        .init(keys: [.escape], label: "Esc", action: .back, description: "back / cancel", footerPanes: [], inFooter: false),
        .init(
            keys: [.character("/")], label: "/", action: .filter, description: "filter purchases", footerPanes: [.purchases],
            inFooter: true),
        .init(
            keys: [.character("f")], label: "f", action: .receiptFilter,
            description: "filter receipts (state: verdict: env: bundle: file:), notifications (type:); product: and words",
            footerPanes: [.receipts, .notifications], inFooter: true),
        .init(keys: [.character("n")], label: "n", action: .nextMatch, description: "next match", footerPanes: [], inFooter: false),
        .init(keys: [.character("N")], label: "N", action: .previousMatch, description: "previous match", footerPanes: [], inFooter: false),
        .init(
            keys: [.character("s")], label: "s", action: .sort,
            description: "sort by column (again: reverse); Receipts: by the next column",
            footerPanes: [.purchases, .receipts], inFooter: true),
        .init(keys: [.character("p")], label: "p", action: .paste, description: "paste receipts", footerPanes: [], inFooter: true),
        .init(keys: [.character("o")], label: "o", action: .load, description: "open a file or folder", footerPanes: [], inFooter: true),
        .init(keys: [.character("v")], label: "v", action: .verify, description: "verify the selected receipt online", footerPanes: [.receipts], inFooter: true),
        .init(keys: [.character("V")], label: "V", action: .verifyAll, description: "verify all receipts online", footerPanes: [], inFooter: false),
        .init(keys: [.character("R")], label: "R", action: .resume, description: "resume receipts left pending by an interrupted run", footerPanes: [], inFooter: false),
        .init(keys: [.character(":")], label: ":", action: .command, description: "search history (:tx ID, :otx ID, :bundle B, :product P, :status N)", footerPanes: [], inFooter: false),
        .init(
            keys: [.character("y")], label: "y", action: .copy, description: "copy the focused cell (Purchases: the column under the cursor) to tmux's buffer, or by OSC 52",
            footerPanes: [], inFooter: true),
        .init(keys: [.character("Y")], label: "Y", action: .copyRow, description: "copy the focused row as JSON", footerPanes: [], inFooter: false),
        .init(
            keys: [.character("e")], label: "e", action: .export,
            description: "export the view (receipts, purchases, notifications, input, customer) as JSON or CSV, mode 600",
            footerPanes: [], inFooter: true),
        // After copy and export: on narrow screens the footer keeps those and drops these.
        .init(
            keys: [.character("l")], label: "l", action: .lookUp,
            description: "look up a customer by order ID or transaction ID (App Store Server API)", footerPanes: [], inFooter: true),
        .init(
            keys: [.character("L")], label: "L", action: .lookUpReceipt,
            description: "look up the selected receipt's customer (its newest transaction ID)", footerPanes: [.receipts], inFooter: true),
        .init(
            keys: [.character("u")], label: "u", action: .customer,
            description: "the looked-up customer's story: answer, issues, one timeline (Enter: sources)",
            footerPanes: [.receipts], inFooter: false),
        .init(
            keys: [.character("x")], label: "x", action: .extend,
            description: "extend a looked-up subscription's renewal date (days, reason, plan, y/N)",
            footerPanes: [.subscriptions], inFooter: true),
        .init(
            keys: [.character("c")], label: "c", action: .consume,
            description: "answer a refund request for the selected transaction (consumption: form, plan, y/N)",
            footerPanes: [.notifications, .purchases], inFooter: true),
        .init(
            keys: [.character("a")], label: "a", action: .setToken,
            description: "set the selected looked-up purchase's app account token (UUID, plan, y/N)", footerPanes: [.purchases],
            inFooter: false),
        .init(keys: [.character("?"), .function(1)], label: "?", action: .help, description: "help", footerPanes: [], inFooter: true),
        .init(keys: [.character("q"), .control("c")], label: "q", action: .quit, description: "quit", footerPanes: [], inFooter: true),
    ]

    /// The action bound to `event`, if any.
    public static func action(for event: KeyEvent) -> Action? {
        bindings.first { $0.keys.contains(event) }?.action
    }

    /// The footer hints for a pane.
    public static func hints(for pane: Pane, actions: Bool = true) -> [(key: String, label: String)] {
        // Help and quit first, so they survive on narrow screens.
        let shown = bindings.filter {
            $0.inFooter && ($0.footerPanes.isEmpty || $0.footerPanes.contains(pane)) && (actions || !$0.action.writes)
        }
        let first = shown.filter { $0.action == .help || $0.action == .quit }
        let rest = shown.filter { $0.action != .help && $0.action != .quit }
        return (first + rest).map { ($0.label, $0.hint) }
    }

    /// The key list as a Markdown table (for docs/dashboard.md), then the Customer view's.
    public static var markdown: String {
        var lines = ["| key | action |", "| --- | --- |"]
        for b in bindings { lines.append("| `\(b.label)` | \(b.description) |") }
        lines += ["", "In the Customer view (`u`, or `l`'s answer):", "", "| key | action |", "| --- | --- |"]
        for b in customerBindings { lines.append("| `\(b.label)` | \(b.description) |") }
        return lines.joined(separator: "\n")
    }

    /// The Customer view's keys: they drive its key handling and its `?` page.
    public static let customerBindings: [KeyBinding] = [
        .init(keys: [.up, .character("k")], label: "↑/k", action: .up, description: "previous event", footerPanes: [], inFooter: false),
        .init(keys: [.down, .character("j")], label: "↓/j", action: .down, description: "next event", footerPanes: [], inFooter: false),
        .init(keys: [.pageUp, .control("b")], label: "PgUp", action: .pageUp, description: "page up", footerPanes: [], inFooter: false),
        .init(keys: [.pageDown, .control("f")], label: "PgDn", action: .pageDown, description: "page down", footerPanes: [], inFooter: false),
        .init(keys: [.character("g"), .home], label: "g", action: .top, description: "first event", footerPanes: [], inFooter: false),
        .init(keys: [.character("G"), .end], label: "G", action: .bottom, description: "last event", footerPanes: [], inFooter: false),
        .init(
            keys: [.left, .character("h")], label: "←/h", action: .columnLeft, description: "scroll the timeline left (the time stays)",
            footerPanes: [], inFooter: false),
        .init(
            keys: [.right], label: "→", action: .columnRight, description: "scroll the timeline right, for rows wider than the view", footerPanes: [],
            inFooter: false),
        .init(
            keys: [.enter], label: "Enter", action: .open, description: "the selected event's sources: what each sent, and its trust",
            footerPanes: [], inFooter: false),
        .init(
            keys: [.character("x")], label: "x", action: .extend, description: "extend the event's subscription's renewal date (days, reason, plan, y/N)",
            footerPanes: [], inFooter: false),
        .init(
            keys: [.character("c")], label: "c", action: .consume, description: "answer a refund request for the event's transaction (form, plan, y/N)",
            footerPanes: [], inFooter: false),
        .init(
            keys: [.character("a")], label: "a", action: .setToken, description: "set the event's purchase's app account token (UUID, plan, y/N)",
            footerPanes: [], inFooter: false),
        .init(
            keys: [.character("e")], label: "e", action: .export, description: "export the customer's story as JSON or CSV, mode 600", footerPanes: [],
            inFooter: false),
        .init(keys: [.character("y")], label: "y", action: .copy, description: "copy the event's transaction ID (OSC 52)", footerPanes: [], inFooter: false),
        .init(keys: [.character("?"), .function(1)], label: "?", action: .help, description: "help", footerPanes: [], inFooter: false),
        .init(keys: [.escape, .character("q")], label: "Esc/q", action: .back, description: "back to the dashboard", footerPanes: [], inFooter: false),
        .init(keys: [.control("c")], label: "Ctrl-C", action: .quit, description: "quit", footerPanes: [], inFooter: false),
    ]

    /// The Customer view's action for `event`, if any.
    public static func customerAction(for event: KeyEvent) -> Action? {
        customerBindings.first { $0.keys.contains(event) }?.action
    }

    /// The keys the `?` page lists for `pane`: what works there (the footer's panes) and what
    /// works everywhere.
    public static func helpBindings(for pane: Pane) -> (thisView: [KeyBinding], everywhere: [KeyBinding]) {
        (bindings.filter { $0.footerPanes.contains(pane) }, bindings.filter(\.footerPanes.isEmpty))
    }
}

extension DashboardState {
    /// Why `action` cannot work in this session, in words that say what to do; nil when it can.
    public func unavailableReason(_ action: Action) -> String? {
        switch action {
        case .extend, .consume, .setToken:
            guard !actionsAvailable else { return nil }
            return actionsUnavailableReason ?? "writes need API credentials (--issuer-id, --key-id, --private-key-file, --bundle-id)"
        case .lookUp, .lookUpReceipt, .customer:
            guard !lookupAvailable else { return nil }
            return lookupSetupProblem ?? "needs an In-App Purchase key: --issuer-id, --key-id, --private-key-file, --bundle-id"
        case .verify, .verifyAll, .resume:
            return onlineAvailable ? nil : "a follower (--follow) only reads: verify where the store is written"
        default:
            return nil
        }
    }
}
