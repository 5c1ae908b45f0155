import Foundation
import ReceiptCore
import ServiceLifecycle
import Synchronization

/// A typed failure of the notification store, compared by code.
public struct NotificationStoreError: CodedError {
    public enum Code: String, CaseIterable, CodedErrorCode {
        /// The store was closed (the receiver is shutting down): nothing was written.
        case closed
        /// SQLite refused the write (disk full, I/O error, locked too long).
        case database
        /// Opening or migrating the database failed.
        case open
        /// The commit queue is full (`--max-pending`): nothing was queued; retry later.
        case busy
    }

    public let code: Code
    public let reason: String

    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }
}

/// One accepted notification, as stored: its envelope, the verdict of our trust check, the
/// first transaction it carries and the raw `signedPayload` (nil for V1, whose body is not kept
/// since it carries the shared secret).
public struct NotificationRecord: Sendable, Hashable {
    /// `notificationUUID` (V2), or `v1:<sha256 of the body without its password>` (V1).
    public var notificationUUID: String
    /// V2 or V1 (stored as `2` or `1`).
    public var version: NotificationVersion
    public var notificationType: String?
    public var subtype: String?
    public var bundleID: String?
    public var appAppleID: Int64?
    public var environment: String?
    public var signedDate: Date?
    public var receivedAt: Date
    /// `valid`, `test` or (V1, unsigned) `unverifiable`, stored as the raw value.
    public var verdict: TrustReport.Verdict
    /// The trust report's headline when it is not plain `valid` (why a test or V1 one passed).
    public var reason: String?
    public var transactionID: String?
    public var originalTransactionID: String?
    public var productID: String?
    public var peer: String?
    public var signedPayload: String?

    public init(
        notificationUUID: String, version: NotificationVersion, notificationType: String? = nil, subtype: String? = nil,
        bundleID: String? = nil, appAppleID: Int64? = nil, environment: String? = nil, signedDate: Date? = nil,
        receivedAt: Date, verdict: TrustReport.Verdict, reason: String? = nil, transactionID: String? = nil,
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
///
/// Stored as a sample: the first refusal of a class from an address in a minute is a row, and
/// the others of that class, address and minute add to its ``count``.
public struct RejectionRecord: Sendable, Hashable {
    /// The most of a refused body ever kept.
    public static let maximumPrefix = 256

    public var at: Date
    public var peer: String?
    public var reason: String
    public var httpStatus: Int
    public var bodySize: Int?
    public var bodyPrefix: String?
    /// The class of refusal (``RefusalKind``'s name), nil in rows from before it was kept.
    public var kind: String?
    /// How many refusals of this class came from this address in this row's minute.
    public var count = 1
    /// The client's address without its port (what refusals are sampled by).
    public var peerHost: String?
    /// `kind|address|minute`: the row a later refusal of the same class, address and minute
    /// counts into (set by the store).
    public var sampleKey: String?

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
        if body.isEmpty { return nil }
        let mentions = body.withContiguousStorageIfAvailable(mentionsPassword) ?? Array(body).withUnsafeBufferPointer(mentionsPassword)
        if mentions { return nil }
        return String(decoding: body.prefix(maximumPrefix), as: UTF8.self)
    }

    /// Whether `bytes` contain "password" in any ASCII case: one pass, no copy (a refused body
    /// may be a whole megabyte, and a flood of them each takes this scan).
    static func mentionsPassword(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        // "password"; `byte | 0x20` is a letter's lower case, and equals one of these letters
        // only for that letter in either case.
        let needle: [UInt8] = [0x70, 0x61, 0x73, 0x73, 0x77, 0x6F, 0x72, 0x64]
        guard bytes.count >= needle.count else { return false }
        var start = 0
        while start <= bytes.count - needle.count {
            if bytes[start] | 0x20 == 0x70 {
                var matched = 1
                while matched < needle.count, bytes[start + matched] | 0x20 == needle[matched] { matched += 1 }
                if matched == needle.count { return true }
            }
            start += 1
        }
        return false
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
    /// Records a refused request: the first of its class, address and minute as a row
    /// (durable on return), the rest as a count on that row (returns at once).
    func reject(_ record: RejectionRecord) async throws(NotificationStoreError)
    /// Whether a write would succeed now (`GET /health`).
    func isWritable() async -> Bool
}

/// The durable store of received notifications, with group commit, over either audit backend.
///
/// **Durable before acknowledged.** ``append(_:)`` returns only after the transaction holding
/// the notification has committed. On SQLite the store is opened with `PRAGMA synchronous =
/// FULL` in WAL mode: SQLite fsyncs the WAL at every commit, so a returned append survives a
/// crash of the process *and* of the machine. (GRDB's default for WAL is NORMAL, which fsyncs
/// only at checkpoints: a commit survives `kill -9` but may be lost with the machine's power;
/// Apple never redelivers sandbox notifications, so we pay the fsync.) On PostgreSQL a commit
/// returns once the server has flushed it (`synchronous_commit` on, its default).
///
/// **Group commit.** One writer task drains a queue: every append waiting when it wakes goes
/// into one transaction, one fsync, and then all those callers are resumed. 1,000 concurrent
/// requests cost a handful of fsyncs, not 1,000. Each item runs in its own savepoint, so one
/// bad row cannot fail its neighbours.
///
/// **Bounded.** At most ``maximumPending`` writes wait for the writer; past that an append is
/// refused at once (`busy`: the receiver answers 503 with `Retry-After`, and Apple retries).
/// Refusals are sampled: one row per class, address and minute (at most
/// ``maximumSamplesPerMinute`` rows a minute, the rest counted under the address `*`), the
/// others counted into that row; rows older than `keepRefusals` are pruned at start and
/// hourly. Accepted notifications are never pruned.
public final class NotificationStore: NotificationSink, Service, Sendable {
    public let backend: any AuditBackend
    /// Where the store lives, as it may be shown (a PostgreSQL URL's password masked).
    public var location: String { backend.location }
    private let queue: WriteQueue
    /// Whether ``run()`` has started, and the callers of ``close()`` waiting for it to end.
    private let lifecycle = Mutex<(running: Bool, ended: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, false, []))
    /// The writer a test started with ``started()``.
    private let testRun = Mutex<Task<Void, Never>?>(nil)
    /// The most writes waiting for the writer (`--max-pending`).
    public let maximumPending: Int
    /// How long refusal rows are kept (`--keep-refusals`); nil keeps them.
    public let keepRefusals: Duration?

    public static let defaultMaximumPending = 10_000
    public static let defaultKeepRefusals = Duration.seconds(30 * 86_400)
    /// The most refusal rows written in one minute; past it refusals count under address `*`.
    public static let maximumSamplesPerMinute = 1_000

    /// Opens (creating and migrating) the SQLite audit database at `path` for notifications,
    /// committing with `synchronous = FULL`.
    /// - Parameter startWriter: false holds the writer until ``startWriting()`` (tests fill the
    ///   queue first to see one commit take everything).
    public convenience init(
        path: String, startWriter: Bool = true, maximumPending: Int = defaultMaximumPending,
        keepRefusals: Duration? = defaultKeepRefusals
    ) throws(NotificationStoreError) {
        let store: AuditStore
        do {
            store = try AuditStore(path: path, durable: true)
        } catch {
            throw NotificationStoreError(.open, "cannot open the notification store at \(path): \(error)")
        }
        self.init(backend: store, startWriter: startWriter, maximumPending: maximumPending, keepRefusals: keepRefusals)
    }

    /// Stores notifications in `backend` (SQLite opened `durable`, or PostgreSQL).
    public init(
        backend: any AuditBackend, startWriter: Bool = true, maximumPending: Int = defaultMaximumPending,
        keepRefusals: Duration? = defaultKeepRefusals
    ) {
        self.backend = backend
        self.maximumPending = maximumPending
        self.keepRefusals = keepRefusals
        queue = WriteQueue(started: startWriter, capacity: maximumPending)
        // Queued at once, so that even a store closed at once commits it.
        prune()
    }

    deinit {
        // Without a close, a writer would wait for the queue forever.
        queue.close()
    }

    /// The writer, as a service of its command's group: it commits what is queued until the
    /// group shuts down (or the task is cancelled), then stops taking writes, commits everything
    /// already queued (refusal counts included) and returns. Refusal rows older than
    /// `keepRefusals` are pruned at start and hourly; refusal counts are flushed once a second.
    public func run() async {
        let alreadyRunning = lifecycle.withLock { s in
            defer { s.running = true }
            return s.running
        }
        precondition(!alreadyRunning, "a NotificationStore runs once")
        await write()
    }

    /// The writer and its ticker, until the queue is closed and drained.
    private func write() async {
        let queue = self.queue
        let prune = self.prune
        await withDiscardingTaskGroup { group in
            // Shutdown, or cancellation, closes the queue; the writer below drains it either way
            // (its wait for work does not end on cancellation, so nothing queued is dropped).
            group.addTask {
                try? await gracefulShutdown()
                queue.close()
            }
            group.addTask {
                var tick = 0
                while !queue.isClosed {
                    if tick > 0, tick % 3600 == 0 { prune() }
                    tick += 1
                    do { try await Task.sleep(for: .seconds(1)) } catch { return }
                    queue.flushCountsSoon()
                }
            }
            await Self.writeLoop(queue: queue, backend: backend)
            group.cancelAll()
        }
        let waiting = lifecycle.withLock { s in
            s.ended = true
            defer { s.waiting = [] }
            return s.waiting
        }
        for waiter in waiting { waiter.resume() }
    }

    /// Runs the writer in a task of its own: for tests and tools that use a store outside a
    /// service group. ``close()`` ends it.
    package func started() -> NotificationStore {
        lifecycle.withLock { $0.running = true }
        testRun.withLock { $0 = Task { await self.write() } }
        return self
    }

    /// Queues the pruning of refusal rows older than `keepRefusals`.
    private var prune: @Sendable () -> Void {
        let queue = self.queue
        let keepRefusals = self.keepRefusals
        return {
            guard let keepRefusals else { return }
            queue.enqueueQuietly(.pruneRejections(before: Date().addingTimeInterval(-DurationText.seconds(keepRefusals))))
        }
    }

    /// Releases a writer held by `startWriter: false`.
    public func startWriting() { queue.start() }

    /// Transactions committed so far (each may hold many notifications).
    public var commitCount: Int { queue.commits }
    /// Appends and rejections waiting for the writer.
    public var pendingCount: Int { queue.pendingCount }

    public func append(_ record: NotificationRecord) async throws(NotificationStoreError) -> AppendOutcome {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<AppendOutcome, NotificationStoreError>, Never>) in
            queue.enqueue(.init(write: .notification(record), continuation: continuation))
        }
        return try result.get()
    }

    public func reject(_ record: RejectionRecord) async throws(NotificationStoreError) {
        var record = record
        let minute = Int((record.at.timeIntervalSince1970 / 60).rounded(.down))
        let kind = record.kind ?? "status-\(record.httpStatus)"
        guard let sample = queue.sample(kind: kind, host: record.peerHost ?? record.peer ?? "-", minute: minute) else {
            return  // counted into this minute's row for that class and address
        }
        record.sampleKey = sample.key
        if sample.overflow {
            record.peer = "*"
            record.peerHost = "*"
        }
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<AppendOutcome, NotificationStoreError>, Never>) in
            queue.enqueue(.init(write: .rejection(record), continuation: continuation))
        }
        _ = try result.get()
    }

    public func isWritable() async -> Bool {
        guard !queue.isClosed else { return false }
        return await backend.isWritable()
    }

    /// Stops taking writes, commits everything already queued (refusal counts included), and
    /// waits for the writer (at once when it never ran).
    public func close() async {
        queue.close()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let wait = lifecycle.withLock { s -> Bool in
                guard s.running, !s.ended else { return false }
                s.waiting.append(continuation)
                return true
            }
            if !wait { continuation.resume() }
        }
    }

    /// The synchronous mode of the SQLite writer connection (2 is FULL); -1 on PostgreSQL.
    func synchronousMode() throws -> Int {
        try (backend as? AuditStore)?.synchronousMode() ?? -1
    }

    // MARK: - The writer

    struct Item: Sendable {
        var write: NotificationWrite
        /// Nil for the store's own writes (refusal counts, pruning): nobody waits for them.
        var continuation: CheckedContinuation<Result<AppendOutcome, NotificationStoreError>, Never>?
    }

    private static func writeLoop(queue: WriteQueue, backend: any AuditBackend) async {
        while await queue.nextWakeup() {
            while true {
                let batch = queue.takeAll()
                if batch.isEmpty { break }
                let results: [Result<AppendOutcome, NotificationStoreError>]
                do {
                    results = try await backend.writeNotifications(batch.map(\.write))
                    queue.countCommit()
                } catch {
                    let failure = NotificationStoreError(.database, "the commit failed: \(error)")
                    results = batch.map { _ in .failure(failure) }
                }
                for (item, result) in zip(batch, results) { item.continuation?.resume(returning: result) }
            }
            if queue.isClosed && queue.pendingCount == 0 { break }
        }
        // Closed: anything that slipped in is refused, never left hanging.
        for item in queue.takeAll() {
            item.continuation?.resume(returning: .failure(NotificationStoreError(.closed, "the store is closed")))
        }
    }

    // MARK: - Reading

    /// Every stored notification, oldest first.
    public func notifications() async throws(NotificationStoreError) -> [StoredNotification] {
        do {
            return try await backend.notifications()
        } catch {
            throw NotificationStoreError(.database, "could not read notifications from \(location): \(error)")
        }
    }

    /// Every refused request, oldest first.
    public func rejections() async throws(NotificationStoreError) -> [RejectionRecord] {
        do {
            return try await backend.rejections()
        } catch {
            throw NotificationStoreError(.database, "could not read rejections from \(location): \(error)")
        }
    }
}

/// A notification row: the record plus how often it was delivered.
public struct StoredNotification: Sendable, Hashable {
    public var record: NotificationRecord
    public var deliveries: Int
    public var lastReceivedAt: Date

    public init(record: NotificationRecord, deliveries: Int, lastReceivedAt: Date) {
        self.record = record
        self.deliveries = deliveries
        self.lastReceivedAt = lastReceivedAt
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
        /// The minute being sampled, its sample keys, and the counts not yet written (by key).
        var minute = 0
        var samples: Set<String> = []
        var counts: [String: Int] = [:]
        var flushCounts = false
        /// A wake-up not yet taken by the writer, the writer waiting for one, and whether the
        /// last wake-up (the close) was given.
        var wakePending = false
        var waiter: CheckedContinuation<Bool, Never>?
        var finished = false
    }

    private let state: Mutex<State>
    let capacity: Int

    init(started: Bool, capacity: Int = NotificationStore.defaultMaximumPending) {
        state = Mutex(State(started: started))
        self.capacity = capacity
    }

    /// Waits for work; false once the queue is closed and its last wake-up was taken. Does not
    /// end on cancellation: the writer drains what was queued whatever stops the store.
    func nextWakeup() async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let now = state.withLock { s -> Bool? in
                if s.wakePending {
                    s.wakePending = false
                    return true
                }
                if s.finished { return false }
                s.waiter = continuation
                return nil
            }
            if let now { continuation.resume(returning: now) }
        }
    }

    /// Wakes the writer (once: wake-ups while it works are one).
    private func wake(finishing: Bool = false) {
        let waiter = state.withLock { s -> CheckedContinuation<Bool, Never>? in
            if s.finished { return nil }
            if finishing { s.finished = true }
            if let waiter = s.waiter {
                s.waiter = nil
                return waiter
            }
            s.wakePending = true
            return nil
        }
        waiter?.resume(returning: true)
    }

    func enqueue(_ item: NotificationStore.Item) {
        let refusal = state.withLock { s -> NotificationStoreError? in
            guard !s.closed else { return NotificationStoreError(.closed, "the store is closed") }
            guard s.items.count < capacity else {
                return NotificationStoreError(.busy, "\(s.items.count) writes are waiting for the store (--max-pending \(capacity))")
            }
            s.items.append(item)
            return nil
        }
        if let refusal {
            item.continuation?.resume(returning: .failure(refusal))
            return
        }
        if state.withLock({ $0.started }) { wake() }
    }

    /// The store's own write, nobody waiting for it.
    func enqueueQuietly(_ write: NotificationWrite) {
        enqueue(.init(write: write, continuation: nil))
    }

    /// The sample key a refusal of `kind` from `host` in `minute` gets its own row under
    /// (`overflow`: under the address `*`, this minute's rows being used up), or nil when that
    /// row exists already (the refusal is counted into it).
    func sample(kind: String, host: String, minute: Int) -> (key: String, overflow: Bool)? {
        state.withLock { s in
            if minute != s.minute {
                s.minute = minute
                s.samples.removeAll(keepingCapacity: true)
            }
            var key = "\(kind)|\(host)|\(minute)"
            let overflow = !s.samples.contains(key) && s.samples.count >= NotificationStore.maximumSamplesPerMinute
            if overflow { key = "\(kind)|*|\(minute)" }
            if s.samples.insert(key).inserted { return (key, overflow) }
            s.counts[key, default: 0] += 1
            return nil
        }
    }

    /// Asks the writer to write the counts gathered so far (once a second).
    func flushCountsSoon() {
        let due = state.withLock { s -> Bool in
            guard !s.counts.isEmpty else { return false }
            s.flushCounts = true
            return s.started
        }
        if due { wake() }
    }

    /// Everything queued (and the refusal counts when they are due, or at close), or nothing
    /// while the writer is held.
    func takeAll() -> [NotificationStore.Item] {
        state.withLock { s in
            guard s.started || s.closed else { return [] }
            defer { s.items = [] }
            if (s.flushCounts || s.closed) && !s.counts.isEmpty {
                // After the items: a count never precedes the row it adds to.
                let counts = s.counts.sorted { $0.key < $1.key }.map {
                    NotificationStore.Item(write: .rejectionCount(sampleKey: $0.key, add: $0.value), continuation: nil)
                }
                s.counts = [:]
                s.flushCounts = false
                return s.items + counts
            }
            return s.items
        }
    }

    func start() {
        state.withLock { $0.started = true }
        wake()
    }

    func close() {
        state.withLock { $0.closed = true }
        wake(finishing: true)
    }

    func countCommit() { state.withLock { $0.commits += 1 } }
    var commits: Int { state.withLock { $0.commits } }
    var pendingCount: Int { state.withLock { $0.items.count } }
    var isClosed: Bool { state.withLock { $0.closed } }
}
