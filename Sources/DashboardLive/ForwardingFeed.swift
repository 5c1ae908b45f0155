import AuditTrail
import Dashboard
import Foundation
import Synchronization

/// A notification feed with forwarding's counts added: every ``interval`` (on the dashboard's
/// clock) each target's deliveries are read from the audit trail (``ForwardOutbox/deliveriesByTarget()``)
/// and reported as ``NotificationFeedEvent/forwarding(_:)``. Both on-call doors use it: `dash
/// --db PATH --follow` and `dash --receive PORT`.
public final class ForwardingFeed: NotificationFeed {
    /// How often the counts are read: they count the whole outbox.
    public static let interval: TimeInterval = 5

    private let base: any NotificationFeed
    private let outbox: any ForwardOutbox
    private let now: @Sendable () -> Date
    private let lastRead = Mutex(Date.distantPast)
    /// The last failure said, so an outbox that stays unreadable is said once.
    private let lastFailure = Mutex<String?>(nil)

    public init(_ base: any NotificationFeed, outbox: any ForwardOutbox, now: @escaping @Sendable () -> Date = { Date() }) {
        self.base = base
        self.outbox = outbox
        self.now = now
    }

    public func poll() async -> [NotificationFeedEvent] {
        var events = await base.poll()
        let now = self.now()
        let due = lastRead.withLock { last in
            guard now.timeIntervalSince(last) >= Self.interval || now < last else { return false }
            last = now
            return true
        }
        guard due else { return events }
        do {
            events.append(.forwarding(try await outbox.deliveriesByTarget()))
            lastFailure.withLock { $0 = nil }
        } catch {
            let reason = "could not read forwarding's outbox: \(error)"
            let isNew = lastFailure.withLock { last in
                defer { last = reason }
                return last != reason
            }
            if isNew { events.append(.note(reason)) }
        }
        return events
    }
}
