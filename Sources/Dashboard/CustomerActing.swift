import Foundation
import ReceiptCore
import TerminalUI

/// An extension the dashboard asks for (`x` on a looked-up subscription, then `y`).
public struct ExtendOrder: Sendable, Hashable {
    public var originalTransactionID: String
    public var productID: String?
    public var days: Int
    public var reason: ExtendReason
    /// Shown in the plan and sent: Apple applies an id once.
    public var requestID: String
    public var environment: APIEnvironment
    /// The look-up it came from, asked again once the extension is taken.
    public var query: LookupQuery

    public init(
        originalTransactionID: String, productID: String?, days: Int, reason: ExtendReason, requestID: String, environment: APIEnvironment,
        query: LookupQuery
    ) {
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.days = days
        self.reason = reason
        self.requestID = requestID
        self.environment = environment
        self.query = query
    }
}

/// What a write came back with, in a line for the Log.
public struct ActionAnswer: Sendable, Hashable {
    public var ok: Bool
    public var line: String

    public init(ok: Bool, line: String) {
        self.ok = ok
        self.line = line
    }
}

/// Writes to Apple for the dashboard (it does no networking itself): the executable plugs
/// DashboardLive's adapter in, which sends through the App Store Server API client and records
/// each write in the audit trail.
public protocol CustomerActing: Sendable {
    func extend(_ order: ExtendOrder) async -> ActionAnswer
}

/// The `x` form: days and reason, then the plan and `y`/`n`.
public struct ExtendForm: Sendable, Hashable {
    public var originalTransactionID: String
    public var productID: String?
    public var expires: Date?
    public var environment: APIEnvironment
    public var query: LookupQuery
    public var days = ""
    public var reason = ExtendReason.serviceIssue
    public var requestID: String
    /// The plan is shown and `y` sends.
    public var confirming = false
    /// Why Enter did not go on (days out of range).
    public var problem: String?

    public init(
        originalTransactionID: String, productID: String?, expires: Date?, environment: APIEnvironment, query: LookupQuery, requestID: String
    ) {
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.expires = expires
        self.environment = environment
        self.query = query
        self.requestID = requestID
    }

    /// The plan, a line each, as `receiptdash extend` shows it.
    public var plan: [String] {
        let count = Int(days) ?? 0
        var lines = [
            "Extend in \(environment.rawValue): cannot be taken back; Apple allows two per customer per year",
            "customer: original transaction \(originalTransactionID)", "product: \(productID ?? "?")",
        ]
        if let expires {
            lines.append("expires \(AppleDate.iso8601(expires)) → \(AppleDate.iso8601(expires.addingTimeInterval(Double(count) * 86_400))) (+\(count) days)")
        }
        lines += ["reason: \(reason.name)", "request id: \(requestID)"]
        return lines
    }
}

extension DashboardState {
    /// `x`: the extend form for the selected subscription of a look-up.
    mutating func startExtend() {
        guard actionsAvailable else {
            message = (actionsUnavailableReason ?? "extending is not set up: it needs the look-up's credentials", .warning)
            return
        }
        guard let item = selectedItem, let lookup = item.lookup, let environment = lookup.environment else {
            message = ("x extends a looked-up subscription: look the customer up first (l), then select the subscription", .info)
            return
        }
        let subscriptions = item.analysis?.subscriptions ?? []
        let chosen: SubscriptionSummary?
        switch focus {
        case .subscriptions: chosen = subscriptions.dropFirst(scroll[.subscriptions]?.selected ?? 0).first
        case .purchases: chosen = subscriptions.first { $0.originalTransactionID == selectedPurchase?.originalTransactionID }
        default: chosen = subscriptions.count == 1 ? subscriptions.first : nil
        }
        guard let subscription = chosen else {
            message = ("select the subscription to extend in the Subscriptions pane, then press x", .info)
            return
        }
        mode = .extendForm(
            ExtendForm(
                originalTransactionID: subscription.originalTransactionID, productID: subscription.productID, expires: subscription.expiresDate,
                environment: environment, query: lookup.query, requestID: newRequestID()))
    }

    mutating func handleExtendForm(_ event: KeyEvent, form: ExtendForm) -> [Effect] {
        var form = form
        if form.confirming {
            switch event {
            case .character("y"), .character("Y"):
                mode = .normal
                let order = ExtendOrder(
                    originalTransactionID: form.originalTransactionID, productID: form.productID, days: Int(form.days) ?? 0, reason: form.reason,
                    requestID: form.requestID, environment: form.environment, query: form.query)
                message = ("extending \(form.originalTransactionID) by \(order.days) days…", .info)
                addLog("extend \(form.originalTransactionID) by \(order.days) days sent (request id \(form.requestID))", role: .info)
                return [.extend(order)]
            case .character("n"), .character("N"), .escape, .character("q"):
                mode = .normal
                message = ("not sent", .info)
            default: break
            }
            return []
        }
        switch event {
        case .character(let c) where c.isASCII && c.isNumber:
            if form.days.count < 2 { form.days.append(c) }
            form.problem = nil
        case .backspace, .delete:
            if !form.days.isEmpty { form.days.removeLast() }
        case .tab, .right, .character(" "):
            let all = ExtendReason.allCases
            form.reason = all[(all.firstIndex(of: form.reason)! + 1) % all.count]
        case .backTab, .left:
            let all = ExtendReason.allCases
            form.reason = all[(all.firstIndex(of: form.reason)! + all.count - 1) % all.count]
        case .enter:
            guard let days = Int(form.days), (1...90).contains(days) else {
                form.problem = "days must be 1 to 90: Apple extends by at most 90 days at a time"
                break
            }
            form.confirming = true
        case .escape:
            mode = .normal
            message = ("extension cancelled", .info)
            return []
        default: break
        }
        mode = .extendForm(form)
        return []
    }

    /// A write's answer: the Log says it, and a taken extension asks the look-up again.
    public mutating func apply(_ answer: ActionAnswer, for order: ExtendOrder) -> [Effect] {
        addLog(answer.line, role: answer.ok ? .ok : .error)
        message = (answer.line, answer.ok ? .ok : .error)
        guard answer.ok else { return [] }
        return startLookUp(order.query)
    }

    private func newRequestID() -> String { UUID().uuidString.lowercased() }
}

/// A write's answer on its way back to the loop.
struct OrderAnswer: Sendable {
    var order: ExtendOrder
    var answer: ActionAnswer
}
