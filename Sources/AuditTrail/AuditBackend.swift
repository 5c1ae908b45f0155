import Crypto
import Foundation
import AppStoreAPI
import ReceiptCore
import Synchronization

/// The audit trail's one interface, with two implementations: ``AuditStore`` (SQLite, the
/// embedded default) and ``PostgresAuditStore`` (a team's shared PostgreSQL). Both keep the same
/// meaning: receipts deduplicated by content hash with each sighting, pending and resume,
/// verification attempts, purchases, look-ups, and notifications deduplicated on
/// `notificationUUID` (a redelivery adds to `deliveries`).
///
/// Every method may be called from any task. Writes are atomic: a method that records several
/// rows records all of them or none.
public protocol AuditBackend: AnyObject, Sendable, CustomerRecordSource, ForwardOutbox, ScheduledJobs, RetentionTrail, ConsumptionQueue {
    /// Where the trail lives, as it may be shown: a path, or a URL with its password masked.
    var location: String { get }
    /// The migrations this open applied, in order (empty when it was at the current schema).
    var migrationsApplied: [String] { get }
    /// Every migration's name, oldest first: the last is the current schema.
    var schemaVersions: [String] { get }
    /// The migrations not yet applied to a trail opened read-only (what `db migrate` would
    /// apply); nil where the store cannot tell.
    func missingMigrations() throws -> [String]?
    /// The synchronous mode of a SQLite writer connection (2 is FULL); -1 where it has none.
    func synchronousMode() throws -> Int

    // MARK: Receipts, sightings, verification

    /// Records inputs in one transaction: a new receipt row for unseen content, a sighting
    /// either way (the same receipt seen twice is one row with two sightings).
    func record(_ ingests: [AuditIngest]) async throws -> [AuditRecorded]
    /// Records an input the decoder could not read that is sent as it is.
    func recordUndecodable(bytes: [UInt8], receiptData: String, kind: AuditSourceKind, source: String?, seenAt: Date) async throws
        -> AuditRecorded
    /// Marks receipts as queued for verification before anything is sent.
    func markPending(_ ids: [Int64], again: Bool) async throws
    /// Records one verification's attempts and final result in one transaction.
    func recordResult(_ id: Int64, outcome: VerificationOutcome, at time: Date) async throws
    /// Receipts queued but not finished, oldest first.
    func pending() async throws -> [(id: Int64, receiptData: String)]
    /// Receipts recorded after row `id`, oldest first (a follower's feed).
    func receipts(after id: Int64, limit: Int) async throws -> [AuditFeedReceipt]
    /// Verifications finished after `time` (epoch seconds), oldest first, with their attempts.
    func results(after time: Double, limit: Int) async throws -> [AuditFeedResult]
    /// How many attempts each receipt has on record.
    func attemptsPerReceipt() async throws -> [Int64: Int]
    /// The stored receipt data of a row, if it has any.
    func receiptData(_ id: Int64) async throws -> String?
    /// Receipts by state (`decoded`, `pending`, `done`, `failed`).
    func counts() async throws -> [String: Int]
    /// Deletes receipts not seen for `days` days; returns how many.
    @discardableResult
    func prune(keepDays days: Int, now: Date) async throws -> Int
    /// One row per distinct receipt matching the query, newest first.
    func history(_ query: HistoryQuery) async throws -> [HistoryRow]

    // MARK: Look-ups

    /// Records one App Store Server API look-up with its transactions and requests.
    func recordLookup(_ result: CustomerLookupResult, bundleID: String, source: String, at time: Date) async throws -> Int64
    /// The requests a look-up made, in order.
    func lookupRequests(_ id: Int64) async throws -> [AuditLookupRequest]

    // MARK: Actions

    /// Records one write sent to the App Store Server API (extend, consumption, …), durably
    /// (SQLite: `synchronous = FULL`).
    @discardableResult
    func recordAction(_ action: AuditAction) async throws -> Int64
    /// Records a write about to be sent as `pending` (its request id, environment, plan and
    /// body), durably, before its first byte leaves: a crash after this leaves a row that says
    /// the write may have been applied. Returns the row's id for ``completeAction(_:_:)``.
    func beginAction(_ action: AuditAction) async throws -> Int64
    /// Completes a pending row with the outcome: `http_status`, `api_error`, `result`,
    /// `response_body` and `completed_at` from `outcome`, durably.
    func completeAction(_ id: Int64, _ outcome: AuditAction) async throws
    /// The recorded writes matching the query, newest first.
    func actions(_ query: AuditActionQuery) async throws -> [AuditAction]

    // MARK: Notifications

    /// Writes a batch of notifications and refusals in one transaction (one fsync, or one
    /// commit, for all), each item on its own (a savepoint): one bad row cannot fail its
    /// neighbours. Returns only once the transaction is durable.
    func writeNotifications(_ batch: [NotificationWrite]) async throws -> [Result<AppendOutcome, NotificationStoreError>]
    /// Every stored notification, oldest first.
    func notifications() async throws -> [StoredNotification]
    /// At most `limit` notifications stored after row `id`, by row id: listing commands read
    /// the table a page at a time instead of whole.
    func notifications(after id: Int64, limit: Int) async throws -> [(id: Int64, notification: StoredNotification)]
    /// Every receiver's last heartbeat on this store (none before schema v11, or when no
    /// receiver has run since).
    func receiverHeartbeats() async throws -> [ReceiverHeartbeat]
    /// The newest notification row's id (0 when there is none): where a follower from the end
    /// starts.
    func lastNotificationID() async throws -> Int64
    /// Every refused request, oldest first.
    func rejections() async throws -> [RejectionRecord]
    /// What changed since `marks`, for a follower (``NotificationFollower``): the first call,
    /// with empty marks, the newest `limit` notifications and no old refusals; later calls the
    /// oldest `limit` rows stored after the marks, the rows skipped over that have been committed
    /// since (several writers commit out of id order) and, unless the marks follow new rows
    /// only, the rows delivered again (within `lookBack` of the newest delivery seen) and the
    /// refusals. Each row says whether this follower sees it for the first time.
    func followNotifications(_ marks: NotificationMarks, limit: Int, lookBack: TimeInterval) async throws
        -> (notifications: [FollowedNotification], rejections: [RejectionRecord], marks: NotificationMarks)
    /// Whether a write would succeed now (`GET /health`).
    func isWritable() async -> Bool

    /// Wakes a follower when another writer committed something (PostgreSQL's LISTEN/NOTIFY);
    /// nil when the backend cannot tell (SQLite: followers look twice a second).
    func changes() -> AsyncStream<Void>?
    /// Runs what the open store needs while it is used (PostgreSQL: its connection pool and
    /// `LISTEN` connection) until ``close()`` or until the task is cancelled; returns at once
    /// where nothing needs running (SQLite). A command runs it in its service group
    /// (``AuditStoreService``), or around one piece of work (``AuditStoreService/closing(_:_:)``).
    func run() async
    /// Releases connections and ends ``run()``.
    func close() async
    /// An error this store threw, in words for a person (never a password).
    func words(for error: any Error) -> String
}

/// Where an input came from.
public enum AuditSourceKind: String, Sendable, CaseIterable {
    case paste, file, watch, stdin
    /// An App Store Server API look-up.
    case lookup
}

/// One input to record.
public struct AuditIngest: Sendable {
    public var decoded: DecodedInput
    public var bytes: [UInt8]
    public var kind: AuditSourceKind
    public var source: String?
    public var seenAt: Date

    public init(decoded: DecodedInput, bytes: [UInt8], kind: AuditSourceKind, source: String?, seenAt: Date) {
        self.decoded = decoded
        self.bytes = bytes
        self.kind = kind
        self.source = source
        self.seenAt = seenAt
    }

    /// What the row is deduplicated on: the hash of what verifyReceipt takes, else of the bytes.
    package var receiptData: String? { VerifyReceiptData.base64(decoded) }
    package var contentHash: String { AuditContent.hash(receiptData.map { Array($0.utf8) } ?? bytes) }
}

/// The row id of each recorded input and whether it was new.
public struct AuditRecorded: Sendable, Hashable {
    public var id: Int64
    public var isNew: Bool
    /// What verifyReceipt takes for it, if anything.
    public var receiptData: String?

    public init(id: Int64, isNew: Bool, receiptData: String?) {
        self.id = id
        self.isNew = isNew
        self.receiptData = receiptData
    }
}

/// A receipt row for a follower.
public struct AuditFeedReceipt: Sendable {
    public var id: Int64
    public var receiptData: String?
    public var source: String?

    public init(id: Int64, receiptData: String?, source: String?) {
        self.id = id
        self.receiptData = receiptData
        self.source = source
    }
}

/// A finished verification for a follower.
public struct AuditFeedResult: Sendable {
    public var id: Int64
    public var status: Int?
    public var environment: String?
    public var failure: VerificationFailure?
    public var verifiedAt: Double
    public var attempts: [VerificationAttempt]

    public init(id: Int64, status: Int?, environment: String?, failure: VerificationFailure?, verifiedAt: Double, attempts: [VerificationAttempt]) {
        self.id = id
        self.status = status
        self.environment = environment
        self.failure = failure
        self.verifiedAt = verifiedAt
        self.attempts = attempts
    }
}

/// One write sent to the App Store Server API, as recorded (`history --actions`): who, when,
/// what, the body sent (never a secret: bodies hold ids, days, reasons and tokens), and what
/// Apple answered.
public struct AuditAction: Sendable, Hashable {
    public var id: Int64?
    public var at: Date
    /// The OS user who sent it.
    public var user: String
    /// The action's contract name (`extend`, `consumption`, …).
    public var action: String
    public var environment: String?
    public var requestID: String?
    public var originalTransactionID: String?
    public var transactionID: String?
    public var productID: String?
    public var requestBody: String?
    public var httpStatus: Int?
    public var apiError: Int?
    /// `success` (applied), `refused`, `failed` (never reached Apple), `unknown` (may have
    /// been applied), or `pending` (recorded before sending and never completed: a crash, or
    /// a write still under way; shown as `unknown`).
    public var result: String
    /// The plan as it was shown before sending (environment, trust, what changes).
    public var plan: String?
    /// Apple's answer to a write that succeeded: the body as sent when it did not decode, else
    /// what it decoded to (as the command's JSON names it: an extension's `effective_date`).
    public var responseBody: String?
    /// When the outcome was recorded (nil while pending).
    public var completedAt: Date?
    /// The customer's app transaction id where the plan's look-up knew it (v13): the write is
    /// found by any of the customer's ids, whatever id the command was given.
    public var appTransactionID: String?
    /// The consumption policy the write was sent by (v15; nil: sent by a person).
    public var policy: String?

    /// What a row in `pending` means: recorded before sending, with no outcome since.
    public static let pending = "pending"

    public init(
        id: Int64? = nil, at: Date, user: String, action: String, environment: String?, requestID: String?, originalTransactionID: String?,
        transactionID: String?, productID: String?, requestBody: String?, httpStatus: Int?, apiError: Int?, result: String,
        plan: String? = nil, responseBody: String? = nil, completedAt: Date? = nil, appTransactionID: String? = nil, policy: String? = nil
    ) {
        self.policy = policy
        self.appTransactionID = appTransactionID
        self.plan = plan
        self.responseBody = responseBody
        self.completedAt = completedAt
        self.id = id
        self.at = at
        self.user = user
        self.action = action
        self.environment = environment
        self.requestID = requestID
        self.originalTransactionID = originalTransactionID
        self.transactionID = transactionID
        self.productID = productID
        self.requestBody = requestBody
        self.httpStatus = httpStatus
        self.apiError = apiError
        self.result = result
    }
}

extension AuditAction {
    /// The row as recorded before sending: `pending`, with no outcome.
    public var pendingRow: AuditAction {
        var row = self
        row.result = AuditAction.pending
        (row.httpStatus, row.apiError, row.responseBody, row.completedAt) = (nil, nil, nil, nil)
        return row
    }

    /// What makes a recorded write the same one in two trails (`db copy`).
    var copyKey: String {
        [String(at.timeIntervalSince1970), action, user, requestID ?? "", originalTransactionID ?? "", transactionID ?? ""].joined(separator: "|")
    }
}

/// Which recorded writes `history --actions` lists.
public struct AuditActionQuery: Sendable, Hashable {
    /// Matches the transaction id or the original transaction id.
    public var transactionID: String?
    /// Matches the customer's app transaction id (rows from v13 on).
    public var appTransactionID: String?
    public var limit: Int

    public init(transactionID: String? = nil, appTransactionID: String? = nil, limit: Int = 10_000) {
        self.transactionID = transactionID
        self.appTransactionID = appTransactionID
        self.limit = limit
    }
}

/// One request a look-up made, as recorded.
public struct AuditLookupRequest: Sendable, Hashable {
    public var endpoint: String
    public var environment: String
    public var url: String
    public var httpStatus: Int?
    public var apiError: Int?

    public init(endpoint: String, environment: String, url: String, httpStatus: Int?, apiError: Int?) {
        self.endpoint = endpoint
        self.environment = environment
        self.url = url
        self.httpStatus = httpStatus
        self.apiError = apiError
    }
}

/// One item of a notification batch.
public enum NotificationWrite: Sendable {
    case notification(NotificationRecord)
    /// A refusal's sample row.
    case rejection(RejectionRecord)
    /// More refusals of the class, address and minute a sample row stands for.
    case rejectionCount(sampleKey: String, add: Int)
    /// Deletes refusal rows older than the date (`--keep-refusals`).
    case pruneRejections(before: Date)
    /// A running receiver says it is alive (``ReceiverHeartbeat``); heartbeats of receivers
    /// silent for a week are deleted.
    case heartbeat(receiver: String, at: Date)
}

/// A receiver's last sign of life in the store it writes, so a follower elsewhere can tell
/// "receiver down since …" from "no notifications for …". Kept in `receiptdash_job` under
/// `heartbeat <receiver>`.
public struct ReceiverHeartbeat: Sendable, Hashable {
    public var receiver: String
    public var at: Date

    public init(receiver: String, at: Date) {
        self.receiver = receiver
        self.at = at
    }

    /// How often a receiver beats, and how long without one means it is down.
    public static let interval: TimeInterval = 10
    public static let downAfter: TimeInterval = 30
    /// Rows of receivers silent this long are deleted.
    public static let keep: TimeInterval = 7 * 86_400
    static let prefix = "heartbeat "
    package var jobName: String { Self.prefix + receiver }
}

/// How far a notification follower has read.
public struct NotificationMarks: Sendable, Hashable {
    public var started = false
    /// The newest row id read.
    public var lastID: Int64 = 0
    /// Only rows stored since, each once (`notifications --follow`): no redeliveries, no refusals.
    public var newRowsOnly = false
    /// Ids below ``lastID`` skipped over that another writer may still commit (PostgreSQL: ids
    /// are taken at insert, rows seen at commit), each with the transaction id every writer that
    /// could hold it is below (0: not known yet, set at the next read). An awaited row is read
    /// as soon as it is committed; the id is given up once those writers have all ended.
    public var awaited: [Int64: UInt64] = [:]
    public var lastRejectionID: Int64 = 0
    public var newestDelivery: Double = 0
    /// The newest refusal row seen and the last one there when following began: a refusal
    /// row counts later refusals of its class, address and minute into `count` after it was
    /// written, so rows since the start with `count > 1` and `at` within
    /// ``NotificationMarks/refusalGrowthWindow`` of the newest are read again (the dashboard
    /// adds only their growth).
    public var newestRejection: Double = 0
    public var firstRejectionID: Int64 = 0
    public static let refusalGrowthWindow: Double = 120
    /// The most ids awaited at once (the lowest are given up first).
    public static let awaitedLimit = 10_000

    /// A follower from the newest rows (a dashboard): its first read takes the newest, then
    /// what changed.
    public init() {}

    /// A follower of the rows stored after row `id`, each once (`notifications --follow`).
    public init(after id: Int64) {
        started = true
        lastID = id
        newRowsOnly = true
    }

    /// Whether the row `id` is new to a follower at these marks: not read before.
    public func isFirstSight(of id: Int64) -> Bool {
        !started || id > lastID || awaited[id] != nil
    }
}

/// A notification row a follower read: its id, the row, and whether the follower sees it for
/// the first time (else it was read before and delivered again since).
public struct FollowedNotification: Sendable, Hashable {
    public var id: Int64
    public var stored: StoredNotification
    public var isNew: Bool

    public init(id: Int64, stored: StoredNotification, isNew: Bool) {
        self.id = id
        self.stored = stored
        self.isNew = isNew
    }
}

extension AuditBackend {
    /// Every stored notification, oldest first, a page of `size` rows at a time by row id: the
    /// table is never loaded whole.
    public func notificationPages(size: Int = 1_000) -> AsyncThrowingStream<[StoredNotification], any Error> {
        let cursor = PageCursor()
        return AsyncThrowingStream(unfolding: {
            let page = try await self.notifications(after: cursor.after.withLock { $0 }, limit: size)
            guard let last = page.last else { return nil }
            cursor.after.withLock { $0 = last.id }
            return page.map(\.notification)
        })
    }

    public func receipts(after id: Int64) async throws -> [AuditFeedReceipt] { try await receipts(after: id, limit: 500) }
    public func results(after time: Double) async throws -> [AuditFeedResult] { try await results(after: time, limit: 500) }
    public func markPending(_ ids: [Int64]) async throws { try await markPending(ids, again: false) }
}

/// Schema statements both backends run as they are (their SQL is the same on SQLite and
/// PostgreSQL).
package enum AuditSchema {
    /// v2: typed failure codes beside the v1 texts: the error code of each attempt and the
    /// failure code of each receipt (v1 rows are classified once, from the texts v1 wrote). The
    /// v1 columns are still written, so `history` and older readers see what they saw.
    package static let v2 = [
        "ALTER TABLE attempt ADD COLUMN error_code TEXT",
        "ALTER TABLE receipt ADD COLUMN failure_code TEXT",
        """
        UPDATE attempt SET error_code = CASE
            WHEN apple_status IS NOT NULL OR error IS NULL THEN NULL
            WHEN error LIKE 'TLS failed%' THEN 'tls'
            WHEN error LIKE 'timed out%' THEN 'timeout'
            WHEN error = 'connection refused' THEN 'refused'
            WHEN error = 'the connection was closed without an answer' THEN 'dropped'
            WHEN error = 'cancelled' THEN 'cancelled'
            WHEN error = 'the answer is not verifyReceipt JSON' THEN 'invalid-response'
            ELSE 'other' END
        """,
        """
        UPDATE receipt SET failure_code = CASE
            WHEN failure IS NULL THEN NULL
            WHEN failure LIKE 'TLS failed%' THEN 'tls'
            WHEN failure = 'cancelled' THEN 'cancelled'
            WHEN failure LIKE 'HTTP %' THEN 'http'
            WHEN failure = 'the answer is not verifyReceipt JSON' THEN 'invalid-response'
            WHEN failure = 'could not build the request' THEN 'invalid-request'
            ELSE 'retries-exhausted' END
        """,
    ]

    /// v6: a refusal row stands for every refusal of its class (`kind`) from its address in its
    /// minute (`count`), found again by `sample_key`.
    /// v7: the writes sent to the App Store Server API (`extend`, `consumption`, …), one row
    /// each, found by transaction id.
    package static func v7(id: String, real: String, integer: String) -> [String] {
        [
            """
            CREATE TABLE api_action (
                id \(id),
                at \(real) NOT NULL,
                os_user TEXT NOT NULL,
                action TEXT NOT NULL,
                environment TEXT,
                request_id TEXT,
                original_transaction_id TEXT,
                transaction_id TEXT,
                product_id TEXT,
                request_body TEXT,
                http_status \(integer),
                api_error \(integer),
                result TEXT NOT NULL
            )
            """,
            "CREATE INDEX api_action_original ON api_action(original_transaction_id)",
            "CREATE INDEX api_action_transaction ON api_action(transaction_id)",
        ]
    }

    /// v9: a write is recorded as `pending` before it is sent, with its plan, then completed
    /// with its outcome, the answer's body (kept when it did not decode) and when it ended.
    package static func v9(real: String) -> [String] {
        [
            "ALTER TABLE api_action ADD COLUMN plan TEXT",
            "ALTER TABLE api_action ADD COLUMN response_body TEXT",
            "ALTER TABLE api_action ADD COLUMN completed_at \(real)",
        ]
    }

    /// v8: today's payload fields of each purchase (``PurchaseField/audited``): the refund's
    /// kind and share, the offer, the customer's app transaction id, the billing plan and its
    /// commitment (as JSON text).
    package static func v8(integer: String) -> [String] {
        [
            "ALTER TABLE purchase ADD COLUMN revocation_type TEXT",
            "ALTER TABLE purchase ADD COLUMN revocation_percentage \(integer)",
            "ALTER TABLE purchase ADD COLUMN offer_type \(integer)",
            "ALTER TABLE purchase ADD COLUMN offer_discount_type TEXT",
            "ALTER TABLE purchase ADD COLUMN offer_period TEXT",
            "ALTER TABLE purchase ADD COLUMN app_transaction_id TEXT",
            "ALTER TABLE purchase ADD COLUMN billing_plan_type TEXT",
            "ALTER TABLE purchase ADD COLUMN commitment_info TEXT",
            "CREATE INDEX purchase_app_transaction ON purchase(app_transaction_id)",
        ]
    }

    /// v10: every purchase and notification indexed by the customer's app account token and
    /// app transaction id (`customer --app-account-token`), and notifications by app
    /// transaction id; the rows stored before it are filled from their payloads by the store.
    package static func v10(flag: String) -> [String] {
        [
        "ALTER TABLE purchase ADD COLUMN app_account_token TEXT",
        "ALTER TABLE purchase ADD COLUMN is_upgraded \(flag)",
        "ALTER TABLE purchase ADD COLUMN transaction_reason TEXT",
        // Kept as sent, found lowercased (a UUID in either case is the same token).
        "CREATE INDEX purchase_app_account_token ON purchase(lower(app_account_token))",
        "ALTER TABLE notification ADD COLUMN app_account_token TEXT",
        "ALTER TABLE notification ADD COLUMN app_transaction_id TEXT",
        "CREATE INDEX notification_app_account_token ON notification(app_account_token)",
        "CREATE INDEX notification_app_transaction ON notification(app_transaction_id)",
        ]
    }

    /// v13: each write linked to the customer's app transaction id where its plan knew it, so
    /// `customer --app-transaction-id` finds writes the trail knows nothing else about; writes
    /// indexed by product, so a customer's story finds the mass extensions of their products.
    package static let v13 = [
        "ALTER TABLE api_action ADD COLUMN app_transaction_id TEXT",
        "CREATE INDEX api_action_app_transaction ON api_action(app_transaction_id)",
        "CREATE INDEX api_action_product ON api_action(product_id)",
    ]

    /// The action name of a mass extension in `api_action` (a customer's story reads those of
    /// their products).
    package static let massExtendAction = APIAction.massExtend.rawValue

    package static let v6 = [
        "ALTER TABLE notification_rejection ADD COLUMN kind TEXT",
        "ALTER TABLE notification_rejection ADD COLUMN count INTEGER NOT NULL DEFAULT 1",
        "ALTER TABLE notification_rejection ADD COLUMN sample_key TEXT",
        "CREATE INDEX notification_rejection_sample ON notification_rejection(sample_key)",
    ]
}

/// The last row id a paged read has passed.
private final class PageCursor: Sendable {
    let after = Mutex<Int64>(0)
}

/// The content hash that names a receipt in every store: SHA-256 of its bytes, in hex.
public enum AuditContent {
    public static func hash(_ bytes: [UInt8]) -> String {
        SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
    }

    /// The name of one recorded look-up (its `receipt` row's content hash): who asked, when,
    /// what, where it was found and the ids it found. Unique per look-up, as the time is in it.
    public static func lookupHash(_ result: CustomerLookupResult, source: String, at time: Date) -> String {
        var text = "lookup \(source) \(time.timeIntervalSince1970) \(result.query) \(result.environment?.rawValue ?? "-")"
        for item in result.transactions { text += " " + (item.transaction?.transactionID ?? "?") }
        for record in result.records { text += " \(record.endpoint) \(record.httpStatus.map(String.init) ?? "-")" }
        return hash(Array(text.utf8))
    }
}
