import Foundation
import PlainWords

/// Builds a ``PurchaseAnalysis``. Rows from several sources are merged by transaction id, so a
/// receipt's `in_app` row and the response's `latest_receipt_info` row for the same transaction
/// count once.
struct Analyzer {
    let at: Date
    /// Rows in first-seen order, and where each transaction id sits (so dictionary resizes
    /// move integers, not rows).
    private var rows: [Purchase] = []
    private var index: [String: Int] = [:]
    private var renewals: [RenewalInfo] = []
    private var notes: [String] = []
    private var duplicates: [String: Int] = [:]
    private var sandbox = false
    private var sawLatestReceiptInfo = false
    private var receiptConsumables: Set<String> = []
    private var notificationStatus: [String: Int] = [:]

    init(at: Date) {
        self.at = at
    }

    mutating func add(_ input: DecodedInput) {
        if input.environment == .sandbox || input.environment == .xcode { sandbox = true }
        if !input.latestReceiptInfo.isEmpty { sawLatestReceiptInfo = true }
        let lists = [input.receipt?.inApp ?? [], input.transactions, input.latestReceiptInfo]
        for (position, list) in lists.enumerated() where !list.isEmpty {
            // The common case, one receipt's rows: the first list, with no transaction twice,
            // becomes the rows as it is (its buffer shared, where appending copied each row).
            if rows.isEmpty, take(list) { continue }
            let rest = lists[position...].reduce(0) { $0 + $1.count }
            rows.reserveCapacity(rows.count + rest)
            index.reserveCapacity(index.count + rest)
            var seenInList = Set<String>(minimumCapacity: list.count)
            // By index: `for row in list` copies each row (a retain per string) before it is
            // stored, which is a copy already.
            let fromReceipt = list.first?.source == .receiptInApp
            for i in list.indices {
                let key = Self.key(list[i].transactionID, position: rows.count)
                guard seenInList.insert(key).inserted else {
                    duplicates[key, default: 1] += 1
                    continue
                }
                if let at = index[key] {
                    rows[at] = merge(rows[at], list[i])
                } else {
                    index[key] = rows.count
                    rows.append(list[i])
                }
                if fromReceipt { markConsumable(list[i].productType, list[i].transactionID) }
            }
        }
        for renewal in input.pendingRenewalInfo {
            if let index = renewals.firstIndex(where: { same($0, renewal) }) {
                renewals[index] = newer(renewals[index], renewal)
            } else {
                renewals.append(renewal)
            }
        }
        if let status = input.notification?.subscriptionStatus,
            let original = input.transactions.first?.originalTransactionID
        {
            notificationStatus[original] = status
        }
    }

    /// With no rows yet: `list` taken whole as the rows, when no transaction id comes twice in
    /// it (each row's key, index and consumable mark as the loop in ``add(_:)`` gives them).
    /// False, and nothing changed, otherwise.
    private mutating func take(_ list: [Purchase]) -> Bool {
        guard !list.isEmpty else { return false }
        var keys: [String: Int] = [:]
        keys.reserveCapacity(list.count)
        // Through a buffer pointer, and only the fields asked for: a row handed to a function
        // whole was copied (a retain and a release per string field).
        let unique = list.withUnsafeBufferPointer { list in
            for i in list.indices {
                // `rows.count` is `i` here in the loop: nothing before this row was skipped.
                guard keys.updateValue(i, forKey: Self.key(list[i].transactionID, position: i)) == nil else { return false }
            }
            return true
        }
        guard unique else { return false }
        rows = list
        index = keys
        if list[0].source == .receiptInApp {
            list.withUnsafeBufferPointer { list in
                for i in list.indices { markConsumable(list[i].productType, list[i].transactionID) }
            }
        }
        return true
    }

    /// A row's key: its transaction id, or its place among the rows when it has none. Given
    /// the one field, not the row: a row passed whole was copied.
    private static func key(_ transactionID: String?, position: Int) -> String {
        transactionID ?? "row-\(position)"
    }

    /// Notes a receipt's consumable, to tell later whether `latest_receipt_info` dropped it.
    private mutating func markConsumable(_ type: ProductType?, _ transactionID: String?) {
        if type == .consumable, let id = transactionID { receiptConsumables.insert(id) }
    }

    /// Keeps every field either source has; the second (usually `latest_receipt_info`, which
    /// carries refunds and upgrades) wins where both have one.
    private func merge(_ a: Purchase, _ b: Purchase) -> Purchase {
        var m = b
        m.productID = b.productID ?? a.productID
        m.originalTransactionID = b.originalTransactionID ?? a.originalTransactionID
        m.purchaseDate = b.purchaseDate ?? a.purchaseDate
        m.originalPurchaseDate = b.originalPurchaseDate ?? a.originalPurchaseDate
        m.expiresDate = b.expiresDate ?? a.expiresDate
        m.cancellationDate = b.cancellationDate ?? a.cancellationDate
        m.cancellationReason = b.cancellationReason ?? a.cancellationReason
        m.productType = b.productType ?? a.productType
        m.isTrialPeriod = b.isTrialPeriod ?? a.isTrialPeriod
        m.isInIntroOfferPeriod = b.isInIntroOfferPeriod ?? a.isInIntroOfferPeriod
        m.isUpgraded = b.isUpgraded ?? a.isUpgraded
        m.webOrderLineItemID = b.webOrderLineItemID ?? a.webOrderLineItemID
        m.subscriptionGroupIdentifier = b.subscriptionGroupIdentifier ?? a.subscriptionGroupIdentifier
        m.promotionalOfferID = b.promotionalOfferID ?? a.promotionalOfferID
        m.offerCodeRefName = b.offerCodeRefName ?? a.offerCodeRefName
        m.inAppOwnershipType = b.inAppOwnershipType ?? a.inAppOwnershipType
        return m
    }

    private func same(_ a: RenewalInfo, _ b: RenewalInfo) -> Bool {
        if let x = a.originalTransactionID, let y = b.originalTransactionID { return x == y }
        return a.productID != nil && a.productID == b.productID
    }

    private func newer(_ a: RenewalInfo, _ b: RenewalInfo) -> RenewalInfo {
        switch (a.signedDate, b.signedDate) {
        case (let x?, let y?): x >= y ? a : b
        default: b
        }
    }

    /// Whether a row is an auto-renewable subscription, and whether that was inferred. Given
    /// the three fields it looks at, not the row: a row passed whole was copied.
    private func isAutoRenewable(
        _ productType: ProductType?, undefined: Bool, expires: Date?, webOrderLineItemID: String?
    ) -> (Bool, inferred: Bool) {
        if let type = productType, type != .unknown { return (type == .autoRenewable, false) }
        // A type Apple does not define says nothing: no subscription is inferred from it.
        if undefined { return (false, false) }
        if expires != nil { return (true, true) }
        if let web = webOrderLineItemID, web != "0", !web.isEmpty { return (true, true) }
        return (false, true)
    }

    mutating func finish() -> PurchaseAnalysis {
        var chains: [String: [Int]] = [:]
        var chainOrder: [String] = []
        var oneTime: [OneTimePurchase] = []
        // Through a buffer pointer: its subscript lends the row to the calls below, where the
        // array's getter copied it (a retain and a release per string field, every row).
        rows.withUnsafeBufferPointer { rows in
            for position in rows.indices {
                let (auto, inferred) = isAutoRenewable(
                    rows[position].productType, undefined: rows[position].productTypeAsSent != nil, expires: rows[position].expiresDate,
                    webOrderLineItemID: rows[position].webOrderLineItemID)
                if auto {
                    let chain = rows[position].originalTransactionID ?? rows[position].transactionID ?? "row-\(position)"
                    if chains[chain] == nil { chainOrder.append(chain) }
                    chains[chain, default: []].append(position)
                } else {
                    oneTime.append(oneTimePurchase(rows[position], inferred: inferred))
                }
            }
        }
        for (id, count) in duplicates.sorted(by: { $0.key < $1.key }) {
            notes.append("transaction \(id) appears \(count) times in one list; counted once")
        }
        if sawLatestReceiptInfo, !receiptConsumables.isEmpty {
            let missing = rows.withUnsafeBufferPointer { rows in
                receiptConsumables.filter { id in index[id].map { rows[$0].source == .receiptInApp } ?? false }
            }
            if !missing.isEmpty {
                notes.append(
                    "\(CountNoun.consumablePurchase.count(missing.count)) \(missing.count == 1 ? "is" : "are") in the receipt but not in latest_receipt_info: finished consumables are dropped from later receipts, which is normal")
            }
        }
        let started = chainOrder.filter { id in
            let begun = rows.withUnsafeBufferPointer { rows in
                chains[id]?.contains { (rows[$0].purchaseDate ?? .distantPast) <= at } ?? false
            }
            if !begun {
                notes.append("subscription \(id) begins after \(AppleDate.iso8601(at)): it did not exist yet at that instant")
            }
            return begun
        }
        let subscriptions = started.compactMap { id in chains[id].map { summarize(id, $0) } }
            .sorted { ($0.expiresDate ?? .distantPast) > ($1.expiresDate ?? .distantPast) }
        return PurchaseAnalysis(
            at: at, subscriptions: subscriptions,
            oneTimePurchases: oneTime.sorted { ($0.purchaseDate ?? .distantPast) < ($1.purchaseDate ?? .distantPast) },
            notes: notes)
    }

    private func oneTimePurchase(_ p: Purchase, inferred: Bool) -> OneTimePurchase {
        let type: ProductType = p.productType.flatMap { $0 == .unknown ? nil : $0 } ?? .unknown
        let refunded = p.cancellationDate.map { $0 <= at } ?? false
        var explanation: String
        switch type {
        case .consumable:
            explanation = "a consumable: it stays in the receipt only until the app finishes the transaction"
        case .nonConsumable: explanation = "a non-consumable: owned for good"
        case .nonRenewing:
            explanation = "a non-renewing subscription: the app, not Apple, decides how long it lasts"
        default:
            if let asSent = p.productTypeAsSent {
                explanation =
                    "state unknown: its product type is \(AppleValue.undefined(asSent)), so whether it is a subscription or a one-time purchase cannot be told"
            } else {
                explanation =
                    "a one-time purchase (the receipt does not say whether consumable or non-consumable; inferred from the missing expiry date)"
            }
        }
        if let offer = OfferWords.name(type: p.offerType, discount: p.offerDiscountType) {
            let article = !offer.hasPrefix("one-") && "aeiou".contains(offer.first ?? "x") ? "an" : "a"
            explanation += "; bought with \(article) \(offer)" + (p.offerIdentifier.map { " (\($0))" } ?? "")
        }
        if refunded, let date = p.cancellationDate {
            switch p.revocationType {
            case "FAMILY_REVOKE":
                explanation = "Family Sharing access was revoked on \(day(date)): the purchaser stopped sharing or left the family"
            case "REFUND_PRORATED":
                explanation =
                    "refunded in part on \(day(date))\(p.revocationPercentage.map { ": \(OfferWords.percentage($0)) of the price (prorated)" } ?? " (prorated)") (\(CancellationReason.explain(p.cancellationReason))): the customer paid for the rest and no longer has the item"
            default:
                explanation =
                    "refunded\(p.revocationType == "REFUND_FULL" ? " in full" : "") on \(day(date)) (\(CancellationReason.explain(p.cancellationReason))): treat as never purchased"
            }
        }
        return OneTimePurchase(
            productID: p.productID, transactionID: p.transactionID, productType: type, typeInferred: inferred || (type == .unknown && p.productTypeAsSent == nil),
            purchaseDate: p.purchaseDate, refunded: refunded, explanation: explanation)
    }

    // MARK: - One subscription

    /// - Parameter chain: the positions in ``rows`` of the chain's transactions. The summary
    ///   sorts and filters positions and reads fields in place: copying a row retains each of
    ///   its strings (measured: a tenth of `inspect --format json`).
    private func summarize(_ original: String, _ chain: [Int]) -> SubscriptionSummary {
        rows.withUnsafeBufferPointer { summarize(original, chain, rows: $0) }
    }

    /// ``summarize(_:_:)`` over the rows through a buffer pointer, whose subscript lends a row
    /// where the array's getter copied it (for `period(of:)` and the latest period).
    private func summarize(_ original: String, _ chain: [Int], rows: UnsafeBufferPointer<Purchase>) -> SubscriptionSummary {
        var warnings: [String] = []
        let keys = chain.map { i in (rows[i].purchaseDate ?? .distantPast, rows[i].expiresDate ?? .distantPast, i) }
        let sorted = keys.sorted { $0.0 == $1.0 ? $0.1 < $1.1 : $0.0 < $1.0 }.map(\.2)
        let future = sorted.filter { (rows[$0].purchaseDate ?? .distantPast) > at }
        for row in future.prefix(3).map({ rows[$0] }) {
            warnings.append(
                "transaction \(row.transactionID ?? "?") is dated in the future (\(iso(row.purchaseDate))); ignored for the state at \(iso(at))")
        }
        if future.count > 3 {
            warnings.append("\(future.count - 3) more transactions are dated after \(iso(at)) and were ignored too")
        }
        let current = sorted.filter { (rows[$0].purchaseDate ?? .distantPast) <= at }
        let renewal = renewals.first { $0.originalTransactionID == original }
            ?? renewals.first { r in r.originalTransactionID == nil && sorted.contains { rows[$0].productID == r.productID } }

        // The period that decides the state: the latest expiry among rows that have begun.
        let latest = current.max { (rows[$0].expiresDate ?? .distantPast) < (rows[$1].expiresDate ?? .distantPast) }
            .map { rows[$0] }
        // Only what had begun by `at` counts: periods, renewals, products, gaps and the timeline
        // (the later transactions are the notes above, nothing else).
        var periods: [SubscriptionSummary.Period] = current.map { period(of: rows.baseAddress! + $0) }
        warnings += continuityWarnings(periods)
        for i in current {
            if let start = rows[i].purchaseDate, let end = rows[i].expiresDate, end < start {
                warnings.append(
                    "transaction \(rows[i].transactionID ?? "?") expires (\(iso(end))) before it was purchased (\(iso(start)))")
            }
        }

        var evidence: [String] = []
        if let latest {
            evidence.append(
                "latest period: transaction \(latest.transactionID ?? "?") (\(latest.productID ?? "?")), \(iso(latest.purchaseDate)) to \(iso(latest.expiresDate))"
            )
        }
        if let renewal {
            var parts: [String] = []
            if let s = renewal.autoRenewStatus { parts.append("auto_renew_status \(s ? 1 : 0)") }
            if let asSent = renewal.autoRenewStatusAsSent { parts.append("auto_renew_status \(AppleValue.undefined(asSent))") }
            if let p = renewal.autoRenewProductID { parts.append("auto_renew_product_id \(p)") }
            if let i = renewal.expirationIntent { parts.append("expiration_intent \(i)") }
            if let b = renewal.isInBillingRetryPeriod { parts.append("is_in_billing_retry_period \(b ? 1 : 0)") }
            if let g = renewal.gracePeriodExpiresDate { parts.append("grace_period_expires_date \(iso(g))") }
            if !parts.isEmpty { evidence.append("renewal info: " + parts.joined(separator: ", ")) }
        }

        let expires = latest?.expiresDate
        let autoRenew = renewal?.autoRenewStatus
        var state: SubscriptionState
        var explanation: String
        if let latest, let cancelled = latest.cancellationDate, cancelled <= at {
            if latest.revocationType == "FAMILY_REVOKE" {
                state = .revokedFamilySharing
                explanation = "Family Sharing access was revoked on \(day(cancelled)): the purchaser stopped sharing or left the family."
            } else if latest.isUpgraded == true {
                state = .upgraded
                explanation = "Upgraded on \(day(cancelled)): superseded by a higher product in the same group, which now carries the entitlement."
            } else if latest.revocationType == "REFUND_PRORATED" {
                state = .refundedProrated
                let share = latest.revocationPercentage.map { "\(OfferWords.percentage($0)) of the last period's price" } ?? "part of the last period's price"
                let before = current.filter { rows[$0].cancellationDate == nil }.count
                explanation =
                    "Refunded in part by Apple on \(day(cancelled)): \(share) returned (prorated; \(CancellationReason.explain(latest.cancellationReason))). Access ended at the refund; the \(CountNoun.period.count(before)) before it stay\(before == 1 ? "s" : "") paid."
            } else {
                state = .refunded
                explanation =
                    "Refunded\(latest.revocationType == "REFUND_FULL" ? " in full" : "") by Apple on \(day(cancelled)) (\(CancellationReason.explain(latest.cancellationReason))): treat as never purchased."
            }
            evidence.append("cancellation_date \(iso(cancelled)) on transaction \(latest.transactionID ?? "?")")
            if let type = latest.revocationType {
                evidence.append(
                    "revocation_type \(type)" + (latest.revocationPercentage.map { ", revocation_percentage \($0) (\(OfferWords.percentage($0)))" } ?? ""))
            }
        } else if let expires, expires > at, let latest, latest.billingPlanType == "MONTHLY" || latest.commitmentInfo != nil {
            // Monthly billing under a 12-month commitment: turning auto-renew off ends the plan
            // when the commitment ends, not this month.
            let info = latest.commitmentInfo
            let ends = info?.commitmentExpiresDate
            let where_ = info?.summary.isEmpty == false ? " (\(info?.summary ?? ""))" : ""
            // Untrusted numbers: only a period within a commitment of at most 120 counts.
            let left = info.flatMap { i -> Int64? in
                guard let t = i.totalBillingPeriods, let n = i.billingPeriodNumber, (1...120).contains(t), (1...t).contains(n) else { return nil }
                return t - n
            }
            if autoRenew == false {
                state = .activeWillNotRenew
                explanation =
                    "Active, billed monthly under a 12-month commitment\(where_). Auto-renew is off: under a commitment that ends the plan when the commitment ends\(ends.map { " on \(day($0))" } ?? ""), not this month\(left.map { $0 > 0 ? "; the \(CountNoun.remainingMonthlyPayment.count(Int($0))) \($0 == 1 ? "is" : "are") still billed" : "" } ?? ""). This period runs until \(day(expires)) (\(relative(expires)))."
            } else {
                state = .active
                var text =
                    "Active until \(day(expires)) (\(relative(expires))), billed monthly under a 12-month commitment\(where_)"
                if autoRenew == true {
                    text += "; it renews monthly until the commitment ends"
                    if renewal?.commitmentInfo?.autoRenewStatus == false { text += ", and then the plan ends (no new commitment)" }
                } else {
                    text += "; no renewal info, so whether it renews is unknown"
                }
                explanation = text + "."
            }
            if let info { evidence.append("commitment_info: \(info.summary)" + (info.commitmentPrice.map { ", commitment_price \($0)" } ?? "")) }
        } else if let expires, expires > at {
            if autoRenew == false {
                state = .activeWillNotRenew
                explanation = "Active until \(day(expires)) (\(relative(expires))), then it ends: auto-renew is off. Not expired yet; the customer keeps access until then."
            } else {
                state = .active
                var text = "Active until \(day(expires)) (\(relative(expires)))"
                if autoRenew == true {
                    text += ", then renews"
                    if let next = renewal?.autoRenewProductID, next != latest?.productID { text += " as \(next)" }
                } else if let asSent = renewal?.autoRenewStatusAsSent {
                    text += "; whether it renews is unknown: auto_renew_status is \(AppleValue.undefined(asSent))"
                } else {
                    text += "; no renewal info, so whether it renews is unknown"
                }
                explanation = text + "."
            }
        } else if let grace = renewal?.gracePeriodExpiresDate, grace > at {
            state = .inGracePeriod
            explanation = "The renewal on \(day(expires)) failed; in the billing grace period until \(day(grace)) (\(relative(grace))): the customer keeps access while Apple retries the payment."
        } else if renewal?.isInBillingRetryPeriod == true {
            state = .inBillingRetry
            explanation = "The renewal on \(day(expires)) failed and Apple is still retrying the payment; no access until it succeeds."
        } else {
            state = .expired
            var text = "Expired on \(day(expires)) (\(relative(expires)))"
            if let intent = renewal?.expirationIntent {
                text += ": " + ExpirationIntent.explain(intent)
            } else if autoRenew == false {
                text += ": auto-renew was off"
            }
            explanation = text + "."
        }
        if let status = notificationStatus[original] {
            let names = [1: "active", 2: "expired", 3: "billing retry", 4: "grace period", 5: "revoked"]
            evidence.append("notification status \(status) (\(names[status] ?? AppleValue.notDefined))")
        }
        if state == .inGracePeriod, let start = expires, let end = renewal?.gracePeriodExpiresDate {
            periods.append(.init(start: start, end: end, kind: .grace, productID: latest?.productID, transactionID: nil))
        }
        let isSandbox = sandbox || chain.contains { rows[$0].environment == "Sandbox" || rows[$0].environment == "Xcode" }
        if isSandbox, let sample = periods.first(where: { $0.kind != .grace && $0.end != nil }), let end = sample.end {
            let seconds = end.timeIntervalSince(sample.start)
            if let nominal = Self.sandboxNominal(seconds) {
                warnings.append(
                    "sandbox-accelerated: a period of \(Self.duration(seconds)) stands for \(nominal) in production")
            }
        }
        // A revocation dated after `at` had not happened yet.
        let revoked = latest?.cancellationDate.map { $0 <= at } == true
        var productIDs: [String] = []
        for i in current { if let p = rows[i].productID, productIDs.last != p { productIDs.append(p) } }
        return SubscriptionSummary(
            originalTransactionID: original, productID: latest?.productID, productIDs: productIDs,
            subscriptionGroup: sorted.lazy.compactMap { rows[$0].subscriptionGroupIdentifier }.first, state: state,
            explanation: explanation, evidence: evidence, expiresDate: expires, autoRenew: autoRenew,
            autoRenewProductID: renewal?.autoRenewProductID, gracePeriodExpiresDate: renewal?.gracePeriodExpiresDate,
            expirationIntent: renewal?.expirationIntent, periods: periods.sorted { $0.start < $1.start },
            renewalCount: max(0, current.count - 1),
            paidPeriods: periods.filter { $0.kind == .paid || $0.kind == .offer || $0.kind == .intro }.count,
            isSandbox: isSandbox, warnings: warnings, billingPlanType: latest?.billingPlanType, commitment: latest?.commitmentInfo,
            revocationType: revoked ? latest?.revocationType : nil, revocationPercentage: revoked ? latest?.revocationPercentage : nil)
    }

    /// The period one transaction stands for. The row is read in place, field by field: handed
    /// over as a value (even `borrowing`) it was copied whole, a retain and a release per
    /// string field, for every period of every subscription.
    private func period(of row: UnsafePointer<Purchase>) -> SubscriptionSummary.Period {
        let kind: SubscriptionSummary.Period.Kind
        // A refund dated after `at` had not happened yet.
        let cancellation = row.pointee.cancellationDate.flatMap { $0 <= at ? $0 : nil }
        if cancellation != nil {
            kind = row.pointee.isUpgraded == true ? .upgraded : row.pointee.revocationType == "REFUND_PRORATED" ? .refundedProrated : .refunded
        } else if row.pointee.isTrialPeriod == true {
            kind = .trial
        } else if row.pointee.isInIntroOfferPeriod == true {
            kind = .intro
        } else if !(row.pointee.promotionalOfferID ?? "").isEmpty || !(row.pointee.offerCodeRefName ?? "").isEmpty
            || (2...4).contains(row.pointee.offerType ?? 0)
        {
            kind = .offer
        } else {
            kind = .paid
        }
        let end: Date? =
            switch (row.pointee.expiresDate, cancellation) {
            case (let a?, let b?): min(a, b)
            case (let a, let b): a ?? b
            }
        let offer = kind == .trial || kind == .intro || kind == .offer ? OfferWords.name(type: row.pointee.offerType, discount: row.pointee.offerDiscountType) : nil
        return .init(
            start: row.pointee.purchaseDate ?? row.pointee.originalPurchaseDate ?? .distantPast, end: end, kind: kind,
            productID: row.pointee.productID, transactionID: row.pointee.transactionID, offer: offer)
    }

    /// Overlapping renewals and gaps between consecutive periods (a minute's slack allowed).
    private func continuityWarnings(_ periods: [SubscriptionSummary.Period]) -> [String] {
        var warnings: [String] = []
        // Only six are ever shown (five and a count past six): the rest are counted, not written
        // (a sandbox subscription lapses between most of its renewals).
        var total = 0
        let timed = periods.filter { $0.kind != .refunded && $0.kind != .refundedProrated && $0.kind != .upgraded && $0.end != nil }
        for (a, b) in zip(timed, timed.dropFirst()) {
            guard let end = a.end else { continue }
            let delta = b.start.timeIntervalSince(end)
            guard delta < -60 || delta > 60 else { continue }
            total += 1
            guard warnings.count < 6 else { continue }
            if delta < -60 {
                warnings.append(
                    "transactions \(a.transactionID ?? "?") and \(b.transactionID ?? "?") overlap by \(Self.duration(-delta))")
            } else {
                warnings.append(
                    "gap of \(Self.duration(delta)) between \(iso(end)) and \(iso(b.start)): the subscription lapsed and was renewed later")
            }
        }
        if total > 6 {
            warnings = Array(warnings.prefix(5)) + ["\(total - 5) more overlaps or gaps"]
        }
        return warnings
    }

    /// Sandbox renewal rates: 3 min = 1 week, 5 min = 1 month, 10 min = 2 months,
    /// 15 min = 3 months, 30 min = 6 months, 1 hour = 1 year.
    static func sandboxNominal(_ seconds: TimeInterval) -> String? {
        let table: [(TimeInterval, String)] = [
            (180, "1 week"), (300, "1 month"), (600, "2 months"), (900, "3 months"), (1800, "6 months"),
            (3600, "1 year"),
        ]
        return table.first { abs($0.0 - seconds) <= 30 }?.1
    }

    static func duration(_ seconds: TimeInterval) -> String {
        let s = Int(seconds.rounded())
        if s < 120 { return "\(s) seconds" }
        if s < 7200 { return "\(s / 60) minutes" }
        if s < 172_800 { return "\(s / 3600) hours" }
        return "\(s / 86_400) days"
    }

    private func relative(_ date: Date?) -> String {
        guard let date else { return "date unknown" }
        let delta = date.timeIntervalSince(at)
        return delta >= 0 ? "in \(Self.duration(delta))" : "\(Self.duration(-delta)) ago"
    }

    private func day(_ date: Date?) -> String {
        date.map(AppleDate.day) ?? "an unknown date"
    }

    private func iso(_ date: Date?) -> String { date.map(AppleDate.iso8601) ?? "?" }
}
