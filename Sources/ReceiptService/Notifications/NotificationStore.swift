import Foundation
import GRDB
import Synchronization

/// A typed failure of the notification store, compared by code.
public struct NotificationStoreError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let name: String
        /// The store was closed (the receiver is shutting down): nothing was written.
        public static let closed = Code(name: "closed")
        /// SQLite refused the write (disk full, I/O error, locked too long).
        public static let database = Code(name: "database")
        /// Opening or migrating the database failed.
        public static let open = Code(name: "open")
        public var description: String { name }
    }

    public let code: Code
    public let reason: String

    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    public var description: String { reason }
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}

/// One accepted notification, as stored: its envelope, the verdict of our trust check, the
/// first transaction it carries and the raw `signedPayload` (nil for V1, whose body is not kept
/// since it carries the shared secret).
public struct NotificationRecord: Sendable, Hashable {
    /// `notificationUUID` (V2), or `v1:<sha256 of the body without its password>` (V1).
    public var notificationUUID: String
    /// `2` or `1`.
    public var version: String
    public var notificationType: String?
    public var subtype: String?
    public var bundleID: String?
    public var appAppleID: Int64?
    public var environment: String?
    public var signedDate: Date?
    public var receivedAt: Date
    /// `valid`, `test` or (V1, unsigned) `unverifiable`.
    public var verdict: String
    /// The trust report's headline when it is not plain `valid` (why a test or V1 one passed).
    public var reason: String?
    public var transactionID: String?
    public var originalTransactionID: String?
    public var productID: String?
    public var peer: String?
    public var signedPayload: String?

    public init(
        notificationUUID: String, version: String, notificationType: String? = nil, subtype: String? = nil,
        bundleID: String? = nil, appAppleID: Int64? = nil, environment: String? = nil, signedDate: Date? = nil,
        receivedAt: Date, verdict: String, reason: String? = nil, transactionID: String? = nil,
        originalTransactionID: String? = nil, productID: String? = nil, peer: String? = nil, signedPayload: String? = nil
    ) {
        self.notificationUUID = notificationUUID
        self.version = version
        self.notificationType = notificationType
        self.subtype = subtype
        self.bundleID = bundleID
        self.appAppleID = appAppleID
        self.environment = environment
        self.signedDate = signedDate
        self.receivedAt = receivedAt
        self.verdict = verdict
        self.reason = reason
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.peer = peer
        self.signedPayload = signedPayload
    }
}

/// One refused request: when, from whom, why, the status answered, and at most
/// ``maximumPrefix`` bytes of its body (none when the body may carry a V1 password).
public struct RejectionRecord: Sendable, Hashable {
    /// The most of a refused body ever kept.
    public static let maximumPrefix = 256

    public var at: Date
    public var peer: String?
    public var reason: String
    public var httpStatus: Int
    public var bodySize: Int?
    public var bodyPrefix: String?

    /// - Parameter body: the bytes read of the refused body (may be a prefix): a bounded,
    ///   password-free prefix of them is kept.
    public init(at: Date, peer: String?, reason: String, httpStatus: Int, bodySize: Int?, body: some Collection<UInt8>) {
        self.at = at
        self.peer = peer
        self.reason = reason
        self.httpStatus = httpStatus
        self.bodySize = bodySize
        bodyPrefix = Self.safePrefix(body)
    }

    /// The first ``maximumPrefix`` bytes as text, or nil when the body mentions a password
    /// anywhere (a V1 body carries the shared secret in `password`).
    static func safePrefix(_ body: some Collection<UInt8>) -> String? {
        let bytes = Array(body)
        if bytes.isEmpty { return nil }
        let needle = Array("password".utf8)
        let lowered = bytes.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }
        if lowered.count >= needle.count {
            for start in 0...(lowered.count - needle.count) where lowered[start..<start + needle.count].elementsEqual(needle) {
                return nil
            }
        }
        return String(decoding: bytes.prefix(maximumPrefix), as: UTF8.self)
    }
}

/// What storing a notification did.
public enum AppendOutcome: Sendable, Hashable {
    /// First delivery: a new row.
    case stored
    /// The same notificationUUID again: the row's `deliveries` is now this.
    case redelivery(deliveries: Int)
}

/// Where the receiver puts what it accepts and refuses. ``NotificationStore`` is the real one;
/// tests inject others to observe the order of events.
public protocol NotificationSink: Sendable {
    /// Returns only once the notification is durable.
    func append(_ record: NotificationRecord) async throws(NotificationStoreError) -> AppendOutcome
    /// Records a refused request (durable on return, like ``append(_:)``).
    func reject(_ record: RejectionRecord) async throws(NotificationStoreError)
    /// Whether a write would succeed now (`GET /health`).
    func isWritable() async -> Bool
}

/// The durable store of received notifications, with group commit.
///
/// **Durable before acknowledged.** ``append(_:)`` returns only after the transaction holding
/// the notification has committed with `PRAGMA synchronous = FULL` in WAL mode: SQLite fsyncs the
/// WAL at every commit, so a returned append survives a crash of the process *and* of the
/// machine. (GRDB's default for WAL is NORMAL, which fsyncs only at checkpoints: a commit
/// survives `kill -9` but may be lost with the machine's power; Apple never redelivers sandbox
/// notifications, so we pay the fsync.)
///
/// **Group commit.** One writer task drains a queue: every append waiting when it wakes goes
/// into one transaction, one fsync, and then all those callers are resumed. 1,000 concurrent
/// requests cost a handful of fsyncs, not 1,000. Each item runs in its own savepoint, so one
/// bad row cannot fail its neighbours.
public final class NotificationStore: NotificationSink, Sendable {
    let database: DatabasePool
    public let path: String
    private let queue: WriteQueue
    private let writer: Task<Void, Never>

    /// Opens (creating and migrating) the audit database at `path` for notifications.
    /// - Parameter startWriter: false holds the writer until ``startWriting()`` (tests fill the
    ///   queue first to see one commit take everything).
    public init(path: String, startWriter: Bool = true) throws(NotificationStoreError) {
        self.path = path
        do {
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            var configuration = Configuration()
            configuration.foreignKeysEnabled = true
            configuration.busyMode = .timeout(10)
            let pool = try DatabasePool(path: path, configuration: configuration)
            // After GRDB's WAL set-up (which sets NORMAL) on the one writer connection.
            try pool.writeWithoutTransaction { try $0.execute(sql: "PRAGMA synchronous = FULL") }
            try AuditStore.migrator.migrate(pool)
            database = pool
        } catch {
            throw NotificationStoreError(.open, "cannot open the notification store at \(path): \(error)")
        }
        let queue = WriteQueue(started: startWriter)
        self.queue = queue
        writer = Task { [database] in await Self.writeLoop(queue: queue, database: database) }
    }

    deinit {
        // The writer holds the queue, not the store: without a close it would wait forever.
        queue.close()
    }

    /// Releases a writer held by `startWriter: false`.
    public func startWriting() { queue.start() }

    /// Transactions committed so far (each may hold many notifications).
    public var commitCount: Int { queue.commits }
    /// Appends and rejections waiting for the writer.
    public var pendingCount: Int { queue.pendingCount }

    public func append(_ record: NotificationRecord) async throws(NotificationStoreError) -> AppendOutcome {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<AppendOutcome, NotificationStoreError>, Never>) in
            queue.enqueue(.notification(record, continuation))
        }
        return try result.get()
    }

    public func reject(_ record: RejectionRecord) async throws(NotificationStoreError) {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<AppendOutcome, NotificationStoreError>, Never>) in
            queue.enqueue(.rejection(record, continuation))
        }
        _ = try result.get()
    }

    public func isWritable() async -> Bool {
        guard !queue.isClosed else { return false }
        do {
            // BEGIN IMMEDIATE … COMMIT: takes the write lock, writes nothing.
            try await database.write { _ in }
            return true
        } catch {
            return false
        }
    }

    /// Stops taking writes, commits everything already queued, and waits for the writer.
    public func close() async {
        queue.close()
        await writer.value
    }

    /// The synchronous mode of the writer connection (2 is FULL).
    func synchronousMode() throws -> Int {
        try database.writeWithoutTransaction { try Int.fetchOne($0, sql: "PRAGMA synchronous") ?? -1 }
    }

    // MARK: - The writer

    enum Item: Sendable {
        case notification(NotificationRecord, CheckedContinuation<Result<AppendOutcome, NotificationStoreError>, Never>)
        case rejection(RejectionRecord, CheckedContinuation<Result<AppendOutcome, NotificationStoreError>, Never>)

        var continuation: CheckedContinuation<Result<AppendOutcome, NotificationStoreError>, Never> {
            switch self {
            case .notification(_, let c), .rejection(_, let c): c
            }
        }
    }

    private static func writeLoop(queue: WriteQueue, database: DatabasePool) async {
        for await _ in queue.wakeups {
            while true {
                let batch = queue.takeAll()
                if batch.isEmpty { break }
                let results: [Result<AppendOutcome, NotificationStoreError>]
                do {
                    results = try await database.write { db in
                        batch.map { item in
                            do {
                                var outcome = AppendOutcome.stored
                                try db.inSavepoint {
                                    outcome = try Self.write(item, db)
                                    return .commit
                                }
                                return .success(outcome)
                            } catch {
                                return .failure(NotificationStoreError(.database, "could not store: \(error)"))
                            }
                        }
                    }
                    queue.countCommit()
                } catch {
                    let failure = NotificationStoreError(.database, "the commit failed: \(error)")
                    results = batch.map { _ in .failure(failure) }
                }
                for (item, result) in zip(batch, results) { item.continuation.resume(returning: result) }
            }
            if queue.isClosed && queue.pendingCount == 0 { break }
        }
        // Closed: anything that slipped in is refused, never left hanging.
        for item in queue.takeAll() {
            item.continuation.resume(returning: .failure(NotificationStoreError(.closed, "the store is closed")))
        }
    }

    private static func write(_ item: Item, _ db: Database) throws -> AppendOutcome {
        switch item {
        case .notification(let r, _):
            let deliveries = try Int.fetchOne(
                db,
                sql: """
                    INSERT INTO notification (notification_uuid, version, notification_type, subtype, bundle_id, app_apple_id,
                        environment, signed_date, received_at, last_received_at, deliveries, verdict, reason, transaction_id,
                        original_transaction_id, product_id, peer, signed_payload)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT(notification_uuid) DO UPDATE SET deliveries = deliveries + 1,
                        last_received_at = MAX(last_received_at, excluded.last_received_at)
                    RETURNING deliveries
                    """,
                arguments: [
                    r.notificationUUID, r.version, r.notificationType, r.subtype, r.bundleID, r.appAppleID, r.environment,
                    r.signedDate?.timeIntervalSince1970, r.receivedAt.timeIntervalSince1970, r.receivedAt.timeIntervalSince1970,
                    r.verdict, r.reason, r.transactionID, r.originalTransactionID, r.productID, r.peer, r.signedPayload,
                ]) ?? 1
            return deliveries > 1 ? .redelivery(deliveries: deliveries) : .stored
        case .rejection(let r, _):
            try db.execute(
                sql: """
                    INSERT INTO notification_rejection (at, peer, reason, http_status, body_size, body_prefix)
                    VALUES (?, ?, ?, ?, ?, ?)
                    """,
                arguments: [r.at.timeIntervalSince1970, r.peer, r.reason, r.httpStatus, r.bodySize, r.bodyPrefix])
            return .stored
        }
    }

    // MARK: - Reading

    /// Every stored notification, oldest first.
    public func notifications() throws(NotificationStoreError) -> [StoredNotification] {
        do {
            return try database.read { db in
                try Row.fetchAll(db, sql: "SELECT * FROM notification ORDER BY received_at, id").map(StoredNotification.init(row:))
            }
        } catch {
            throw NotificationStoreError(.database, "could not read notifications: \(error)")
        }
    }

    /// Every stored notification in the audit database at `path`, oldest first, read without
    /// writing (a receiver may be running on it).
    public static func stored(atPath path: String) throws(NotificationStoreError) -> [StoredNotification] {
        guard FileManager.default.fileExists(atPath: path) else {
            throw NotificationStoreError(.open, "no audit database at \(path): start `receiptdash receive --db \(path)` first")
        }
        do {
            var configuration = Configuration()
            configuration.readonly = true
            configuration.busyMode = .timeout(10)
            let pool = try DatabasePool(path: path, configuration: configuration)
            return try pool.read { db in
                guard try db.tableExists("notification") else { return [] }
                return try Row.fetchAll(db, sql: "SELECT * FROM notification ORDER BY received_at, id").map(StoredNotification.init(row:))
            }
        } catch {
            throw NotificationStoreError(.database, "could not read notifications from \(path): \(error)")
        }
    }

    /// Every refused request, oldest first.
    public func rejections() throws(NotificationStoreError) -> [RejectionRecord] {
        do {
            return try database.read { db in
                try Row.fetchAll(db, sql: "SELECT * FROM notification_rejection ORDER BY at, id").map(RejectionRecord.init(row:))
            }
        } catch {
            throw NotificationStoreError(.database, "could not read rejections: \(error)")
        }
    }
}

/// A notification row: the record plus how often it was delivered.
public struct StoredNotification: Sendable, Hashable {
    public var record: NotificationRecord
    public var deliveries: Int
    public var lastReceivedAt: Date

    init(row: Row) {
        record = NotificationRecord(
            notificationUUID: row["notification_uuid"], version: row["version"], notificationType: row["notification_type"],
            subtype: row["subtype"], bundleID: row["bundle_id"], appAppleID: row["app_apple_id"], environment: row["environment"],
            signedDate: (row["signed_date"] as Double?).map(Date.init(timeIntervalSince1970:)),
            receivedAt: Date(timeIntervalSince1970: row["received_at"]), verdict: row["verdict"], reason: row["reason"],
            transactionID: row["transaction_id"], originalTransactionID: row["original_transaction_id"],
            productID: row["product_id"], peer: row["peer"], signedPayload: row["signed_payload"])
        deliveries = row["deliveries"]
        lastReceivedAt = Date(timeIntervalSince1970: row["last_received_at"])
    }
}

/// The queue between callers and the one writer: items under a Mutex, wake-ups through an
/// AsyncStream that keeps at most one pending signal (the writer takes everything anyway).
final class WriteQueue: Sendable {
    private struct State {
        var items: [NotificationStore.Item] = []
        var closed = false
        var started: Bool
        var commits = 0
    }

    private let state: Mutex<State>
    let wakeups: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation

    init(started: Bool) {
        state = Mutex(State(started: started))
        (wakeups, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    func enqueue(_ item: NotificationStore.Item) {
        let accepted = state.withLock { s -> Bool in
            guard !s.closed else { return false }
            s.items.append(item)
            return true
        }
        guard accepted else {
            item.continuation.resume(returning: .failure(NotificationStoreError(.closed, "the store is closed")))
            return
        }
        if state.withLock({ $0.started }) { wake.yield() }
    }

    /// Everything queued, or nothing while the writer is held.
    func takeAll() -> [NotificationStore.Item] {
        state.withLock { s in
            guard s.started || s.closed else { return [] }
            defer { s.items = [] }
            return s.items
        }
    }

    func start() {
        state.withLock { $0.started = true }
        wake.yield()
    }

    func close() {
        state.withLock { $0.closed = true }
        wake.yield()
        wake.finish()
    }

    func countCommit() { state.withLock { $0.commits += 1 } }
    var commits: Int { state.withLock { $0.commits } }
    var pendingCount: Int { state.withLock { $0.items.count } }
    var isClosed: Bool { state.withLock { $0.closed } }
}
