@testable import AuditTrail
import Foundation
import Testing

/// `notifications --refusals`: refusal rows summed by reason with their counts (every refusal,
/// not only the sampled rows), by address without its port, busiest first.
@Suite struct RefusalSummaryTests {
    func row(_ kind: String, _ peer: String, at: Double, count: Int = 1, status: Int = 400) -> RejectionRecord {
        var record = RejectionRecord(
            at: Date(timeIntervalSince1970: at), peer: peer, reason: "\(kind) at \(Int(at))", httpStatus: status, bodySize: 4, body: Array("junk".utf8))
        record.kind = kind
        record.count = count
        return record
    }

    @Test func sumsByReasonAndAddress() {
        let summary = RefusalSummary(
            [
                row("not-json", "203.0.113.9:50000", at: 900, count: 50),  // before --since
                row("not-json", "203.0.113.9:50001", at: 1_000, count: 120),
                row("signature", "2001:db8::1:443", at: 1_010, status: 403),  // IPv6 as the receiver writes it
                row("not-json", "198.51.100.7:4000", at: 1_020, count: 3),
                row("signature", "17.0.0.5:443", at: 1_030, status: 403),
            ], since: Date(timeIntervalSince1970: 1_000))
        #expect(summary.total == 125)
        #expect(summary.reasons.map(\.reason) == ["not-json", "signature"])
        #expect(summary.reasons.map(\.count) == [123, 2])
        #expect(summary.reasons[0].topAddresses.map(\.address) == ["203.0.113.9", "198.51.100.7"])
        #expect(summary.reasons[0].topAddresses.map(\.count) == [120, 3])
        #expect(summary.reasons[1].byAddress == ["2001:db8::1": 1, "17.0.0.5": 1])
        #expect(summary.reasons[1].httpStatus == 403)
        #expect(summary.reasons[1].example == "signature at 1030")
        #expect(summary.reasons[0].firstAt == Date(timeIntervalSince1970: 1_000))
        #expect(summary.reasons[0].lastAt == Date(timeIntervalSince1970: 1_020))
    }
}
