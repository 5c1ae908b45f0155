import AuditTrail
import Foundation
import JSONWriting
import PlainWords
import ReceiptCore
import ReceiptRendering
import UntrustedText

/// `customer --format json`: one story as an object with the contract's keys (`customer`,
/// `subscriptions`, `products`, `events`, `issues`, `sources`), or, when an app account token
/// names several customers, `{"customers": [story, …]}`. Every key is always present (`null`
/// when unknown), so rows line up.
public enum CustomerJSON {
    public static func render(_ stories: [CustomerStory], into out: inout JSONOutput) {
        if stories.count == 1 {
            story(stories[0], into: &out)
        } else {
            out.beginObject()
            out.key("customers")
            out.beginArray()
            for s in stories { story(s, into: &out) }
            out.endArray()
            out.endObject()
        }
        out.newline()
    }

    public static func story(_ story: CustomerStory, into out: inout JSONOutput) {
        out.beginObject()
        out.member("at", story.at)
        out.member("at_is_chosen", story.pointInTime)
        out.key("customer")
        out.beginObject()
        out.member("app_account_tokens", strings: story.ids.appAccountTokens)
        out.member("app_transaction_ids", strings: story.ids.appTransactionIDs)
        out.nullableMember("environment", story.ids.environment)
        out.member("original_transaction_ids", strings: story.ids.originalTransactionIDs)
        out.endObject()
        out.key("events")
        out.beginArray()
        for e in story.events { event(e, into: &out) }
        out.endArray()
        out.key("issues")
        out.beginArray()
        for issue in story.issues {
            out.beginObject()
            out.member("code", issue.code.rawValue)
            out.nullableMember("deadline", issue.deadline)
            out.nullableMember("original_transaction_id", issue.originalTransactionID)
            out.member("refs", strings: issue.refs)
            out.member("summary", issue.summary)
            out.nullableMember("transaction_id", issue.transactionID)
            out.endObject()
        }
        out.endArray()
        out.member("offline", story.offline)
        out.key("products")
        out.beginArray()
        for p in story.products {
            out.beginObject()
            out.nullableMember("product_id", p.productID)
            out.nullableMember("purchased_at", p.purchasedAt)
            out.member("state", p.state)
            out.nullableMember("transaction_id", p.transactionID)
            out.member("type", p.type)
            out.endObject()
        }
        out.endArray()
        out.key("sources")
        out.beginObject()
        for report in story.sources {
            out.key(text: report.source.rawValue)
            out.beginObject()
            out.member("asked", report.asked)
            out.member("errors", strings: report.errors)
            out.member("pages", report.pages)
            out.member("rows", report.rows)
            out.endObject()
        }
        out.endObject()
        out.key("subscriptions")
        out.beginArray()
        for s in story.subscriptions { subscription(s, into: &out) }
        out.endArray()
        out.member("truncated", story.truncated)
        out.key("trust")
        out.beginObject()
        out.member("items", story.trust.items)
        out.member("items_not_genuine", story.trust.itemsNotGenuine)
        out.nullableMember("verdict", story.trust.verdict?.rawValue)
        out.nullableMember("why", story.trust.why)
        out.endObject()
        out.endObject()
    }

    static func event(_ e: CustomerEvent, into out: inout JSONOutput) {
        out.beginObject()
        out.member("at", e.at)
        out.member("kind", e.kind.rawValue)
        out.nullableMember("original_transaction_id", e.originalTransactionID)
        out.nullableMember("outcome", e.outcome)
        out.nullableMember("product_id", e.productID)
        out.member("refs", strings: e.refs)
        out.member("sources", strings: e.sources.map(\.rawValue))
        out.member("summary", e.summary)
        out.nullableMember("transaction_id", e.transactionID)
        out.nullableMember("trust", e.trust)
        out.endObject()
    }

    static func subscription(_ s: SubscriptionAnswer, into out: inout JSONOutput) {
        out.beginObject()
        out.nullableMember("api_status", s.apiStatus)
        out.member("api_status_is_now", s.apiStatusIsNow)
        out.nullableMember("auto_renew", s.autoRenew)
        out.nullableMember("auto_renew_product_id", s.autoRenewProductID)
        out.member("billing_plan_type", s.billingPlanType)
        out.member("billing_retry", s.billingRetry)
        out.key("commitment")
        if let c = s.commitment { out.value(c.json) } else { out.null() }
        out.member("explanation", s.explanation)
        out.nullableMember("grace_period_until", s.gracePeriodUntil)
        out.nullableMember("group", s.group)
        out.member("offers", strings: s.offers)
        out.member("original_transaction_id", s.originalTransactionID)
        out.nullableMember("price_increase", s.priceIncrease)
        out.nullableMember("product_id", s.productID)
        out.member("state", s.state)
        out.nullableMember("until", s.until)
        out.endObject()
    }
}

/// `customer --format csv`: the events, one row each, every cell escaped for a spreadsheet.
public enum CustomerCSV {
    public static let header = ["customer", "at", "kind", "sources", "transaction_id", "original_transaction_id", "product_id", "trust", "outcome", "summary", "refs"]

    public static func render(_ stories: [CustomerStory]) -> String {
        var lines = [header.joined(separator: ",")]
        for story in stories {
            let customer = story.ids.appTransactionIDs.first ?? story.ids.originalTransactionIDs.first ?? ""
            for e in story.events {
                let cells = [
                    customer, AppleDate.iso8601(e.at), e.kind.rawValue, e.sources.map(\.rawValue).joined(separator: ";"), e.transactionID ?? "",
                    e.originalTransactionID ?? "", e.productID ?? "", e.trust ?? "", e.outcome ?? "", e.summary, e.refs.joined(separator: ";"),
                ]
                lines.append(cells.map(SafeText.csvCell).joined(separator: ","))
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

/// `customer`'s text: the answer first (ids, each subscription's state, each product), then the
/// issues, the timeline and how each source was asked. Text from payloads is escaped.
public enum CustomerText {
    public static func render(_ story: CustomerStory) -> String {
        var lines: [String] = []
        let ids = story.ids
        var who: [String] = []
        if !ids.appTransactionIDs.isEmpty { who.append("app transaction \(ids.appTransactionIDs.map(SafeText.escaped).joined(separator: ", "))") }
        if !ids.originalTransactionIDs.isEmpty {
            who.append("original transactions \(ids.originalTransactionIDs.map(SafeText.escaped).joined(separator: ", "))")
        }
        if !ids.appAccountTokens.isEmpty { who.append("token \(ids.appAccountTokens.map(SafeText.escaped).joined(separator: ", "))") }
        lines.append("Customer: " + (who.isEmpty ? "no ids known" : who.joined(separator: "; ")) + (ids.environment.map { " (\(SafeText.escaped($0)))" } ?? ""))
        if story.offline { lines.append("  From the audit trail only (offline): Apple was not asked.") }
        if story.pointInTime {
            lines.append("  As of \(AppleDate.iso8601(story.at)) (--at): what came after is left out; Apple's status is of now.")
        }
        lines.append("")
        lines.append("Answer")
        if let warning = story.trust.warning { lines.append("  ⚠ " + SafeText.escaped(warning)) }
        if story.subscriptions.isEmpty && story.products.isEmpty { lines.append("  Nothing to say: no purchase is known.") }
        for s in story.subscriptions {
            lines.append("  " + (s.group.map { "group \(SafeText.escaped($0)) " } ?? "") + s.facts(AppleDate.iso8601).joined(separator: ", "))
            lines.append("    " + SafeText.escaped(s.explanation))
        }
        for p in story.products {
            lines.append(
                "  \(SafeText.escaped(p.productID ?? "?")): \(p.state) (\(p.type)"
                    + (p.purchasedAt.map { ", bought \(AppleDate.iso8601($0))" } ?? "") + ")")
        }
        if !story.issues.isEmpty {
            lines.append("")
            lines.append("Issues (\(story.issues.count))")
            for issue in story.issues { lines.append("  ! \(issue.code.rawValue): \(SafeText.escaped(issue.summary))") }
        }
        lines.append("")
        lines.append("Timeline (\(story.events.count) events" + (story.truncated ? ", the oldest left out: the trail holds more" : "") + ")")
        for e in story.events {
            let sources = e.sources.map(\.rawValue).joined(separator: "+")
            lines.append(
                "  \(AppleDate.iso8601(e.at))  \(e.kind.rawValue)  \(SafeText.escaped(e.summary))  [\(sources)"
                    + (e.trust.map { ", \(SafeText.escaped($0))" } ?? "") + "]")
        }
        lines.append("")
        lines.append("Sources")
        for r in story.sources {
            let state = r.asked ? "\(CountNoun.row.count(r.rows)) in \(CountNoun.read.count(r.pages))" : "not asked"
            lines.append("  \(r.source.rawValue): \(state)" + r.errors.map { "; " + SafeText.escaped($0) }.joined())
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

extension SubscriptionAnswer {
    /// The answer in short phrases, escaped: the product and state, until when, auto-renew,
    /// Apple's status, grace, a price increase, a commitment's period, the offers. `date`
    /// writes a date.
    public func facts(_ date: (Date) -> String) -> [String] {
        var facts = ["\(SafeText.escaped(productID ?? "?")): \(state)"]
        if let until { facts.append("until \(date(until))") }
        if let autoRenew { facts.append("auto-renew \(autoRenew ? "on" : "off")") }
        if let apiStatus { facts.append(apiStatusIsNow ? "Apple's status now (not at --at): \(apiStatus)" : "Apple's status \(apiStatus)") }
        if let gracePeriodUntil { facts.append("grace until \(date(gracePeriodUntil))") }
        if let priceIncrease { facts.append("price increase \(priceIncrease)") }
        if let c = commitment, let n = c.billingPeriodNumber, let total = c.totalBillingPeriods { facts.append("commitment period \(n) of \(total)") }
        return facts + offers.map(SafeText.escaped)
    }
}
