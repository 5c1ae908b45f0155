import Foundation
import GRDB
import ReceiptCore
import Synchronization

/// Follows a receiver's audit database read-only, for a dashboard on another terminal or host
/// (`dash --db PATH --follow`): each ``poll()`` returns the notifications stored since the last
/// one, those delivered again, and the requests refused.
///
/// New rows are found by id (rows are numbered in commit order: one writer, no deletes), so a
/// notification committed late in a group commit is never skipped. Redeliveries only update a
/// row; they are found by `last_received_at`, looked back a few seconds past the newest seen so
/// that one stamped before, and committed after, the last poll is still found.
public final class NotificationFollower: Sendable {
    /// How far behind the newest `last_received_at` seen a poll looks for redeliveries.
    public static let redeliveryLookBack: TimeInterval = 5
    /// The most rows a first poll takes (the newest ones): a follower shows what happens now.
    public static let initialRows = 1_000

    private struct Marks {
        var started = false
        var lastID: Int64 = 0
        var lastRejectionID: Int64 = 0
        var newestDelivery: Double = 0
    }

    public let path: String
    private let database: DatabasePool
    private let marks = Mutex(Marks())

    public init(path: String) throws(NotificationStoreError) {
        guard FileManager.default.fileExists(atPath: path) else {
            throw NotificationStoreError(.open, "no audit database at \(path): start `receiptdash receive --db \(path)` first")
        }
        self.path = path
        do {
            var configuration = Configuration()
            configuration.readonly = true
            configuration.busyMode = .timeout(10)
            database = try DatabasePool(path: path, configuration: configuration)
        } catch {
            throw NotificationStoreError(.open, "cannot open \(path) to follow its notifications: \(error)")
        }
    }

    /// What changed since the last poll (the first poll: the newest ``initialRows`` rows, and no
    /// old refusals: those are history, not news).
    public func poll() throws(NotificationStoreError) -> (notifications: [StoredNotification], rejections: [RejectionRecord]) {
        let before = marks.withLock { $0 }
        do {
            let (rows, rejections, after) = try database.read { db -> ([StoredNotification], [RejectionRecord], Marks) in
                var after = before
                guard try db.tableExists("notification") else { return ([], [], after) }
                var rows: [Row]
                var rejectionRows: [Row] = []
                if !before.started {
                    rows = try Row.fetchAll(
                        db, sql: "SELECT * FROM notification ORDER BY id DESC LIMIT ?", arguments: [Self.initialRows]
                    ).reversed()
                    after.lastRejectionID = try Int64.fetchOne(db, sql: "SELECT MAX(id) FROM notification_rejection") ?? 0
                    after.started = true
                } else {
                    rows = try Row.fetchAll(
                        db,
                        sql: """
                            SELECT * FROM notification WHERE id > ? OR (deliveries > 1 AND last_received_at >= ?)
                            ORDER BY id
                            """,
                        arguments: [before.lastID, before.newestDelivery - Self.redeliveryLookBack])
                    rejectionRows = try Row.fetchAll(
                        db, sql: "SELECT * FROM notification_rejection WHERE id > ? ORDER BY id", arguments: [before.lastRejectionID])
                }
                for row in rows {
                    after.lastID = max(after.lastID, row["id"])
                    after.newestDelivery = max(after.newestDelivery, row["last_received_at"])
                }
                for row in rejectionRows { after.lastRejectionID = max(after.lastRejectionID, row["id"]) }
                return (rows.map(StoredNotification.init(row:)), rejectionRows.map(RejectionRecord.init(row:)), after)
            }
            marks.withLock { $0 = after }
            return (rows, rejections)
        } catch {
            throw NotificationStoreError(.database, "could not read notifications from \(path): \(error)")
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
        case .stored: observe(.stored(record, deliveries: 1))
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
        let decoded = signedPayload.flatMap { try? decoder.decode(text: $0) }
        return NotificationRow(
            notificationUUID: notificationUUID, notificationType: notificationType, subtype: subtype, bundleID: bundleID,
            environment: environment, signedDate: signedDate, receivedAt: receivedAt, deliveries: deliveries, verdict: verdict,
            transactionID: transactionID, originalTransactionID: originalTransactionID, productID: productID,
            explanation: NotificationExplanation.explain(type: notificationType, subtype: subtype, until: NotificationRow.until(decoded)))
    }
}

extension RejectionRecord {
    init(row: Row) {
        self.init(
            at: Date(timeIntervalSince1970: row["at"]), peer: row["peer"], reason: row["reason"], httpStatus: row["http_status"],
            bodySize: row["body_size"], body: [UInt8]())
        bodyPrefix = row["body_prefix"]
    }
}
