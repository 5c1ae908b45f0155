import JSONWriting
import PlainWords
import ReceiptCore
import ReceiptTrust
import Foundation
import UntrustedText

/// One received notification as `receiptdash notifications` lists it.
public struct NotificationRow: Sendable, Hashable {
    public var notificationUUID: String
    public var notificationType: String?
    public var subtype: String?
    public var bundleID: String?
    public var environment: String?
    public var signedDate: Date?
    public var receivedAt: Date
    public var deliveries: Int
    /// Our trust check's verdict (nil where none was made, e.g. the simulator's history).
    public var verdict: TrustReport.Verdict?
    public var transactionID: String?
    public var originalTransactionID: String?
    public var productID: String?
    /// The type and subtype in words (``NotificationExplanation``).
    public var explanation: String
    /// A `CONSUMPTION_REQUEST`'s `consumptionRequestReason` (`UNINTENDED_PURCHASE`, …).
    public var consumptionRequestReason: String?
    /// `receiver` (Apple POSTed it), or `history` (backfilled from Notification History by
    /// `notifications --reconcile --ingest`).
    public var source = "receiver"

    public init(
        notificationUUID: String, notificationType: String?, subtype: String?, bundleID: String?, environment: String?,
        signedDate: Date?, receivedAt: Date, deliveries: Int, verdict: TrustReport.Verdict?, transactionID: String?,
        originalTransactionID: String?, productID: String?, explanation: String
    ) {
        self.notificationUUID = notificationUUID
        self.notificationType = notificationType
        self.subtype = subtype
        self.bundleID = bundleID
        self.environment = environment
        self.signedDate = signedDate
        self.receivedAt = receivedAt
        self.deliveries = deliveries
        self.verdict = verdict
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.explanation = explanation
    }

    /// How long the developer has to answer a refund request: 12 hours from `signedDate`, as
    /// Apple's guidance for CONSUMPTION_REQUEST puts it (third-party sources; Apple's text does
    /// not state the window).
    public static let consumptionAnswerWindow: TimeInterval = 12 * 3600

    /// A `CONSUMPTION_REQUEST`'s reason and the time left to answer at `now`, in words: `refund
    /// asked (unintended purchase): answer within 9 h (c)`; once `answered` (consumption
    /// information sent for its transaction after Apple signed the request), when and with which
    /// HTTP status, and no countdown. Nil for other types.
    public func consumptionNote(now: Date, answered: (at: Date, httpStatus: Int?)? = nil) -> String? {
        guard notificationType == "CONSUMPTION_REQUEST" else { return nil }
        let reasons = DefinedValues.consumptionRequestReason
        let reason = consumptionRequestReason.map { reasons[$0] ?? "\($0), \(AppleValue.notDefined)" } ?? "no reason given"
        if let answered, answered.at >= signedDate ?? .distantPast {
            let status = answered.httpStatus.map { " (HTTP \($0))" } ?? ""
            return "refund asked (\(reason)): answered at \(AppleDate.iso8601(answered.at).dropFirst(11).prefix(8))\(status)"
        }
        guard let signed = signedDate else { return "refund asked (\(reason))" }
        let left = signed.addingTimeInterval(Self.consumptionAnswerWindow).timeIntervalSince(now)
        guard left > 0 else { return "refund asked (\(reason)): the 12 h to answer have passed" }
        let hours = Int((left / 3600).rounded(.up))
        return "refund asked (\(reason)): answer within \(hours) h"
    }

    /// The notification's decoded payload explained in one line (its nested transaction read
    /// for the dates and the kind of refund).
    public static func explanation(type: String?, subtype: String?, decoded: DecodedInput?) -> String {
        let transaction = decoded.flatMap { d in (d.nested.flatMap(\.input.transactions) + d.transactions).first }
        return NotificationExplanation.explain(
            type: type, subtype: subtype, until: until(decoded), notification: decoded?.notification, refunded: transaction)
    }

    /// The date that bounds the news, from the decoded notification: the grace period's end for
    /// a grace-period failure, else the nested transaction's expiry.
    public static func until(_ decoded: DecodedInput?) -> Date? {
        guard let decoded else { return nil }
        let renewals = decoded.nested.flatMap(\.input.pendingRenewalInfo) + decoded.pendingRenewalInfo
        if decoded.notification?.subtype == "GRACE_PERIOD", let grace = renewals.compactMap(\.gracePeriodExpiresDate).first {
            return grace
        }
        let transactions = decoded.nested.flatMap(\.input.transactions) + decoded.transactions
        return transactions.compactMap(\.expiresDate).first
    }
}

/// `notifications --format json|csv|text`. JSON keys are a contract: `notification_uuid`,
/// `notification_type`, `subtype`, `bundle_id`, `environment`, `signed_date`, `received_at`,
/// `deliveries`, `verdict`, `transaction_id`, `original_transaction_id`, `product_id`,
/// `explanation`, `consumption_request_reason`, `source` (absent values are `null`, so rows
/// line up).
public enum NotificationListing {
    public static let columns = [
        "notification_uuid", "notification_type", "subtype", "bundle_id", "environment", "signed_date", "received_at", "deliveries",
        "verdict", "transaction_id", "original_transaction_id", "product_id", "explanation", "consumption_request_reason", "source",
    ]

    public static func json(_ rows: [NotificationRow], into out: inout JSONOutput) {
        out.beginArray()
        for row in rows { object(row, into: &out) }
        out.endArray()
    }

    /// One row as one line of JSON (`notifications --follow --format jsonl`), with the row's
    /// `id` first, without its line end. Strings never hold a raw line end (they are escaped),
    /// so the indented rendering folds to one line.
    public static func jsonLine(_ row: NotificationRow, id: Int64) -> String {
        var out = JSONOutput()
        object(row, into: &out) { out in
            out.key("id")
            out.integer(id)
        }
        var text = ""
        for line in String(decoding: out.bytes, as: UTF8.self).split(separator: "\n") {
            text += line.drop { $0 == " " }
        }
        return text
    }

    /// One row of the JSON array (for writers that stream the rows).
    public static func object(_ row: NotificationRow, into out: inout JSONOutput) {
        object(row, into: &out) { _ in }
    }

    /// One row, with members of the caller's written after the row's own.
    public static func object(_ row: NotificationRow, into out: inout JSONOutput, more: (inout JSONOutput) -> Void) {
        out.beginObject()
        out.nullableMember("bundle_id", row.bundleID)
        out.nullableMember("consumption_request_reason", row.consumptionRequestReason)
        out.key("deliveries")
        out.integer(row.deliveries)
        out.nullableMember("environment", row.environment)
        out.nullableMember("explanation", row.explanation)
        out.nullableMember("notification_type", row.notificationType)
        out.nullableMember("notification_uuid", row.notificationUUID)
        out.nullableMember("original_transaction_id", row.originalTransactionID)
        out.nullableMember("product_id", row.productID)
        out.key("received_at")
        out.date(row.receivedAt)
        out.nullableMember("signed_date", row.signedDate)
        out.member("source", row.source)
        out.nullableMember("subtype", row.subtype)
        out.nullableMember("transaction_id", row.transactionID)
        out.nullableMember("verdict", row.verdict?.rawValue)
        more(&out)
        out.endObject()
    }

    /// RFC 4180 CSV with a header row; cells escaped as `history --format csv` escapes them
    /// (control characters shown, a leading `=`, `+`, `-`, `@` neutralised for spreadsheets).
    /// The CSV header row (without its line end).
    public static var csvHeader: String { columns.joined(separator: ",") }

    /// One CSV row (without its line end).
    public static func csvLine(_ r: NotificationRow) -> String {
        let cells: [String?] = [
            r.notificationUUID, r.notificationType, r.subtype, r.bundleID, r.environment,
            r.signedDate.map(AppleDate.iso8601), AppleDate.iso8601(r.receivedAt), String(r.deliveries), r.verdict?.rawValue,
            r.transactionID, r.originalTransactionID, r.productID, r.explanation, r.consumptionRequestReason, r.source,
        ]
        return cells.map { SafeText.csvCell($0 ?? "") }.joined(separator: ",")
    }

    /// One notification as text (one or two lines, without the last line end).
    public static func textLines(_ r: NotificationRow) -> String {
        let glyph =
            switch r.verdict {
            case .valid: "✓"
            case .test: "T"
            case .invalid: "✗"
            case .unverifiable, nil: "?"
            }
        let when = String(AppleDate.iso8601(r.receivedAt).prefix(19)).replacingOccurrences(of: "T", with: " ")
        var line = "\(when)  \(glyph) \(SafeText.escaped(r.explanation))"
        var facts: [String] = []
        if let product = r.productID { facts.append(SafeText.escaped(product)) }
        if let transaction = r.transactionID { facts.append("transaction \(SafeText.escaped(transaction))") }
        if let environment = r.environment { facts.append(SafeText.escaped(environment)) }
        if r.deliveries > 1 { facts.append("delivered \(r.deliveries)×") }
        if !facts.isEmpty { line += "\n                     " + facts.joined(separator: " · ") }
        return line
    }

    /// The closing line: how many were listed.
    public static func textFooter(count: Int) -> String {
        count == 0 ? "no notifications\n" : "\(CountNoun.notification.count(count))\n"
    }
}

/// `notifications --reconcile`: what Apple's Notification History says it sent in a window,
/// beside what this store received; the missing ones with Apple's send attempts (`TIMED_OUT`,
/// `TLS_ISSUE`, …): "are we missing events, and why".
public struct NotificationReconciliation: Sendable {
    public struct Missing: Sendable, Hashable {
        public var notificationUUID: String
        public var notificationType: String?
        public var subtype: String?
        public var signedDate: Date?
        public var transactionID: String?
        public var attempts: [SendAttempt]
        public var explanation: String
        /// What Apple's history holds of it: handed over with its page (what `--ingest` takes
        /// in), empty in the report (which holds no payloads, and never writes one out).
        public var signedPayload: String = ""

        public init(
            notificationUUID: String, notificationType: String?, subtype: String?, signedDate: Date?, transactionID: String?,
            attempts: [SendAttempt], explanation: String, signedPayload: String = ""
        ) {
            self.signedPayload = signedPayload
            self.notificationUUID = notificationUUID
            self.notificationType = notificationType
            self.subtype = subtype
            self.signedDate = signedDate
            self.transactionID = transactionID
            self.attempts = attempts
            self.explanation = explanation
        }
    }

    /// What `--ingest` did with a missing one: the receiver's outcome (`accepted`,
    /// `redelivered`, `refused`, …) and its reason.
    public struct Ingested: Sendable, Hashable {
        public var notificationUUID: String
        public var outcome: String
        public var reason: String

        public init(notificationUUID: String, outcome: String, reason: String) {
            self.notificationUUID = notificationUUID
            self.outcome = outcome
            self.reason = reason
        }

        /// In the store now: taken in (`accepted`) or already there (`redelivered`).
        public var isStored: Bool { outcome == "accepted" || outcome == "redelivered" }
    }

    public var environment: APIEnvironment
    public var start: Date
    public var end: Date
    /// Notifications Apple's history lists for the window.
    public var sent: Int
    /// Of those, how many this store holds.
    public var received: Int
    public var missing: [Missing]
    public var records: [APIRequestRecord]
    public var failure: APIFailure?

    public init(
        environment: APIEnvironment, start: Date, end: Date, sent: Int, received: Int, missing: [Missing], records: [APIRequestRecord],
        failure: APIFailure?
    ) {
        self.environment = environment
        self.start = start
        self.end = end
        self.sent = sent
        self.received = received
        self.missing = missing
        self.records = records
        self.failure = failure
    }

    /// `{"environment", "start", "end", "sent", "received", "missing": [{"notification_uuid",
    /// "notification_type", "subtype", "signed_date", "transaction_id", "explanation",
    /// "send_attempts": [{"attempt_date", "result"}]}], "requests", "error"}`.
    public func json(into out: inout JSONOutput, ingested: [Ingested]? = nil) {
        out.beginObject()
        out.member("end", end)
        out.member("environment", environment.rawValue)
        if let failure {
            failure.errorMember(into: &out)
        }
        if let ingested {
            out.key("ingested")
            out.beginArray()
            for i in ingested {
                out.beginObject()
                out.member("notification_uuid", i.notificationUUID)
                out.member("outcome", i.outcome)
                out.member("reason", i.reason)
                out.endObject()
            }
            out.endArray()
        }
        out.key("missing")
        out.beginArray()
        for m in missing {
            out.beginObject()
            out.member("explanation", m.explanation)
            out.member("notification_type", m.notificationType)
            out.member("notification_uuid", m.notificationUUID)
            out.key("send_attempts")
            out.beginArray()
            for a in m.attempts {
                out.beginObject()
                out.member("attempt_date", a.date)
                out.member("result", a.sendAttemptResult)
                out.endObject()
            }
            out.endArray()
            out.member("signed_date", m.signedDate)
            out.member("subtype", m.subtype)
            out.member("transaction_id", m.transactionID)
            out.endObject()
        }
        out.endArray()
        out.member("received", received)
        out.key("requests")
        out.beginArray()
        for record in records { out.value(record.json) }
        out.endArray()
        out.member("sent", sent)
        out.member("start", start)
        out.endObject()
    }

    /// The report on a console's standard output: JSON, or text.
    public func write(json: Bool, ingested: [Ingested]? = nil, to console: Console) {
        guard json else { return console.output(text + (ingested.map(Self.ingestedText) ?? "")) }
        var out = JSONOutput(flushingTo: console)
        self.json(into: &out, ingested: ingested)
        out.newline()
        out.flush()
    }

    /// `--ingest`'s lines: how many were stored, then each one that was not, with why.
    static func ingestedText(_ ingested: [Ingested]) -> String {
        let stored = ingested.filter(\.isStored).count
        var lines = ["Ingested \(stored) of \(ingested.count) from Apple's history (source: history)"]
        for i in ingested where !i.isStored {
            lines.append("  not stored: \(SafeText.escaped(i.notificationUUID)) \(i.outcome): \(SafeText.escaped(i.reason))")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    public var text: String {
        var lines = [
            "\(environment.rawValue) \(AppleDate.iso8601(start)) … \(AppleDate.iso8601(end)): Apple sent \(sent), this store holds \(received), missing \(missing.count)"
        ]
        if let failure { lines.append("failed: \(SafeText.escaped(failure.reason))") }
        for m in missing {
            let attempts = m.attempts.map { "\($0.date.map { AppleDate.iso8601($0) } ?? "?") \(SafeText.escaped($0.sendAttemptResult ?? "?"))" }
            lines.append("  \(SafeText.escaped(m.notificationUUID))  \(SafeText.escaped(m.explanation))")
            lines.append("      Apple's attempts: " + (attempts.isEmpty ? "none listed" : attempts.joined(separator: ", ")))
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

extension APIFailure {
    /// `"error": {"api_error", "code", "message"}`: a request that failed, as every command's
    /// JSON names it.
    public func errorMember(into out: inout JSONOutput) {
        out.key("error")
        out.beginObject()
        out.member("api_error", apiError.map { Int64($0.rawValue) })
        out.member("code", code.description)
        out.member("message", reason)
        out.endObject()
    }
}
