import AppStoreAPI
import Foundation
import ReceiptCore
import Synchronization

/// `notifications --follow [--format jsonl] [--since TIME | --after-id N]`: one line per
/// notification as it is stored, for pipes. Each JSON line is the object `--format json` lists
/// plus `id`, the row id `--after-id` resumes after.
///
/// Rows are found by the store's follower (``NotificationFollower``, the dashboard's too), so a
/// row another writer commits out of id order on PostgreSQL is written once, when it is
/// committed. The follower reads again when the store says another writer committed (PostgreSQL's
/// LISTEN/NOTIFY) or after ``pollInterval`` on the stream's clock.
public struct NotificationStream: Sendable {
    /// Where the stream starts: after a row id, after the last row received before a time, or
    /// at the end (only what is stored from now on).
    public enum Start: Sendable {
        case afterID(Int64)
        case since(Date)
        case end
    }

    /// The most rows one read takes (a long backlog is written a page at a time).
    public static let pageSize = 500

    public let backend: any AuditBackend
    public let filter: NotificationFilter
    /// One JSON object a line (`jsonl`); else the list's text.
    public let jsonLines: Bool
    /// What the wait between reads is measured on.
    public let clock: any Clock<Duration>
    /// How long the stream waits for a wake-up before it reads anyway: half a second when the
    /// store cannot tell another process's commit (SQLite), a second when it can.
    public let pollInterval: Duration

    public init(
        backend: any AuditBackend, filter: NotificationFilter, jsonLines: Bool, clock: any Clock<Duration> = ContinuousClock(),
        pollInterval: Duration? = nil
    ) {
        self.backend = backend
        self.filter = filter
        self.jsonLines = jsonLines
        self.clock = clock
        self.pollInterval = pollInterval ?? (backend.changes() == nil ? .milliseconds(500) : .seconds(1))
    }

    /// Streams from `start` until the task is cancelled or `write` returns false (the reader
    /// went away). The backend stays open: the caller closes it.
    public func run(from start: Start, write: ([UInt8]) -> Bool) async throws {
        let after: Int64
        switch start {
        case .afterID(let id): after = id
        case .since(let since): after = try await Self.lastID(before: since, in: backend)
        case .end: after = try await backend.lastNotificationID()
        }
        let follower = NotificationFollower(backend: backend, after: after)
        let wake = FollowWakeup(clock: clock)
        let changes = backend.changes()
        let decoder = ReceiptDecoder()
        try await withThrowingTaskGroup(of: Void.self) { group in
            if let changes {
                group.addTask {
                    for await _ in changes { wake.signal() }
                }
            }
            while !Task.isCancelled {
                let read = try await follower.next(limit: Self.pageSize)
                var lines: [UInt8] = []
                for row in read.notifications where row.isNew && filter.matches(row.stored) {
                    lines += line(id: row.id, row.stored, decoder: decoder)
                }
                if !lines.isEmpty, !write(lines) { break }  // the reader went away
                if read.caughtUp { await wake.wait(upTo: pollInterval) }
            }
            group.cancelAll()
        }
    }

    /// One notification as a line: JSON (`jsonl`) or the list's text.
    private func line(id: Int64, _ n: StoredNotification, decoder: ReceiptDecoder) -> [UInt8] {
        let row = n.record.listingRow(deliveries: n.deliveries, decoder: decoder)
        guard jsonLines else { return Array((NotificationListing.textLines(row) + "\n").utf8) }
        return Array(NotificationListing.jsonLine(row, id: id).utf8) + [0x0A]
    }

    /// The id before the first notification received at or after `since`, read a page at a time.
    public static func lastID(before since: Date, in backend: any AuditBackend) async throws -> Int64 {
        var after: Int64 = 0
        while true {
            let page = try await backend.notifications(after: after, limit: 1_000)
            guard let last = page.last else { return after }
            if let first = page.first(where: { $0.notification.record.receivedAt >= since }) { return first.id - 1 }
            after = last.id
        }
    }
}

/// Wakes the follower when the store says something changed, or after a while on its clock.
public final class FollowWakeup: Sendable {
    private let state = Mutex<(pending: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))
    private let clock: any Clock<Duration>

    public init(clock: any Clock<Duration> = ContinuousClock()) {
        self.clock = clock
    }

    public func signal() {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            if let waiter = s.waiter {
                s.waiter = nil
                return waiter
            }
            s.pending = true
            return nil
        }
        waiter?.resume()
    }

    /// Returns at the next signal (or one already given), or after `limit` on the clock.
    public func wait(upTo limit: Duration) async {
        let clock = self.clock
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                // Cancelled: the signal came first (or the stream ends), and the wait is over.
                if (try? await clock.sleep(for: limit)) != nil { self.signal() }
            }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let now = state.withLock { s -> Bool in
                        if s.pending || Task.isCancelled {
                            s.pending = false
                            return true
                        }
                        s.waiter = continuation
                        return false
                    }
                    if now { continuation.resume() }
                }
            } onCancel: {
                self.signal()
            }
            group.cancelAll()
        }
        state.withLock { $0.pending = false }
    }
}
