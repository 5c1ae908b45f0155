import AuditTrail
import Foundation
import AppStoreAPI
import CustomerTimeline
import PlainWords
import ReceiptCore
import ReceiptTrust
import TerminalUI
import UntrustedText

/// What a look-up reports while it works: the service's client events, which the executable
/// maps (the dashboard itself does no networking, see ``CustomerLookingUp``).
public enum LookupEvent: Sendable, Hashable {
    case sending(endpoint: APIEndpointKind, environment: APIEnvironment, attempt: Int)
    /// A retry in `inSeconds`; `until` is the `Retry-After` instant of a 429.
    case retrying(endpoint: APIEndpointKind, inSeconds: Double, until: Date?, after: APIAttemptResult)
    /// `auto`: production answered 4040010, sandbox is asked next.
    case switchingToSandbox(endpoint: APIEndpointKind)
}

/// Looks a customer up through the App Store Server API. The executable plugs the
/// AppStoreClients' `CustomerLookupService` in; tests plug in prepared answers.
public protocol CustomerLookingUp: Sendable {
    /// Answers `query`, reporting progress through `onEvent` (from any thread) as it goes.
    func lookUp(_ query: LookupQuery, onEvent: @escaping @Sendable (LookupEvent) -> Void) async -> CustomerLookupResult
    /// What the audit trail holds about the customer of `result` (notifications, writes,
    /// receipts), for the Customer view; nil without a trail.
    func storedRecords(for result: CustomerLookupResult) async -> StoredCustomerRecords?
    /// What Apple says it sent about the customer (Get Notification History), as `customer`
    /// reads it, or why it could not be read; nil items when not asked.
    func sentNotifications(for result: CustomerLookupResult) async -> (items: [SentNotification]?, error: String?)
}

extension CustomerLookingUp {
    public func storedRecords(for result: CustomerLookupResult) async -> StoredCustomerRecords? { nil }
    public func sentNotifications(for result: CustomerLookupResult) async -> (items: [SentNotification]?, error: String?) { (nil, nil) }
}

extension LookupQuery {
    /// What the `l` box takes: 10 letters and digits with at least one letter is an order ID
    /// (as on the App Store invoice, e.g. `MQ5X7ABCDE`); digits only are a transaction ID.
    /// Surrounding spaces are ignored; anything else is nil.
    public init?(typed text: String) {
        let value = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard Self.isOrderIDShaped(value) else { return nil }
        if Self.isIDShaped(value) {
            self = .transactionID(value)
        } else if value.unicodeScalars.count == 10 {
            self = .orderID(value)
        } else {
            return nil
        }
    }
}

extension DashboardState {
    /// What look-up needs configured, one setting a line (flag, else variable).
    public static let lookupSettings = [
        "--issuer-id or RECEIPTDASH_API_ISSUER_ID",
        "--key-id or RECEIPTDASH_API_KEY_ID",
        "--private-key-file or RECEIPTDASH_API_PRIVATE_KEY_FILE",
        "--bundle-id or RECEIPTDASH_BUNDLE_ID",
    ]

    /// What `l` / `L` say when look-up is not wired in.
    public var lookupSetupMessage: String {
        if let problem = lookupSetupProblem { return "look-up is not set up: \(problem)" }
        return "look-up is not set up: start with --issuer-id, --key-id, --private-key-file and --bundle-id, "
            + "or set RECEIPTDASH_API_ISSUER_ID, RECEIPTDASH_API_KEY_ID, RECEIPTDASH_API_PRIVATE_KEY_FILE and RECEIPTDASH_BUNDLE_ID"
    }

    /// The name a look-up and its answer go by: `lookup order MQ5X7ABCDE`,
    /// `lookup transaction 2000000123456789`, `lookup transaction 2000… from receipt.b64`.
    public static func lookupName(_ query: LookupQuery) -> String {
        switch query {
        case .orderID(let id): "lookup order \(id)"
        case .transactionID(let id): "lookup transaction \(id)"
        case .appTransactionID(let id): "lookup app transaction \(id)"
        case .receipt(let source, let id, _): "lookup transaction \(id) from \((source as NSString).lastPathComponent)"
        }
    }

    /// `l` or `L` without credentials: the status line says what to configure, and the Log
    /// lists each setting once (the status line is cut on narrow screens).
    mutating func explainLookupSetup() {
        message = (lookupSetupMessage, .warning)
        guard !lookupSetupLogged else { return }
        lookupSetupLogged = true
        addLog("look-up needs an In-App Purchase key (App Store Connect › Users and Access › Integrations):", role: .warning)
        for setting in Self.lookupSettings { addLog("  " + setting, role: .warning) }
    }

    /// The effect for `query`, unless the same look-up is still running.
    mutating func startLookUp(_ query: LookupQuery) -> [Effect] {
        let name = Self.lookupName(query)
        guard !lookupsRunning.contains(query) else {
            message = ("\(name) is still running", .info)
            return []
        }
        lookupsRunning.insert(query)
        message = ("\(name): asking the App Store Server API…", .info)
        addLog("\(name): asking the App Store Server API", role: .info)
        return [.lookUp(query)]
    }

    /// `L`: the selected receipt's newest transaction id (as `receiptdash lookup FILE` takes
    /// it), after our own decode and trust check.
    mutating func lookUpSelectedReceipt() -> [Effect] {
        guard let item = selectedItem, let decoded = item.decoded else {
            if let lost = selectedItem?.detailsLost {
                message = ("nothing to look up: \(lost)", .warning)
                return []
            }
            message = ("nothing to look up: select a decoded receipt in the Receipts pane", .info)
            return []
        }
        let newest = decoded.allPurchases.filter { $0.transactionID != nil }
            .max { ($0.purchaseDate ?? .distantPast) < ($1.purchaseDate ?? .distantPast) }
        guard let id = newest?.transactionID else {
            message = ("\(item.source) holds no transaction id to look up", .warning)
            return []
        }
        // A look-up's own answer is not a receipt: look its customer up again by id.
        let query: LookupQuery =
            item.lookup != nil ? .transactionID(id) : .receipt(source: item.source, transactionID: id, verdict: item.trust?.verdict)
        return startLookUp(query)
    }

    /// The `l` box.
    mutating func handleLookupBox(_ event: KeyEvent, text: String) -> [Effect] {
        switch event {
        case .escape: mode = .normal
        case .backspace: mode = .lookup(String(text.dropLast()))
        case .control("u"): mode = .lookup("")
        case .character(let c): mode = .lookup(text + String(c))
        case .paste(let pasted): mode = .lookup(text + pasted.trimmingCharacters(in: .whitespacesAndNewlines))
        case .control("c"): return [.quit]
        case .enter:
            mode = .normal
            guard !text.trimmingCharacters(in: .whitespaces).isEmpty else { return [] }
            guard let query = LookupQuery(typed: text) else {
                let shown = text.count > 40 ? String(text.prefix(40)) + "…" : text
                message = (
                    "\"\(shown)\" is neither an order ID (10 letters and digits, with a letter) nor a transaction ID (digits only)",
                    .warning
                )
                return []
            }
            let effects = startLookUp(query)
            if !effects.isEmpty { openCustomerOnArrival.insert(query) }
            return effects
        default: break
        }
        return []
    }

    /// Applies a progress event of the look-up `query` that happened at `time` (wall clock,
    /// for the log).
    public mutating func apply(_ event: LookupEvent, for query: LookupQuery, at time: Date) {
        if time > wallClock { wallClock = time }
        let name = Self.lookupName(query)
        switch event {
        case .sending:
            break
        // What happens first, whose look-up last: the Log pane is narrow.
        case .retrying(let endpoint, _, let until?, _):
            addLog("rate limited: waiting until \(DashboardView.clock(until)) (\(endpoint.rawValue); \(name))", role: .warning, at: time)
        case .retrying(let endpoint, let seconds, nil, let after):
            addLog(String(format: "retrying %@ in %.1f s after %@ (%@)", endpoint.rawValue, seconds, after.description, name), role: .warning, at: time)
        case .switchingToSandbox:
            addLog("production does not know it; asking sandbox (\(name))", role: .info, at: time)
        }
    }

    /// Logs and announces a look-up's answer, already added at `index`, and selects it.
    mutating func lookupArrived(_ result: CustomerLookupResult, at index: Int, updated: Bool = false) {
        lookupsRunning.remove(result.query)
        let name = Self.lookupName(result.query) + (updated ? " (updated)" : "")
        let count = result.transactions.count
        let found = "\(CountNoun.transaction.count(count))"
        if let failure = result.failure {
            let kept = count > 0 ? " (\(found) kept)" : ""
            let text = "\(name) failed: \(failure.reason)\(kept)"
            addLog(text, role: .error)
            message = (text, .error)
        } else {
            let subscriptions = result.analysis?.subscriptions.count ?? 0
            var text = "\(name): \(found), \(CountNoun.subscription.count(subscriptions))"
            if let environment = result.environment { text += " in \(environment.rawValue)" }
            if let verdict = result.verdict { text += ", trust \(verdict.rawValue)" }
            addLog(text, role: result.verdict == .valid ? .ok : .warning)
            message = (text, result.verdict == .valid ? .ok : .warning)
        }
        focus = .receipts
        select(item: index)
    }
}

extension LoadedItem {
    /// A look-up's answer as an input of format `api`: its transactions and renewal infos
    /// fill the same panes a receipt's do.
    init(lookup result: CustomerLookupResult, id: Int) {
        self.init(id: id, source: DashboardState.lookupName(result.query), rows: [])
        var decoded = DecodedInput(format: .api)
        decoded.transactions = result.transactions.compactMap(\.transaction)
        decoded.pendingRenewalInfo = result.renewals.compactMap(\.renewal)
        if let environment = result.environment {
            decoded.rawEnvironment = environment.rawValue
            decoded.environment = StoreEnvironment(appleValue: environment.rawValue)
        }
        decoded.warnings = result.notes
        self.decoded = decoded
        bundleID = decoded.bundleID
        environment = decoded.environment
        rows = decoded.allPurchases
        analysis = result.analysis
        lookup = result
        trust = Self.trustSummary(result)
        verdict = trust?.verdict
    }

    /// The worst verdict among the signed items, with a step for each one not trusted (for
    /// the icon, the title bar's mix and `y` on the Status pane).
    static func trustSummary(_ result: CustomerLookupResult) -> TrustReport? {
        guard let verdict = result.verdict else { return nil }
        let signed = result.transactions + result.renewals
        let untrusted = signed.filter { $0.trust.verdict != .valid }
        guard !untrusted.isEmpty else {
            return TrustReport(
                verdict: verdict,
                steps: [.init(.signedItems, outcome: .pass, reason: "all \(signed.count) genuine, bundle and environment as asked")])
        }
        return TrustReport(
            verdict: verdict,
            steps: untrusted.map {
                .init(.lookedUpItem, subject: DashboardView.lookedUpName($0), outcome: $0.trust.verdict == .invalid ? .fail : .warning, reason: $0.trust.headline,
                    code: $0.trust.verdict == .invalid ? $0.trust.firstFailure?.code : nil)
            })
    }
}

extension DashboardView {
    /// `transaction 2000… (com.example.monthly)` or `renewal info of 2000…`.
    static func lookedUpName(_ item: LookedUpItem) -> String {
        if let t = item.transaction { return "transaction \(t.transactionID ?? "?")" + (t.productID.map { " (\($0))" } ?? "") }
        if let r = item.renewal { return "renewal info of \(r.originalTransactionID ?? "?")" + (r.productID.map { " (\($0))" } ?? "") }
        return item.decoded.format.rawValue
    }

    /// `17:04:12` (UTC, as the Log pane's times).
    static func clock(_ date: Date) -> String {
        String(AppleDate.iso8601(date).dropFirst(11).prefix(8))
    }

    /// The Status pane for a look-up: the error explained, the trust summary (worst verdict,
    /// each untrusted item named), Apple's subscription statuses, refunds and every request.
    static func lookupLines(_ r: CustomerLookupResult) -> [(String, Style)] {
        var lines: [(String, Style)] = []
        if let failure = r.failure {
            lines.append(("Look-up failed (\(failure.code)): \(failure.reason)", Style(.error, bold: true)))
        }
        let signed = r.transactions + r.renewals
        if let verdict = r.verdict {
            let untrusted = signed.filter { $0.trust.verdict != .valid }
            let role: ColorRole = verdict == .valid ? .ok : verdict == .invalid ? .error : .warning
            // Test data (Xcode's certificate, a --root-ca root) is named once, not item by item.
            let allTest = !untrusted.isEmpty && untrusted.allSatisfy { $0.trust.verdict == .test } && untrusted.count == signed.count
            let text: String
            if untrusted.isEmpty {
                text = "Trust: valid: all \(signed.count) signed items genuine, bundle and environment as asked"
            } else if allTest, let headline = untrusted.first?.trust.headline {
                text = "Trust: all \(signed.count) signed items are \(headline)"
            } else {
                text = "Trust: \(verdict.rawValue): \(untrusted.count) of \(signed.count) signed items not trusted"
            }
            lines.append((text, Style(role, bold: true)))
            for item in untrusted where !allTest {
                let invalid = item.trust.verdict == .invalid
                lines.append(("\(invalid ? "✗" : "!") \(lookedUpName(item)): \(item.trust.headline)", Style(invalid ? .error : .warning)))
            }
        } else {
            lines.append(("Trust: no signed items came back", Style(.muted)))
        }
        for (original, status) in r.apiStatuses.sorted(by: { $0.key < $1.key }) {
            let words = status.isDefined ? "is \(status) (status \(status.rawValue))" : "has status \(status.rawValue) (\(AppleValue.notDefined))"
            lines.append(("Apple: subscription \(original) \(words)", Style(status == .active ? .ok : .text)))
        }
        if r.refunds.isEmpty {
            // Not after a failure: Apple was not asked, or did not answer.
            if r.failure == nil { lines.append(("Refunds: none", Style(.muted))) }
        } else {
            lines.append(("Refunds (\(r.refunds.count)): " + r.refunds.joined(separator: ", "), Style(.warning, bold: true)))
        }
        lines.append(("Requests (\(r.records.count)):", Style(.title)))
        for record in r.records {
            lines.append(("  " + requestLine(record), Style(record.result.isSuccess ? .muted : .warning)))
        }
        return lines
    }

    /// `transaction-history Sandbox: HTTP 429, 12 ms, waited 1.5 s (Retry-After 17:04:12)`.
    static func requestLine(_ record: APIRequestRecord) -> String {
        var text = "\(record.endpoint.rawValue) \(record.environment.rawValue): \(record.result), \(Int(record.latencyMilliseconds.rounded())) ms"
        if let wait = record.waitSeconds { text += String(format: ", waited %.1f s", wait) }
        if let until = record.retryAfter { text += " (Retry-After \(clock(until)))" }
        return text
    }
}
