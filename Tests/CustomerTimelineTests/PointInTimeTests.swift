import AppStoreAPI
import AuditTrail
@testable import CustomerTimeline
import Foundation
import JSONWriting
import ReceiptCore
import ReceiptRendering
import Testing
import TestSupport

/// `customer --at`: one instant. Dana's story as of day 42 (the coins bought on day 40 and
/// refunded on day 45; the third period bought on day 60): what came after the instant is left
/// out, a refund after it has not happened yet, and Apple's status (of now) is labelled and
/// never compared with the state then.
@Suite struct PointInTimeTests {
    static func story(at days: Double, pointInTime: Bool = true, offline: Bool = false) -> CustomerStory {
        CustomerStory.build(
            CustomerInputs(at: Dana.date(days), pointInTime: pointInTime, lookup: offline ? nil : Dana.lookup, sent: offline ? nil : Dana.sent, stored: Dana.stored))
    }

    @Test func nothingAfterTheInstantIsTold() {
        let story = Self.story(at: 42)
        #expect(story.pointInTime)
        #expect(story.events.allSatisfy { $0.at <= Dana.date(42) })
        #expect(!story.events.isEmpty)
        // The offer (day 60), the consumption request (74.8), the writes (70, 71) and the refund
        // (45) are after it.
        let refs = Set(story.events.flatMap(\.refs))
        #expect(Set(Self.story(at: 75, pointInTime: false).events.flatMap(\.refs)).isSuperset(of: ["notification:n-offer", "notification:n-consume"]))
        #expect(!refs.contains("notification:n-offer"))
        #expect(!refs.contains("notification:n-consume"))
        #expect(!story.events.contains { $0.kind == .proratedRefund || $0.kind == .refund })
        #expect(!story.events.contains { $0.sources.contains(.action) })
        // The coins were bought before it and not yet refunded.
        #expect(story.products.map(\.transactionID) == ["3001"])
        #expect(story.products.map(\.state) == ["consumed"])
        // The subscription as then: the second period (days 30 to 60).
        #expect(story.subscriptions.map(\.until) == [Dana.date(60)])
        #expect(story.subscriptions.map(\.state) == ["active"])
    }

    @Test func aPurchaseAfterTheInstantIsNotListed() {
        let story = Self.story(at: 35)
        #expect(story.products.isEmpty)
        #expect(!story.events.contains { $0.transactionID == "3001" })
        // Without --at (the instant is now) the coins are there, refunded.
        let now = Self.story(at: 75, pointInTime: false)
        #expect(now.products.map(\.state) == ["refunded"])
    }

    @Test func applesStatusIsOfNowAndNotComparedWithTheStateThen() throws {
        let words = Wording("point-in-time")
        let then = Self.story(at: 42)
        #expect(!then.issues.contains { $0.code == .statusUnexplained })
        // What Apple says it sent after the instant is not missing yet.
        #expect(!then.issues.contains { $0.code == .notificationMissing })
        let subscription = try #require(then.subscriptions.first)
        #expect(subscription.apiStatus != nil)
        #expect(subscription.apiStatusIsNow)
        words.said(subscription.facts(AppleDate.iso8601))
        // Renewal info is of now: auto-renew at a past instant is not known.
        #expect(subscription.autoRenew == nil)

        var json = JSONOutput()
        CustomerJSON.render([then], into: &json)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.bytes)) as? [String: Any])
        #expect(object["at_is_chosen"] as? Bool == true)
        #expect((object["subscriptions"] as? [[String: Any]])?.first?["api_status_is_now"] as? Bool == true)
        words.said(CustomerText.render(then))

        // Now, the same status is compared and labelled plainly.
        let now = Self.story(at: 75, pointInTime: false)
        #expect(now.subscriptions.first?.apiStatusIsNow == false)
        #expect(now.issues.contains { $0.code == .statusUnexplained })
        words.check()
    }

    @Test func offlineTheTrailIsCutToTheInstantToo() {
        let story = Self.story(at: 42, offline: true)
        #expect(story.events.allSatisfy { $0.at <= Dana.date(42) })
        #expect(Set(story.events.flatMap(\.refs)).isDisjoint(with: ["notification:n-offer", "notification:n-consume"]))
    }
}
