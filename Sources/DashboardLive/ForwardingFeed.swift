import AuditTrail
import Dashboard
import Foundation
import Synchronization

/// A notification feed with forwarding's counts added: ``run(clock:)`` reads each target's
/// deliveries from the audit trail (``ForwardOutbox/deliveriesByTarget()``) at once, then every
/// ``interval`` of its clock, and ``poll()`` hands the latest to the dashboard as
/// ``NotificationFeedEvent/forwarding(_:)``. Both on-call doors use it: `dash --db PATH
/// --follow` and `dash --receive PORT`.
///
/// The read counts the whole outbox (about 3 s for 2 million deliveries in SQLite on this
/// machine under load), so it runs beside the UI loop, never in it: the screen does not stall
/// while it counts, and the next read waits ten times as long as the last one took when that
/// is more than ``interval`` (a big outbox costs at most a tenth of a core).
public final class ForwardingFeed: NotificationFeed {
    /// How often the counts are read at most.
    public static let interval: Duration = .seconds(5)

    private let base: any NotificationFeed
    private let outbox: any ForwardOutbox
    /// The refund requests still to answer (the same trail's), read with the counts.
    private let consumption: (any ConsumptionQueue)?
    /// Counts read and not yet handed to the dashboard.
    private let unread = Mutex<[NotificationFeedEvent]>([])
    /// The last failure said, so an outbox that stays unreadable is said once.
    private let lastFailure = Mutex<String?>(nil)

    public init(_ base: any NotificationFeed, outbox: any ForwardOutbox, consumption: (any ConsumptionQueue)? = nil) {
        self.base = base
        self.outbox = outbox
        self.consumption = consumption
    }

    public func poll() async -> [NotificationFeedEvent] {
        var events = await base.poll()
        events += unread.withLock { unread in
            defer { unread.removeAll() }
            return unread
        }
        return events
    }

    /// Reads the counts now and then every ``interval`` (or ten times the last read's time,
    /// when longer) on `clock`, until cancelled.
    public func run<C: Clock>(clock: C) async where C.Duration == Duration {
        while !Task.isCancelled {
            let started = clock.now
            await read()
            let took = started.duration(to: clock.now)
            do { try await clock.sleep(for: max(Self.interval, took * 10)) } catch { return }
        }
    }

    /// One read of the counts, kept for the next ``poll()``.
    func read() async {
        do {
            let counts = try await outbox.deliveriesByTarget()
            let open = try await consumption?.openConsumptionRequests()
            unread.withLock {
                $0.append(.forwarding(counts))
                if let open { $0.append(.consumption(open)) }
            }
            lastFailure.withLock { $0 = nil }
        } catch {
            let reason = "could not read forwarding's outbox: \(error)"
            let isNew = lastFailure.withLock { last in
                defer { last = reason }
                return last != reason
            }
            if isNew { unread.withLock { $0.append(.note(reason)) } }
        }
    }
}
