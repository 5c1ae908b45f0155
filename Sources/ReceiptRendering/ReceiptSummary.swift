import Foundation
import JSONWriting
import ReceiptCore
import ReceiptTrust
import UntrustedText

/// `inspect --summary`: one line per receipt, the answer to QA's questions about a folder. JSON
/// keys are a contract: `file`, `verdict`, `environment`, `bundle_id`, `products`,
/// `active_subscriptions`, `expired_subscriptions`, `refunds`, `latest_expiry`, `why`.
public struct ReceiptSummary: Sendable, Hashable {
    public var file: String
    /// `valid`, `test`, `invalid`, `unverifiable`, `unchecked` (`--no-verify`) or `undecodable`.
    public var verdict: String
    public var environment: String?
    public var bundleID: String?
    /// Every product bought, in name order.
    public var products: [String]
    /// Subscriptions that give access now: active, active but not renewing, in a grace period.
    public var activeSubscriptions: Int
    /// Subscriptions that lapsed: expired, or in billing retry.
    public var expiredSubscriptions: Int
    /// Refunded subscriptions and one-time purchases.
    public var refunds: Int
    /// The latest expiry of any subscription.
    public var latestExpiry: Date?
    /// Why, in one line: the trust verdict's reason when the receipt is not genuine, else the
    /// latest subscription's (or purchase's) state in words.
    public var why: String
    /// Every subscription's state (`state:` filters on them).
    public var states: Set<String>

    static let access: Set<SubscriptionState> = [.active, .activeWillNotRenew, .inGracePeriod]
    static let lapsed: Set<SubscriptionState> = [.expired, .inBillingRetry]
    static let refundedStates: Set<SubscriptionState> = [.refunded, .refundedProrated]

    /// A decoded receipt's line.
    public init(file: String, decoded: DecodedInput, trust: TrustReport?, analysis: PurchaseAnalysis) {
        self.file = file
        verdict = trust?.verdict.rawValue ?? "unchecked"
        environment = decoded.environment?.rawValue ?? decoded.rawEnvironment
        bundleID = decoded.bundleID
        var products = Set<String>()
        for s in analysis.subscriptions { products.formUnion(s.productIDs) }
        for p in analysis.oneTimePurchases { if let id = p.productID { products.insert(id) } }
        self.products = products.sorted()
        activeSubscriptions = analysis.subscriptions.filter { Self.access.contains($0.state) }.count
        expiredSubscriptions = analysis.subscriptions.filter { Self.lapsed.contains($0.state) }.count
        refunds = analysis.subscriptions.filter { Self.refundedStates.contains($0.state) }.count + analysis.oneTimePurchases.filter(\.refunded).count
        latestExpiry = analysis.subscriptions.compactMap(\.expiresDate).max()
        states = Set(analysis.subscriptions.map(\.state.rawValue))
        if let trust, trust.verdict == .invalid {
            why = trust.headline
        } else if let latest = analysis.subscriptions.max(by: { ($0.expiresDate ?? .distantPast) < ($1.expiresDate ?? .distantPast) }) {
            why = latest.explanation
        } else if let purchase = analysis.oneTimePurchases.last {
            why = purchase.explanation
        } else {
            why = "no purchases"
        }
    }

    /// An input that could not be decoded: its line says why.
    public init(file: String, error: ReceiptDecodingError) {
        self.file = file
        verdict = "undecodable"
        environment = nil
        bundleID = nil
        products = []
        activeSubscriptions = 0
        expiredSubscriptions = 0
        refunds = 0
        latestExpiry = nil
        why = error.reason
        states = []
    }

    /// What plain words of a filter are looked for in (lowercased). The dashboard keeps it beside
    /// each summary, so typing a word does not make it again for every receipt.
    public var searchText: String {
        ([file, verdict, environment ?? "", bundleID ?? "", why] + products).joined(separator: " ").lowercased()
    }

    // MARK: - Renderings

    public static let columns = [
        "file", "verdict", "environment", "bundle_id", "products", "active_subscriptions", "expired_subscriptions", "refunds",
        "latest_expiry", "why",
    ]

    public static var csvHeader: String { columns.joined(separator: ",") }

    public var csvLine: String {
        let cells: [String] = [
            file, verdict, environment ?? "", bundleID ?? "", products.joined(separator: " "), String(activeSubscriptions),
            String(expiredSubscriptions), String(refunds), latestExpiry.map(AppleDate.iso8601) ?? "", why,
        ]
        return cells.map(SafeText.csvCell).joined(separator: ",")
    }

    /// `receipts/a.b64  valid  Sandbox  com.example.app  pro.monthly  active 1 · expired 0 ·
    /// refunds 0 · until 2026-12-01  active: renews on 2026-12-01`, every value escaped.
    public var textLine: String {
        var facts = [
            SafeText.escaped(file), verdict, SafeText.escaped(environment ?? "-"), SafeText.escaped(bundleID ?? "-"),
            products.isEmpty ? "-" : SafeText.escaped(products.joined(separator: ",")),
        ]
        var counts = "active \(activeSubscriptions) · expired \(expiredSubscriptions) · refunds \(refunds)"
        if let latestExpiry { counts += " · until \(AppleDate.calendarDay(latestExpiry))" }
        facts.append(counts)
        facts.append(SafeText.escaped(why))
        return facts.joined(separator: "  ")
    }

    public func json(into out: inout JSONOutput) {
        out.beginObject()
        out.key("active_subscriptions")
        out.integer(activeSubscriptions)
        out.nullableMember("bundle_id", bundleID)
        out.nullableMember("environment", environment)
        out.key("expired_subscriptions")
        out.integer(expiredSubscriptions)
        out.member("file", file)
        out.nullableMember("latest_expiry", latestExpiry)
        out.member("products", strings: products)
        out.key("refunds")
        out.integer(refunds)
        out.member("verdict", verdict)
        out.member("why", why)
        out.endObject()
    }
}
