import AppStoreClients
import AuditTrail
import Dashboard
import Foundation
import Logging
import NotificationReceiver
import ReceiptCore
import ServiceLifecycle
import Synchronization

extension NotificationEntry {
    /// A stored notification as the Notifications pane shows it.
    public init(_ record: NotificationRecord, deliveries: Int, decoder: ReceiptDecoder) {
        self.init(row: record.listingRow(deliveries: deliveries, decoder: decoder), signedPayload: record.signedPayload, reason: record.reason)
    }
}

extension NotificationFeedEvent {
    public init(_ rejection: RejectionRecord) {
        self = .refused(
            at: rejection.at, status: rejection.httpStatus, reason: rejection.reason, peer: rejection.peer, count: rejection.count,
            sample: rejection.sampleKey, kind: rejection.kind)
    }
}

/// `dash --db PATH --follow`: the notifications a receiver (another process, or another host
/// on a shared file system) stores in that database, polled on each pass of the UI loop.
public final class FollowedNotifications: NotificationFeed {
    private let follower: NotificationFollower
    private let decoder = ReceiptDecoder()
    /// PostgreSQL says when another writer committed; SQLite is looked at each pass.
    private let changes: ChangeWatch
    /// The last failure reported, so a database that stays unreadable is said once, not twice a second.
    private let lastFailure = Mutex<String?>(nil)

    private let announced = Mutex(false)
    /// When the heartbeats were last read.
    private let lastBeatCheck = Mutex(Date.distantPast)
    static let beatCheck: TimeInterval = 5

    public init(follower: NotificationFollower) {
        self.follower = follower
        changes = ChangeWatch(follower.backend.changes())
    }

    public func poll() async -> [NotificationFeedEvent] {
        let first = announced.withLock { done in
            defer { done = true }
            return !done
        }
        if first { return [.source("following \(follower.location)")] + (await poll()) }
        // The receivers' heartbeats, every few seconds whether or not anything changed: a
        // receiver that died changes nothing.
        var beat: [NotificationFeedEvent] = []
        let now = Date()
        if lastBeatCheck.withLock({ last in
            defer { if now.timeIntervalSince(last) >= Self.beatCheck { last = now } }
            return now.timeIntervalSince(last) >= Self.beatCheck
        }), let newest = try? await follower.backend.receiverHeartbeats().first {
            beat = [.receiverBeat(newest.at)]
        }
        guard changes.take() else { return beat }
        do {
            let (rows, rejections) = try await follower.poll()
            lastFailure.withLock { $0 = nil }
            return beat + rows.map { .received(NotificationEntry($0.record, deliveries: $0.deliveries, decoder: decoder)) }
                + rejections.map(NotificationFeedEvent.init)
        } catch {
            let reason = error.reason
            let isNew = lastFailure.withLock { last in
                defer { last = reason }
                return last != reason
            }
            return isNew ? [.failed(reason)] : []
        }
    }
}

/// `dash --receive PORT`: the dashboard embeds the receiver. What the store made durable (and
/// what was refused) is posted here by ``ObservedNotificationSink`` and drained by the loop.
public final class ReceivedNotifications: NotificationFeed {
    private let inbox = Mutex<[NotificationFeedEvent]>([])
    private let decoder = ReceiptDecoder()

    public func post(_ event: ObservedNotificationSink.Event) {
        let converted: NotificationFeedEvent
        switch event {
        case .stored(let record, let deliveries): converted = .received(NotificationEntry(record, deliveries: deliveries, decoder: decoder))
        case .rejected(let rejection): converted = NotificationFeedEvent(rejection)
        }
        post(converted)
    }

    public func post(_ event: NotificationFeedEvent) {
        inbox.withLock { $0.append(event) }
    }

    public func poll() -> [NotificationFeedEvent] {
        inbox.withLock { events in
            defer { events.removeAll(keepingCapacity: true) }
            return events
        }
    }
}

/// The embedded receiver's service group, once its listener is up.
private final class StartedGroup: Sendable {
    private let group = Mutex<ServiceGroup?>(nil)

    var current: ServiceGroup? { group.withLock { $0 } }

    func started(_ made: ServiceGroup) {
        group.withLock { $0 = made }
    }
}

/// The receiver a dashboard embeds (`--receive PORT`): the same verification, durable store and
/// answers as `receiptdash receive`, with its logs kept off the terminal (the Log pane says what
/// matters) and SIGTERM/SIGINT left to the dashboard, which restores the terminal first.
public struct EmbeddedReceiver {
    public let feed = ReceivedNotifications()
    public let store: NotificationStore
    private let group = StartedGroup()
    public let task: Task<Void, Never>

    public init(host: String, port: Int, backend: any AuditBackend, policy: ReceiverPolicy) {
        let store = NotificationStore(backend: backend)
        self.store = store
        let path = backend.location
        let feed = self.feed
        let logger = Logger(label: "receiptdash.receive", factory: { _ in SwiftLogNoOpLogHandler() })
        let receiver = NotificationReceiver(
            sink: ObservedNotificationSink(store) { feed.post($0) }, policy: policy, logger: logger,
            // The dashboard's verifyReceipt and API requests are counted in the same registry.
            metrics: ReceiverMetrics(registry: ServiceMetrics.shared.registry))
        let group = self.group
        // The dashboard owns SIGINT and SIGTERM (it restores the terminal first): ``stop()``
        // shuts the group down instead, the listener first, then the writer.
        task = Task {
            do {
                var listeners = ReceiverListeners(host: host, port: port)
                listeners.portFlags.port = "--receive"
                let listening = try receiver.services(listeners) { address in
                    feed.post(.source("receiving at http://\(address)/notifications"))
                    feed.post(.note("notifications are stored in \(path) before their 200"))
                }
                let made = ServiceGroup(
                    configuration: .init(services: ([store] as [any Service] + listening).map { .init(service: $0) }, logger: logger))
                group.started(made)
                try await made.run()
            } catch {
                // A port in use is named with --receive (PortInUseError).
                feed.post(.failed("the receiver stopped: \(error)"))
            }
        }
    }

    /// Stops accepting, lets requests in flight finish, then commits what they queued.
    public func stop() async {
        if let group = group.current {
            await group.triggerGracefulShutdown()
        } else {
            task.cancel()
        }
        await task.value
        await store.close()
    }
}
