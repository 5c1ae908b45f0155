import AppStoreAPI
import Foundation
import JSONWriting
import ReceiptCore
import Synchronization
import UntrustedText

/// The one way a follower finds notifications as a receiver stores them: the store's
/// ``AuditBackend/followNotifications(_:limit:lookBack:)`` from marks kept here. A dashboard on
/// another terminal or host (`dash --db PATH --follow`) follows with ``init(backend:)``: each
/// ``poll()`` returns the notifications stored since the last one, those delivered again, and
/// the requests refused. `notifications --follow` (``NotificationStream``) follows with
/// ``init(backend:after:)``: each row stored after an id, once.
///
/// New rows are found by id, and on PostgreSQL (several writers commit out of id order) the ids
/// skipped over are awaited until committed, so a row committed late is never skipped.
/// Redeliveries only update a row; they are found by `last_received_at`, looked back a few
/// seconds past the newest seen so that one stamped before, and committed after, the last poll
/// is still found.
public final class NotificationFollower: Sendable {
    /// How far behind the newest `last_received_at` seen a poll looks for redeliveries.
    public static let redeliveryLookBack: TimeInterval = 5
    /// The most rows a first poll takes (the newest ones): a follower shows what happens now.
    public static let initialRows = 1_000

    public let backend: any AuditBackend
    private let marks: Mutex<NotificationMarks>

    /// Follows the backend from its newest rows (read-only use: the follower never writes).
    public init(backend: any AuditBackend) {
        self.backend = backend
        marks = Mutex(NotificationMarks())
    }

    /// Follows the rows stored after row `id`, each once: no redeliveries, no refusals.
    public init(backend: any AuditBackend, after id: Int64) {
        self.backend = backend
        marks = Mutex(NotificationMarks(after: id))
    }

    public var location: String { backend.location }

    /// One read: at most `limit` rows stored since the last (the first read of a dashboard's
    /// follower: the newest `limit`), with those committed late and, for a dashboard, those
    /// delivered again and the refusals; `caughtUp` false when more rows are stored after these.
    /// Throws the store's own error.
    public func next(limit: Int = initialRows) async throws
        -> (notifications: [FollowedNotification], rejections: [RejectionRecord], caughtUp: Bool)
    {
        let before = marks.withLock { $0 }
        let (rows, rejections, after) = try await backend.followNotifications(before, limit: limit, lookBack: Self.redeliveryLookBack)
        marks.withLock { $0 = after }
        let stored = rows.count(where: { $0.id > before.lastID })
        return (rows, rejections, !before.started || stored < limit)
    }

    /// What changed since the last poll, every row of it (the first poll: the newest
    /// ``initialRows`` rows, and no old refusals: those are history, not news).
    public func poll() async throws(NotificationStoreError) -> (notifications: [StoredNotification], rejections: [RejectionRecord]) {
        do {
            var (rows, rejections, caughtUp) = try await next()
            while !caughtUp {
                let more = try await next()
                rows += more.notifications
                rejections += more.rejections
                caughtUp = more.caughtUp
            }
            return (rows.map(\.stored), rejections)
        } catch {
            throw NotificationStoreError(.database, "could not read notifications from \(location): \(error)")
        }
    }
}

/// A sink that tells an observer what it stored and refused, after the store made it durable
/// (a dashboard that embeds the receiver shows exactly what was acknowledged).
public struct ObservedNotificationSink: NotificationSink {
    public enum Event: Sendable {
        case stored(NotificationRecord, deliveries: Int)
        case rejected(RejectionRecord)
    }

    public let base: any NotificationSink
    public let observe: @Sendable (Event) -> Void

    public init(_ base: any NotificationSink, observe: @escaping @Sendable (Event) -> Void) {
        self.base = base
        self.observe = observe
    }

    public func append(_ record: NotificationRecord) async throws(NotificationStoreError) -> AppendOutcome {
        let outcome = try await base.append(record)
        switch outcome {
        case .stored: observe(.stored(record, deliveries: record.deliveriesCounted))
        case .redelivery(let deliveries): observe(.stored(record, deliveries: deliveries))
        }
        return outcome
    }

    public func reject(_ record: RejectionRecord) async throws(NotificationStoreError) {
        try await base.reject(record)
        observe(.rejected(record))
    }

    public func isWritable() async -> Bool { await base.isWritable() }
}

extension NotificationRecord {
    /// The row `notifications` lists and the dashboard shows: the type and subtype explained,
    /// with the date that bounds the news read from the payload (a grace period's end, the
    /// nested transaction's expiry).
    public func listingRow(deliveries: Int, decoder: ReceiptDecoder = ReceiptDecoder()) -> NotificationRow {
        listingRow(deliveries: deliveries, decoded: signedPayload.flatMap { try? decoder.decode(text: $0) })
    }

    /// The row, from the payload already decoded.
    public func listingRow(deliveries: Int, decoded: DecodedInput?) -> NotificationRow {
        var row = NotificationRow(
            notificationUUID: notificationUUID, notificationType: notificationType, subtype: subtype, bundleID: bundleID,
            environment: environment, signedDate: signedDate, receivedAt: receivedAt, deliveries: deliveries, verdict: verdict,
            transactionID: transactionID, originalTransactionID: originalTransactionID, productID: productID,
            explanation: NotificationRow.explanation(type: notificationType, subtype: subtype, decoded: decoded))
        row.consumptionRequestReason = decoded?.notification?.consumptionRequestReason
        if peer == NotificationRecord.historyPeer { row.source = "history" }
        return row
    }
}

/// Which stored notifications `receiptdash notifications` lists.
public struct NotificationFilter: Sendable {
    public var since: Date?
    /// A notification type, upper case.
    public var type: String?
    public var bundleID: String?

    public init(since: Date? = nil, type: String? = nil, bundleID: String? = nil) {
        self.since = since
        self.type = type?.uppercased()
        self.bundleID = bundleID
    }

    public func matches(_ n: StoredNotification) -> Bool {
        (since.map { n.lastReceivedAt >= $0 } ?? true) && (type.map { n.record.notificationType?.uppercased() == $0 } ?? true)
            && (bundleID.map { n.record.bundleID == $0 } ?? true)
    }
}

extension AuditBackend {
    /// Every stored notificationUUID, read a page at a time.
    public func notificationUUIDs() async throws -> Set<String> {
        var uuids = Set<String>()
        for try await page in notificationPages() {
            for n in page { uuids.insert(n.record.notificationUUID) }
        }
        return uuids
    }

    /// Writes the notifications `filter` keeps to `console`'s standard output as they are read,
    /// a page of rows at a time: the table is never loaded whole.
    public func writeNotificationList(_ filter: NotificationFilter, format: TableFormat, to console: Console) async throws {
        let decoder = ReceiptDecoder()
        var out = JSONOutput(flushingTo: console)
        var count = 0
        switch format {
        case .json: out.beginArray()
        case .csv: out.raw(NotificationListing.csvHeader + "\r\n")
        case .text: break
        }
        for try await page in notificationPages() {
            for n in page where filter.matches(n) {
                let row = n.record.listingRow(deliveries: n.deliveries, decoder: decoder)
                switch format {
                case .json: NotificationListing.object(row, into: &out)
                case .csv: out.raw(NotificationListing.csvLine(row) + "\r\n")
                case .text: out.raw(NotificationListing.textLines(row) + "\n")
                }
                count += 1
            }
            out.flush()
        }
        switch format {
        case .json:
            out.endArray()
            out.newline()
        case .csv: break
        case .text: out.raw(NotificationListing.textFooter(count: count))
        }
        out.flush()
    }
}
