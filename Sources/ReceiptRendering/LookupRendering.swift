import AppStoreAPI
import JSONWriting
import ReceiptCore
import ReceiptTrust
import Foundation
import UntrustedText

/// `lookup --format json` (a contract: add keys, never rename them):
///
/// `{"query", "environment", "transactions": [{"transaction_id", "original_transaction_id",
/// "product_id", "type", "purchase_date", "expires_date", "revocation_date",
/// "revocation_reason", "environment", "trust"}], "subscriptions", "one_time_purchases",
/// "refunds", "renewal_info", "requests", "error"}`, keys in `JSONEncoder`'s sorted order like
/// every JSON receiptdash writes. Subscriptions are the analysis `inspect --at` writes, state
/// names included. `error` is present only on failure.
public enum LookupJSON {
    /// `{"error": {"code", "message"}}`: a look-up that could not be made.
    public static func writeError(code: String, message: String, into out: inout JSONOutput) {
        ErrorOutput.object(code: code, message: message, into: &out)
    }

    public static func write(_ result: CustomerLookupResult, into out: inout JSONOutput) {
        out.beginObject()
        out.member("analyzed_at", result.at)
        if let status = apiStatusMembers(result) {
            out.key("api_subscription_statuses")
            out.beginArray()
            for (original, value) in status {
                out.beginObject()
                out.member("original_transaction_id", original)
                out.member("status", value.rawValue)
                out.member("status_name", value.description)
                out.endObject()
            }
            out.endArray()
        }
        if let item = result.appTransaction, let app = item.appTransaction {
            out.key("app_transaction")
            appTransaction(app, trust: item.trust, into: &out)
        }
        if let environment = result.environment {
            out.member("environment", environment.rawValue)
        } else {
            out.key("environment")
            out.null()
        }
        if let failure = result.failure {
            LookupJSON.error(failure, into: &out)
        }
        if !result.filters.isEmpty {
            out.key("filters")
            filters(result.filters, into: &out)
        }
        out.member("notes", strings: result.notes.isEmpty ? nil : result.notes)
        // No transactions, no analysis: the keys stay, with empty lists.
        let analysis = result.analysis ?? PurchaseAnalysis(at: result.at, subscriptions: [], oneTimePurchases: [], notes: [])
        AnalysisRendering.write(analysis, .oneTimePurchases, into: &out)
        out.key("query")
        query(result.query, into: &out)
        out.member("refunds", strings: result.refunds)
        out.key("renewal_info")
        out.beginArray()
        for item in result.renewals {
            if let renewal = item.renewal { InspectJSON.renewal(renewal, into: &out) }
        }
        out.endArray()
        out.key("requests")
        out.beginArray()
        for record in result.records { out.value(record.json) }
        out.endArray()
        AnalysisRendering.write(analysis, .subscriptions, into: &out)
        out.key("transactions")
        out.beginArray()
        for item in result.transactions { transaction(item, into: &out) }
        out.endArray()
        out.endObject()
    }

    /// `"filters"`: what the look-up narrowed, each member only when set (keys sorted).
    static func filters(_ filters: LookupFilters, into out: inout JSONOutput) {
        let history = filters.history
        out.beginObject()
        if let end = history.endDate { out.member("end", end) }
        out.member("groups", strings: history.subscriptionGroupIdentifiers.isEmpty ? nil : history.subscriptionGroupIdentifiers)
        if let ownership = history.ownership { out.member("ownership", ownership.rawValue) }
        out.member("product_ids", strings: history.productIDs.isEmpty ? nil : history.productIDs)
        out.member("product_types", strings: history.productTypes.isEmpty ? nil : history.productTypes.map(\.rawValue))
        if let revoked = history.revoked { out.member("revoked", revoked) }
        if let sort = history.sort { out.member("sort", sort.rawValue) }
        if let start = history.startDate { out.member("start", start) }
        out.member("statuses", strings: filters.statuses.isEmpty ? nil : filters.statuses.map(LookupFilters.name))
        out.endObject()
    }

    /// `"error": {"api_error", "code", "message"}` for a failed API call (`lookup`,
    /// `notifications --reconcile`).
    static func error(_ failure: APIFailure, into out: inout JSONOutput) { failure.errorMember(into: &out) }

    private static func apiStatusMembers(_ result: CustomerLookupResult) -> [(String, SubscriptionAPIStatus)]? {
        guard !result.apiStatuses.isEmpty else { return nil }
        return result.apiStatuses.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    static func query(_ query: LookupQuery, into out: inout JSONOutput) {
        out.beginObject()
        switch query {
        case .orderID(let id):
            out.member("order_id", id)
        case .transactionID(let id):
            out.member("transaction_id", id)
        case .appTransactionID(let id):
            out.member("app_transaction_id", id)
        case .receipt(let source, let id, let verdict):
            out.member("receipt_trust", verdict?.rawValue)
            out.member("source", source)
            out.member("transaction_id", id)
        }
        out.endObject()
    }

    /// `app_transaction`: the customer's AppTransaction, every key present (`null` when absent).
    static func appTransaction(_ app: AppReceipt, trust: TrustReport, into out: inout JSONOutput) {
        out.beginObject()
        out.nullableMember("app_apple_id", app.appItemID)
        out.nullableMember("app_transaction_id", app.appTransactionID)
        out.nullableMember("application_version", app.applicationVersion)
        out.nullableMember("bundle_id", app.bundleID)
        out.nullableMember("environment", app.receiptType)
        out.nullableMember("original_application_version", app.originalApplicationVersion)
        out.nullableMember("original_platform", app.originalPlatform)
        out.nullableMember("original_purchase_date", app.originalPurchaseDate)
        out.nullableMember("receipt_type", app.receiptType)
        out.key("trust")
        InspectJSON.trust(trust, into: &out)
        out.endObject()
    }

    /// One transaction: every key always present (`null` when absent), so rows line up.
    static func transaction(_ item: LookedUpItem, into out: inout JSONOutput) {
        let p = item.transaction
        out.beginObject()
        out.nullableMember("app_account_token", p?.appAccountToken)
        out.nullableMember("app_transaction_id", p?.appTransactionID)
        out.nullableMember("billing_plan_type", p?.billingPlanType)
        if let commitment = p?.commitmentInfo {
            out.key("commitment_info")
            out.value(commitment.json)
        } else {
            out.key("commitment_info")
            out.null()
        }
        out.nullableMember("environment", p?.environment)
        out.nullableMember("expires_date", p?.expiresDate)
        out.nullableMember("offer_discount_type", p?.offerDiscountType)
        out.nullableMember("offer_period", p?.offerPeriod)
        out.nullableMember("offer_type", p?.offerType)
        out.nullableMember("original_transaction_id", p?.originalTransactionID)
        out.nullableMember("product_id", p?.productID)
        out.nullableMember("purchase_date", p?.purchaseDate)
        out.nullableMember("revocation_date", p?.cancellationDate)
        out.nullableMember("revocation_percentage", p?.revocationPercentage)
        out.nullableMember("revocation_reason", p?.cancellationReason)
        out.nullableMember("revocation_type", p?.revocationType)
        out.nullableMember("transaction_id", p?.transactionID)
        out.key("trust")
        InspectJSON.trust(item.trust, into: &out)
        if let asSent = p?.productTypeAsSent {
            out.key("type")
            out.value(asSent)
        } else {
            out.nullableMember("type", p?.productType?.rawValue)
        }
        out.endObject()
    }
}

/// `lookup`'s text: the purchases as a table, each subscription's state, explanation and
/// timeline, refunds, renewal preferences and the requests made. Text from Apple's answers is
/// escaped like all untrusted text.
public enum LookupText {
    public static func render(_ result: CustomerLookupResult) -> String {
        var lines: [String] = []
        let asked: String
        switch result.query {
        case .orderID(let id): asked = "order \(SafeText.escaped(id))"
        case .transactionID(let id): asked = "transaction \(SafeText.escaped(id))"
        case .appTransactionID(let id): asked = "app transaction \(SafeText.escaped(id))"
        case .receipt(let source, let id, let verdict):
            asked = "transaction \(SafeText.escaped(id)) from \(SafeText.escaped(source))"
                + (verdict.map { " (receipt trust: \($0.rawValue))" } ?? "")
        }
        lines.append("Look-up of \(asked)" + (result.environment.map { " in \($0.rawValue)" } ?? ""))
        if !result.filters.isEmpty {
            let shown = result.filters.queryItems.map { "\($0.name)=\(SafeText.escaped($0.value))" }.joined(separator: " ")
            lines.append("  Filtered (not the whole customer): \(shown)")
        }
        if let failure = result.failure {
            lines.append("  Failed: \(SafeText.escaped(failure.reason))")
        }
        if let item = result.appTransaction, let app = item.appTransaction {
            var facts: [String] = []
            if let date = app.originalPurchaseDate { facts.append("first downloaded \(day(date))") }
            if let version = app.originalApplicationVersion { facts.append("version \(SafeText.escaped(version))") }
            if let platform = app.originalPlatform { facts.append("on \(SafeText.escaped(DefinedValues.shown(platform, in: DefinedValues.platform)))") }
            lines.append(
                "App transaction \(SafeText.escaped(app.appTransactionID ?? "?")): " + facts.joined(separator: ", ")
                    + " (trust: \(item.trust.verdict.rawValue))")
        }
        lines += answer(result.analysis)
        if !result.transactions.isEmpty {
            lines.append("")
            lines.append("Transactions (\(result.transactions.count))")
            let header = ["purchased", "product", "transaction", "original", "type", "expires", "revoked", "trust"]
            var rows: [[String]] = [header]
            for item in result.transactions {
                let p = item.transaction
                rows.append([
                    day(p?.purchaseDate), SafeText.escaped(p?.productID ?? "?"), SafeText.escaped(p?.transactionID ?? "?"),
                    SafeText.escaped(p?.originalTransactionID ?? "?"), shortType(p?.productType), day(p?.expiresDate),
                    p?.cancellationDate.map { date in day(date) + (p?.revocationPercentage.map { " (\(OfferWords.percentage($0)))" } ?? "") } ?? "",
                    item.trust.verdict.rawValue,
                ])
            }
            lines += table(rows).map { "  " + $0 }
            let untrusted = result.transactions.filter { $0.trust.verdict == .invalid }
            for item in untrusted.prefix(5) {
                let failing = item.trust.steps.filter { $0.outcome == .fail }.map { "\($0.name): \($0.reason)" }
                lines.append(
                    "  ! \(SafeText.escaped(item.transaction?.transactionID ?? "?")) is not trustworthy: "
                        + SafeText.escaped(failing.joined(separator: "; ")))
            }
        }
        if let analysis = result.analysis {
            let block = AnalysisRendering.text(analysis)
            if !block.isEmpty {
                lines.append("")
                lines += block
            }
        }
        if !result.apiStatuses.isEmpty {
            lines.append("")
            lines.append("Apple's subscription statuses")
            for (original, status) in result.apiStatuses.sorted(by: { $0.key < $1.key }) {
                lines.append("  \(SafeText.escaped(original)): \(status.rawValue) (\(status.description))")
            }
        }
        for note in result.notes { lines.append("note: " + SafeText.escaped(note)) }
        // A failed look-up says nothing about refunds it found none of: "Refunds: none" would
        // read as Apple's answer when Apple was never asked (or did not answer).
        if !(result.refunds.isEmpty && result.failure != nil) {
            lines.append("")
            lines.append(result.refunds.isEmpty ? "Refunds: none" : "Refunds: " + result.refunds.map(SafeText.escaped).joined(separator: ", "))
        }
        if !result.renewals.isEmpty {
            lines.append("")
            lines.append("Renewal preferences")
            for item in result.renewals {
                guard let r = item.renewal else { continue }
                var facts: [String] = []
                if let on = r.autoRenewStatus { facts.append(on ? "auto-renew on" : "auto-renew off") }
                if let asSent = r.autoRenewStatusAsSent { facts.append("auto-renew \(AppleValue.undefined(asSent))") }
                if let next = r.autoRenewProductID { facts.append("renews as \(SafeText.escaped(next))") }
                if let intent = r.expirationIntent { facts.append("expiration intent \(intent)") }
                if r.isInBillingRetryPeriod == true { facts.append("in billing retry") }
                if let grace = r.gracePeriodExpiresDate { facts.append("grace until \(AppleDate.iso8601(grace))") }
                lines.append(
                    "  \(SafeText.escaped(r.originalTransactionID ?? "?")) (\(SafeText.escaped(r.productID ?? "?"))): "
                        + facts.joined(separator: ", ") + " [trust: \(item.trust.verdict.rawValue)]")
            }
        }
        lines.append("")
        lines.append("Requests (\(result.records.count))")
        for record in result.records {
            var text = "  \(record.endpoint.rawValue) \(record.environment.rawValue): \(record.result)"
            text += String(format: ", %.0f ms", record.latencyMilliseconds)
            if let wait = record.waitSeconds {
                text += String(format: ", retried after %.1f s", wait)
                if let until = record.retryAfter { text += " (Retry-After \(AppleDate.iso8601(until)))" }
            }
            lines.append(text)
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private static func day(_ date: Date?) -> String { date.map { AppleDate.calendarDay($0) } ?? "" }

    /// The answer on top: one line per subscription (its state, until when, auto-renew) and
    /// per one-time purchase (bought or refunded), before the rows they come from.
    static func answer(_ analysis: PurchaseAnalysis?) -> [String] {
        guard let analysis, !(analysis.subscriptions.isEmpty && analysis.oneTimePurchases.isEmpty) else { return [] }
        var lines = ["", "Answer"]
        for sub in analysis.subscriptions {
            var facts: [String] = []
            if let expires = sub.expiresDate { facts.append("\(expires > analysis.at ? "until" : "since") \(day(expires))") }
            if let grace = sub.gracePeriodExpiresDate, grace > analysis.at { facts.append("grace until \(day(grace))") }
            if let on = sub.autoRenew { facts.append(on ? "auto-renew on" : "auto-renew off") }
            lines.append(
                "  \(SafeText.escaped(sub.productID ?? "?")): \(sub.state.rawValue)" + (facts.isEmpty ? "" : " (" + facts.joined(separator: ", ") + ")"))
        }
        for purchase in analysis.oneTimePurchases {
            let what = purchase.refunded ? "refunded" : "bought \(day(purchase.purchaseDate))"
            lines.append("  \(SafeText.escaped(purchase.productID ?? "?")) (\(shortType(purchase.productType))): \(what)")
        }
        return lines
    }

    private static func shortType(_ type: ProductType?) -> String {
        switch type {
        case .autoRenewable?: "auto-renewable"
        case .nonRenewing?: "non-renewing"
        case .consumable?: "consumable"
        case .nonConsumable?: "non-consumable"
        default: "?"
        }
    }

    /// Left-aligned columns two spaces apart, sized by display width.
    private static func table(_ rows: [[String]]) -> [String] {
        guard let columns = rows.first?.count else { return [] }
        var widths = Array(repeating: 0, count: columns)
        for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
        return rows.map { row in
            row.enumerated().map { i, cell in
                i == columns - 1 ? cell : cell + String(repeating: " ", count: widths[i] - cell.count)
            }.joined(separator: "  ")
        }
    }
}

/// `lookup`'s answer on a console's standard output: the JSON object, or the text with the
/// failure said on standard error.
public enum LookupOutput {
    public static func write(_ result: CustomerLookupResult, format: OutputFormat, to console: Console) {
        switch format {
        case .json:
            var out = JSONOutput(flushingTo: console)
            LookupJSON.write(result, into: &out)
            out.newline()
            out.flush()
        case .text:
            console.output(LookupText.render(result))
            if let failure = result.failure { console.error("receiptdash: \(failure.reason)") }
        }
    }

    /// A look-up that could not be made (`{"error": {"code", "message"}}`, or a line on
    /// standard error).
    public static func writeError(code: String, message: String, format: OutputFormat, to console: Console) {
        ErrorOutput.write(code: code, message: message, format: format, to: console)
    }
}
