import AppStoreAPI
import JSONWriting
import PlainWords
import ReceiptCore
import Foundation
import UntrustedText

/// Renders a ``PurchaseAnalysis`` for `inspect`: text blocks with an ASCII timeline, and the
/// `subscriptions` / `one_time_purchases` JSON.
public enum AnalysisRendering {
    /// Timeline characters by period kind.
    static func glyph(_ kind: SubscriptionSummary.Period.Kind) -> Character {
        switch kind {
        case .trial: "t"
        case .intro: "i"
        case .offer: "o"
        case .paid: "="
        case .grace: "g"
        case .refunded: "x"
        case .refundedProrated: "p"
        case .upgraded: "u"
        }
    }

    /// One line of `width` cells over the subscription's own span, from the first period's start
    /// to the last one's end, and a second line with `^` under `at`. The span reaches `at` only
    /// when `at` is near (within a fifth of the span past its end): a sandbox subscription that
    /// renewed every few minutes, judged years later, still shows its periods, and the marker
    /// line says `at` comes after them.
    public static func timeline(_ s: SubscriptionSummary, at: Date, width: Int = 48) -> (bar: String, marker: String, range: String)? {
        guard let first = s.periods.map(\.start).min() else { return nil }
        let lastEnd = s.periods.compactMap(\.end).max() ?? at
        let ownSpan = max(lastEnd.timeIntervalSince(first), 1)
        let atOnAxis = at >= first && at.timeIntervalSince(lastEnd) <= ownSpan / 5
        let last = atOnAxis ? max(lastEnd, at) : lastEnd
        let span = max(last.timeIntervalSince(first), 1)
        var cells = [Character](repeating: " ", count: width)
        func cell(_ date: Date) -> Int { min(width - 1, max(0, Int(Double(width) * date.timeIntervalSince(first) / span))) }
        // Paid and offer periods first, so refunds, upgrades and grace stay visible on top.
        let ordered = s.periods.sorted { rank($0.kind) < rank($1.kind) }
        for period in ordered {
            let a = cell(period.start)
            let b = cell(period.end ?? period.start)
            for i in a...max(a, b) { cells[i] = glyph(period.kind) }
        }
        let marker: String
        if atOnAxis {
            marker = String(repeating: " ", count: cell(at) + 1) + "^ " + AppleDate.iso8601(at)
        } else if at < first {
            marker = "^ " + AppleDate.iso8601(at) + " (before the first period)"
        } else {
            marker = String(repeating: " ", count: width + 1) + "→ " + AppleDate.iso8601(at) + " (after the last period)"
        }
        let range = "\(AppleDate.calendarDay(first)) … \(AppleDate.calendarDay(last))"
        return ("[" + String(cells) + "]", marker, range)
    }

    private static func rank(_ kind: SubscriptionSummary.Period.Kind) -> Int {
        switch kind {
        case .paid: 0
        case .offer, .intro, .trial: 1
        case .grace: 2
        case .upgraded, .refunded, .refundedProrated: 3
        }
    }

    public static let legend = "t trial  i intro  o offer  = paid  g grace  x refunded  p refunded in part  u upgraded  ^ judged at"

    /// "offers: win-back offer from 2026-09-01, …" for the periods bought with a named offer.
    public static func offers(_ s: SubscriptionSummary) -> String? {
        let named = s.periods.compactMap { p in p.offer.map { "\($0) from \(AppleDate.day(p.start))" } }
        return named.isEmpty ? nil : "offers: " + named.joined(separator: ", ")
    }

    /// The text block `inspect` prints.
    public static func text(_ analysis: PurchaseAnalysis, indent: String = "  ") -> [String] {
        var lines: [String] = []
        guard !analysis.subscriptions.isEmpty || !analysis.oneTimePurchases.isEmpty else { return lines }
        lines.append(indent + "Judged at \(AppleDate.iso8601(analysis.at))")
        for s in analysis.subscriptions {
            lines.append(
                indent + "Subscription \(SafeText.escaped(s.productID ?? "?")) (original \(SafeText.escaped(s.originalTransactionID))): \(s.state.rawValue)")
            lines.append(indent + "  " + SafeText.escaped(s.explanation))
            var facts: [String] = ["\(CountNoun.renewal.count(s.renewalCount))", "\(s.paidPeriods) paid"]
            if let next = s.autoRenewProductID, next != s.productID { facts.append("renews as \(SafeText.escaped(next))") }
            if s.productIDs.count > 1 { facts.append("products: " + s.productIDs.map(SafeText.escaped).joined(separator: " → ")) }
            lines.append(indent + "  " + facts.joined(separator: ", "))
            if let (bar, marker, range) = timeline(s, at: analysis.at) {
                lines.append(indent + "  " + bar + "  " + range)
                lines.append(indent + "  " + marker)
            }
            if let offers = offers(s) { lines.append(indent + "  " + SafeText.escaped(offers)) }
            for evidence in s.evidence { lines.append(indent + "  evidence: " + SafeText.escaped(evidence)) }
            for warning in s.warnings { lines.append(indent + "  note: " + SafeText.escaped(warning)) }
        }
        if !analysis.subscriptions.isEmpty { lines.append(indent + "  " + legend) }
        for p in analysis.oneTimePurchases {
            lines.append(
                indent + "One-time \(SafeText.escaped(p.productID ?? "?")) (\(SafeText.escaped(p.transactionID ?? "?"))): "
                    + SafeText.escaped(p.explanation))
        }
        for note in analysis.notes { lines.append(indent + "note: " + SafeText.escaped(note)) }
        return lines
    }

    /// `subscriptions` and `one_time_purchases` for the JSON output, as values.
    public static func json(_ analysis: PurchaseAnalysis) -> [String: JSONValue] {
        var out = JSONOutput()
        write(analysis, into: &out)
        return (try? JSONValue.parse(out.bytes))?.object ?? [:]
    }

    /// The members ``write(_:_:into:)`` writes, in key order.
    public enum Member: CaseIterable, Sendable {
        /// `analysis_notes` (left out when there are none).
        case analysisNotes
        /// `analyzed_at`.
        case analyzedAt
        /// `one_time_purchases`.
        case oneTimePurchases
        /// `subscriptions`.
        case subscriptions
    }

    /// Writes the analysis as an object of its own, with `extra` text members (e.g. `source`)
    /// merged in key order.
    public static func write(_ analysis: PurchaseAnalysis, extra: [String: String] = [:], into out: inout JSONOutput) {
        let keys = ["analysis_notes", "analyzed_at", "one_time_purchases", "subscriptions"]
        let all = JSONOutput.sortedKeys(Set(keys).union(extra.keys))
        out.beginObject()
        for key in all {
            if let text = extra[key] {
                out.member(text: key, text)
            } else if let index = keys.firstIndex(of: key) {
                write(analysis, Member.allCases[index], into: &out)
            }
        }
        out.endObject()
    }

    /// Writes one member of the analysis into the object open in `out` (the caller keeps the
    /// object's keys in order).
    public static func write(_ analysis: PurchaseAnalysis, _ member: Member, into out: inout JSONOutput) {
        switch member {
        case .analysisNotes:
            out.member("analysis_notes", strings: analysis.notes.isEmpty ? nil : analysis.notes)
        case .analyzedAt:
            out.member("analyzed_at", analysis.at)
        case .oneTimePurchases:
            out.key("one_time_purchases")
            out.beginArray()
            for p in analysis.oneTimePurchases {
                out.beginObject()
                out.member("explanation", p.explanation)
                out.nullableMember("product_id", p.productID)
                out.member("product_type", p.productType.rawValue)
                out.member("product_type_inferred", p.typeInferred)
                out.nullableMember("purchase_date", p.purchaseDate)
                out.member("refunded", p.refunded)
                out.nullableMember("transaction_id", p.transactionID)
                out.endObject()
            }
            out.endArray()
        case .subscriptions:
            out.key("subscriptions")
            out.beginArray()
            for s in analysis.subscriptions { subscription(s, into: &out) }
            out.endArray()
        }
    }

    private static func subscription(_ s: SubscriptionSummary, into out: inout JSONOutput) {
        out.beginObject()
        out.nullableMember("auto_renew", s.autoRenew)
        out.member("auto_renew_product_id", s.autoRenewProductID)
        out.member("billing_plan_type", s.billingPlanType)
        if let commitment = s.commitment {
            out.key("commitment_info")
            out.value(commitment.json)
        }
        out.member("evidence", strings: s.evidence)
        out.member("expiration_intent", s.expirationIntent)
        out.nullableMember("expires_date", s.expiresDate)
        out.member("explanation", s.explanation)
        out.member("grace_period_expires_date", s.gracePeriodExpiresDate)
        out.member("original_transaction_id", s.originalTransactionID)
        out.member("paid_periods", s.paidPeriods)
        out.key("periods")
        out.beginArray()
        for p in s.periods {
            out.beginObject()
            out.nullableMember("end", p.end)
            out.member("kind", p.kind.rawValue)
            out.member("offer", p.offer)
            out.member("product_id", p.productID)
            out.member("start", p.start)
            out.member("transaction_id", p.transactionID)
            out.endObject()
        }
        out.endArray()
        out.nullableMember("product_id", s.productID)
        out.member("product_ids", strings: s.productIDs)
        out.member("renewal_count", s.renewalCount)
        out.member("revocation_percentage", s.revocationPercentage)
        out.member("revocation_type", s.revocationType)
        out.member("sandbox", s.isSandbox)
        out.member("state", s.state.rawValue)
        out.member("subscription_group_identifier", s.subscriptionGroup)
        out.member("warnings", strings: s.warnings)
        out.endObject()
    }
}
