import Foundation
import JSONWriting
import PlainWords
import ReceiptCore
import UntrustedText

/// `notifications --retention`: the realtime requests the responder answered, oldest first.
/// JSON keys are a contract: `requests` (each with `request_identifier`, `received_at`,
/// `environment`, `app_apple_id`, `original_transaction_id`, `product_id`, `locale`, `result`,
/// `reason`, `rule`, `answer_kind`, `message_identifier`, `answer`, `latency_ms`) and `summary`
/// (a count per result). CSV has the same columns. Every text from a request is escaped.
public enum RetentionListing {
    public static let columns = [
        "request_identifier", "received_at", "environment", "app_apple_id", "original_transaction_id", "product_id", "locale", "result", "reason",
        "rule", "answer_kind", "message_identifier", "answer", "latency_ms",
    ]

    static func cells(_ r: RetentionRecord) -> [String?] {
        [
            r.requestIdentifier, AppleDate.iso8601(r.receivedAt), r.environment, r.appAppleID.map(String.init), r.originalTransactionID, r.productID,
            r.locale, r.result.rawValue, r.reason, r.rule, r.answerKind, r.messageIdentifier, r.answer, String(format: "%.1f", r.latencyMilliseconds),
        ]
    }

    public static func write(_ records: [RetentionRecord], format: TableFormat, to console: Console) {
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
                    case ("app_apple_id", let v?): out.raw(v)
                    case ("latency_ms", let v?): out.raw(v)
                    case (_, let v?): out.string(v)
                    }
                }
                out.endObject()
            }
            out.endArray()
            out.key("summary")
            out.beginObject()
            for result in RetentionResult.allCases {
                out.key(text: result.rawValue)
                out.integer(records.count { $0.result == result })
            }
            out.endObject()
            out.endObject()
            out.newline()
        case .csv:
            out.raw(columns.joined(separator: ",") + "\r\n")
            for r in records { out.raw(cells(r).map { SafeText.csvCell($0 ?? "") }.joined(separator: ",") + "\r\n") }
        case .text:
            for r in records { out.raw(textLine(r) + "\n") }
            out.raw(footer(records) + "\n")
        }
        out.flush()
    }

    /// `2026-12-02T10:00:00Z  offered  com.example.monthly fr-CA  2000000123  rule "…": promotional-offer  3.2 ms`
    public static func textLine(_ r: RetentionRecord) -> String {
        let what = r.rule.map { "rule \"\(SafeText.escaped($0))\": \(r.answerKind ?? "-") \(SafeText.escaped(r.messageIdentifier ?? "-"))" } ?? SafeText.escaped(r.reason)
        return [
            AppleDate.iso8601(r.receivedAt), r.result.rawValue, SafeText.escaped(r.productID ?? "-"), SafeText.escaped(r.locale ?? "-"),
            SafeText.escaped(r.originalTransactionID ?? "-"), what, String(format: "%.1f ms", r.latencyMilliseconds),
        ].joined(separator: "  ")
    }

    /// `12 realtime requests: 9 offered, 2 no-match, 1 not-approved, 0 fault`
    public static func footer(_ records: [RetentionRecord]) -> String {
        guard !records.isEmpty else { return "no realtime requests recorded (receive --retention-path answers them)" }
        let counts = RetentionResult.allCases.map { result in "\(records.count { $0.result == result }) \(result.rawValue)" }
        return "\(CountNoun.realtimeRequest.count(records.count)): " + counts.joined(separator: ", ")
    }
}
