import AppStoreAPI
import Foundation
import ReceiptCore
import Synchronization

/// `notifications --follow [--format jsonl] [--since TIME | --after-id N]`: one line per
/// notification as it is stored, for pipes. SQLite is polled twice a second; PostgreSQL wakes
/// the follower by LISTEN/NOTIFY (and is polled once a second besides). Each JSON line is the
/// object `--format json` lists plus `id`, the row id `--after-id` resumes after.
///
/// Rows are read in id order. On PostgreSQL several writers commit out of id order, so an id
/// skipped over is watched for 30 s and written when its row turns up.
public struct NotificationStream: Sendable {
    /// Where the stream starts: after a row id, after the last row received before a time, or
    /// at the end (only what is stored from now on).
    public enum Start: Sendable {
        case afterID(Int64)
        case since(Date)
        case end
    }

    /// How long a skipped id is waited for.
    public static let gapWait: TimeInterval = 30

    public let backend: any AuditBackend
    public let filter: NotificationFilter
    /// One JSON object a line (`jsonl`); else the list's text.
    public let jsonLines: Bool

    public init(backend: any AuditBackend, filter: NotificationFilter, jsonLines: Bool) {
        self.backend = backend
        self.filter = filter
        self.jsonLines = jsonLines
    }

    /// Streams from `start` until the task is cancelled or `write` returns false (the reader
    /// went away). The backend stays open: the caller closes it.
    public func run(from start: Start, write: ([UInt8]) -> Bool) async throws {
        var cursor: Int64
        switch start {
        case .afterID(let id): cursor = id
        case .since(let since): cursor = try await Self.lastID(before: since, in: backend)
        case .end: cursor = try await backend.lastNotificationID()
        }
        let wake = FollowWakeup()
        let changes = backend.changes()
        let decoder = ReceiptDecoder()
        let poll: Duration = changes == nil ? .milliseconds(500) : .seconds(1)
        try await withThrowingTaskGroup(of: Void.self) { group in
            if let changes {
                group.addTask {
                    for await _ in changes { wake.signal() }
                }
            }
            var gaps: [Int64: Date] = [:]
            while !Task.isCancelled {
                var lines: [UInt8] = []
                let page = try await backend.notifications(after: cursor, limit: 500)
                var previous = cursor
                for (id, n) in page {
                    if id > previous + 1, gaps.count < 10_000 {
                        for missing in (previous + 1)..<min(id, previous + 1 + 10_000) { gaps[missing] = Date() }
                    }
                    previous = id
                    if filter.matches(n) { lines += line(id: id, n, decoder: decoder) }
                }
                cursor = max(cursor, previous)
                // Ids skipped over that have turned up since (another writer's later commit).
                if let first = gaps.keys.min() {
                    let late = try await backend.notifications(after: first - 1, limit: 500).filter { gaps[$0.id] != nil }
                    for (id, n) in late {
                        gaps[id] = nil
                        if filter.matches(n) { lines += line(id: id, n, decoder: decoder) }
                    }
                    let expired = Date().addingTimeInterval(-Self.gapWait)
                    gaps = gaps.filter { $0.value > expired }
                }
                if !lines.isEmpty, !write(lines) { break }  // the reader went away
                if page.count < 500 { await wake.wait(upTo: poll) }
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

/// Wakes the follower when the store says something changed, or after a while.
public final class FollowWakeup: Sendable {
    private let state = Mutex<(pending: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

    public init() {}

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

    /// Returns at the next signal (or one already given), or after `limit`.
    public func wait(upTo limit: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                try? await Task.sleep(for: limit)
                self.signal()
            }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s -> Bool in
                    if s.pending {
                        s.pending = false
                        return true
                    }
                    s.waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
            group.cancelAll()
        }
        state.withLock { $0.pending = false }
    }
}
