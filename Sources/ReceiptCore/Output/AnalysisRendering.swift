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
        case .upgraded: "u"
        }
    }

    /// One line of `width` cells from the first period's start to the later of the last end
    /// and `at` (spaces are gaps), and a second line with `^` under `at`.
    public static func timeline(_ s: SubscriptionSummary, at: Date, width: Int = 48) -> (bar: String, marker: String, range: String)? {
        guard let first = s.periods.map(\.start).min() else { return nil }
        let last = max(s.periods.compactMap(\.end).max() ?? at, at)
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
        let marker = String(repeating: " ", count: cell(at) + 1) + "^ " + AppleDate.iso8601(at)
        let range = "\(AppleDate.iso8601(first).prefix(10)) … \(AppleDate.iso8601(last).prefix(10))"
        return ("[" + String(cells) + "]", marker, range)
    }

    private static func rank(_ kind: SubscriptionSummary.Period.Kind) -> Int {
        switch kind {
        case .paid: 0
        case .offer, .intro, .trial: 1
        case .grace: 2
        case .upgraded, .refunded: 3
        }
    }

    public static let legend = "t trial  i intro  o offer  = paid  g grace  x refunded  u upgraded  ^ judged at"

    /// The text block `inspect` prints.
    public static func text(_ analysis: PurchaseAnalysis, indent: String = "  ") -> [String] {
        var lines: [String] = []
        guard !analysis.subscriptions.isEmpty || !analysis.oneTimePurchases.isEmpty else { return lines }
        lines.append(indent + "Judged at \(AppleDate.iso8601(analysis.at))")
        for s in analysis.subscriptions {
            lines.append(
                indent + "Subscription \(SafeText.escaped(s.productID ?? "?")) (original \(SafeText.escaped(s.originalTransactionID))): \(s.state.rawValue)")
            lines.append(indent + "  " + SafeText.escaped(s.explanation))
            var facts: [String] = ["\(s.renewalCount) renewal\(s.renewalCount == 1 ? "" : "s")", "\(s.paidPeriods) paid"]
            if let next = s.autoRenewProductID, next != s.productID { facts.append("renews as \(SafeText.escaped(next))") }
            if s.productIDs.count > 1 { facts.append("products: " + s.productIDs.map(SafeText.escaped).joined(separator: " → ")) }
            lines.append(indent + "  " + facts.joined(separator: ", "))
            if let (bar, marker, range) = timeline(s, at: analysis.at) {
                lines.append(indent + "  " + bar + "  " + range)
                lines.append(indent + "  " + marker)
            }
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

    /// `subscriptions` and `one_time_purchases` for the JSON output.
    public static func json(_ analysis: PurchaseAnalysis) -> [String: JSONValue] {
        func date(_ d: Date?) -> JSONValue { d.map { .string(AppleDate.iso8601($0)) } ?? .null }
        let subscriptions: [JSONValue] = analysis.subscriptions.map { s in
            var o: [String: JSONValue] = [
                "original_transaction_id": .string(s.originalTransactionID),
                "product_id": s.productID.map(JSONValue.string) ?? .null,
                "state": .string(s.state.rawValue),
                "explanation": .string(s.explanation),
                "expires_date": date(s.expiresDate),
                "auto_renew": s.autoRenew.map(JSONValue.bool) ?? .null,
                "periods": .array(
                    s.periods.map { p in
                        var period: [String: JSONValue] = [
                            "start": date(p.start), "end": date(p.end), "kind": .string(p.kind.rawValue),
                        ]
                        if let t = p.transactionID { period["transaction_id"] = .string(t) }
                        if let id = p.productID { period["product_id"] = .string(id) }
                        return .object(period)
                    }),
                "warnings": .array(s.warnings.map(JSONValue.string)),
                "evidence": .array(s.evidence.map(JSONValue.string)),
                "renewal_count": .integer(Int64(s.renewalCount)),
                "paid_periods": .integer(Int64(s.paidPeriods)),
                "product_ids": .array(s.productIDs.map(JSONValue.string)),
                "sandbox": .bool(s.isSandbox),
            ]
            if let next = s.autoRenewProductID { o["auto_renew_product_id"] = .string(next) }
            if let grace = s.gracePeriodExpiresDate { o["grace_period_expires_date"] = date(grace) }
            if let intent = s.expirationIntent { o["expiration_intent"] = .integer(Int64(intent)) }
            if let group = s.subscriptionGroup { o["subscription_group_identifier"] = .string(group) }
            return .object(o)
        }
        let oneTime: [JSONValue] = analysis.oneTimePurchases.map { p in
            .object([
                "product_id": p.productID.map(JSONValue.string) ?? .null,
                "transaction_id": p.transactionID.map(JSONValue.string) ?? .null,
                "product_type": .string(p.productType.rawValue),
                "product_type_inferred": .bool(p.typeInferred),
                "purchase_date": date(p.purchaseDate),
                "refunded": .bool(p.refunded),
                "explanation": .string(p.explanation),
            ])
        }
        var out: [String: JSONValue] = ["analyzed_at": .string(AppleDate.iso8601(analysis.at))]
        out["subscriptions"] = .array(subscriptions)
        out["one_time_purchases"] = .array(oneTime)
        if !analysis.notes.isEmpty { out["analysis_notes"] = .array(analysis.notes.map(JSONValue.string)) }
        return out
    }
}
