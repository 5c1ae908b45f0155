import Foundation
import AppStoreAPI
import ReceiptCore
import UntrustedText

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

        package init(kind: String, source: String?, seenAt: Double) {
            self.kind = kind
            self.source = source
            self.seenAt = seenAt
        }
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

        package init(at: Double, url: String, environment: String? = nil, httpStatus: Int? = nil, appleStatus: Int? = nil, isRetryable: Bool? = nil, latencyMilliseconds: Double? = nil, error: String? = nil, errorCode: String? = nil) {
            self.at = at
            self.url = url
            self.environment = environment
            self.httpStatus = httpStatus
            self.appleStatus = appleStatus
            self.isRetryable = isRetryable
            self.latencyMilliseconds = latencyMilliseconds
            self.error = error
            self.errorCode = errorCode
        }
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

        package init(position: Int, endpoint: String, environment: String, url: String, httpStatus: Int? = nil, apiError: Int? = nil, result: String, latencyMilliseconds: Double? = nil, retryAfter: Double? = nil, waitSeconds: Double? = nil) {
            self.position = position
            self.endpoint = endpoint
            self.environment = environment
            self.url = url
            self.httpStatus = httpStatus
            self.apiError = apiError
            self.result = result
            self.latencyMilliseconds = latencyMilliseconds
            self.retryAfter = retryAfter
            self.waitSeconds = waitSeconds
        }
    }

    public var contentHash: String
    public var format: String
    public var bundleID: String?
    public var environment: String?
    public var receiptData: String?
    public var firstSeen: Double
    public var lastSeen: Double
    public var state: ReceiptState
    public var status: Int?
    public var statusEnvironment: String?
    public var verifiedAt: Double?
    public var failure: String?
    public var failureCode: String?
    public var sightings: [Sighting]
    public var attempts: [Attempt]
    public var purchases: [Purchase]
    public var apiRequests: [APIRequest]

    package init(contentHash: String, format: String, bundleID: String? = nil, environment: String? = nil, receiptData: String? = nil, firstSeen: Double, lastSeen: Double, state: ReceiptState, status: Int? = nil, statusEnvironment: String? = nil, verifiedAt: Double? = nil, failure: String? = nil, failureCode: String? = nil, sightings: [Sighting], attempts: [Attempt], purchases: [Purchase], apiRequests: [APIRequest]) {
        self.contentHash = contentHash
        self.format = format
        self.bundleID = bundleID
        self.environment = environment
        self.receiptData = receiptData
        self.firstSeen = firstSeen
        self.lastSeen = lastSeen
        self.state = state
        self.status = status
        self.statusEnvironment = statusEnvironment
        self.verifiedAt = verifiedAt
        self.failure = failure
        self.failureCode = failureCode
        self.sightings = sightings
        self.attempts = attempts
        self.purchases = purchases
        self.apiRequests = apiRequests
    }
}

/// What one `db copy` pass did.
public struct AuditCopyCounts: Sendable, Hashable, CustomStringConvertible {
    public var receiptsAdded = 0
    public var receiptsMerged = 0
    public var sightingsAdded = 0
    public var attemptsAdded = 0
    public var notificationsAdded = 0
    public var rejectionsAdded = 0
    /// Writes sent to Apple (`history --actions`).
    public var actionsAdded = 0

    public init() {}

    public static func + (a: Self, b: Self) -> Self {
        var sum = a
        sum.receiptsAdded += b.receiptsAdded
        sum.receiptsMerged += b.receiptsMerged
        sum.sightingsAdded += b.sightingsAdded
        sum.attemptsAdded += b.attemptsAdded
        sum.notificationsAdded += b.notificationsAdded
        sum.rejectionsAdded += b.rejectionsAdded
        sum.actionsAdded += b.actionsAdded
        return sum
    }

    public var description: String {
        "\(receiptsAdded) receipts added, \(receiptsMerged) already there, \(sightingsAdded) sightings and \(attemptsAdded) attempts added, "
            + "\(notificationsAdded) notifications and \(rejectionsAdded) refusals added"
            + (actionsAdded > 0 ? ", \(actionsAdded) actions sent to Apple added" : "")
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
        // The writes sent to Apple, oldest first; one the target has (same time, action, user,
        // request id and ids) is not added again.
        let have = Set(try await target.actions(AuditActionQuery(limit: Int(Int32.max))).map(\.copyKey))
        for action in try await source.actions(AuditActionQuery(limit: Int(Int32.max))).reversed() where !have.contains(action.copyKey) {
            var row = action
            row.id = nil
            try await target.recordAction(row)
            counts.actionsAdded += 1
        }
        progress?(counts)
        return counts
    }
}

extension AuditBackend {
    /// What opening this store did: `created X at schema v6`, `migrated X from v3 to v6`, or
    /// `X is at the current schema (v6)` (`receiptdash db migrate` prints it).
    public var openingReport: String {
        let (all, applied) = (schemaVersions, migrationsApplied)
        // The schema's versions are the shared v1, v2, …; PostgreSQL adds migrations of its
        // own (pg1-follow), which are applied with them but are not versions.
        func isVersion(_ name: String) -> Bool { name.hasPrefix("v") && name.dropFirst().allSatisfy(\.isNumber) }
        let versions = all.filter(isVersion)
        let current = versions.last ?? "?"
        if applied.isEmpty { return "\(location) is at the current schema (\(current))" }
        guard let first = applied.first(where: isVersion) else { return "updated \(location) at schema \(current)" }
        guard let index = versions.firstIndex(of: first), index > 0 else { return "created \(location) at schema \(current)" }
        return "migrated \(location) from \(versions[index - 1]) to \(current)"
    }
}

extension AuditCopy {
    /// `db copy`: copies `source` into `target` with its progress redrawn in place where standard
    /// error is a terminal, and the counts said on standard output. False when these stores
    /// cannot be copied between or the copy stopped (said with `words` for the error: what was
    /// copied stays).
    public static func run(
        from source: any AuditBackend, to target: any AuditBackend, words: (any Error) -> String, console: Console
    ) async -> Bool {
        guard let reader = source as? any AuditTransferring, let writer = target as? any AuditTransferring else {
            console.error("receiptdash: copying between these databases is not supported")
            return false
        }
        let interactive = console.errorIsTerminal
        do {
            let counts = try await run(from: reader, to: writer) { counts in
                if interactive { console.errorRaw("\r\u{1B}[Kcopying: \(counts.receiptsAdded + counts.receiptsMerged) receipts") }
            }
            if interactive { console.errorRaw("\r\u{1B}[K") }
            console.line("receiptdash: copied \(source.location) into \(target.location): \(counts)")
            return true
        } catch {
            console.error("receiptdash: the copy stopped: \(words(error)) (what was copied stays; run it again to finish)")
            return false
        }
    }
}
