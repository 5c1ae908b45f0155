import Foundation
import JSONWriting
import ReceiptCore
import UntrustedText

/// `notifications --refusals`: the requests the receiver refused since a time, by reason (the
/// class the metrics count: `not-json`, `signature`, `stale`, …), each with its count (the
/// sampled rows' counts summed: every refusal, not only the rows stored), the addresses it came
/// from (the busiest three named), its HTTP status and when it was first and last seen. JSON keys
/// are a contract: `since`, `total`, `reasons` (each `reason`, `count`, `http_status`,
/// `addresses`, `top_addresses` of `address` and `count`, `first_at`, `last_at`, `example`).
public struct RefusalSummary: Sendable {
    public struct Reason: Sendable, Hashable {
        public var reason: String
        public var count = 0
        public var httpStatus: Int
        public var byAddress: [String: Int] = [:]
        public var firstAt: Date
        public var lastAt: Date
        /// The newest row's words (what failed, where), as stored.
        public var example: String

        public var topAddresses: [(address: String, count: Int)] {
            byAddress.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.prefix(3).map { ($0.key, $0.value) }
        }
    }

    public var since: Date
    public var reasons: [Reason]
    public var total: Int { reasons.reduce(0) { $0 + $1.count } }

    /// Sums `rows` received at or after `since`, busiest reason first.
    public init(_ rows: [RejectionRecord], since: Date) {
        self.since = since
        var byReason: [String: Reason] = [:]
        for row in rows where row.at >= since {
            let key = row.kind ?? "status-\(row.httpStatus)"
            var reason = byReason[key] ?? Reason(reason: key, httpStatus: row.httpStatus, firstAt: row.at, lastAt: row.at, example: row.reason)
            reason.count += row.count
            reason.byAddress[row.peerHost ?? row.peer.map(RejectionRecord.host(of:)) ?? "-", default: 0] += row.count
            reason.firstAt = min(reason.firstAt, row.at)
            if row.at >= reason.lastAt {
                reason.lastAt = row.at
                reason.example = row.reason
            }
            byReason[key] = reason
        }
        reasons = byReason.values.sorted { $0.count != $1.count ? $0.count > $1.count : $0.reason < $1.reason }
    }

    public func write(format: TableFormat, to console: Console) {
        var out = JSONOutput(flushingTo: console)
        switch format {
        case .json:
            out.beginObject()
            out.key("reasons")
            out.beginArray()
            for r in reasons {
                out.beginObject()
                out.key("addresses")
                out.integer(r.byAddress.count)
                out.key("count")
                out.integer(r.count)
                out.member("example", r.example)
                out.key("first_at")
                out.date(r.firstAt)
                out.key("http_status")
                out.integer(r.httpStatus)
                out.key("last_at")
                out.date(r.lastAt)
                out.member("reason", r.reason)
                out.key("top_addresses")
                out.beginArray()
                for (address, count) in r.topAddresses {
                    out.beginObject()
                    out.member("address", address)
                    out.key("count")
                    out.integer(count)
                    out.endObject()
                }
                out.endArray()
                out.endObject()
            }
            out.endArray()
            out.key("since")
            out.date(since)
            out.key("total")
            out.integer(total)
            out.endObject()
            out.newline()
        case .csv:
            out.raw("reason,count,http_status,addresses,top_address,first_at,last_at,example\r\n")
            for r in reasons {
                let cells = [
                    r.reason, String(r.count), String(r.httpStatus), String(r.byAddress.count), r.topAddresses.first?.address ?? "",
                    AppleDate.iso8601(r.firstAt), AppleDate.iso8601(r.lastAt), r.example,
                ]
                out.raw(cells.map { SafeText.csvCell($0) }.joined(separator: ",") + "\r\n")
            }
        case .text:
            let from = String(AppleDate.iso8601(since).prefix(16)).replacingOccurrences(of: "T", with: " ")
            guard !reasons.isEmpty else {
                out.raw("no refusals since \(from) UTC\n")
                break
            }
            out.raw("\(total) refused since \(from) UTC, by reason:\n")
            for r in reasons {
                let addresses = r.topAddresses.map { "\(SafeText.escaped($0.address)) \($0.count)" }.joined(separator: " · ")
                let more = r.byAddress.count > 3 ? " · \(r.byAddress.count - 3) more" : ""
                let last = String(AppleDate.iso8601(r.lastAt).prefix(19)).replacingOccurrences(of: "T", with: " ")
                out.raw("  \(SafeText.escaped(r.reason).padding(toLength: 20, withPad: " ", startingAt: 0)) \(String(r.count).leftPadded(7))  HTTP \(r.httpStatus)  last \(last)\n")
                out.raw("      from \(addresses)\(more)\n")
                out.raw("      \(SafeText.escaped(String(r.example.prefix(160))))\n")
            }
        }
        out.flush()
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
