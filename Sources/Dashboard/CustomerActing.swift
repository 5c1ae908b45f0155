import Foundation
import AppStoreAPI
import ReceiptCore
import ReceiptTrust
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
    /// Sent on data judged `invalid` all the same (`F` on the plan; `--force-untrusted`).
    public var forceUntrusted = false

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
    /// What the write was to (`extend|<original transaction id>`), so a repeat finds it.
    public var target: String?
    /// The request id of a write whose outcome is unknown: repeating it (the same form again)
    /// reuses this id, so Apple applies it at most once.
    public var unknownRequestID: String?
    /// The HTTP status Apple answered a taken write with (`consumption`: 202).
    public var httpStatus: Int?
    /// Why a write was not sent, by code, as the commands say it (`untrusted-data`, …).
    public var code: String?

    public init(ok: Bool, line: String, target: String? = nil, unknownRequestID: String? = nil, httpStatus: Int? = nil, code: String? = nil) {
        self.ok = ok
        self.line = line
        self.target = target
        self.unknownRequestID = unknownRequestID
        self.httpStatus = httpStatus
        self.code = code
    }

    /// The key of a write to `id` (`extend|2000…`), as ``target`` holds it.
    public static func target(_ action: String, _ id: String) -> String { "\(action)|\(id)" }
}

/// Writes to Apple for the dashboard (it does no networking itself): the executable plugs
/// DashboardLive's adapter in, which sends through the App Store Server API client and records
/// each write in the audit trail.
public protocol CustomerActing: Sendable {
    func extend(_ order: ExtendOrder) async -> ActionAnswer
    func consume(_ order: ConsumptionOrder) async -> ActionAnswer
    func setToken(_ order: TokenOrder) async -> ActionAnswer
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
    /// The verdict of the look-up the form was opened from (the plan's `data:` line and the
    /// gate ``ActionDataGate`` asks).
    public var dataTrust: TrustReport.Verdict?

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
            lines.append(ExtendRenewalDateBody.planLine(expires: expires, days: count))
        }
        lines += ["reason: \(reason.name)", ActionDataGate.dataLine(dataTrust, forced: false), "request id: \(requestID)"]
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
        var form = ExtendForm(
            originalTransactionID: subscription.originalTransactionID, productID: subscription.productID, expires: subscription.expiresDate,
            environment: environment, query: lookup.query,
            requestID: newRequestID(for: ActionAnswer.target("extend", subscription.originalTransactionID)))
        form.dataTrust = lookup.verdict
        mode = .extendForm(form)
    }

    mutating func handleExtendForm(_ event: KeyEvent, form: ExtendForm) -> [Effect] {
        var form = form
        if form.confirming {
            guard let forced = gatedSend(event, trust: form.dataTrust) else { return [] }
            var order = ExtendOrder(
                originalTransactionID: form.originalTransactionID, productID: form.productID, days: Int(form.days) ?? 0, reason: form.reason,
                requestID: form.requestID, environment: form.environment, query: form.query)
            order.forceUntrusted = forced
            message = ("extending \(form.originalTransactionID) by \(order.days) days…", .info)
            addLog("extend \(form.originalTransactionID) by \(order.days) days sent (request id \(form.requestID))", role: .info)
            return [.extend(order)]
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

    /// A plan's `y` (true: the form closes, the write goes) or `n`/Esc (the form closes with
    /// "not sent"); any other key leaves the plan open (false).
    mutating func confirmed(_ event: KeyEvent) -> Bool {
        switch event {
        case .character("y"), .character("Y"):
            mode = .normal
            return true
        case .character("n"), .character("N"), .escape, .character("q"):
            mode = .normal
            message = ("not sent", .info)
            return false
        default:
            return false
        }
    }

    /// A plan's keys through the one gate (``ActionDataGate``, as the commands): on data
    /// judged `invalid`, `y` is refused with the commands' code and words and the plan stays
    /// open, and `F` goes ahead (as `--force-untrusted`). Returns whether the write goes
    /// forced, or nil when the key sends nothing.
    mutating func gatedSend(_ event: KeyEvent, trust: TrustReport.Verdict?) -> Bool? {
        if event == .character("F"), trust == .invalid {
            mode = .normal
            return true
        }
        if event == .character("y") || event == .character("Y"),
            let refused = ActionDataGate.refusal(trust, forced: false, howToForce: ActionDataGate.dashboardForce)
        {
            popup = Popup(title: "Not sent (\(refused.code.rawValue))", lines: [refused.reason], role: .error)
            message = ("not sent: \(refused.reason)", .error)
            return nil
        }
        return confirmed(event) ? false : nil
    }

    /// A write's answer: the Log says it, and a taken write whose look-up is named asks it
    /// again (a new expiry or token shows).
    public mutating func apply(_ answer: ActionAnswer, lookingUpAgain query: LookupQuery?) -> [Effect] {
        addLog(answer.line, role: answer.ok ? .ok : .error)
        message = (answer.line, answer.ok ? .ok : .error)
        // A refusal or an error is said where the person is, not only in the Log.
        if !answer.ok {
            popup = Popup(title: answer.code.map { "Not sent (\($0))" } ?? "The write did not go through", lines: [answer.line], role: .error)
        }
        if let target = answer.target { unknownWrites[target] = answer.unknownRequestID }
        // Consumption information Apple took answers the transaction's refund request.
        if answer.ok, let target = answer.target, target.hasPrefix("consumption|") {
            consumptionAnswers[String(target.dropFirst("consumption|".count))] = (wallClock, answer.httpStatus)
        }
        guard answer.ok, let query else { return [] }
        return startLookUp(query)
    }

    /// The request id a form shows in its plan and sends: a write to `target` whose outcome
    /// is unknown is repeated with its own id (Apple applies an id once), else a new one.
    private func newRequestID(for target: String) -> String { unknownWrites[target] ?? UUID().uuidString.lowercased() }
}

/// A write's answer on its way back to the loop, with the look-up to ask again once it is taken.
struct ActionReply: Sendable {
    var answer: ActionAnswer
    var lookUpAgain: LookupQuery?
}

/// Consumption information the dashboard sends (`c`, then `y`): the answer to a refund request.
public struct ConsumptionOrder: Sendable, Hashable {
    public var transactionID: String
    public var deliveryStatus: DeliveryStatus
    public var sampleContentProvided: Bool
    public var consumedPercent: Double?
    public var refundPreference: RefundPreference?
    public var requestID: String
    /// Where the transaction is; nil lets the adapter find it (production, then sandbox).
    public var environment: APIEnvironment?
    /// Sent on data judged `invalid` all the same (`F` on the plan; `--force-untrusted`).
    public var forceUntrusted = false

    public init(
        transactionID: String, deliveryStatus: DeliveryStatus, sampleContentProvided: Bool, consumedPercent: Double?,
        refundPreference: RefundPreference?, requestID: String, environment: APIEnvironment?
    ) {
        self.transactionID = transactionID
        self.deliveryStatus = deliveryStatus
        self.sampleContentProvided = sampleContentProvided
        self.consumedPercent = consumedPercent
        self.refundPreference = refundPreference
        self.requestID = requestID
        self.environment = environment
    }

    /// The body Apple takes, or the rule it would break.
    public func body() throws(ActionRuleError) -> ConsumptionBody {
        try ConsumptionBody(
            customerConsented: true, deliveryStatus: deliveryStatus, sampleContentProvided: sampleContentProvided, consumedPercent: consumedPercent,
            refundPreference: refundPreference)
    }
}

/// The `c` form: what was delivered and consumed, the preference, the customer's consent; then
/// the plan and `y`.
public struct ConsumptionForm: Sendable, Hashable {
    public enum Field: Int, Sendable, Hashable, CaseIterable {
        case delivery, sample, percent, preference, consent
    }

    public var transactionID: String
    public var productID: String?
    public var environment: APIEnvironment?
    public var field = Field.delivery
    public var delivery = DeliveryStatus.delivered
    public var sample = false
    public var percent = ""
    public var preference: RefundPreference?
    public var consented = false
    public var requestID: String
    public var confirming = false
    public var problem: String?
    /// The verdict of the data the form was opened from; nil when none was read (a
    /// notification's transaction: the adapter's look-up judges it).
    public var dataTrust: TrustReport.Verdict?

    public init(transactionID: String, productID: String?, environment: APIEnvironment?, requestID: String) {
        self.transactionID = transactionID
        self.productID = productID
        self.environment = environment
        self.requestID = requestID
    }

    var order: ConsumptionOrder {
        ConsumptionOrder(
            transactionID: transactionID, deliveryStatus: delivery, sampleContentProvided: sample, consumedPercent: Double(percent),
            refundPreference: preference, requestID: requestID, environment: environment)
    }

    /// The form's lines, the focused field marked.
    public var lines: [String] {
        func mark(_ f: Field) -> String { f == field ? "▶ " : "  " }
        return [
            "transaction \(transactionID)\(productID.map { " (\($0))" } ?? "")",
            mark(.delivery) + "delivery: \(delivery.name)",
            mark(.sample) + "sample provided: \(sample ? "yes" : "no")",
            mark(.percent) + "consumed %: \(percent.isEmpty ? "(left out)" : percent)",
            mark(.preference) + "refund preference: \(preference?.name ?? "none")",
            mark(.consent) + "customer consented: \(consented ? "yes" : "no")",
        ]
    }

    /// The plan shown before `y`.
    public var plan: [String] {
        var lines = [
            "Send consumption information\(environment.map { " in \($0.rawValue)" } ?? ""): Apple weighs it in the refund decision",
            "transaction \(transactionID)\(productID.map { " (\($0))" } ?? "")",
            "delivery: \(delivery.name), sample provided: \(sample ? "yes" : "no")",
        ]
        if let p = Double(percent) { lines.append("consumed: \(p) % (sent as \(Int((p * 1000).rounded())) milliunits)") }
        if let preference { lines.append("refund preference: \(preference.name)") }
        lines += ["customer consented: yes", ActionDataGate.dataLine(dataTrust, forced: false), "request id: \(requestID)"]
        return lines
    }
}

extension DashboardState {
    /// `c`: the consumption form for the selected looked-up transaction, or for the transaction
    /// of the selected CONSUMPTION_REQUEST notification.
    mutating func startConsumption() {
        guard actionsAvailable else {
            message = (actionsUnavailableReason ?? "sending consumption information is not set up: it needs the look-up's credentials", .warning)
            return
        }
        var form: ConsumptionForm?
        if focus == .notifications, let entry = selectedNotification, let id = entry.row.transactionID {
            form = ConsumptionForm(
                transactionID: id, productID: entry.row.productID, environment: entry.row.environment.flatMap(APIEnvironment.init(rawValue:)),
                requestID: newRequestID(for: ActionAnswer.target("consumption", id)))
        } else if focus == .purchases, let item = selectedItem, item.lookup != nil, let purchase = selectedPurchase, let id = purchase.transactionID {
            form = ConsumptionForm(
                transactionID: id, productID: purchase.productID, environment: item.lookup?.environment,
                requestID: newRequestID(for: ActionAnswer.target("consumption", id)))
            form?.dataTrust = item.lookup?.verdict
        }
        guard let form else {
            message = ("c answers a refund request: select a CONSUMPTION_REQUEST notification, or a looked-up purchase", .info)
            return
        }
        mode = .consumptionForm(form)
    }

    mutating func handleConsumptionForm(_ event: KeyEvent, form: ConsumptionForm) -> [Effect] {
        var form = form
        if form.confirming {
            guard let forced = gatedSend(event, trust: form.dataTrust) else { return [] }
            var order = form.order
            order.forceUntrusted = forced
            message = ("sending consumption information for \(form.transactionID)…", .info)
            addLog("consumption for \(form.transactionID) sent (request id \(form.requestID))", role: .info)
            return [.consume(order)]
        }
        let fields = ConsumptionForm.Field.allCases
        switch event {
        case .tab, .down:
            form.field = fields[(form.field.rawValue + 1) % fields.count]
        case .backTab, .up:
            form.field = fields[(form.field.rawValue + fields.count - 1) % fields.count]
        case .left, .right, .character(" "):
            let step = event == .left ? -1 : 1
            switch form.field {
            case .delivery:
                let all = DeliveryStatus.allCases
                form.delivery = all[(all.firstIndex(of: form.delivery)! + step + all.count) % all.count]
            case .sample: form.sample.toggle()
            case .consent: form.consented.toggle()
            case .preference:
                let all: [RefundPreference?] = [nil] + RefundPreference.allCases
                form.preference = all[(all.firstIndex(of: form.preference)! + step + all.count) % all.count]
            case .percent: break
            }
        case .character(let c) where form.field == .percent && (c.isNumber || c == "."):
            if form.percent.count < 6 { form.percent.append(c) }
        case .backspace, .delete:
            if form.field == .percent, !form.percent.isEmpty { form.percent.removeLast() }
        case .enter:
            guard form.consented else {
                form.problem = "without the customer's consent, do not answer: Apple takes consumption information only with it"
                break
            }
            if !form.percent.isEmpty, Double(form.percent) == nil {
                form.problem = "consumed % must be a number from 0 to 100"
                break
            }
            do {
                _ = try form.order.body()
                form.problem = nil
                form.confirming = true
            } catch {
                form.problem = error.description
            }
        case .escape:
            mode = .normal
            message = ("not sent", .info)
            return []
        default: break
        }
        mode = .consumptionForm(form)
        return []
    }
}

/// An app account token the dashboard sets (`a`, then `y`).
public struct TokenOrder: Sendable, Hashable {
    public var originalTransactionID: String
    /// A UUID, as typed (lower-cased when sent).
    public var token: String
    public var requestID: String
    public var environment: APIEnvironment
    /// The look-up it came from, asked again once the token is set.
    public var query: LookupQuery
    /// Sent on data judged `invalid` all the same (`F` on the plan; `--force-untrusted`).
    public var forceUntrusted = false

    public init(originalTransactionID: String, token: String, requestID: String, environment: APIEnvironment, query: LookupQuery) {
        self.originalTransactionID = originalTransactionID
        self.token = token
        self.requestID = requestID
        self.environment = environment
        self.query = query
    }
}

/// The `a` form: the token, then the plan and `y`.
public struct TokenForm: Sendable, Hashable {
    public var order: TokenOrder
    /// The token the purchase has now, if any.
    public var current: String?
    public var confirming = false
    public var problem: String?
    /// The verdict of the look-up the form was opened from.
    public var dataTrust: TrustReport.Verdict?

    public init(order: TokenOrder, current: String?) {
        self.order = order
        self.current = current
    }

    public var plan: [String] {
        [
            "Set the app account token in \(order.environment.rawValue): later renewals carry it",
            "purchase: original transaction \(order.originalTransactionID)",
            "token: \(current ?? "none") → \(order.token.lowercased())", ActionDataGate.dataLine(dataTrust, forced: false),
            "request id: \(order.requestID)",
        ]
    }
}

extension DashboardState {
    /// `a`: the token form for the selected looked-up purchase.
    mutating func startToken() {
        guard actionsAvailable else {
            message = (actionsUnavailableReason ?? "setting a token is not set up: it needs the look-up's credentials", .warning)
            return
        }
        guard focus == .purchases, let item = selectedItem, let lookup = item.lookup, let environment = lookup.environment,
            let purchase = selectedPurchase, let original = purchase.originalTransactionID
        else {
            message = ("a sets a purchase's app account token: select a looked-up purchase in the Purchases pane, then press a", .info)
            return
        }
        let order = TokenOrder(
            originalTransactionID: original, token: "", requestID: newRequestID(for: ActionAnswer.target("app-account-token", original)),
            environment: environment, query: lookup.query)
        var form = TokenForm(order: order, current: purchase.appAccountToken)
        form.dataTrust = lookup.verdict
        mode = .tokenForm(form)
    }

    mutating func handleTokenForm(_ event: KeyEvent, form: TokenForm) -> [Effect] {
        var form = form
        if form.confirming {
            guard let forced = gatedSend(event, trust: form.dataTrust) else { return [] }
            var order = form.order
            order.forceUntrusted = forced
            message = ("setting the app account token of \(form.order.originalTransactionID)…", .info)
            addLog("app account token for \(form.order.originalTransactionID) sent (request id \(form.order.requestID))", role: .info)
            return [.setToken(order)]
        }
        switch event {
        case .character(let c) where c.isHexDigit || c == "-":
            if form.order.token.count < 36 { form.order.token.append(c) }
            form.problem = nil
        case .paste(let text):
            form.order.token = String(text.trimmingCharacters(in: .whitespacesAndNewlines).prefix(36))
        case .backspace, .delete:
            if !form.order.token.isEmpty { form.order.token.removeLast() }
        case .enter:
            do {
                _ = try AppAccountTokenBody(token: form.order.token)
                form.confirming = true
            } catch {
                form.problem = error.description
            }
        case .escape:
            mode = .normal
            message = ("not sent", .info)
            return []
        default: break
        }
        mode = .tokenForm(form)
        return []
    }
}
