import AppStoreAPI
import AuditTrail
import Foundation
import ReceiptCore

/// The answer on top of a story: each subscription's state now, each one-time product, and the
/// customer's ids. Online it is the look-up's analysis; offline it is the same analysis made
/// from the trail: the purchases it holds and the newest notification of each subscription.
enum CustomerAnswers {
    struct Analysed {
        var analysis: PurchaseAnalysis?
        /// The newest renewal info of each original transaction.
        var renewals: [String: RenewalInfo]
    }

    static func analysis(_ inputs: CustomerInputs) -> Analysed {
        var renewals: [String: RenewalInfo] = [:]
        if let lookup = inputs.lookup {
            for item in lookup.renewals {
                if let r = item.renewal, let original = r.originalTransactionID { renewals[original] = r }
            }
            return Analysed(analysis: lookup.analysis, renewals: renewals)
        }
        guard let stored = inputs.stored else { return Analysed(analysis: nil, renewals: [:]) }
        let now = inputs.at
        var transactions = DecodedInput(format: .jwsTransaction)
        var seen = Set<String>()
        for p in stored.purchases.reversed() where seen.insert(p.purchase.transactionID ?? "").inserted {
            transactions.transactions.append(p.purchase)
        }
        var decodedInputs = [transactions]
        // The newest notification of each subscription: its renewal info says what comes next.
        var newest: [String: StoredNotification] = [:]
        for n in stored.notifications {
            guard let original = n.record.originalTransactionID, n.record.signedPayload != nil else { continue }
            if let known = newest[original], (known.record.signedDate ?? known.record.receivedAt) > (n.record.signedDate ?? n.record.receivedAt) { continue }
            newest[original] = n
        }
        let decoder = ReceiptDecoder()
        for (original, n) in newest.sorted(by: { $0.key < $1.key }) {
            guard let payload = n.record.signedPayload, var decoded = try? decoder.decode(text: payload) else { continue }
            decoded.transactions = decoded.transactions.filter { seen.insert($0.transactionID ?? "").inserted }
            if let r = decoded.pendingRenewalInfo.first { renewals[original] = r }
            decodedInputs.append(decoded)
        }
        guard !transactions.transactions.isEmpty || decodedInputs.count > 1 else { return Analysed(analysis: nil, renewals: renewals) }
        return Analysed(analysis: PurchaseAnalysis.analyze(decodedInputs, at: now), renewals: renewals)
    }

    static func subscriptions(_ analysed: Analysed, _ inputs: CustomerInputs) -> [SubscriptionAnswer] {
        guard let analysis = analysed.analysis else { return [] }
        return analysis.subscriptions.map { s in
            let renewal = analysed.renewals[s.originalTransactionID]
            var offers: [String] = []
            if let offer = s.periods.last?.offer { offers.append("this period: \(offer)") }
            if let renewal, let next = TimelineBuilder.offerWords(type: renewal.offerType, id: renewal.offerIdentifier) {
                offers.append("next period: \(next)")
            }
            return SubscriptionAnswer(
                group: s.subscriptionGroup, originalTransactionID: s.originalTransactionID, productID: s.productID, state: s.state.rawValue,
                apiStatus: inputs.lookup?.apiStatuses[s.originalTransactionID].map(LookupFilters.name),
                apiStatusIsNow: inputs.pointInTime && inputs.lookup?.apiStatuses[s.originalTransactionID] != nil, until: s.expiresDate, autoRenew: s.autoRenew,
                autoRenewProductID: s.autoRenewProductID, billingRetry: s.state == .inBillingRetry, gracePeriodUntil: s.gracePeriodExpiresDate,
                priceIncrease: renewal?.priceIncreaseStatus.map { $0 == 1 ? "accepted" : $0 == 0 ? "pending" : "status \($0)" },
                billingPlanType: s.billingPlanType, commitment: s.commitment, offers: offers, explanation: s.explanation)
        }
    }

    /// The new renewal date Apple gave in its answer to an extension we sent (kept in the
    /// write's row), when the write succeeded.
    static func confirmedDate(_ action: AuditAction) -> Date? {
        guard action.action == APIAction.extend.rawValue, action.result == "success", let body = action.responseBody,
            let text = (try? JSONValue.parse(Array(body.utf8)))?["effective_date"]?.text
        else { return nil }
        return AppleDate.parse(text)
    }

    /// What Apple confirmed is known to the trail at once: an extension we sent whose answer
    /// names a renewal date later than the sources' moves the subscription's end there (an
    /// expired one whose new date is still to come is active again, as Apple's answer says).
    static func applyConfirmedExtensions(_ answers: [SubscriptionAnswer], actions: [AuditAction], at: Date) -> [SubscriptionAnswer] {
        // Each write's answer read once: the subscription, when it was sent, the new date.
        let confirmed = actions.compactMap { action -> (original: String, product: String?, sent: Date, date: Date)? in
            guard action.at <= at, let original = action.originalTransactionID, let date = confirmedDate(action) else { return nil }
            return (original, action.productID, action.at, date)
        }
        // A subscription the sources know only by our extension: Apple's answer is all there is.
        var known = Set(answers.map(\.originalTransactionID))
        var onlyWritten: [SubscriptionAnswer] = []
        for write in confirmed where known.insert(write.original).inserted {
            onlyWritten.append(
                SubscriptionAnswer(
                    group: nil, originalTransactionID: write.original, productID: write.product, state: SubscriptionState.expired.rawValue,
                    apiStatus: nil, until: nil, autoRenew: nil, autoRenewProductID: nil, billingRetry: false, gracePeriodUntil: nil,
                    priceIncrease: nil, billingPlanType: nil, commitment: nil, offers: [],
                    explanation: "Known only from our writes: no transaction of it was read."))
        }
        return (answers + onlyWritten).map { answer in
            var answer = answer
            let latest = confirmed.filter { $0.original == answer.originalTransactionID }.max { $0.date < $1.date }
            guard let latest, latest.date > (answer.until ?? .distantPast) else { return answer }
            answer.until = latest.date
            if answer.state == SubscriptionState.expired.rawValue && latest.date > at {
                answer.state = (answer.autoRenew == false ? SubscriptionState.activeWillNotRenew : .active).rawValue
            }
            answer.explanation +=
                " Our extension of \(AppleDate.iso8601(latest.sent)) moved the renewal date to \(AppleDate.iso8601(latest.date)) (Apple's answer to it)."
            return answer
        }
    }

    static func products(_ analysed: Analysed) -> [ProductAnswer] {
        (analysed.analysis?.oneTimePurchases ?? []).map { p in
            ProductAnswer(
                productID: p.productID, transactionID: p.transactionID, type: p.productType.rawValue,
                state: p.refunded ? "refunded" : p.productType == .consumable ? "consumed" : "owned", purchasedAt: p.purchaseDate)
        }
    }

    static func ids(_ inputs: CustomerInputs) -> CustomerIDs {
        var ids = CustomerIDs()
        func add(_ value: String?, to list: inout [String]) {
            if let value, !value.isEmpty, !list.contains(value) { list.append(value) }
        }
        if let lookup = inputs.lookup {
            ids.environment = lookup.environment?.rawValue
            add(lookup.appTransaction?.appTransaction?.appTransactionID, to: &ids.appTransactionIDs)
            for item in lookup.transactions {
                add(item.transaction?.appTransactionID, to: &ids.appTransactionIDs)
                add(item.transaction?.appAccountToken?.lowercased(), to: &ids.appAccountTokens)
                add(item.transaction?.originalTransactionID, to: &ids.originalTransactionIDs)
            }
        }
        if let stored = inputs.stored {
            for id in stored.appTransactionIDs { add(id, to: &ids.appTransactionIDs) }
            for token in stored.appAccountTokens { add(token, to: &ids.appAccountTokens) }
            for id in stored.originalTransactionIDs { add(id, to: &ids.originalTransactionIDs) }
            if ids.environment == nil {
                ids.environment = stored.notifications.last?.record.environment ?? stored.purchases.last?.purchase.environment
            }
        }
        return ids
    }
}
