import AuditTrail
import CustomerTimeline
import Foundation
import Testing

/// A realtime request answered with an offer is a `retention-offered` event in the customer's
/// story; one answered with nothing is not.
@Suite struct RetentionStoryTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func request(_ n: Int, _ result: RetentionResult) -> RetentionRecord {
        RetentionRecord(
            requestIdentifier: "3db5c98d-8acf-4e29-831e-8e1f82f9f6e\(n)", receivedAt: now.addingTimeInterval(Double(n) * 60), environment: "Production",
            appAppleID: 531_412, originalTransactionID: "2000000123", productID: "com.example.monthly", locale: "fr-CA", result: result,
            reason: "r", rule: result == .offered ? "loyal" : nil, answerKind: result == .offered ? "alternate-product" : nil,
            messageIdentifier: result == .offered ? "0F1E2D3C-4B5A-4968-8776-A5B4C3D2E1F0" : nil, answer: "{}", latencyMilliseconds: 2)
    }

    @Test func anOfferAtCancelIsAnEventOfTheStory() {
        var stored = StoredCustomerRecords(originalTransactionIDs: ["2000000123"])
        stored.retention = [Self.request(1, .offered), Self.request(2, .noMatch)]
        let story = CustomerStory.build(CustomerInputs(at: Self.now.addingTimeInterval(3_600), stored: stored))
        let offered = story.events.filter { $0.kind == .retentionOffered }
        #expect(offered.count == 1)
        let event = offered[0]
        #expect(event.at == Self.now.addingTimeInterval(60))
        #expect(event.sources == [.retention])
        #expect(event.originalTransactionID == "2000000123" && event.productID == "com.example.monthly")
        #expect(event.refs == ["retention:3db5c98d-8acf-4e29-831e-8e1f82f9f6e1"])
        #expect(event.summary.contains("alternate-product") && event.summary.contains("loyal"))
    }
}
