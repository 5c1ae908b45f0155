import AppStoreAPI
import AuditTrail
import Foundation
import PlainWords
import ReceiptRendering
import ReceiptCore
import ReceiptTrust
import TerminalUI
import UntrustedText

/// One App Store Server Notification as the Notifications pane shows it: the listed row (type
/// and subtype explained, product, transaction, verdict, deliveries) and the signed payload,
/// kept so `Enter` can show it decoded with every trust step.
public struct NotificationEntry: Sendable, Hashable {
    public var row: NotificationRow
    /// The `signedPayload` JWS (nil for a V1 notification, whose body is never kept).
    public var signedPayload: String?
    /// Why a `test` or `unverifiable` one was accepted (the trust report's headline).
    public var reason: String?

    public init(row: NotificationRow, signedPayload: String?, reason: String? = nil) {
        self.row = row
        self.signedPayload = signedPayload
        self.reason = reason
    }
}

/// What a notification source (an embedded receiver, or a receiver's database followed
/// read-only) reports to the dashboard.
public enum NotificationFeedEvent: Sendable, Hashable {
    /// A notification stored, or stored again (a redelivery: the same UUID with more deliveries).
    case received(NotificationEntry)
    /// Requests the receiver refused (400, 403, 413), with their reason and peer: one refusal
    /// row of the store, which stands for `count` refusals of its class, address and minute.
    /// With its `sample` key (the row's `sample_key`), a row reported again as its count grows
    /// adds only the growth.
    case refused(at: Date, status: Int, reason: String, peer: String?, count: Int = 1, sample: String? = nil, kind: String? = nil)
    /// Reading the source failed: shown in the Log pane and the status line, never dropped.
    case failed(String)
    /// Something worth a Log line.
    case note(String)
    /// Where notifications come from, for the pane's title: the receiver's URL, or the
    /// database followed.
    case source(String)
    /// The newest heartbeat of the receivers writing the followed store.
    case receiverBeat(Date)
    /// Each forwarding target's deliveries, read from the audit trail every few seconds.
    case forwarding([ForwardTargetCounts])
    /// The refund requests (CONSUMPTION_REQUEST) not answered yet, read with forwarding's counts.
    case consumption(ConsumptionOpenSummary)
}

/// A source of notifications the UI loop polls on each pass (the executable implements it
/// with the NotificationReceiver and AuditStore modules, so the dashboard stays free of SQL and sockets).
public protocol NotificationFeed: Sendable {
    /// What arrived since the last poll.
    func poll() async -> [NotificationFeedEvent]
}

/// A notification's payload decoded and judged for the `Enter` overlay: the envelope's trust
/// report, and each nested token's own report (every step, not only the summary).
public struct NotificationDetail: Sendable {
    public var judged: JudgedInput
    public var nestedReports: [(field: String, report: TrustReport)]

    public init(judged: JudgedInput, nestedReports: [(field: String, report: TrustReport)]) {
        self.judged = judged
        self.nestedReports = nestedReports
    }
}

/// Live notification metrics for the on-call view: arrivals per second (by type), refusals by
/// status, redeliveries, and the silence watch (`--expect-every`).
public struct NotificationMetrics: Sendable {
    /// Seconds over which per-type rates are averaged.
    public static let rateWindow = 60

    private(set) var buckets: [Int: Int] = [:]  // epoch second → arrivals
    private var recentTypes: [(second: Int, type: String)] = []
    public private(set) var received = 0
    public private(set) var redeliveries = 0
    public private(set) var byType: [String: Int] = [:]
    public private(set) var refusals: [Int: Int] = [:]
    /// Refusals by reason (the class the receiver counts on /metrics: `not-json`, `signature`,
    /// …; the HTTP status where a row has none).
    public private(set) var refusalsByReason: [String: Int] = [:]
    /// Refusal rows counted so far, by sample key: the count taken and the row's minute.
    private var sampleCounts: [String: (count: Int, at: Date)] = [:]
    /// When the last notification arrived (a redelivery counts: Apple is talking to us).
    public private(set) var lastArrival: Date?

    public init() {}

    public var refusalCount: Int { refusals.values.reduce(0, +) }

    /// Counts an arrival at `time` (the moment the dashboard learnt of it) in the rates; the
    /// silence clock is ``heard(at:)``'s.
    mutating func arrived(type: String?, redelivery: Bool, at time: Date) {
        let second = Int(time.timeIntervalSince1970.rounded(.down))
        buckets[second, default: 0] += 1
        if redelivery {
            redeliveries += 1
        } else {
            received += 1
            byType[type ?? "?", default: 0] += 1
        }
        recentTypes.append((second, type ?? "?"))
        trim(now: second)
    }

    /// Apple was last heard from at `time` (a row's received_at, or when a redelivery was seen),
    /// if that is later than what was known.
    mutating func heard(at time: Date) {
        if lastArrival.map({ time > $0 }) ?? true { lastArrival = time }
    }

    /// Counts a refusal row: `count` refusals (one row of the store stands for all of its class,
    /// address and minute); a row seen before (by `sample` key) adds only what it grew by.
    /// Returns whether the row is new.
    @discardableResult
    mutating func refused(status: Int, at time: Date, count: Int = 1, sample: String? = nil, kind: String? = nil) -> Bool {
        let count = max(1, count)
        var seen = 0
        if let sample {
            seen = sampleCounts[sample]?.count ?? 0
            sampleCounts[sample] = (max(seen, count), time)
            // Rows of minutes long past are not reported again: forget them.
            if sampleCounts.count > 4096 {
                sampleCounts = sampleCounts.filter { $0.value.at > time - 180 }
            }
        }
        refusals[status, default: 0] += max(0, count - seen)
        refusalsByReason[kind ?? String(status), default: 0] += max(0, count - seen)
        trim(now: Int(time.timeIntervalSince1970.rounded(.down)))
        return seen == 0
    }

    private mutating func trim(now second: Int) {
        let oldest = second - LiveMetrics.window
        if buckets.count > LiveMetrics.window * 2 { buckets = buckets.filter { $0.key > oldest } }
        let start = second - Self.rateWindow
        if let first = recentTypes.firstIndex(where: { $0.second > start }), first > 0 { recentTypes.removeFirst(first) }
        if recentTypes.count > 200_000 { recentTypes.removeFirst(recentTypes.count - 100_000) }
    }

    /// Arrivals per second for the `seconds` seconds ending at `end` (oldest first).
    public func throughput(endingAt end: Date, seconds: Int) -> [Int] {
        let last = Int(end.timeIntervalSince1970.rounded(.down))
        return (0..<max(0, seconds)).map { buckets[last - seconds + 1 + $0] ?? 0 }
    }

    /// Seconds over which a type's per-second rate is read: a burst that stopped stops
    /// reading per second within them.
    public static let burstWindow = 10

    /// Arrivals by type over the last `window` seconds ending at `end` (``rateWindow`` by
    /// default), busiest first (ties by name).
    public func countsByType(endingAt end: Date, window: Int = rateWindow) -> [(type: String, count: Int)] {
        let last = Int(end.timeIntervalSince1970.rounded(.down))
        var counts: [String: Int] = [:]
        for entry in recentTypes where entry.second > last - window && entry.second <= last {
            counts[entry.type, default: 0] += 1
        }
        return counts.map { ($0.key, $0.value) }.sorted { $0.count != $1.count ? $0.count > $1.count : $0.type < $1.type }
    }

    /// The busiest types' rates at `end`, in words: per second over the last ``burstWindow``
    /// seconds when at least one a second, else the count of the last minute (`12/min`). In
    /// silence they fall to zero: per second within ten seconds, per minute within a minute.
    public func typeRates(endingAt end: Date, limit: Int = 3) -> [String] {
        let recent = Dictionary(uniqueKeysWithValues: countsByType(endingAt: end, window: Self.burstWindow).map { ($0.type, $0.count) })
        let minute = countsByType(endingAt: end)
        let ranked = minute.map { entry -> (type: String, perSecond: Double, count: Int) in
            let burst = recent[entry.type] ?? 0
            return (entry.type, burst >= Self.burstWindow ? Double(burst) / Double(Self.burstWindow) : 0, entry.count)
        }.sorted { ($0.perSecond, $0.count) != ($1.perSecond, $1.count) ? ($0.perSecond, $0.count) > ($1.perSecond, $1.count) : $0.type < $1.type }
        return ranked.prefix(limit).map { $0.perSecond > 0 ? "\($0.type) \(String(format: "%.1f/s", $0.perSecond))" : "\($0.type) \($0.count)/min" }
    }
}

extension DashboardState {
    /// The most notifications kept on screen (the oldest go first; the store keeps them all).
    public static let notificationLimit = 20_000

    /// The panes on screen: the Notifications pane only while notifications are followed.
    public var visiblePanes: [Pane] {
        if foldsReceiptPanes { return [.notifications, .log] }
        return notificationsShown ? Pane.allCases : Pane.allCases.filter { $0 != .notifications }
    }

    /// On call with nothing loaded, the four receipt panes would be empty: they fold away and
    /// the Notifications band takes their place, until an input is loaded.
    public var foldsReceiptPanes: Bool { notificationsShown && items.isEmpty }

    /// The layout for the state at `width`×`height`.
    public func layout(width: Int, height: Int) -> DashboardLayout? {
        DashboardLayout(width: width, height: height, notifications: notificationsShown, receiptPanes: !foldsReceiptPanes)
    }

    /// Moves the focus off a pane that is folded away.
    mutating func keepFocusVisible() {
        if !visiblePanes.contains(focus) { focus = visiblePanes.first ?? .receipts }
    }

    /// Applies what a notification source reported; keeps the selection on the newest row when
    /// it was there (a live tail), and otherwise where it was.
    public mutating func apply(_ events: [NotificationFeedEvent], at time: Date) {
        guard !events.isEmpty else { return }
        var s = scroll[.notifications] ?? ScrollState()
        let following = listedNotificationCount == 0 || s.selected >= listedNotificationCount - 1
        for event in events {
            switch event {
            case .received(let entry):
                if !notificationsShown {
                    // A followed database that starts receiving notifications: the pane appears.
                    notificationsShown = true
                    _ = handle(.resize(width: width, height: height))
                }
                let uuid = entry.row.notificationUUID
                if let index = notificationIndex[uuid] {
                    let before = notifications[index].row.deliveries
                    notifications[index] = entry
                    if entry.row.deliveries > before {
                        // The row says when it was first received, not when again: seen now.
                        notificationMetrics.arrived(type: entry.row.notificationType, redelivery: true, at: time)
                        notificationMetrics.heard(at: time)
                        addLog(
                            "notification \(uuid) delivered again (\(CountNoun.delivery.count(entry.row.deliveries))): \(entry.row.notificationType ?? "?")",
                            role: .warning, at: time)
                    }
                } else {
                    notificationIndex[uuid] = notifications.count
                    notifications.append(entry)
                    countOnCall(notifications.count - 1)
                    // The silence counts from the row's received_at; a row received before the
                    // dashboard began watching (already in a followed database) is listed but
                    // is no arrival now: the rates would read a backlog as a burst.
                    notificationMetrics.heard(at: entry.row.receivedAt)
                    if let started = notificationWatchStarted, entry.row.receivedAt < started { continue }
                    notificationMetrics.arrived(type: entry.row.notificationType, redelivery: false, at: time)
                    if entry.row.deliveries > 1 {
                        // First seen by a follower after Apple had already delivered it again.
                        for _ in 1..<entry.row.deliveries {
                            notificationMetrics.arrived(type: entry.row.notificationType, redelivery: true, at: time)
                        }
                    }
                }
            case .refused(let at, let status, let reason, let peer, let count, let sample, let kind):
                guard notificationMetrics.refused(status: status, at: at, count: count, sample: sample, kind: kind) else { continue }
                addLog(
                    "notification refused (\(kind.map { "\($0), " } ?? "")\(status)) from \(peer ?? "?"): \(reason)" + (count > 1 ? " (×\(count) that minute)" : ""),
                    role: .error, at: time)
            case .failed(let reason):
                addLog("notifications: \(reason)", role: .error, at: time)
                message = ("notifications: \(reason)", .error)
            case .note(let text):
                addLog(text, role: .info, at: time)
            case .source(let text):
                notificationSource = text
                addLog("notifications: \(text)", role: .info, at: time)
            case .receiverBeat(let at):
                let wasDown = receiverDownSince
                if receiverLastBeat.map({ at > $0 }) ?? true { receiverLastBeat = at }
                if let since = wasDown, receiverDownSince == nil {
                    addLog("the receiver is back (it was down since \(AppleDate.iso8601(since).dropFirst(11).prefix(8)))", role: .info, at: time)
                }
            case .forwarding(let targets):
                onCall.forwarding = targets
            case .consumption(let open):
                onCall.consumption = open
            }
        }
        if notifications.count > Self.notificationLimit {
            let drop = notifications.count - Self.notificationLimit
            notifications.removeFirst(drop)
            notificationIndex = Dictionary(uniqueKeysWithValues: notifications.enumerated().map { ($1.row.notificationUUID, $0) })
            if onCall.matches == nil {
                s.selected = max(0, s.selected - drop)
            } else {
                let before = onCall.matches?.count ?? 0
                relistNotifications()
                s.selected = max(0, s.selected - (before - listedNotificationCount))
            }
        }
        if following { s.selected = max(0, listedNotificationCount - 1) }
        s.reveal(visible: max(1, notificationRows), count: listedNotificationCount)
        scroll[.notifications] = s
    }

    /// The selected notification, if the pane lists one.
    public var selectedNotification: NotificationEntry? {
        listedNotificationIndex(at: scroll[.notifications]?.selected ?? 0).map { notifications[$0] }
    }

    /// How long without a heartbeat means the receiver is down: three of its beats (a
    /// receiver beats every 10 s).
    public static let receiverDownAfter: TimeInterval = 30

    /// When the receivers writing the followed store were last heard from, once that is
    /// ``receiverDownAfter`` ago: "receiver down since …", which is not "no notifications for
    /// …". Nil while one beats, or when none ever has.
    public var receiverDownSince: Date? {
        guard let beat = receiverLastBeat, wallClock.timeIntervalSince(beat) > Self.receiverDownAfter else { return nil }
        return beat
    }

    /// How long no notification has arrived, when that is longer than `--expect-every` (nil
    /// while the receiver is down: that is said instead).
    public var notificationSilence: TimeInterval? {
        guard let expected = expectNotificationEvery, notificationsShown, receiverDownSince == nil else { return nil }
        let since = notificationMetrics.lastArrival ?? notificationWatchStarted ?? wallClock
        let silent = wallClock.timeIntervalSince(since)
        return silent > expected ? silent : nil
    }

    /// Rows of the Notifications table that fit (header and border excluded).
    var notificationRows: Int {
        max(1, (layout(width: width, height: height)?.panes[.notifications]?.height ?? 4) - 4)
    }
}

/// A duration in words for banners: `45s`, `5m 03s`, `2h 10m`.
enum DurationWords {
    static func short(_ seconds: TimeInterval) -> String {
        let total = Int(seconds.rounded(.down))
        if total < 60 { return "\(total)s" }
        if total < 3600 { return String(format: "%dm %02ds", total / 60, total % 60) }
        return String(format: "%dh %02dm", total / 3600, (total % 3600) / 60)
    }
}
