import Foundation
import Testing
@testable import ReceiptRendering
@testable import ReceiptCore

/// Dates as Apple's libraries read them: epoch milliseconds with any fraction truncated, in
/// JSON, text and analysis alike.
@Suite struct AppleDateReadingTests {
    /// Xcode signs `purchaseDate` as `1697679936049.7297`: …36.049Z, not …36.050Z.
    @Test func anXcodeSignedFractionalMillisecondIsTruncated() throws {
        let decoded = try ReceiptDecoder().decode(text: try Fixture.text("xcode-fractional-dates.jws"))
        let purchase = try #require(decoded.transactions.first)
        #expect(purchase.purchaseDate == Date(timeIntervalSince1970: 1_697_679_936.049))
        #expect(AppleDate.iso8601(try #require(purchase.purchaseDate)) == "2023-10-19T01:45:36.049Z")
        #expect(AppleDate.iso8601(try #require(purchase.originalPurchaseDate)) == "2023-10-19T01:45:36.049Z")
        let json = try #require(InspectJSON.object(for: decoded).object?["transactions"]?.array?.first?.object)
        #expect(json["purchase_date"] == .string("2023-10-19T01:45:36.049Z"))
        #expect(TextSummary.render(decoded).contains("2023-10-19T01:45:36.049Z"))
    }

    @Test(arguments: [
        (1_697_679_936_049.7297, 1_697_679_936_049 as Int64), (1_697_679_936_049.0, 1_697_679_936_049), (0.999, 0), (-1.5, -1),
        (1_700_000_000_000.5, 1_700_000_000_000),
    ])
    func epochMillisecondsAreTruncatedTowardZero(_ value: Double, _ milliseconds: Int64) {
        #expect(AppleDate.fromEpochMilliseconds(value) == Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }
}
