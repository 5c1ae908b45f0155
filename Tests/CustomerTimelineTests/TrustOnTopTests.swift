import AppStoreAPI
import AuditTrail
@testable import CustomerTimeline
import Foundation
import JSONWriting
import ReceiptCore
import ReceiptRendering
import ReceiptTrust
import Testing
import TestSupport

/// Trust on top: when any signed item a story uses is not genuine, the answer opens with a
/// warning naming how many and why (a line in text, a `trust` object in JSON); when every
/// item is genuine there is no warning and the object says so.
@Suite struct TrustOnTopTests {
    @Test func everyItemGenuineNoWarning() throws {
        let story = Dana.story
        // Four transactions of the look-up and three notifications.
        #expect(story.trust == CustomerTrust(verdict: .valid, items: 7, itemsNotGenuine: 0, why: nil))
        #expect(story.trust.warning == nil)
        #expect(!CustomerText.render(story).contains("NOT GENUINE"))
        let trust = try Self.json(story)
        #expect(trust["verdict"] as? String == "valid")
        #expect(trust["items"] as? Int == 7)
        #expect(trust["items_not_genuine"] as? Int == 0)
        #expect(trust["why"] is NSNull)
    }

    @Test func itemsNotGenuineOpenTheAnswer() throws {
        let words = Wording("trust-on-top")
        var lookup = Dana.lookup
        lookup.transactions[1].trust = TrustReport(
            verdict: .invalid,
            steps: [TrustReport.Step(.root, failing: "root-not-apple", reason: "the root is not Apple's (NOT APPLE)")])
        var stored = Dana.stored
        stored.notifications[0].record.verdict = .test
        stored.notifications[0].record.reason = "chains to a root given for test data"
        let story = CustomerStory.build(CustomerInputs(at: Dana.now, lookup: lookup, sent: Dana.sent, stored: stored))
        #expect(story.trust.verdict == .invalid)
        #expect(story.trust.itemsNotGenuine == 2)
        words.said(story.trust.why)
        let text = CustomerText.render(story).split(separator: "\n").map(String.init)
        let answer = try #require(text.firstIndex(of: "Answer"))
        words.said(text[answer + 1])
        let trust = try Self.json(story)
        #expect(trust["verdict"] as? String == "invalid")
        #expect(trust["items_not_genuine"] as? Int == 2)
        #expect(trust["why"] as? String == story.trust.why)
        words.check()
    }

    static func json(_ story: CustomerStory) throws -> [String: Any] {
        var out = JSONOutput()
        CustomerJSON.render([story], into: &out)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(out.bytes)) as? [String: Any])
        return try #require(object["trust"] as? [String: Any])
    }
}
