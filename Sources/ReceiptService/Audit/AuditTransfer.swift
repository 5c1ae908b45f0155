import Foundation
import ReceiptCore

/// One receipt row with everything that hangs off it, as `db copy` moves it between trails: the
/// row's own columns, its sightings, attempts, purchases and (for a look-up) API requests.
/// Rows are matched by their content hash; everything else by its natural key, so copying twice
/// adds nothing the second time, and a receipt the target already has gains only the sightings
/// and attempts it lacked.
public struct AuditReceiptExport: Sendable, Hashable {
    public struct Sighting: Sendable, Hashable {
        public var kind: String
        public var source: String?
        public var seenAt: Double
    }

    public struct Attempt: Sendable, Hashable {
        public var at: Double
        public var url: String
        public var environment: String?
        public var httpStatus: Int?
        public var appleStatus: Int?
        public var isRetryable: Bool?
        public var latencyMilliseconds: Double?
        public var error: String?
        public var errorCode: String?
    }

    public struct APIRequest: Sendable, Hashable {
        public var position: Int
        public var endpoint: String
        public var environment: String
        public var url: String
        public var httpStatus: Int?
        public var apiError: Int?
        public var result: String
        public var latencyMilliseconds: Double?
        public var retryAfter: Double?
        public var waitSeconds: Double?
    }

    public var contentHash: String
    public var format: String
    public var bundleID: String?
    public var environment: String?
    public var receiptData: String?
    public var firstSeen: Double
    public var lastSeen: Double
    public var state: String
    public var status: Int?
    public var statusEnvironment: String?
    public var verifiedAt: Double?
    public var failure: String?
    public var failureCode: String?
    public var sightings: [Sighting]
    public var attempts: [Attempt]
    public var purchases: [Purchase]
    public var apiRequests: [APIRequest]
}

/// What one `db copy` pass did.
public struct AuditCopyCounts: Sendable, Hashable, CustomStringConvertible {
    public var receiptsAdded = 0
    public var receiptsMerged = 0
    public var sightingsAdded = 0
    public var attemptsAdded = 0
    public var notificationsAdded = 0
    public var rejectionsAdded = 0

    public init() {}

    public static func + (a: Self, b: Self) -> Self {
        var sum = a
        sum.receiptsAdded += b.receiptsAdded
        sum.receiptsMerged += b.receiptsMerged
        sum.sightingsAdded += b.sightingsAdded
        sum.attemptsAdded += b.attemptsAdded
        sum.notificationsAdded += b.notificationsAdded
        sum.rejectionsAdded += b.rejectionsAdded
        return sum
    }

    public var description: String {
        "\(receiptsAdded) receipts added, \(receiptsMerged) already there, \(sightingsAdded) sightings and \(attemptsAdded) attempts added, "
            + "\(notificationsAdded) notifications and \(rejectionsAdded) refusals added"
    }
}

/// The transfer side of a trail (`receiptdash db copy`).
public protocol AuditTransferring: AuditBackend {
    /// Receipt rows after row `id` (oldest first, at most `limit`), each with its row id.
    func exportReceipts(after id: Int64, limit: Int) async throws -> [(id: Int64, receipt: AuditReceiptExport)]
    /// Merges receipts in one transaction: new content hashes become rows with all they carry;
    /// known ones gain the sightings, attempts and purchases they lack, and a finished result
    /// when they had none.
    func importReceipts(_ receipts: [AuditReceiptExport]) async throws -> AuditCopyCounts
    /// Merges notifications (by notificationUUID, keeping the larger delivery count) and
    /// refusals (by time, peer and reason) in one transaction.
    func importNotifications(_ notifications: [StoredNotification], rejections: [RejectionRecord]) async throws -> AuditCopyCounts
}

public enum AuditCopy {
    /// Copies everything `source` holds into `target`, in batches; running it again adds nothing.
    public static func run(
        from source: any AuditTransferring, to target: any AuditTransferring, batch: Int = 500,
        progress: (@Sendable (AuditCopyCounts) -> Void)? = nil
    ) async throws -> AuditCopyCounts {
        var counts = AuditCopyCounts()
        var after: Int64 = 0
        while true {
            let rows = try await source.exportReceipts(after: after, limit: batch)
            guard let last = rows.last else { break }
            counts = counts + (try await target.importReceipts(rows.map(\.receipt)))
            after = last.id
            progress?(counts)
        }
        counts = counts + (try await target.importNotifications(try await source.notifications(), rejections: try await source.rejections()))
        progress?(counts)
        return counts
    }
}
