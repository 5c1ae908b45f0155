import Foundation
import JSONWriting
import PlainWords
import ReceiptCore
import UntrustedText

/// `notifications --outbox`: the outbox's deliveries, newest first, and its totals. JSON keys are
/// a contract: `deliveries` (each with `id`, `notification_uuid`, `target`, `order_key`,
/// `state`, `attempts`, `queued_at`, `next_attempt_at`, `completed_at`, `last_status`,
/// `last_error`, `notification_type`, `subtype`) and `summary` (`pending`, `delivered`, `dead`,
/// `oldest_pending_queued_at`). CSV has the same columns, the type and subtype last.
public enum ForwardOutboxListing {
    public static let columns = [
        "id", "notification_uuid", "target", "order_key", "state", "attempts", "queued_at", "next_attempt_at", "completed_at", "last_status",
        "last_error", "notification_type", "subtype",
    ]

    public static func write(_ deliveries: [ForwardDelivery], summary: ForwardOutboxSummary, format: TableFormat, now: Date, to console: Console) {
        var out = JSONOutput(flushingTo: console)
        switch format {
        case .json:
            out.beginObject()
            out.key("deliveries")
            out.beginArray()
            for d in deliveries { object(d, into: &out) }
            out.endArray()
            out.key("summary")
            out.beginObject()
            out.key("dead")
            out.integer(summary.dead)
            out.key("delivered")
            out.integer(summary.delivered)
            out.nullableMember("oldest_pending_queued_at", summary.oldestPendingQueuedAt)
            out.key("pending")
            out.integer(summary.pending)
            out.endObject()
            out.endObject()
            out.newline()
        case .csv:
            out.raw(columns.joined(separator: ",") + "\r\n")
            for d in deliveries {
                let cells: [String?] = [
                    String(d.id), d.notificationUUID, d.target, d.orderKey, d.state.rawValue, String(d.attempts), AppleDate.iso8601(d.queuedAt),
                    AppleDate.iso8601(d.nextAttemptAt), d.completedAt.map(AppleDate.iso8601), d.lastStatus.map(String.init), d.lastError,
                    d.notificationType, d.subtype,
                ]
                out.raw(cells.map { SafeText.csvCell($0 ?? "") }.joined(separator: ",") + "\r\n")
            }
        case .text:
            for d in deliveries { out.raw(textLine(d) + "\n") }
            out.raw(footer(summary, now: now) + "\n")
        }
        out.flush()
    }

    static func object(_ d: ForwardDelivery, into out: inout JSONOutput) {
        out.beginObject()
        out.key("attempts")
        out.integer(d.attempts)
        out.nullableMember("completed_at", d.completedAt)
        out.key("id")
        out.integer(d.id)
        out.nullableMember("last_error", d.lastError)
        out.nullableMember("last_status", d.lastStatus)
        out.key("next_attempt_at")
        out.date(d.nextAttemptAt)
        out.nullableMember("notification_type", d.notificationType)
        out.member("notification_uuid", d.notificationUUID)
        out.member("order_key", d.orderKey)
        out.key("queued_at")
        out.date(d.queuedAt)
        out.member("state", d.state.rawValue)
        out.nullableMember("subtype", d.subtype)
        out.member("target", d.target)
        out.endObject()
    }

    /// `2026-11-28 08:20:58  pending    DID_RENEW/AUTO_RENEW_ENABLED  <uuid> → <url>  (3 attempts,
    /// last: HTTP 500, next try 2026-11-28 08:25:00)`: the notification's type (and subtype;
    /// `?` when it is no longer stored), and the attempts with the last one's outcome named
    /// once. The outbox keeps the last outcome only, so that is the one said.
    public static func textLine(_ d: ForwardDelivery) -> String {
        let when = String(AppleDate.iso8601(d.queuedAt).prefix(19)).replacingOccurrences(of: "T", with: " ")
        var facts = [attempts(d)]
        if d.state == .pending, d.attempts > 0 {
            facts.append("next try \(String(AppleDate.iso8601(d.nextAttemptAt).prefix(19)).replacingOccurrences(of: "T", with: " "))")
        }
        let state = d.state.rawValue.padding(toLength: 9, withPad: " ", startingAt: 0)
        return "\(when)  \(state)  \(typeWords(d))  \(SafeText.escaped(d.notificationUUID)) → \(SafeText.escaped(d.target))  (\(facts.joined(separator: ", ")))"
    }

    /// `DID_RENEW/AUTO_RENEW_ENABLED`, `TEST`, or `?` (its notification is no longer stored).
    static func typeWords(_ d: ForwardDelivery) -> String {
        guard let type = d.notificationType else { return "?" }
        return SafeText.escaped(d.subtype.map { "\(type)/\($0)" } ?? type)
    }

    /// `not tried yet`, `1 attempt: HTTP 200`, `3 attempts, last: HTTP 500`: the last outcome
    /// once (a status its error already says is not said again).
    static func attempts(_ d: ForwardDelivery) -> String {
        var outcome: [String] = []
        if let status = d.lastStatus, !(d.lastError ?? "").hasPrefix("HTTP \(status)") { outcome.append("HTTP \(status)") }
        if let error = d.lastError, d.state != .delivered { outcome.append(SafeText.escaped(error)) }
        let said = outcome.joined(separator: ", ")
        switch d.attempts {
        case 0 where said.isEmpty: return "not tried yet"
        case 0: return "not tried: \(said)"
        case 1: return said.isEmpty ? CountNoun.attempt.count(1) : "\(CountNoun.attempt.count(1)): \(said)"
        default: return said.isEmpty ? CountNoun.attempt.count(d.attempts) : "\(CountNoun.attempt.count(d.attempts)), last: \(said)"
        }
    }

    /// `outbox: 2 pending (oldest queued 3 min ago), 120 delivered, 1 dead`.
    public static func footer(_ s: ForwardOutboxSummary, now: Date) -> String {
        var pending = "\(s.pending) pending"
        if let oldest = s.oldestPendingQueuedAt {
            pending += " (oldest queued \(DurationWords.ago(now.timeIntervalSince(oldest))))"
        }
        return "outbox: \(pending), \(s.delivered) delivered, \(s.dead) dead"
    }
}

/// A time span in the largest unit that fits: `45 s ago`, `3 min ago`, `5 h ago`, `2 d ago`.
enum DurationWords {
    static func ago(_ seconds: TimeInterval) -> String {
        let s = max(0, seconds)
        if s < 60 { return "\(Int(s)) s ago" }
        if s < 3600 { return "\(Int(s / 60)) min ago" }
        if s < 86_400 { return "\(Int(s / 3600)) h ago" }
        return "\(Int(s / 86_400)) d ago"
    }
}
