import AppStoreAPI
import AuditTrail
import Foundation
import ReceiptCore
import ReceiptRendering
import TerminalUI
import UntrustedText

/// Notifications per minute over the last hour, bucketed by the minute each was received
/// (``NotificationRow/receivedAt``, the store's time): what an on-call person looks at first.
public struct NotificationTraffic: Sendable, Hashable {
    /// Minutes shown: the last hour.
    public static let minutes = 60

    /// Epoch minute → notifications received in it.
    private(set) var perMinute: [Int: Int] = [:]

    public init() {}

    static func minute(_ time: Date) -> Int { Int((time.timeIntervalSince1970 / 60).rounded(.down)) }

    /// Counts one notification received at `time`.
    public mutating func count(receivedAt time: Date) {
        let minute = Self.minute(time)
        perMinute[minute, default: 0] += 1
        // Minutes more than two hours before the newest are no use to anyone: forgotten.
        if perMinute.count > Self.minutes * 3, let newest = perMinute.keys.max() {
            perMinute = perMinute.filter { $0.key > newest - Self.minutes * 2 }
        }
    }

    /// The last ``minutes`` minutes' counts, oldest first; the last is the minute `now` is in
    /// (so it is still filling). Rows received after `now` (a clock ahead of ours) are not
    /// counted.
    public func buckets(endingAt now: Date) -> [Int] {
        let last = Self.minute(now)
        return (0..<Self.minutes).map { perMinute[last - Self.minutes + 1 + $0] ?? 0 }
    }
}

/// What the on-call view holds beside the notifications: the traffic, forwarding's counts and
/// the Notifications pane's filter.
public struct OnCallState: Sendable {
    public var traffic = NotificationTraffic()
    /// Each forwarding target's deliveries, as last read from the audit trail (nil: not read,
    /// as when nothing follows a store).
    public var forwarding: [ForwardTargetCounts]?
    /// The refund requests not answered yet, as last read (nil: not read).
    public var consumption: ConsumptionOpenSummary?
    /// `f` in Notifications: the filter as typed, and as read.
    public internal(set) var filterText = ""
    public internal(set) var filter = NotificationRowFilter.everything
    /// Indices into ``DashboardState/notifications`` the filter lets through, in arrival
    /// order; nil while no filter is set (every one is listed).
    var matches: [Int]?
    /// The widest product id received, in columns (the Product column's want).
    var widestProduct = 0

    public init() {}
}

extension DashboardState {
    /// How many notifications the pane lists (those the filter lets through).
    public var listedNotificationCount: Int { onCall.matches?.count ?? notifications.count }

    /// The index in ``notifications`` of the row listed at `position`.
    public func listedNotificationIndex(at position: Int) -> Int? {
        guard let matches = onCall.matches else { return notifications.indices.contains(position) ? position : nil }
        return matches.indices.contains(position) ? matches[position] : nil
    }

    /// Takes a notification stored new at `index` into the traffic, the filter's list and the
    /// Product column's width.
    mutating func countOnCall(_ index: Int) {
        let row = notifications[index].row
        onCall.traffic.count(receivedAt: row.receivedAt)
        onCall.widestProduct = max(onCall.widestProduct, TextWidth.of(SafeText.escaped(row.productID ?? "")))
        if onCall.matches != nil, onCall.filter.matches(row) { onCall.matches?.append(index) }
    }

    /// Lists again what the filter lets through (after it changed, or rows were dropped).
    mutating func relistNotifications() {
        onCall.matches = onCall.filter.terms.isEmpty ? nil : notifications.indices.filter { onCall.filter.matches(notifications[$0].row) }
    }

    /// Reads and applies a notification filter; nil when it applied, else why it could not be
    /// read (the filter in force stays). The selection goes to the newest row listed.
    mutating func applyNotificationFilter(_ text: String) -> String? {
        let filter: NotificationRowFilter
        do {
            filter = try NotificationRowFilter(text)
        } catch {
            return error.reason
        }
        onCall.filterText = text.trimmingCharacters(in: .whitespaces)
        onCall.filter = filter
        relistNotifications()
        var s = ScrollState(selected: max(0, listedNotificationCount - 1))
        s.reveal(visible: max(1, notificationRows), count: listedNotificationCount)
        scroll[.notifications] = s
        return nil
    }

    mutating func clearNotificationFilter() {
        _ = applyNotificationFilter("")
    }
}

/// The on-call lines of the Notifications band: the hour's traffic as a sparkline, and each
/// forwarding target's deliveries. Pure: text and colour for a width.
public enum OnCallGlance {
    /// Eight levels, the busiest minute the full block; a minute with none is `·`, so the
    /// hour's extent shows when it is quiet.
    public static func sparkline(_ counts: [Int]) -> String {
        LiveMetrics.sparkline(counts).replacingOccurrences(of: " ", with: "·")
    }

    /// `▁▂█…  peak 12/min · 184 in the last hour` (60 minutes, the newest on the right); on a
    /// narrow pane `… peak 12 · 184/h`.
    public static func trafficLine(_ buckets: [Int], width: Int) -> String {
        let peak = buckets.max() ?? 0
        let total = buckets.reduce(0, +)
        let line = sparkline(buckets)
        let wide = "notifications/min, last hour \(line) peak \(peak)/min · \(total) in the hour"
        if TextWidth.of(wide) <= width { return wide }
        let labelled = "\(line) peak \(peak)/min · \(total) in the hour"
        if TextWidth.of(labelled) <= width { return labelled }
        return "\(line) peak \(peak) · \(total)/h"
    }

    /// One line per target (`→ URL  delivered 120 · pending 2 (oldest 3m 05s) · dead 1`), at
    /// most `rows`; targets beyond them summed on the last line. Dead or disabled is an error,
    /// a delivery pending over a minute a warning.
    public static func forwardLines(_ targets: [ForwardTargetCounts], now: Date, width: Int, rows: Int) -> [(String, ColorRole)] {
        guard rows > 0 else { return [] }
        guard !targets.isEmpty else { return [("forwarding: no target registered (receive --forward URL registers one)", .muted)] }
        let shown = targets.count <= rows ? targets : Array(targets.prefix(rows - 1))
        let urlWidth = min(shown.map { TextWidth.of(SafeText.escaped($0.target)) }.max() ?? 0, max(16, width / 2))
        var lines = shown.map { t -> (String, ColorRole) in
            let said = counts(t.delivered, t.pending, t.dead, oldest: t.oldestPendingQueuedAt, now: now)
                + (t.disabledAt.map { " · disabled since \(AppleDate.iso8601($0).dropFirst(11).prefix(8))" } ?? "")
            let url = TextWidth.pad(TextWidth.truncateMiddle(SafeText.escaped(t.target), to: urlWidth), to: urlWidth)
            return ("→ \(url)  \(said)", role(t, now: now))
        }
        if shown.count < targets.count {
            let rest = targets.dropFirst(shown.count)
            let oldest = rest.compactMap(\.oldestPendingQueuedAt).min()
            let sum = ForwardTargetCounts(
                target: "", delivered: rest.map(\.delivered).reduce(0, +), pending: rest.map(\.pending).reduce(0, +),
                dead: rest.map(\.dead).reduce(0, +), oldestPendingQueuedAt: oldest, disabledAt: rest.compactMap(\.disabledAt).min())
            lines.append(("→ \(rest.count) more targets: \(counts(sum.delivered, sum.pending, sum.dead, oldest: oldest, now: now))", role(sum, now: now)))
        }
        return lines
    }

    /// `refund requests: 3 open · nearest deadline in 2h 10m (14:05:00)`: a warning under 2
    /// hours, an error once one is past; muted when none is open.
    public static func consumptionLine(_ open: ConsumptionOpenSummary, now: Date) -> (String, ColorRole) {
        guard open.open > 0, let deadline = open.nearestDeadline else { return ("refund requests: none open", .muted) }
        let left = deadline.timeIntervalSince(now)
        let clock = AppleDate.iso8601(deadline).dropFirst(11).prefix(8)
        let when = left > 0 ? "nearest deadline in \(DurationWords.short(left)) (\(clock))" : "a deadline passed at \(clock)"
        let role: ColorRole = left <= 0 ? .error : left < 2 * 3600 ? .warning : .info
        return ("refund requests: \(open.open) open · \(when)", role)
    }

    /// Pending this long is late: the line turns to a warning.
    static let latePending: TimeInterval = 60

    static func counts(_ delivered: Int, _ pending: Int, _ dead: Int, oldest: Date?, now: Date) -> String {
        let age = oldest.map { " (oldest \(DurationWords.short(max(0, now.timeIntervalSince($0)))))" } ?? ""
        return "delivered \(delivered) · pending \(pending)\(age) · dead \(dead)"
    }

    static func role(_ t: ForwardTargetCounts, now: Date) -> ColorRole {
        if t.dead > 0 || t.disabledAt != nil { return .error }
        if let oldest = t.oldestPendingQueuedAt, now.timeIntervalSince(oldest) > latePending { return .warning }
        return .ok
    }

    /// The Product column's width in a table `inner` columns wide whose other fixed columns
    /// take `fixed` (separators included): the widest product where it fits, and at most half
    /// of what it shares with the Notification column, which keeps at least 24.
    public static func productWidth(widest: Int, inner: Int, fixed: Int) -> Int {
        let shared = max(0, inner - fixed)
        let cap = max(12, min(shared - 24 - 1, shared / 2))
        return min(max(widest, 7), cap)
    }
}
