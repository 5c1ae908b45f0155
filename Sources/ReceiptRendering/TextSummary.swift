import AppStoreAPI
import PlainWords
import ReceiptCore
import ReceiptTrust
import Foundation
import UntrustedText

/// The readable summary `receiptdash inspect` prints: what the input is, whose app, which
/// versions and dates, who signed it, and each purchase. Every value that came from the input
/// passes through ``SafeText`` first.
public enum TextSummary {
    /// Renders one decoded input.
    ///
    /// - Parameter title: a heading line (usually the file name), or `nil`.
    public static func render(_ input: DecodedInput, title: String? = nil, trust: TrustReport? = nil) -> String {
        var lines: [String] = []
        if let title { lines.append(SafeText.escaped(title)) }
        body(input, indent: "  ", into: &lines)
        if let trust { trustLines(trust, indent: "  ", into: &lines) }
        return lines.joined(separator: "\n") + "\n"
    }

    private static func body(_ input: DecodedInput, indent: String, into lines: inout [String]) {
        func row(_ label: String, _ value: String?) {
            guard let value, !value.isEmpty else { return }
            lines.append(indent + label.padding(toLength: 16, withPad: " ", startingAt: 0) + SafeText.escaped(value))
        }
        var format = input.format.displayName
        if !input.wrapping.isEmpty { format += " (" + input.wrapping.joined(separator: ", ") + ")" }
        row("Format", format)
        var environment = input.environment?.rawValue ?? input.rawEnvironment
        if let raw = input.rawEnvironment, raw != environment { environment = (environment ?? "?") + " (\(raw))" }
        if input.environment == nil, let raw = input.rawEnvironment { environment = "\(raw) (\(AppleValue.notDefined))" }
        row("Environment", environment)
        if let status = input.status {
            let explained = AppleStatus.explain(status, isRetryable: input.isRetryable)
            row("Status", "\(status) \(explained.title)" + (input.isRetryable.map { $0 ? " (is-retryable 1)" : " (is-retryable 0)" } ?? ""))
            row("", explained.explanation)
            row("Next", explained.nextStep)
        }
        if let n = input.notification {
            row("Notification", [n.notificationType, n.subtype].compactMap { $0 }.joined(separator: " / "))
            row("Meaning", NotificationRow.explanation(type: n.notificationType, subtype: n.subtype, decoded: input))
            row("UUID", n.notificationUUID)
            row("Signed", n.signedDate.map(AppleDate.iso8601))
            if n.containedSharedSecret { row("Password", "present in the body (shared secret; not shown)") }
        }
        row("Bundle id", input.bundleID)
        if let r = input.receipt {
            row("Receipt type", r.receiptType)
            row("App id", r.appItemID.map(String.init))
            var version = r.applicationVersion
            if let original = r.originalApplicationVersion { version = (version ?? "?") + " (originally \(original))" }
            row("App version", version)
            row("Created", r.receiptCreationDate.map(AppleDate.iso8601))
            row("First bought", r.originalPurchaseDate.map(AppleDate.iso8601))
            row("Expires", r.expirationDate.map(AppleDate.iso8601))
            row("Requested", r.requestDate.map(AppleDate.iso8601))
            row("Platform", r.originalPlatform.map { DefinedValues.shown($0, in: DefinedValues.platform) })
            if !r.unknownAttributes.isEmpty {
                row("Other fields", r.unknownAttributes.map { "\($0.type)" }.joined(separator: ", ") + " (raw, see --format json)")
            }
        }
        for field in input.legacyEnvelope { row(field.name, field.value) }
        if let signature = input.signature {
            let summary = SignatureSummary(signature)
            var text = summary.certificates.first?.commonName ?? "no certificate"
            var details: [String] = []
            if let algorithm = summary.algorithm { details.append(algorithm) }
            details.append("\(CountNoun.certificate.count(summary.certificates.count))")
            text += " (" + details.joined(separator: ", ") + ")"
            row("Signed by", text)
            for problem in summary.problems { row("", problem) }
        }
        let purchases = input.receipt?.inApp ?? []
        if input.receipt != nil && input.format != .jwsAppTransaction {
            lines.append(indent + "In-app purchases: \(purchases.count)" + (purchases.isEmpty ? " (none: not an error)" : ""))
            table(purchases, indent: indent + "  ", into: &lines)
        }
        if !input.transactions.isEmpty {
            lines.append(indent + "Transactions: \(input.transactions.count)")
            table(input.transactions, indent: indent + "  ", into: &lines)
        }
        if !input.latestReceiptInfo.isEmpty {
            lines.append(indent + "Latest receipt info: \(input.latestReceiptInfo.count)")
            table(input.latestReceiptInfo, indent: indent + "  ", into: &lines)
        }
        if !input.pendingRenewalInfo.isEmpty {
            lines.append(indent + "Pending renewal info: \(input.pendingRenewalInfo.count)")
            for r in input.pendingRenewalInfo {
                var parts: [String] = []
                parts.append(r.productID ?? r.autoRenewProductID ?? "?")
                if let status = r.autoRenewStatus { parts.append(status ? "auto-renew on" : "auto-renew off") }
                if let asSent = r.autoRenewStatusAsSent { parts.append("auto-renew \(AppleValue.undefined(asSent))") }
                if let next = r.autoRenewProductID, next != r.productID { parts.append("renews as \(next)") }
                if let intent = r.expirationIntent {
                    parts.append("expiration_intent \(intent) (\(ExpirationIntent.explain(intent)))")
                }
                if let price = r.priceIncreaseStatus { parts.append("price_increase_status \(price) (\(DefinedValues.priceIncrease(price)))") }
                if r.isInBillingRetryPeriod == true { parts.append("in billing retry") }
                if let grace = r.gracePeriodExpiresDate { parts.append("grace until \(AppleDate.iso8601(grace))") }
                lines.append(indent + "  " + SafeText.escaped(parts.joined(separator: ", ")))
            }
        }
        for warning in input.warnings { lines.append(indent + "warning: " + SafeText.escaped(warning)) }
    }

    private static func trustLines(_ report: TrustReport, indent: String, into lines: inout [String]) {
        lines.append(indent + "Trust: " + SafeText.escaped(report.headline))
        for step in report.steps {
            let mark: String
            switch step.outcome {
            case .pass: mark = "ok  "
            case .fail: mark = "FAIL"
            case .warning: mark = "warn"
            case .skipped: mark = "skip"
            }
            lines.append(indent + "  [\(mark)] " + SafeText.escaped(step.name) + ": " + SafeText.escaped(step.reason))
        }
    }

    private static func table(_ purchases: [Purchase], indent: String, into lines: inout [String]) {
        guard !purchases.isEmpty else { return }
        let header = ["#", "product", "type", "transaction", "original", "purchased", "expires", "note"]
        var rows: [[String]] = []
        for (i, p) in purchases.enumerated() {
            var notes: [String] = []
            if let q = p.quantity, q != 1 { notes.append("qty \(q)") }
            if p.isTrialPeriod == true { notes.append("trial") }
            if p.isInIntroOfferPeriod == true { notes.append("intro") }
            if p.isUpgraded == true { notes.append("upgraded") }
            if let c = p.cancellationDate {
                notes.append("cancelled \(AppleDate.iso8601(c))" + (p.cancellationReason.map { " reason \($0)" } ?? ""))
            }
            rows.append([
                String(i + 1), p.productID ?? "?", shortType(p.productType), p.transactionID ?? "",
                p.originalTransactionID == p.transactionID ? "=" : (p.originalTransactionID ?? ""),
                p.purchaseDate.map(AppleDate.iso8601) ?? "", p.expiresDate.map(AppleDate.iso8601) ?? "",
                notes.joined(separator: ", "),
            ].map(SafeText.escaped))
        }
        var widths = header.map(\.count)
        for r in rows {
            for (i, cell) in r.enumerated() { widths[i] = max(widths[i], cell.count) }
        }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { i, c in i == cells.count - 1 ? c : c.padding(toLength: widths[i], withPad: " ", startingAt: 0) }
                .joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }
        lines.append(indent + line(header))
        for r in rows { lines.append(indent + line(r)) }
    }

    private static func shortType(_ type: ProductType?) -> String {
        switch type {
        case .autoRenewable: "auto-renew"
        case .nonRenewing: "non-renew"
        case .consumable: "consumable"
        case .nonConsumable: "non-consum"
        case .unknown: "unknown"
        case nil: ""
        }
    }
}
