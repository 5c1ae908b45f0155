import Foundation
import AppStoreAPI
import PlainWords
import ReceiptCore
import RetryEngine
import Synchronization

/// Something the API simulator's writes make Apple send, as it happens: a notification to
/// deliver now, or a mass extension to complete (and announce) when its delay is over.
public enum LiveNotificationEvent: Sendable {
    case send(OutgoingNotification)
    case massExtensionDue(key: String, environment: APIEnvironment, atMS: Int64)
    /// A notification a write should have made that could not be made (its words): reported,
    /// never dropped in silence.
    case notSent(String)
}

/// The simulator's bounded outbox of ``LiveNotificationEvent``s. Closed (nothing kept) until
/// someone listens with ``ServerAPIService/liveNotifications(limit:)``; when the listener falls
/// behind by `limit` events, later ones are dropped and counted, never queued without bound.
final class LiveOutbox: Sendable {
    private let state = Mutex<(continuation: AsyncStream<LiveNotificationEvent>.Continuation?, dropped: Int)>((nil, 0))

    var isOpen: Bool { state.withLock { $0.continuation != nil } }
    var dropped: Int { state.withLock { $0.dropped } }

    func open(limit: Int) -> AsyncStream<LiveNotificationEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: LiveNotificationEvent.self, bufferingPolicy: .bufferingOldest(max(1, limit)))
        let earlier = state.withLock { s in
            defer { s.continuation = continuation }
            return s.continuation
        }
        earlier?.finish()
        return stream
    }

    /// Queues `event`; false when nobody listens or the queue is full.
    @discardableResult
    func post(_ event: LiveNotificationEvent) -> Bool {
        state.withLock { s in
            guard let continuation = s.continuation else { return false }
            switch continuation.yield(event) {
            case .enqueued: return true
            case .dropped, .terminated:
                s.dropped += 1
                return false
            @unknown default: return false
            }
        }
    }
}

extension ServerAPIService {
    /// From now on, what the writes make Apple send: a `TEST` for a test notification request,
    /// `RENEWAL_EXTENDED` for each extension, and when a mass extension completes, a
    /// `RENEWAL_EXTENDED` or `RENEWAL_EXTENSION`/`FAILURE` per subscription and a
    /// `RENEWAL_EXTENSION`/`SUMMARY`. One listener at a time (a new one ends the last).
    public func liveNotifications(limit: Int = 1000) -> AsyncStream<LiveNotificationEvent> {
        outbox.open(limit: limit)
    }

    /// Events dropped because the listener was `limit` behind.
    public var droppedLiveEvents: Int { outbox.dropped }

    /// A notification payload's envelope: type, subtype, a new UUID, version, signed date.
    func envelope(type: String, subtype: String?, nowMS: Int64) -> [String: JSONValue] {
        var payload: [String: JSONValue] = [
            "notificationType": .string(type), "notificationUUID": .string(UUID().uuidString.lowercased()), "version": .string("2.0"),
            "signedDate": .integer(nowMS),
        ]
        if let subtype { payload["subtype"] = .string(subtype) }
        return payload
    }

    /// The fields Apple puts in every notification's `data` (or `summary`) and every page of a
    /// transaction list, for `environment`.
    func appFields(_ environment: APIEnvironment) -> [String: JSONValue] {
        var data: [String: JSONValue] = ["environment": .string(environment.rawValue)]
        if let bundle = store.bundleID { data["bundleId"] = .string(bundle) }
        if environment == .production, let app = store.appAppleID { data["appAppleId"] = .integer(app) }
        return data
    }

    /// Signs `payload` as a notification ready to send; nil when signing fails.
    func outgoing(_ payload: [String: JSONValue], environment: APIEnvironment, customer: String?) -> OutgoingNotification? {
        guard let signed = try? pki.signJWS(payload: .object(payload)) else { return nil }
        return OutgoingNotification(
            notificationUUID: payload["notificationUUID"]?.text ?? "", environment: environment, notificationType: payload["notificationType"]?.text,
            subtype: payload["subtype"]?.text, signedMS: payload["signedDate"]?.int64 ?? 0, signedPayload: signed, customer: customer)
    }

    /// A notification about one subscription (`RENEWAL_EXTENDED`, `RENEWAL_EXTENSION`/`FAILURE`):
    /// its current period and renewal info as the extensions left them.
    func subscriptionNotification(type: String, subtype: String?, originalID: String, environment: APIEnvironment, nowMS: Int64)
        -> OutgoingNotification?
    {
        guard let current = currentPeriod(originalID, environment) else { return nil }
        let (info, status) = renewalInfo(current, environment, nowMS: nowMS)
        var transaction = applyingActions(current, environment)
        transaction["signedDate"] = .integer(nowMS)
        guard let signedTransaction = try? pki.signJWS(payload: .object(transaction)),
            let signedRenewal = try? pki.signJWS(payload: .object(info))
        else { return nil }
        var data = appFields(environment)
        data["status"] = .integer(Int64(status.rawValue))
        data["signedTransactionInfo"] = .string(signedTransaction)
        data["signedRenewalInfo"] = .string(signedRenewal)
        var payload = envelope(type: type, subtype: subtype, nowMS: nowMS)
        payload["data"] = .object(data)
        return outgoing(payload, environment: environment, customer: current.customer)
    }

    /// Queues `RENEWAL_EXTENDED` for the subscription `originalID` (when someone listens).
    func announceExtension(_ originalID: String, environment: APIEnvironment, nowMS: Int64) {
        guard outbox.isOpen else { return }
        guard
            let notification = subscriptionNotification(
                type: "RENEWAL_EXTENDED", subtype: nil, originalID: originalID, environment: environment, nowMS: nowMS)
        else {
            outbox.post(.notSent("RENEWAL_EXTENDED for \(originalID) (\(environment.rawValue)): not sent, its current period could not be signed"))
            return
        }
        outbox.post(.send(notification))
    }

    /// Queues what a completed mass extension sends: per subscription `RENEWAL_EXTENDED` or
    /// `RENEWAL_EXTENSION`/`FAILURE`, then `RENEWAL_EXTENSION`/`SUMMARY` with the counts.
    func announceMassExtension(
        _ request: ActionState.MassRequest, requestID: String, extended: [String], failed: [String], environment: APIEnvironment, nowMS: Int64
    ) {
        guard outbox.isOpen else { return }
        for original in extended {
            if let n = subscriptionNotification(type: "RENEWAL_EXTENDED", subtype: nil, originalID: original, environment: environment, nowMS: nowMS) {
                outbox.post(.send(n))
            }
        }
        for original in failed {
            if let n = subscriptionNotification(
                type: "RENEWAL_EXTENSION", subtype: "FAILURE", originalID: original, environment: environment, nowMS: nowMS)
            {
                outbox.post(.send(n))
            }
        }
        var summary = appFields(environment)
        summary["requestIdentifier"] = .string(requestID)
        summary["productId"] = .string(request.productID)
        if let storefronts = request.storefronts { summary["storefrontCountryCodes"] = .array(storefronts.map(JSONValue.string)) }
        summary["succeededCount"] = .integer(request.succeeded)
        summary["failedCount"] = .integer(request.failed)
        var payload = envelope(type: "RENEWAL_EXTENSION", subtype: "SUMMARY", nowMS: nowMS)
        payload["summary"] = .object(summary)
        if let n = outgoing(payload, environment: environment, customer: nil) { outbox.post(.send(n)) }
    }
}

/// Delivers what the API simulator's writes make Apple send (``LiveNotificationEvent``) with
/// ``NotificationSender``: each notification with Apple's retries, each mass extension
/// completed when its delay is over (on the simulator's clock), as they happen (not paced by
/// `--notification-rate`). At most `inFlight` deliveries at once, those waiting days to retry
/// included; further events wait in the outbox (1000), and what it drops is reported. Runs
/// until cancelled.
public struct LiveNotificationSender: Sendable {
    let api: ServerAPIService
    let sender: NotificationSender
    let inFlight: Int
    let report: @Sendable (String) -> Void
    let events: AsyncStream<LiveNotificationEvent>
    /// How long a notification waits for the receiver's port to accept connections before its
    /// first attempt (`--wait-for-receiver`): a receiver started at the moment of the write
    /// still gets it (sandbox sends once).
    let waitForReceiver: Double

    /// Listens from now on (a write answered before ``run()`` starts is not missed). `report`
    /// gets one line per notification: delivered, given up on, or not sent.
    public init(
        api: ServerAPIService, sender: NotificationSender, inFlight: Int = 10_000, waitForReceiver: Double = 0,
        report: @escaping @Sendable (String) -> Void
    ) {
        self.api = api
        self.sender = sender
        self.inFlight = max(1, inFlight)
        self.waitForReceiver = waitForReceiver
        self.report = report
        events = api.liveNotifications()
    }

    public func run() async {
        await withTaskGroup(of: Void.self) { group in
            var running = 0
            var dropped = 0
            for await event in events {
                if running >= inFlight {
                    await group.next()
                    running -= 1
                }
                running += 1
                group.addTask { await handle(event) }
                let now = api.droppedLiveEvents
                if now > dropped {
                    self.report("notifications: \(now - dropped) dropped, the sender was 1000 behind (\(now) in all)")
                    dropped = now
                }
            }
            group.cancelAll()
        }
    }

    private func handle(_ event: LiveNotificationEvent) async {
        switch event {
        case .notSent(let words):
            self.report("notification \(words)")
        case .send(let notification):
            if waitForReceiver > 0, !(await sender.waitForListener(seconds: waitForReceiver)) {
                self.report(
                    "receiptdash: nothing accepted connections at \(sender.configuration.url) within \(waitForReceiver) s; sending \(notification.notificationUUID) anyway")
            }
            let report = await sender.send([notification])
            let attempts = report.deliveries.first?.attempts ?? []
            let last = attempts.last.map { $0.result.rawValue } ?? "not sent"
            let type = [notification.notificationType, notification.subtype].compactMap { $0 }.joined(separator: "/")
            self.report(
                "notification \(type) \(notification.notificationUUID) (\(notification.environment.rawValue)): \(last) after \(CountNoun.attempt.count(attempts.count))"
            )
        case .massExtensionDue(let key, let environment, let atMS):
            let clock = api.configuration.clock
            let wait = Double(atMS - ServerAPIStore.milliseconds(clock.now())) / 1000
            do { try await clock.sleep(wait) } catch { return }
            api.completeMassExtension(key, environment: environment)
        }
    }
}
