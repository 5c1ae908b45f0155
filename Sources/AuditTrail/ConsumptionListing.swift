import Foundation
import JSONWriting
import PlainWords
import ReceiptCore
import UntrustedText

/// `notifications --consumption`: the `CONSUMPTION_REQUEST`s stored, newest first, with their
/// deadline, the policy matched, what was sent and Apple's answer. JSON keys are a contract:
/// `requests` (each with `notification_uuid`, `transaction_id`, `original_transaction_id`,
/// `product_id`, `environment`, `requested_at`, `deadline`, `state`, `policy`, `body`,
/// `request_id`, `http_status`, `api_error`, `detail`, `decided_at`) and `summary` (a count per
/// state). CSV has the same columns. Every text from a request is escaped.
public enum ConsumptionListing {
    public static let columns = [
        "notification_uuid", "transaction_id", "original_transaction_id", "product_id", "environment", "requested_at", "deadline", "state",
        "policy", "body", "request_id", "http_status", "api_error", "detail", "decided_at",
    ]

    static func cells(_ r: ConsumptionRequestRecord) -> [String?] {
        [
            r.notificationUUID, r.transactionID, r.originalTransactionID, r.productID, r.environment, AppleDate.iso8601(r.requestedAt),
            AppleDate.iso8601(r.deadline), r.state.rawValue, r.policy, r.body, r.requestID, r.httpStatus.map(String.init), r.apiError.map(String.init),
            r.detail, r.decidedAt.map(AppleDate.iso8601),
        ]
    }

    public static func write(_ records: [ConsumptionRequestRecord], format: TableFormat, now: Date, to console: Console) {
        var out = JSONOutput(flushingTo: console)
        switch format {
        case .json:
            out.beginObject()
            out.key("requests")
            out.beginArray()
            for r in records {
                out.beginObject()
                for (name, value) in zip(columns, cells(r)) {
                    out.key(text: name)
                    switch (name, value) {
                    case (_, nil): out.null()
                    case ("http_status", let v?), ("api_error", let v?): out.raw(v)
                    case (_, let v?): out.string(v)
                    }
                }
                out.endObject()
            }
            out.endArray()
            out.key("summary")
            out.beginObject()
            for state in ConsumptionState.allCases {
                out.key(text: state.rawValue)
                out.integer(records.count { $0.state == state })
            }
            out.endObject()
            out.endObject()
            out.newline()
        case .csv:
            out.raw(columns.joined(separator: ",") + "\r\n")
            for r in records { out.raw(cells(r).map { SafeText.csvCell($0 ?? "") }.joined(separator: ",") + "\r\n") }
        case .text:
            for r in records { out.raw(textLine(r, now: now) + "\n") }
            out.raw(footer(records) + "\n")
        }
        out.flush()
    }

    /// `2026-12-02T10:00:00Z  answered  2000000123  com.example.coins  due 2026-12-02T22:00:00Z  policy "…" HTTP 202  {"customerConsented":true,…}`
    public static func textLine(_ r: ConsumptionRequestRecord, now: Date) -> String {
        var due = "due \(AppleDate.iso8601(r.deadline))"
        if !r.state.isFinal {
            let left = r.deadline.timeIntervalSince(now)
            due += left > 0 ? " (in \(Int(left / 3600)) h \(Int(left.truncatingRemainder(dividingBy: 3600) / 60)) min)" : " (past)"
        }
        var what = r.policy.map { "policy \"\(SafeText.escaped($0))\"" } ?? "-"
        if let status = r.httpStatus { what += " HTTP \(status)" }
        if let error = r.apiError { what += " error \(error)" }
        var parts = [
            AppleDate.iso8601(r.requestedAt), r.state.rawValue, SafeText.escaped(r.transactionID), SafeText.escaped(r.productID ?? "-"), due, what,
        ]
        if let body = r.body { parts.append(SafeText.escaped(body)) }
        if let detail = r.detail, r.state != .answered { parts.append(SafeText.escaped(detail)) }
        return parts.joined(separator: "  ")
    }

    /// `3 consumption requests: 1 open, 2 answered` (states with none are left out).
    public static func footer(_ records: [ConsumptionRequestRecord]) -> String {
        guard !records.isEmpty else { return "no consumption requests stored (Apple sends CONSUMPTION_REQUEST when a customer asks for a refund)" }
        let counts = ConsumptionState.allCases.compactMap { state in
            let n = records.count { $0.state == state }
            return n == 0 ? nil : "\(n) \(state.rawValue)"
        }
        return "\(CountNoun.consumptionRequest.count(records.count)): " + counts.joined(separator: ", ")
    }
}
