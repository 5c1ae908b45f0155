import Foundation

/// A downstream registered in the trail (`receive --forward URL` registers its targets when it
/// starts). Whichever process stores a notification (a POST to any receiver, `notifications
/// --reconcile --ingest`, the scheduled backfill) queues it, in the storing transaction, for
/// every registered target whose types match: forwarding does not depend on who stored it.
public struct ForwardTargetRecord: Sendable, Hashable {
    /// The downstream URL, as given (https, or plain http on loopback; no user, password or
    /// query: secrets go in `--forward-header-file`).
    public var url: String
    /// Notification types forwarded, upper case; empty forwards every type.
    public var types: Set<String>
    public var registeredAt: Date
    /// When forwarding to it stopped (a `410 Gone`), nil while it is enabled. Its deliveries
    /// keep being queued and wait until `notifications --outbox --enable URL`.
    public var disabledAt: Date?
    /// Why, in words.
    public var disabledReason: String?

    public init(url: String, types: Set<String> = [], registeredAt: Date, disabledAt: Date? = nil, disabledReason: String? = nil) {
        self.url = url
        self.types = Set(types.map { $0.uppercased() })
        self.registeredAt = registeredAt
        self.disabledAt = disabledAt
        self.disabledReason = disabledReason
    }

    /// The types as stored: `,DID_RENEW,TEST,`, or empty for every type (a notification of type
    /// T matches where the column is empty or holds `,T,`).
    package static func storedTypes(_ types: Set<String>) -> String {
        types.isEmpty ? "" : "," + types.map { $0.uppercased() }.sorted().joined(separator: ",") + ","
    }

    package static func types(stored: String) -> Set<String> {
        Set(stored.split(separator: ",").map(String.init))
    }
}

/// One delivery of one notification to one downstream: a row of the outbox
/// (`forward_delivery`), deduplicated on notification and target.
public struct ForwardDelivery: Sendable, Hashable {
    /// `pending` (waiting or being tried), `delivered` (a 2xx came back), `dead` (given up after
    /// the retry window).
    public enum State: String, Sendable, Hashable, CaseIterable {
        case pending, delivered, dead
    }

    public var id: Int64
    public var notificationUUID: String
    public var target: String
    /// What keeps deliveries in order: the original transaction id, else the notification's UUID.
    public var orderKey: String
    public var state: State
    public var attempts: Int
    public var queuedAt: Date
    public var nextAttemptAt: Date
    public var completedAt: Date?
    /// The downstream's last HTTP status (nil when no answer came).
    public var lastStatus: Int?
    /// Why the last attempt failed, in words (never the downstream's body as it came).
    public var lastError: String?
    /// The notification's type and subtype as stored (nil where it has none, or is no longer
    /// stored): read with the listing (``ForwardOutbox/outbox(state:limit:)``), not by a claim.
    public var notificationType: String?
    public var subtype: String?

    public init(
        id: Int64, notificationUUID: String, target: String, orderKey: String, state: State, attempts: Int, queuedAt: Date,
        nextAttemptAt: Date, completedAt: Date? = nil, lastStatus: Int? = nil, lastError: String? = nil, notificationType: String? = nil,
        subtype: String? = nil
    ) {
        self.id = id
        self.notificationUUID = notificationUUID
        self.target = target
        self.orderKey = orderKey
        self.state = state
        self.attempts = attempts
        self.queuedAt = queuedAt
        self.nextAttemptAt = nextAttemptAt
        self.completedAt = completedAt
        self.lastStatus = lastStatus
        self.lastError = lastError
        self.notificationType = notificationType
        self.subtype = subtype
    }
}

/// How one attempt of a claimed delivery ended, to be recorded.
public struct ForwardAttemptResult: Sendable, Hashable {
    public enum Next: Sendable, Hashable {
        /// A 2xx came back: done.
        case delivered
        /// Try again at this time.
        case retry(at: Date)
        /// Given up (the retry window is over): dead-lettered.
        case dead
    }

    public var id: Int64
    public var next: Next
    public var at: Date
    public var status: Int?
    public var error: String?

    public init(id: Int64, next: Next, at: Date, status: Int?, error: String?) {
        self.id = id
        self.next = next
        self.at = at
        self.status = status
        self.error = error
    }

    /// The row's new state, next attempt (nil: unchanged) and completion time (epoch seconds).
    package var stored: (state: ForwardDelivery.State, next: Double?, completed: Double?) {
        switch next {
        case .delivered: (.delivered, nil, at.timeIntervalSince1970)
        case .retry(let at): (.pending, at.timeIntervalSince1970, nil)
        case .dead: (.dead, nil, at.timeIntervalSince1970)
        }
    }
}

/// The outbox as the forwarder and `notifications --outbox|--replay` use it. Several receivers
/// on one PostgreSQL share it: a claim takes rows no other claim holds (`FOR UPDATE SKIP
/// LOCKED`) and leases them, so each delivery is made by one of them; a lease left by a process
/// that died expires and the row is claimed again (at least once).
public protocol ForwardOutbox: Sendable {
    /// Registers these targets (or updates their types): from now on every notification stored
    /// in this trail, by any process, is queued for them. A disabled target stays disabled.
    func registerForwardTargets(_ urls: [String], types: Set<String>, at: Date) async throws
    /// The registered targets, by URL.
    func forwardTargets() async throws -> [ForwardTargetRecord]
    /// Stops claims for `url` (its deliveries wait, and new ones are still queued) until
    /// ``enableForwardTarget(_:)``.
    func disableForwardTarget(_ url: String, at: Date, reason: String) async throws
    /// Lets `url` be forwarded to again. False when it is not registered.
    func enableForwardTarget(_ url: String) async throws -> Bool
    /// Leases at most `limit` pending deliveries to `targets` that are due at `now`, each the
    /// oldest pending one of its target and original transaction (deliveries go out in order),
    /// with the notification each carries; a disabled target's are passed by. The lease ends at
    /// `leaseUntil`.
    func claimDeliveries(targets: [String], now: Date, leaseUntil: Date, limit: Int) async throws
        -> [(delivery: ForwardDelivery, notification: StoredNotification)]
    /// Records how claimed deliveries ended, in one transaction.
    func recordDeliveryResults(_ results: [ForwardAttemptResult]) async throws
    /// The deliveries in `state` (every state when nil), newest first, at most `limit`, each
    /// with its notification's type and subtype.
    func outbox(state: ForwardDelivery.State?, limit: Int) async throws -> [ForwardDelivery]
    /// How many deliveries are pending, and when the oldest of them was queued (read through
    /// the pending rows' partial index: the forwarder's gauges ask it every few seconds, so it
    /// must not grow with the delivered history).
    func pendingDeliveries() async throws -> (count: Int, oldestQueuedAt: Date?)
    /// How many deliveries ended, by state (`delivered`, `dead`).
    func finishedDeliveries() async throws -> [ForwardDelivery.State: Int]
    /// Each target's deliveries by state and its oldest pending one (the on-call view): every
    /// registered target, and every other URL deliveries were queued for (`--replay --to`), by
    /// URL. It counts the whole outbox: asked every few seconds, not per frame.
    func deliveriesByTarget() async throws -> [ForwardTargetCounts]
    /// Queues the stored notifications with these UUIDs (or, with nil, every one received at or
    /// after `since`) again, due at `now`: for each of `targets`, or with nil for every
    /// registered target whose types match. A delivered or dead row becomes pending with its
    /// attempts reset. Returns how many deliveries were queued (rows made or made pending again),
    /// and the UUIDs asked for that the store does not hold.
    func requeueDeliveries(notificationUUIDs: [String]?, since: Date?, targets: [String]?, now: Date) async throws
        -> (queued: Int, unknown: [String])
}

extension ForwardOutbox {
    /// Pending deliveries and the queue time of the oldest of them, and the ended ones.
    public func outboxSummary() async throws -> ForwardOutboxSummary {
        let pending = try await pendingDeliveries()
        let finished = try await finishedDeliveries()
        return ForwardOutboxSummary(
            pending: pending.count, oldestPendingQueuedAt: pending.oldestQueuedAt, delivered: finished[.delivered] ?? 0,
            dead: finished[.dead] ?? 0)
    }
}

/// One forwarding target's deliveries in numbers: whether deliveries go out, and to which
/// target they do not.
public struct ForwardTargetCounts: Sendable, Hashable {
    public var target: String
    public var delivered: Int
    public var pending: Int
    public var dead: Int
    /// When the oldest pending delivery was queued (nil: none pending).
    public var oldestPendingQueuedAt: Date?
    /// When forwarding to it was disabled (a `410 Gone`); nil while enabled, or when it is not
    /// registered (a `--replay --to` URL).
    public var disabledAt: Date?

    public init(target: String, delivered: Int = 0, pending: Int = 0, dead: Int = 0, oldestPendingQueuedAt: Date? = nil, disabledAt: Date? = nil) {
        self.target = target
        self.delivered = delivered
        self.pending = pending
        self.dead = dead
        self.oldestPendingQueuedAt = oldestPendingQueuedAt
        self.disabledAt = disabledAt
    }

    /// The counts from the outbox grouped by target and state (``countsSQL``'s rows), with
    /// every registered target (none queued yet: zeros), by URL.
    package static func combine(
        _ rows: [(target: String, state: String, count: Int, oldest: Double?)], targets: [ForwardTargetRecord]
    ) -> [ForwardTargetCounts] {
        var byTarget: [String: ForwardTargetCounts] = [:]
        for target in targets { byTarget[target.url] = ForwardTargetCounts(target: target.url, disabledAt: target.disabledAt) }
        for row in rows {
            var counts = byTarget[row.target] ?? ForwardTargetCounts(target: row.target)
            switch ForwardDelivery.State(rawValue: row.state) {
            case .delivered: counts.delivered += row.count
            case .dead: counts.dead += row.count
            case .pending:
                counts.pending += row.count
                counts.oldestPendingQueuedAt = row.oldest.map(Date.init(timeIntervalSince1970:))
            case nil: continue
            }
            byTarget[row.target] = counts
        }
        return byTarget.values.sorted { $0.target < $1.target }
    }

    /// The outbox grouped by target and state: target, state, count, oldest queue time.
    package static let countsSQL = "SELECT target, state, count(*), min(queued_at) FROM forward_delivery GROUP BY target, state"
}

/// The outbox in numbers (`notifications --outbox`'s footer).
public struct ForwardOutboxSummary: Sendable, Hashable {
    public var pending: Int
    public var oldestPendingQueuedAt: Date?
    public var delivered: Int
    public var dead: Int

    public init(pending: Int, oldestPendingQueuedAt: Date?, delivered: Int, dead: Int) {
        self.pending = pending
        self.oldestPendingQueuedAt = oldestPendingQueuedAt
        self.delivered = delivered
        self.dead = dead
    }
}

extension AuditSchema {
    /// v11: the forwarding outbox. One row per notification and downstream, queued in the
    /// transaction that stores the notification; the partial index serves the claim (the
    /// oldest pending row of each target and original transaction). And the scheduled jobs'
    /// last ends (``ScheduledJobs``).
    package static func v11(id: String, real: String, integer: String) -> [String] {
        [
            """
            CREATE TABLE forward_delivery (
                id \(id),
                notification_uuid TEXT NOT NULL,
                target TEXT NOT NULL,
                order_key TEXT NOT NULL,
                state TEXT NOT NULL,
                attempts \(integer) NOT NULL DEFAULT 0,
                queued_at \(real) NOT NULL,
                next_attempt_at \(real) NOT NULL,
                lease_until \(real),
                completed_at \(real),
                last_status \(integer),
                last_error TEXT
            )
            """,
            "CREATE UNIQUE INDEX forward_delivery_key ON forward_delivery(notification_uuid, target)",
            "CREATE INDEX forward_delivery_order ON forward_delivery(target, order_key, id) WHERE state = 'pending'",
            "CREATE INDEX forward_delivery_due ON forward_delivery(next_attempt_at) WHERE state = 'pending'",
            "CREATE INDEX forward_delivery_state ON forward_delivery(state, id)",
            jobTable(real: real),
        ]
    }

    /// v12: the registered forwarding targets (``ForwardTargetRecord``): every process that
    /// stores a notification queues it for them.
    package static func v12(real: String) -> [String] {
        [
            """
            CREATE TABLE forward_target (
                url TEXT PRIMARY KEY,
                types TEXT NOT NULL DEFAULT '',
                registered_at \(real) NOT NULL,
                disabled_at \(real),
                disabled_reason TEXT
            )
            """
        ]
    }

    /// Queues one notification stored new for every registered target whose types match, in
    /// the storing transaction. Parameters in order: the UUID, the order key, the queue time
    /// (twice), and the type as `,TYPE,` (`match` is the backend's substring test).
    package static func queueForRegisteredTargets(uuid: String, order: String, queued: String, queuedAgain: String, type: String, match: (String, String) -> String) -> String {
        """
        INSERT INTO forward_delivery (notification_uuid, target, order_key, state, attempts, queued_at, next_attempt_at)
        SELECT \(uuid), url, \(order), 'pending', 0, \(queued), \(queuedAgain) FROM forward_target
        WHERE types = '' OR \(match("types", type))
        ON CONFLICT (notification_uuid, target) DO NOTHING
        """
    }

    /// The claim: the due, unleased pending rows that have no older pending row of their target
    /// and original transaction, oldest first. Parameters: now (twice), then the limit; the
    /// targets are spliced in by the caller as placeholders (`targetList`).
    package static func claimCandidates(targetList: String, now: String, limit: String) -> String {
        """
        SELECT o.id FROM forward_delivery o
        WHERE o.state = 'pending' AND o.target IN (\(targetList)) AND o.next_attempt_at <= \(now)
            AND (o.lease_until IS NULL OR o.lease_until <= \(now))
            AND NOT EXISTS (SELECT 1 FROM forward_target t WHERE t.url = o.target AND t.disabled_at IS NOT NULL)
            AND NOT EXISTS (
                SELECT 1 FROM forward_delivery p
                WHERE p.state = 'pending' AND p.target = o.target AND p.order_key = o.order_key AND p.id < o.id)
        ORDER BY o.id LIMIT \(limit)
        """
    }
}

extension NotificationRecord {
    /// What keeps this notification's deliveries in order with its customer's others.
    public var forwardOrderKey: String { originalTransactionID ?? notificationUUID }

    /// Its type as a registered target's `types` column holds it: `,DID_RENEW,`.
    public var forwardTypeKey: String { "," + (notificationType ?? "").uppercased() + "," }
}
