import AppStoreAPI
import AuditTrail
import Foundation
import ReceiptCore

/// What `customer` was given to tell one customer's story: the API's answer (nil offline), what
/// Apple says it sent (Get Notification History, nil when not asked), and the audit trail's rows
/// (nil when no trail was opened).
public struct CustomerInputs: Sendable {
    public var at: Date
    /// `at` was chosen (`--at`), not the time of asking: every source is cut to that instant
    /// (see ``asOf``), and Apple's subscription status, which is of now, is labelled so and
    /// never compared with the state at `at`.
    public var pointInTime = false
    public var lookup: CustomerLookupResult?
    public var sent: [SentNotification]?
    /// Why Apple's notification history could not be read.
    public var sentError: String?
    public var stored: StoredCustomerRecords?
    /// Why the trail could not be read.
    public var storeError: String?

    public init(
        at: Date, pointInTime: Bool = false, lookup: CustomerLookupResult? = nil, sent: [SentNotification]? = nil, sentError: String? = nil,
        stored: StoredCustomerRecords? = nil, storeError: String? = nil
    ) {
        self.at = at
        self.pointInTime = pointInTime
        self.lookup = lookup
        self.sent = sent
        self.sentError = sentError
        self.stored = stored
        self.storeError = storeError
    }

    /// The sources as they stood at `at`: purchases made after it, notifications signed after
    /// it, actions sent after it and what Apple says it sent after it left out; a refund or
    /// revocation after it not yet happened. Renewal infos say what comes next from now, so
    /// they are left out too (auto-renew at a past instant is not known). Apple's statuses are
    /// kept: they are labelled as now.
    public var asOf: CustomerInputs {
        var cut = self
        let at = self.at
        func before(_ date: Date?) -> Bool { (date ?? .distantPast) <= at }
        func asThen(_ purchase: Purchase) -> Purchase {
            var p = purchase
            if let revoked = p.cancellationDate, revoked > at {
                p.cancellationDate = nil
                p.cancellationReason = nil
            }
            return p
        }
        if var lookup = cut.lookup {
            lookup.transactions = lookup.transactions.compactMap { item in
                guard before(item.transaction?.purchaseDate) else { return nil }
                var item = item
                item.decoded.transactions = item.decoded.transactions.map(asThen)
                return item
            }
            // A refund listed is one of a kept transaction refunded by then.
            let refunded = Set(lookup.transactions.compactMap { $0.transaction?.cancellationDate == nil ? nil : $0.transaction?.transactionID })
            lookup.refunds = lookup.refunds.filter(refunded.contains)
            lookup.renewals = []
            let inputs = lookup.transactions.map(\.decoded)
            lookup.analysis = inputs.isEmpty ? nil : PurchaseAnalysis.analyze(inputs, at: at)
            cut.lookup = lookup
        }
        cut.sent = cut.sent?.filter { before($0.signedDate) }
        if var stored = cut.stored {
            stored.purchases = stored.purchases.compactMap { p in
                guard before(p.purchase.purchaseDate) else { return nil }
                var p = p
                p.purchase = asThen(p.purchase)
                return p
            }
            stored.notifications = stored.notifications.filter { before($0.record.signedDate ?? $0.record.receivedAt) }
            stored.actions = stored.actions.filter { before($0.at) }
            cut.stored = stored
        }
        return cut
    }
}

/// One notification Apple's history says it sent.
public struct SentNotification: Sendable, Hashable {
    public var notificationUUID: String
    public var notificationType: String?
    public var subtype: String?
    public var signedDate: Date?
    public var transactionID: String?
    public var originalTransactionID: String?
    /// `SUCCESS`, or why a send failed, oldest first.
    public var attempts: [String]

    public init(
        notificationUUID: String, notificationType: String?, subtype: String?, signedDate: Date?, transactionID: String?,
        originalTransactionID: String?, attempts: [String]
    ) {
        self.notificationUUID = notificationUUID
        self.notificationType = notificationType
        self.subtype = subtype
        self.signedDate = signedDate
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.attempts = attempts
    }
}

/// The customer's ids, as the sources gave them.
public struct CustomerIDs: Sendable, Hashable {
    public var appTransactionIDs: [String] = []
    public var appAccountTokens: [String] = []
    public var originalTransactionIDs: [String] = []
    public var environment: String?

    public init() {}
}

/// The state of one subscription now.
public struct SubscriptionAnswer: Sendable, Hashable {
    public var group: String?
    public var originalTransactionID: String
    public var productID: String?
    /// ``SubscriptionState``'s raw value.
    public var state: String
    /// Apple's status (Get All Subscription Statuses) in `lookup --status` words, when asked.
    public var apiStatus: String?
    /// The story is as of a chosen instant (`--at`) while ``apiStatus`` is Apple's of now.
    public var apiStatusIsNow = false
    public var until: Date?
    public var autoRenew: Bool?
    public var autoRenewProductID: String?
    public var billingRetry: Bool
    public var gracePeriodUntil: Date?
    /// `pending` (not yet answered) or `accepted`, from the renewal info's `priceIncreaseStatus`.
    public var priceIncrease: String?
    public var billingPlanType: String?
    public var commitment: CommitmentInfo?
    /// The offers of the current period and the next, in words.
    public var offers: [String]
    public var explanation: String
}

/// One one-time product.
public struct ProductAnswer: Sendable, Hashable {
    public var productID: String?
    public var transactionID: String?
    public var type: String
    /// `owned`, `consumed` or `refunded`.
    public var state: String
    public var purchasedAt: Date?
}

/// One customer's story: the answer on top, the merged timeline, the issues and how each
/// source was asked.
public struct CustomerStory: Sendable {
    public var at: Date
    /// `at` was chosen (`--at`): the story is as of that instant, Apple's status is of now.
    public var pointInTime = false
    /// Whether the signed items the story uses are genuine (the answer's warning).
    public var trust = CustomerTrust(verdict: nil, items: 0, itemsNotGenuine: 0, why: nil)
    /// Whether only the trail was read.
    public var offline: Bool
    public var ids: CustomerIDs
    public var subscriptions: [SubscriptionAnswer]
    public var products: [ProductAnswer]
    /// Oldest first.
    public var events: [CustomerEvent]
    public var issues: [CustomerIssue]
    public var sources: [CustomerSourceReport]
    /// Whether the trail held more rows than were read.
    public var truncated: Bool

    /// Builds the story. Pure: `inputs.at` is now, or with `pointInTime` the instant every
    /// source is cut to.
    public static func build(_ given: CustomerInputs) -> CustomerStory {
        let inputs = given.pointInTime ? given.asOf : given
        var builder = TimelineBuilder(at: inputs.at)
        if let lookup = inputs.lookup { builder.addLookup(lookup) }
        if let stored = inputs.stored {
            builder.addStoredPurchases(stored.purchases)
            builder.addNotifications(stored.notifications)
            builder.addActions(stored.actions)
            builder.addRetention(stored.retention)
        }
        let analysis = CustomerAnswers.analysis(inputs)
        let answers = CustomerAnswers.applyConfirmedExtensions(
            CustomerAnswers.subscriptions(analysis, inputs), actions: inputs.stored?.actions ?? [], at: inputs.at)
        builder.addExpiries(answers)
        builder.pairWritesWithTheirNotifications()
        var events = builder.finish()
        if inputs.pointInTime { events.removeAll { $0.at > inputs.at } }
        let issues = CustomerIssues.find(events: events, answers: answers, inputs: inputs)
        return CustomerStory(
            at: inputs.at, pointInTime: inputs.pointInTime, trust: CustomerTrust.of(inputs), offline: inputs.lookup == nil, ids: CustomerAnswers.ids(inputs), subscriptions: answers,
            products: CustomerAnswers.products(analysis), events: events, issues: issues, sources: Self.reports(inputs),
            truncated: inputs.stored?.truncated ?? false)
    }

    /// The story with its events newest first (`--newest-first`).
    public var newestFirst: CustomerStory {
        var copy = self
        copy.events.reverse()
        return copy
    }

    static func reports(_ inputs: CustomerInputs) -> [CustomerSourceReport] {
        var api = CustomerSourceReport(source: .api, asked: inputs.lookup != nil)
        if let lookup = inputs.lookup {
            api.pages = lookup.records.count
            api.rows = lookup.transactions.count
            if let failure = lookup.failure { api.errors.append(failure.reason) }
            api.errors += lookup.notes
        }
        if let sentError = inputs.sentError { api.errors.append(sentError) }
        let storeAsked = inputs.stored != nil || inputs.storeError != nil
        let stored = inputs.stored
        let storeErrors = inputs.storeError.map { [$0] } ?? []
        let purchases = stored?.purchases ?? []
        return [
            api,
            CustomerSourceReport(
                source: .notification, asked: storeAsked, pages: stored == nil ? 0 : 1, rows: stored?.notifications.count ?? 0, errors: storeErrors),
            CustomerSourceReport(source: .action, asked: storeAsked, pages: stored == nil ? 0 : 1, rows: stored?.actions.count ?? 0, errors: storeErrors),
            CustomerSourceReport(
                source: .receipt, asked: storeAsked, pages: stored == nil ? 0 : 1, rows: purchases.filter { !$0.fromLookup }.count, errors: storeErrors),
            CustomerSourceReport(
                source: .verify, asked: storeAsked, pages: stored == nil ? 0 : 1, rows: purchases.filter { $0.verifyStatus != nil }.count,
                errors: storeErrors),
        ]
    }
}
