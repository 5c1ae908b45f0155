import AppStoreAPI
import AuditTrail
import Foundation
import ReceiptCore

/// Merges the sources into one timeline: a fact seen by two sources (a renewal in the history
/// and as `DID_RENEW`) is one event listing both. Facts are keyed by what they are about: a
/// transaction's start (`start:<id>`), its refund or revocation, a subscription's expiry; the
/// rest are events of their own.
struct TimelineBuilder {
    let at: Date
    private var events: [CustomerEvent] = []
    private var byKey: [String: Int] = [:]
    /// What a start event says after its verb ("pro.monthly, until …"), by key: a notification
    /// that names the start keeps it.
    private var startFacts: [String: String] = [:]
    /// Transactions seen in the history or the trail, by id (for the expiries and the kinds).
    private var transactions: [String: (purchase: Purchase, sources: [CustomerSource], trust: String?, refs: [String])] = [:]
    /// The keys of the mass extensions added (paired by product, not by customer).
    private var massWriteKeys: Set<String> = []

    init(at: Date) { self.at = at }

    // MARK: The App Store Server API

    mutating func addLookup(_ lookup: CustomerLookupResult) {
        let purchases = lookup.transactions.compactMap(\.transaction)
        let upgradedAt = Self.upgradeTimes(purchases)
        for item in lookup.transactions {
            guard let p = item.transaction else { continue }
            let trust = item.trust.verdict.rawValue
            let ref = "api:" + (p.transactionID ?? "?")
            let detail = CustomerEvent.Detail(
                source: .api, lines: Self.transactionLines(p) + ["trust: \(trust)"] + item.trust.steps.map { "  \($0.name): \($0.outcome.rawValue), \($0.reason)" })
            addTransaction(p, source: .api, trust: trust, ref: ref, detail: detail, upgradedAt: upgradedAt)
        }
        // A refund Apple lists without a revocation date in the transactions it sent.
        for id in lookup.refunds where byKey["refund:" + id] == nil && byKey["revoke:" + id] == nil && transactions[id]?.purchase.isUpgraded != true {
            let p = transactions[id]?.purchase
            add(
                key: "refund:" + id,
                CustomerEvent(
                    at: p?.cancellationDate ?? lookup.at, sources: [.api], kind: .refund, transactionID: id,
                    originalTransactionID: p?.originalTransactionID, productID: p?.productID,
                    summary: "refunded (Get Refund History lists it; Apple sent no revocation date: shown at the look-up's time)",
                    trust: transactions[id]?.trust, refs: ["api:" + id]))
        }
    }

    // MARK: The audit trail

    mutating func addStoredPurchases(_ purchases: [StoredPurchase]) {
        let upgradedAt = Self.upgradeTimes(purchases.map(\.purchase))
        for stored in purchases {
            let p = stored.purchase
            var sources: [CustomerSource] = [stored.fromLookup ? .api : .receipt]
            let trust: String
            if let status = stored.verifyStatus {
                sources.append(.verify)
                trust = status == 0 ? "verified" : "status \(status)"
            } else {
                trust = stored.fromLookup ? "recorded" : "not verified"
            }
            let ref = "receipt:" + stored.contentHash
            var lines = Self.transactionLines(p)
            lines.append("\(stored.fromLookup ? "look-up" : "receipt") row #\(stored.receiptID), \(stored.format), first seen \(AppleDate.iso8601(stored.firstSeen))")
            lines.append("verification: \(stored.state)" + (stored.verifyStatus.map { ", Apple's status \($0)" } ?? ""))
            for source in sources {
                addTransaction(p, source: source, trust: trust, ref: ref, detail: CustomerEvent.Detail(source: source, lines: lines), upgradedAt: upgradedAt)
            }
        }
    }

    mutating func addNotifications(_ notifications: [StoredNotification]) {
        for stored in notifications {
            let r = stored.record
            let kind = Self.kind(type: r.notificationType, subtype: r.subtype, revocationType: Self.revocationType(r))
            let when = r.signedDate ?? r.receivedAt
            let words = [r.notificationType ?? "V1", r.subtype].compactMap { $0 }.joined(separator: "/")
            var lines = [
                "notification \(words)", "notificationUUID \(r.notificationUUID)",
                "signed \(r.signedDate.map(AppleDate.iso8601) ?? "?"), received \(AppleDate.iso8601(r.receivedAt)), deliveries \(stored.deliveries)",
                "trust: \(r.verdict.rawValue)" + (r.reason.map { " (\($0))" } ?? ""),
            ]
            if let t = r.transactionID { lines.append("transaction \(t) of \(r.originalTransactionID ?? "?"), product \(r.productID ?? "?")") }
            let detail = CustomerEvent.Detail(source: .notification, lines: lines, payload: r.signedPayload, ref: r.notificationUUID)
            let event = CustomerEvent(
                at: when, sources: [.notification], kind: kind, transactionID: r.transactionID, originalTransactionID: r.originalTransactionID,
                productID: r.productID, summary: Self.notificationSummary(kind, words), trust: r.verdict.rawValue,
                refs: ["notification:" + r.notificationUUID], details: [detail])
            add(key: Self.key(kind, transactionID: r.transactionID) ?? "notification:" + r.notificationUUID, event)
        }
    }

    mutating func addActions(_ actions: [AuditAction]) {
        for action in actions {
            let kind: CustomerEventKind =
                switch APIAction(rawValue: action.action) {
                case .extend?, .massExtend?: .extension
                case .consumption?: .consumptionAnswered
                case .appAccountToken?: .tokenSet
                case .finish?: .finished
                case .testNotification?: .test
                case .massExtendStatus?, nil: .unknown
                // Retention Messaging's writes name no customer: they reach no timeline.
                case .uploadImage?, .deleteImage?, .uploadMessage?, .deleteMessage?, .configureDefaultMessage?, .deleteDefaultMessage?,
                    .configureRealtimeURL?, .deleteRealtimeURL?:
                    .unknown
                }
            let outcome = Self.outcome(action)
            var lines = ["\(action.action) by \(action.user), \(action.environment ?? "environment not recorded")", "outcome: \(outcome)"]
            if let policy = action.policy { lines.insert("by policy \(policy) (receive --consumption-policy)", at: 1) }
            if let id = action.requestID { lines.append("request id \(id)") }
            if let plan = action.plan { lines.append(contentsOf: plan.split(separator: "\n").map(String.init)) }
            let event = CustomerEvent(
                at: action.at, sources: [.action], kind: kind, transactionID: action.transactionID, originalTransactionID: action.originalTransactionID,
                productID: action.productID, summary: Self.actionSummary(kind, action, outcome), trust: nil,
                refs: ["action:" + (action.requestID ?? action.id.map { "#\($0)" } ?? "?")],
                details: [CustomerEvent.Detail(source: .action, lines: lines, payload: action.requestBody)],
                outcome: action.result == AuditAction.pending ? "unknown" : action.result)
            let key = "action:\(action.id ?? Int64(events.count))"
            if action.action == APIAction.massExtend.rawValue { massWriteKeys.insert(key) }
            add(key: key, event)
        }
    }

    /// A `retention-offered` event for each realtime request answered with an offer (the
    /// requests answered with nothing are in `notifications --retention`, not the story).
    mutating func addRetention(_ requests: [RetentionRecord]) {
        for r in requests where r.result == .offered {
            let what = r.answerKind.map { "\($0) (message \(r.messageIdentifier ?? "?"))" } ?? "an answer"
            let lines = [
                "realtime request \(r.requestIdentifier), \(r.environment ?? "environment not sent"), locale \(r.locale ?? "?")",
                "answered \(r.result.rawValue) in \(String(format: "%.1f", r.latencyMilliseconds)) ms: \(r.reason)",
            ]
            add(
                key: "retention:" + r.requestIdentifier,
                CustomerEvent(
                    at: r.receivedAt, sources: [.retention], kind: .retentionOffered, originalTransactionID: r.originalTransactionID,
                    productID: r.productID, summary: "tapped Cancel: we offered \(what) by rule \(r.rule ?? "?")", trust: nil,
                    refs: ["retention:" + r.requestIdentifier],
                    details: [CustomerEvent.Detail(source: .retention, lines: lines, payload: r.answer, ref: r.requestIdentifier)]))
        }
    }

    /// An `expired` event for each subscription that ended and is not being retried, at its
    /// last period's end (merged with an `EXPIRED` notification about the same transaction).
    mutating func addExpiries(_ answers: [SubscriptionAnswer]) {
        for answer in answers where answer.state == SubscriptionState.expired.rawValue {
            let last = transactions.values.filter {
                $0.purchase.originalTransactionID == answer.originalTransactionID && $0.purchase.isUpgraded != true
            }.max { ($0.purchase.expiresDate ?? .distantPast) < ($1.purchase.expiresDate ?? .distantPast) }
            guard let last, let end = last.purchase.expiresDate, end <= at, let id = last.purchase.transactionID else { continue }
            // A later period the trail knows only from a notification: the subscription went on.
            let startKinds: Set<CustomerEventKind> = [.renewal, .offerRedeemed, .upgrade, .crossgrade, .purchase]
            if events.contains(where: { $0.originalTransactionID == answer.originalTransactionID && startKinds.contains($0.kind) && $0.at > end }) {
                continue
            }
            add(
                key: "expired:" + id,
                CustomerEvent(
                    at: end, sources: last.sources, kind: .expired, transactionID: id, originalTransactionID: answer.originalTransactionID,
                    productID: last.purchase.productID, summary: "the subscription ended (its last period expired)", trust: last.trust,
                    refs: last.refs))
        }
    }

    /// How long after a write Apple's notification of it may be signed and still be its
    /// confirmation (a `RENEWAL_EXTENDED` follows an extension within seconds).
    static let confirmationWindow: TimeInterval = 86_400

    /// An extension we sent and the `RENEWAL_EXTENDED` (or `RENEWAL_EXTENSION`) Apple sent for
    /// it are one event (sources `action` and `notification`): the notification of the same
    /// subscription signed first from a minute before the write to a day after it. The write
    /// names its subscription by original transaction, or by a transaction whose original
    /// the sources know. Apple's notification confirms the write: an outcome not known becomes
    /// `success`.
    ///
    /// A mass extension names a product, not a customer: it joins the customer's story only
    /// through the notification Apple sent about this customer's subscription to that product
    /// in the same window (extended, or `RENEWAL_EXTENSION`/`FAILURE`: not extended). One that
    /// Apple sent nothing about for this customer is not part of their story: whether it
    /// reached them is not known.
    mutating func pairWritesWithTheirNotifications() {
        func original(_ e: CustomerEvent) -> String? {
            e.originalTransactionID ?? e.transactionID.flatMap { transactions[$0]?.purchase.originalTransactionID }
        }
        let massWrites = Set(massWriteKeys.compactMap { byKey[$0] })
        func isMass(_ i: Int) -> Bool { massWrites.contains(i) }
        // The notifications merged into a write, and the mass writes no notification names.
        var removed = Set<Int>()
        let writes = events.indices.filter { events[$0].kind == .extension && events[$0].sources == [.action] }.sorted { events[$0].at < events[$1].at }
        for w in writes {
            let write = events[w]
            let mass = isMass(w)
            // A write Apple refused, or that never left, caused nothing.
            guard write.outcome == "success" || write.outcome == "unknown" else {
                if mass { removed.insert(w) }
                continue
            }
            let subscription = mass ? nil : original(write)
            if !mass && subscription == nil { continue }
            let candidates = events.indices.filter { i in
                let e = events[i]
                guard !removed.contains(i), e.sources == [.notification],
                    e.at >= write.at.addingTimeInterval(-60), e.at <= write.at.addingTimeInterval(Self.confirmationWindow)
                else { return false }
                if mass { return (e.kind == .extension || e.kind == .extensionFailed) && e.productID != nil && e.productID == write.productID }
                return e.kind == .extension && original(e) == subscription
            }
            guard let n = candidates.min(by: { events[$0].at < events[$1].at }) else {
                if mass { removed.insert(w) }
                continue
            }
            removed.insert(n)
            let notification = events[n]
            var merged = write
            merged.sources = Array(Set(write.sources + notification.sources)).sorted()
            for ref in notification.refs where !merged.refs.contains(ref) { merged.refs.append(ref) }
            merged.details += notification.details
            merged.trust = notification.trust
            if merged.transactionID == nil { merged.transactionID = notification.transactionID }
            if merged.originalTransactionID == nil { merged.originalTransactionID = notification.originalTransactionID }
            if merged.productID == nil { merged.productID = notification.productID }
            if merged.outcome == "unknown" {
                merged.outcome = "success"
                merged.summary = Self.confirmedSummary(merged.summary)
            }
            if notification.kind == .extensionFailed {
                // Apple took the request; this subscription was not extended by it.
                merged.kind = .extensionFailed
                merged.outcome = "failed"
                merged.summary += "; Apple could not extend this subscription (\(notification.summary))"
            } else {
                merged.summary += "; Apple confirmed it (\(notification.summary))"
            }
            events[w] = merged
        }
        guard !removed.isEmpty else { return }
        events = events.enumerated().filter { !removed.contains($0.offset) }.map(\.element)
        byKey = byKey.filter { !removed.contains($0.value) }.mapValues { index in index - removed.filter { $0 < index }.count }
    }

    /// An extension's line once Apple confirmed it: done, its outcome `success` ("we asked Apple
    /// to extend the renewal date: unknown…" becomes "we extended the renewal date: success").
    static func confirmedSummary(_ summary: String) -> String {
        summary.replacingOccurrences(of: ": " + unknownOutcome, with: ": success")
            .replacingOccurrences(of: "we asked Apple to extend the renewal date", with: "we extended the renewal date")
    }

    /// The words of an outcome not known.
    static let unknownOutcome = "unknown: it may have been applied"

    /// The events, oldest first (same instant: in the order of the kinds, then by transaction).
    func finish() -> [CustomerEvent] {
        let order = Dictionary(uniqueKeysWithValues: CustomerEventKind.allCases.enumerated().map { ($1, $0) })
        return events.enumerated().sorted { a, b in
            if a.element.at != b.element.at { return a.element.at < b.element.at }
            if a.element.kind != b.element.kind { return order[a.element.kind]! < order[b.element.kind]! }
            return a.offset < b.offset
        }.map(\.element)
    }

    // MARK: Merging

    private mutating func addTransaction(
        _ p: Purchase, source: CustomerSource, trust: String, ref: String, detail: CustomerEvent.Detail, upgradedAt: Set<Int64>
    ) {
        guard let id = p.transactionID else { return }
        if var known = transactions[id] {
            if !known.sources.contains(source) { known.sources.append(source) }
            if !known.refs.contains(ref) { known.refs.append(ref) }
            transactions[id] = known
        } else {
            transactions[id] = (p, [source], trust, [ref])
        }
        let kind = Self.startKind(p, upgradedAt: upgradedAt)
        if startFacts["start:" + id] == nil { startFacts["start:" + id] = Self.startFacts(p) }
        add(
            key: "start:" + id,
            CustomerEvent(
                at: p.purchaseDate ?? at, sources: [source], kind: kind, transactionID: id, originalTransactionID: p.originalTransactionID,
                productID: p.productID, summary: Self.startSummary(kind, p), trust: trust, refs: [ref], details: [detail]))
        if let revoked = p.cancellationDate, p.isUpgraded != true {
            let kind: CustomerEventKind =
                switch p.revocationType {
                case "REFUND_PRORATED": .proratedRefund
                case "FAMILY_REVOKE": .revoke
                default: .refund
                }
            var words = kind == .revoke ? "access revoked (Family Sharing)" : kind == .proratedRefund ? "refunded in part" : "refunded"
            if let share = p.revocationPercentage { words += " (\(Double(share) / 1000)%)" }
            if let reason = p.cancellationReason { words += reason == 1 ? ": an issue in the app" : reason == 0 ? ": another reason" : ": reason \(reason)" }
            add(
                key: Self.key(kind, transactionID: id)!,
                CustomerEvent(
                    at: revoked, sources: [source], kind: kind, transactionID: id, originalTransactionID: p.originalTransactionID,
                    productID: p.productID, summary: words, trust: trust, refs: [ref], details: [detail]))
        }
    }

    private mutating func add(key: String, _ event: CustomerEvent) {
        guard let index = byKey[key] else {
            byKey[key] = events.count
            events.append(event)
            return
        }
        var merged = events[index]
        let onlyNotified = merged.sources.allSatisfy { $0 == .notification }
        merged.sources = Array(Set(merged.sources + event.sources)).sorted()
        for ref in event.refs where !merged.refs.contains(ref) { merged.refs.append(ref) }
        merged.details += event.details
        merged.trust = Self.worse(merged.trust, event.trust)
        // A notification names what a transaction was (a renewal, an offer redeemed, an
        // upgrade) better than the history's reading of its fields; a transaction's own date
        // beats a notification's.
        let notificationNames = onlyNotified == false && event.sources == [.notification] && key.hasPrefix("start:")
        if notificationNames, let facts = startFacts[key] {
            merged.kind = event.kind
            let words = event.summary.range(of: " (", options: .backwards).map { String(event.summary[$0.lowerBound...]) } ?? ""
            merged.summary = Self.verb(event.kind) + " " + facts + words
        } else if notificationNames || (!onlyNotified && Self.specificity(event.kind) > Self.specificity(merged.kind) && !merged.sources.contains(.notification)) {
            merged.kind = event.kind
            merged.summary = event.summary
        }
        // A transaction's own date beats the date a notification about it was signed.
        if onlyNotified && event.sources.contains(where: { $0 != .notification }) {
            merged.at = event.at
        }
        if merged.productID == nil { merged.productID = event.productID }
        if merged.originalTransactionID == nil { merged.originalTransactionID = event.originalTransactionID }
        events[index] = merged
    }

    private static func specificity(_ kind: CustomerEventKind) -> Int {
        switch kind {
        case .purchase, .renewal, .refund: 0
        case .crossgrade: 1
        default: 2
        }
    }

    /// The worse of two trust words: `invalid` before `unverifiable` before `test`, then any.
    static func worse(_ a: String?, _ b: String?) -> String? {
        for word in ["invalid", "unverifiable", "test"] where a == word || b == word { return word }
        return a ?? b
    }

    /// The merge key of a kind that is a fact about one transaction; nil for the others.
    static func key(_ kind: CustomerEventKind, transactionID: String?) -> String? {
        guard let id = transactionID else { return nil }
        switch kind {
        case .purchase, .renewal, .upgrade, .crossgrade, .offerRedeemed: return "start:" + id
        case .refund, .proratedRefund: return "refund:" + id
        case .revoke: return "revoke:" + id
        case .expired: return "expired:" + id
        default: return nil
        }
    }

    // MARK: Words

    /// When each upgraded transaction was replaced (its revocation date), in seconds.
    static func upgradeTimes(_ purchases: [Purchase]) -> Set<Int64> {
        Set(purchases.filter { $0.isUpgraded == true }.compactMap { $0.cancellationDate.map { Int64($0.timeIntervalSince1970.rounded()) } })
    }

    static func startKind(_ p: Purchase, upgradedAt: Set<Int64>) -> CustomerEventKind {
        if p.transactionID == p.originalTransactionID || p.originalTransactionID == nil { return .purchase }
        if p.transactionReason == "PURCHASE" {
            let start = p.purchaseDate.map { Int64($0.timeIntervalSince1970.rounded()) }
            if let start, (start - 60...start + 60).contains(where: upgradedAt.contains) { return .upgrade }
            return .crossgrade
        }
        return .renewal
    }

    static func startSummary(_ kind: CustomerEventKind, _ p: Purchase) -> String {
        verb(kind) + " " + startFacts(p)
    }

    /// How a start's line begins.
    static func verb(_ kind: CustomerEventKind) -> String {
        switch kind {
        case .purchase: "bought"
        case .upgrade: "upgraded to"
        case .crossgrade: "changed to"
        case .offerRedeemed: "redeemed an offer:"
        default: "renewed"
        }
    }

    /// The product, until when, and the offer.
    static func startFacts(_ p: Purchase) -> String {
        var words = p.productID ?? "?"
        if let expires = p.expiresDate { words += ", until \(AppleDate.iso8601(expires))" }
        if let offer = offerWords(type: p.offerType, id: p.offerIdentifier) { words += ", \(offer)" }
        return words
    }

    static func offerWords(type: Int?, id: String?) -> String? {
        guard let type else { return nil }
        let name =
            switch type {
            case 1: "introductory offer"
            case 2: "promotional offer"
            case 3: "offer code"
            case 4: "win-back offer"
            default: "offer type \(type)"
            }
        return id.map { "\(name) \($0)" } ?? name
    }

    static func transactionLines(_ p: Purchase) -> [String] {
        var lines = ["transaction \(p.transactionID ?? "?") of \(p.originalTransactionID ?? "?"), product \(p.productID ?? "?")"]
        for field in PurchaseField.all where field !== PurchaseField.source {
            if let value = field.value(in: p) { lines.append("\(field.name): \(value.text)") }
        }
        return lines
    }

    static func kind(type: String?, subtype: String?, revocationType: String?) -> CustomerEventKind {
        switch (type, subtype) {
        case ("SUBSCRIBED", _), ("ONE_TIME_CHARGE", _): .purchase
        case ("DID_RENEW", _): .renewal
        case ("DID_CHANGE_RENEWAL_PREF", "UPGRADE"?): .upgrade
        case ("DID_CHANGE_RENEWAL_PREF", "DOWNGRADE"?): .downgrade
        case ("DID_CHANGE_RENEWAL_PREF", _): .crossgrade
        case ("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED"?): .autoRenewOff
        case ("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED"?): .autoRenewOn
        case ("OFFER_REDEEMED", _): .offerRedeemed
        case ("DID_FAIL_TO_RENEW", "GRACE_PERIOD"?): .gracePeriod
        case ("DID_FAIL_TO_RENEW", _), ("GRACE_PERIOD_EXPIRED", _): .billingRetry
        case ("EXPIRED", _): .expired
        case ("REFUND", _): revocationType == "REFUND_PRORATED" ? .proratedRefund : .refund
        case ("REFUND_DECLINED", _): .refundDeclined
        case ("REFUND_REVERSED", _): .refundReversed
        case ("REVOKE", _): .revoke
        case ("RENEWAL_EXTENSION", "FAILURE"?): .extensionFailed
        case ("RENEWAL_EXTENDED", _), ("RENEWAL_EXTENSION", _): .extension
        case ("PRICE_INCREASE", _): .priceIncrease
        case ("CONSUMPTION_REQUEST", _): .consumptionRequest
        case ("TEST", _): .test
        default: .unknown
        }
    }

    /// A refund notification's `revocationType` (read from its payload: the row keeps ids only).
    static func revocationType(_ r: NotificationRecord) -> String? {
        guard r.notificationType == "REFUND", let payload = r.signedPayload, let decoded = try? ReceiptDecoder().decode(text: payload) else { return nil }
        return decoded.transactions.first?.revocationType
    }

    static func notificationSummary(_ kind: CustomerEventKind, _ words: String) -> String {
        let meaning: String =
            switch kind {
            case .purchase: "bought"
            case .renewal: "renewed"
            case .upgrade: "upgraded"
            case .downgrade: "will change to a lower level at the next renewal"
            case .crossgrade: "renewal preference changed"
            case .autoRenewOff: "turned auto-renew off"
            case .autoRenewOn: "turned auto-renew on"
            case .offerRedeemed: "redeemed an offer"
            case .gracePeriod: "renewal failed: in the grace period"
            case .billingRetry: "renewal failed: Apple retries billing"
            case .expired: "the subscription ended"
            case .refund: "refunded"
            case .proratedRefund: "refunded in part"
            case .refundDeclined: "refund declined"
            case .refundReversed: "refund reversed"
            case .revoke: "access revoked (Family Sharing)"
            case .extension: "renewal date extended"
            case .extensionFailed: "a mass extension could not extend this subscription"
            case .priceIncrease: "price increase"
            case .consumptionRequest: "Apple asks for consumption information (answer within 12 h)"
            case .test: "a test notification"
            default: "a notification this version has no kind for"
            }
        return "\(meaning) (\(words))"
    }

    /// A recorded write's outcome in words; `pending` is `unknown`: it may have been applied.
    static func outcome(_ action: AuditAction) -> String {
        switch action.result {
        case "success": "success" + (action.httpStatus.map { " (HTTP \($0))" } ?? "")
        case AuditAction.pending, "unknown": unknownOutcome
        case "refused": "refused" + (action.httpStatus.map { " (HTTP \($0)" + (action.apiError.map { ", error \($0))" } ?? ")") } ?? "")
        case "failed": "failed: it never reached Apple"
        default: action.result
        }
    }

    /// What happened to a recorded write, said plainly: done ("we extended the renewal date:
    /// success (HTTP 200)"), refused ("Apple refused to extend the renewal date (HTTP 400, error
    /// …)"), never sent, or not known.
    static func actionSummary(_ kind: CustomerEventKind, _ action: AuditAction, _ outcome: String) -> String {
        let (done, asked): (String, String) =
            switch kind {
            case .extension where action.action == APIAction.massExtend.rawValue:
                ("we extended the renewal date of every subscriber to \(action.productID ?? "the product") (mass extension)",
                 "extend the renewal date of every subscriber to \(action.productID ?? "the product") (mass extension)")
            case .extension: ("we extended the renewal date", "extend the renewal date")
            case .consumptionAnswered:
                if let policy = action.policy {
                    ("we sent consumption information by policy \(policy)", "take consumption information (by policy \(policy))")
                } else {
                    ("we sent consumption information", "take consumption information")
                }
            case .tokenSet: ("we set the app account token", "set the app account token")
            case .finished: ("we finished the transaction", "finish the transaction")
            case .test: ("we asked for a test notification", "send a test notification")
            default: ("we sent \(action.action)", "take \(action.action)")
            }
        switch action.result {
        case "success":
            let confirmed = CustomerAnswers.confirmedDate(action).map { "; new renewal date \(AppleDate.iso8601($0))" } ?? ""
            return "\(done): \(outcome)\(confirmed)"
        case "refused":
            let details = action.httpStatus.map { " (HTTP \($0)" + (action.apiError.map { ", error \($0))" } ?? ")") } ?? ""
            return "Apple refused to \(asked)\(details)"
        case "failed": return "we asked Apple to \(asked); the request never reached Apple"
        default: return "we asked Apple to \(asked): \(outcome)"
        }
    }
}
