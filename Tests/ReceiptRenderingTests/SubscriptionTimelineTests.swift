import Foundation
import LocalFiles
import ReceiptCore
import ReceiptDemo
import ReceiptRendering
import ReceiptTrust
import Testing

/// The ASCII timeline spans the subscription's own periods: a sandbox subscription that renewed
/// every few minutes in 2020, judged in 2026, shows its trial and paid periods instead of one
/// cell at the left of an axis that runs to today.
@Suite struct SubscriptionTimelineTests {
    static let at = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01

    func subscription(_ name: String, at: Date) async throws -> SubscriptionSummary {
        let input = try #require(InputFiles.demo().first { $0.source.hasSuffix(name) })
        let judged = await ReceiptPipeline(at: at).judge([input])
        return try #require(judged.first?.analysis?.subscriptions.first)
    }

    @Test func aSubscriptionJudgedYearsLaterKeepsItsPeriods() async throws {
        let sub = try await subscription("production-subscriptions.b64", at: Self.at)
        let (bar, marker, range) = try #require(AnalysisRendering.timeline(sub, at: Self.at))
        // The weekly plan, the 42-day gap, the monthly plan, then the months bought with an offer
        // (the dashboard notes the gap): over May to October 2023, not squeezed left of 2026.
        #expect(bar == "[===           =========oooooooooo      ooooooooo]")
        #expect(range == "2023-05-09 … 2023-10-19")
        #expect(marker == String(repeating: " ", count: 49) + "→ 2026-01-01T00:00:00Z (after the last period)")
    }

    @Test func aSubscriptionJudgedDuringItsPeriodsMarksTheInstant() async throws {
        let during = Date(timeIntervalSince1970: 1_690_848_000)  // 2023-08-01
        let sub = try await subscription("production-subscriptions.b64", at: during)
        let (_, marker, range) = try #require(AnalysisRendering.timeline(sub, at: during))
        #expect(range.hasPrefix("2023-05-09 … "))
        #expect(marker.hasSuffix("^ 2023-08-01T00:00:00Z"))
        #expect(marker.hasPrefix("  "))
    }
}
