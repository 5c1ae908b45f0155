import AuditTrail
import Foundation
import ReceiptCore
import RetryEngine
import ServiceLifecycle
import Synchronization

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

    /// The name this store's receiver beats under (``ReceiverHeartbeat``, every 10 s while the
    /// writer runs); nil beats nothing (tests, backfills).
    public let heartbeat: String?
    /// What the ticker waits on and the dates its heartbeats and prunes carry.
    public let clock: ServiceClock
    /// Marked at each notification and refusal taken: background work of the same process
    /// (the consumption answerer) waits for a quiet moment.
    public let activity: ActivityMark?

    public static let defaultMaximumPending = 10_000
    public static let defaultKeepRefusals = Duration.seconds(30 * 86_400)
    /// The most refusal rows written in one minute; past it refusals count under address `*`.
    public static let maximumSamplesPerMinute = 1_000

    /// Stores notifications in `backend` (SQLite opened `durable`, or PostgreSQL).
    public init(
        backend: any AuditBackend, startWriter: Bool = true, maximumPending: Int = defaultMaximumPending,
        keepRefusals: Duration? = defaultKeepRefusals, heartbeat: String? = nil, clock: ServiceClock = .system, activity: ActivityMark? = nil
    ) {
        self.clock = clock
        self.activity = activity
        self.backend = backend
        self.heartbeat = heartbeat
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
        let heartbeat = self.heartbeat
        let clock = self.clock
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
                    if let heartbeat, tick % Int(ReceiverHeartbeat.interval) == 0 {
                        queue.enqueueQuietly(.heartbeat(receiver: heartbeat, at: clock.now()))
                    }
                    tick += 1
                    do { try await clock.clock.sleep(for: .seconds(1)) } catch { return }
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
        let clock = self.clock
        return {
            guard let keepRefusals else { return }
            queue.enqueueQuietly(.pruneRejections(before: clock.now().addingTimeInterval(-DurationText.seconds(keepRefusals))))
        }
    }

    /// Releases a writer held by `startWriter: false`.
    public func startWriting() { queue.start() }

    /// Transactions committed so far (each may hold many notifications).
    public var commitCount: Int { queue.commits }
    /// Appends and rejections waiting for the writer.
    public var pendingCount: Int { queue.pendingCount }

    /// Returns once at least `count` writes wait for the writer at once (a test's sign that its
    /// requests reached the store), or when the task is cancelled.
    package func waitUntilPending(atLeast count: Int) async {
        await queue.wait { $0.items.count >= count }
    }

    /// Returns once every refusal counted so far into an existing row is committed (the counts
    /// are flushed once a second), or when the task is cancelled.
    package func waitUntilRefusalCountsCommitted() async {
        let counted = queue.countedRefusals
        await queue.wait { $0.committedRefusalCounts >= counted }
    }

    public func append(_ record: NotificationRecord) async throws(NotificationStoreError) -> AppendOutcome {
        activity?.mark(clock.now())
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<AppendOutcome, NotificationStoreError>, Never>) in
            queue.enqueue(.init(write: .notification(record), continuation: continuation))
        }
        return try result.get()
    }

    public func reject(_ record: RejectionRecord) async throws(NotificationStoreError) {
        activity?.mark(clock.now())
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
        try backend.synchronousMode()
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

/// The queue between callers and the one writer: items under a Mutex, wake-ups through an
/// AsyncStream that keeps at most one pending signal (the writer takes everything anyway).
final class WriteQueue: Sendable {
    struct State {
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
        /// Refusals counted into an existing row so far, how many of them are committed, and
        /// how many the batch being committed holds.
        var countedRefusals = 0
        var committedRefusalCounts = 0
        var refusalCountsInBatch = 0
        /// Waits for a condition of the queue (``wait(until:)``), by id.
        var watchers: [Int: Watcher] = [:]
        var nextWatcher = 0
    }

    struct Watcher {
        let condition: @Sendable (State) -> Bool
        let continuation: CheckedContinuation<Void, Never>
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
        let (refusal, ready) = state.withLock { s -> (NotificationStoreError?, [CheckedContinuation<Void, Never>]) in
            guard !s.closed else { return (NotificationStoreError(.closed, "the store is closed"), []) }
            guard s.items.count < capacity else {
                return (NotificationStoreError(.busy, "\(s.items.count) writes are waiting for the store (--max-pending \(capacity))"), [])
            }
            s.items.append(item)
            return (nil, Self.takeReadyWatchers(&s))
        }
        if let refusal {
            item.continuation?.resume(returning: .failure(refusal))
            return
        }
        if state.withLock({ $0.started }) { wake() }
        for continuation in ready { continuation.resume() }
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
            s.countedRefusals += 1
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
            s.refusalCountsInBatch = 0
            if (s.flushCounts || s.closed) && !s.counts.isEmpty {
                s.refusalCountsInBatch = s.counts.values.reduce(0, +)
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

    func countCommit() {
        let ready = state.withLock { s in
            s.commits += 1
            s.committedRefusalCounts += s.refusalCountsInBatch
            s.refusalCountsInBatch = 0
            return Self.takeReadyWatchers(&s)
        }
        for continuation in ready { continuation.resume() }
    }

    /// Returns once `condition` holds of the queue (checked at each enqueue and commit), or at
    /// once when the task is cancelled.
    func wait(until condition: @escaping @Sendable (State) -> Bool) async {
        let id = state.withLock { s in
            defer { s.nextWatcher += 1 }
            return s.nextWatcher
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                // Under the lock: a cancellation handler that ran first has marked the task cancelled.
                let now = state.withLock { s -> Bool in
                    if condition(s) || Task.isCancelled { return true }
                    s.watchers[id] = Watcher(condition: condition, continuation: continuation)
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.watchers.removeValue(forKey: id) }?.continuation.resume()
        }
    }

    /// The watchers whose condition now holds, taken out of `s` under the lock the caller
    /// already holds; the caller resumes them once it has let go of it.
    private static func takeReadyWatchers(_ s: inout State) -> [CheckedContinuation<Void, Never>] {
        guard !s.watchers.isEmpty else { return [] }
        let now = s
        let met = s.watchers.filter { $0.value.condition(now) }
        for id in met.keys { s.watchers[id] = nil }
        return met.values.map(\.continuation)
    }

    var commits: Int { state.withLock { $0.commits } }
    var countedRefusals: Int { state.withLock { $0.countedRefusals } }
    var pendingCount: Int { state.withLock { $0.items.count } }
    var isClosed: Bool { state.withLock { $0.closed } }
}
