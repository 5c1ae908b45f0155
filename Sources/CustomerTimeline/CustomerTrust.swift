import AppStoreAPI
import AuditTrail
import Foundation
import PlainWords
import ReceiptCore
import ReceiptTrust

/// Whether the signed items a story stands on are genuine: Apple's answers (transactions and
/// renewal infos of the look-up) and the stored notifications. Anything but `valid` is not
/// genuine (`test` data, `invalid`, `unverifiable`), and the answer opens with a warning.
public struct CustomerTrust: Sendable, Hashable {
    /// The worst verdict of the items (`invalid`, then `unverifiable`, then `test`, then
    /// `valid`); nil when the story uses no signed item.
    public var verdict: TrustReport.Verdict?
    /// How many signed items the story uses.
    public var items: Int
    /// How many of them are not genuine.
    public var itemsNotGenuine: Int
    /// Why, in a line: the count of each verdict that is not genuine and its first reason;
    /// nil when every item is genuine.
    public var why: String?

    public init(verdict: TrustReport.Verdict?, items: Int, itemsNotGenuine: Int, why: String?) {
        self.verdict = verdict
        self.items = items
        self.itemsNotGenuine = itemsNotGenuine
        self.why = why
    }

    public var isGenuine: Bool { itemsNotGenuine == 0 }

    /// The warning the answer opens with; nil when every item is genuine.
    public var warning: String? {
        guard let why, itemsNotGenuine > 0 else { return nil }
        return "NOT GENUINE: \(itemsNotGenuine) of \(CountNoun.signedItem.count(items)) this story uses \(itemsNotGenuine == 1 ? "is" : "are") not Apple's genuine data (\(why)); do not act on it as if it were"
    }

    static func of(_ inputs: CustomerInputs) -> CustomerTrust {
        var judged: [(verdict: TrustReport.Verdict, reason: String?)] = []
        if let lookup = inputs.lookup {
            for item in lookup.transactions + lookup.renewals {
                judged.append((item.trust.verdict, firstReason(item.trust)))
            }
        }
        for n in inputs.stored?.notifications ?? [] {
            judged.append((n.record.verdict, n.record.reason))
        }
        let order: [TrustReport.Verdict] = [.invalid, .unverifiable, .test, .valid]
        let worst = order.first { verdict in judged.contains { $0.verdict == verdict } }
        let bad = judged.filter { $0.verdict != .valid }
        var parts: [String] = []
        for verdict in order where verdict != .valid {
            let these = bad.filter { $0.verdict == verdict }
            guard let first = these.first else { continue }
            parts.append("\(these.count) \(verdict.rawValue)" + (first.reason.map { ": \($0)" } ?? ""))
        }
        return CustomerTrust(verdict: worst, items: judged.count, itemsNotGenuine: bad.count, why: parts.isEmpty ? nil : parts.joined(separator: "; "))
    }

    /// The reason of the first step that failed (else warned), as the verdict's why.
    static func firstReason(_ report: TrustReport) -> String? {
        (report.firstFailure ?? report.steps.first { $0.outcome == .warning })?.reason
    }
}
