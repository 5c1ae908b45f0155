import AuditTrail
import Foundation
import TestSupport

/// An outbox that counts the deliveries recorded as delivered, so a test can wait for them
/// (``delivered``) instead of reading the store in a loop. Everything else is the store's.
package final class WatchedOutbox: ForwardOutbox {
    package let base: any ForwardOutbox
    package let delivered: AwaitedCount

    /// - Parameter delivered: the count to add to (several outboxes may share one).
    package init(_ base: any ForwardOutbox, delivered: AwaitedCount = AwaitedCount()) {
        self.base = base
        self.delivered = delivered
    }

    package func recordDeliveryResults(_ results: [ForwardAttemptResult]) async throws {
        try await base.recordDeliveryResults(results)
        delivered.add(results.filter { $0.next == .delivered }.count)
    }

    package func registerForwardTargets(_ urls: [String], types: Set<String>, at: Date) async throws {
        try await base.registerForwardTargets(urls, types: types, at: at)
    }
    package func forwardTargets() async throws -> [ForwardTargetRecord] { try await base.forwardTargets() }
    package func disableForwardTarget(_ url: String, at: Date, reason: String) async throws {
        try await base.disableForwardTarget(url, at: at, reason: reason)
    }
    package func enableForwardTarget(_ url: String) async throws -> Bool { try await base.enableForwardTarget(url) }
    package func claimDeliveries(targets: [String], now: Date, leaseUntil: Date, limit: Int) async throws
        -> [(delivery: ForwardDelivery, notification: StoredNotification)]
    {
        try await base.claimDeliveries(targets: targets, now: now, leaseUntil: leaseUntil, limit: limit)
    }
    package func outbox(state: ForwardDelivery.State?, limit: Int) async throws -> [ForwardDelivery] {
        try await base.outbox(state: state, limit: limit)
    }
    package func pendingDeliveries() async throws -> (count: Int, oldestQueuedAt: Date?) { try await base.pendingDeliveries() }
    package func finishedDeliveries() async throws -> [ForwardDelivery.State: Int] { try await base.finishedDeliveries() }
    package func deliveriesByTarget() async throws -> [ForwardTargetCounts] { try await base.deliveriesByTarget() }
    package func requeueDeliveries(notificationUUIDs: [String]?, since: Date?, targets: [String]?, now: Date) async throws
        -> (queued: Int, unknown: [String])
    {
        try await base.requeueDeliveries(notificationUUIDs: notificationUUIDs, since: since, targets: targets, now: now)
    }
}
