import AppStoreAPI
import AuditTrail
@testable import CustomerTimeline
import Foundation
import ReceiptCore
import Testing
import TestSupport

/// A write we sent and the notification Apple sent for it are one event: Dana's extension on
/// day 70 and its `RENEWAL_EXTENDED`, whether the write named the original transaction or
/// only a transaction; a refused write stays apart; Apple's notification makes an unknown
/// outcome a success.
@Suite struct WriteAndNotificationTests {
    static func extend(original: String?, transaction: String?, result: String, at days: Double = 70) -> AuditAction {
        AuditAction(
            id: 1, at: Dana.date(days), user: "sam", action: "extend", environment: "Production", requestID: "ticket-9",
            originalTransactionID: original, transactionID: transaction, productID: "pro.monthly", requestBody: #"{"extendByDays":3}"#,
            httpStatus: result == "success" ? 200 : result == "refused" ? 400 : nil, apiError: nil, result: result)
    }

    static func story(_ write: AuditAction, extendedAt days: Double = 70.0001) -> CustomerStory {
        var stored = Dana.stored
        stored.actions = [write]
        stored.notifications.append(Dana.notification("n-extended", "RENEWAL_EXTENDED", transaction: "2003", at: days))
        return CustomerStory.build(CustomerInputs(at: Dana.now, lookup: Dana.lookup, stored: stored))
    }

    @Test(arguments: [("2001", nil), (nil, "2003"), (nil, "2002")] as [(String?, String?)])
    func anExtensionAndItsNotificationAreOneEvent(original: String?, transaction: String?) throws {
        let story = Self.story(Self.extend(original: original, transaction: transaction, result: "success"))
        let extensions = story.events.filter { $0.kind == .extension }
        #expect(extensions.count == 1)
        let event = try #require(extensions.first)
        #expect(event.sources == [.notification, .action].sorted())
        #expect(event.refs == ["action:ticket-9", "notification:n-extended"])
        #expect(event.at == Dana.date(70))
        #expect(event.outcome == "success")
        #expect(event.originalTransactionID == "2001")
        #expect(event.trust == "valid")
        #expect(event.details.map(\.source) == [.action, .notification])
    }

    @Test func anUnknownOutcomeConfirmedByAppleIsASuccess() throws {
        let words = Wording("write-and-notification")
        let story = Self.story(Self.extend(original: "2001", transaction: nil, result: AuditAction.pending))
        let event = try #require(story.events.first { $0.kind == .extension })
        #expect(event.outcome == "success")
        words.said(event.summary)
        #expect(!story.issues.contains { $0.code == .actionUnknown })
        // Without the notification it stays unknown, and says so.
        var stored = Dana.stored
        stored.actions = [Self.extend(original: "2001", transaction: nil, result: AuditAction.pending)]
        let alone = CustomerStory.build(CustomerInputs(at: Dana.now, lookup: Dana.lookup, stored: stored))
        #expect(alone.events.first { $0.kind == .extension }?.outcome == "unknown")
        #expect(alone.issues.contains { $0.code == .actionUnknown })
        words.check()
    }

    @Test func aRefusedWriteOrALateNotificationStaysApart() {
        let words = Wording("write-and-notification")
        let refused = Self.story(Self.extend(original: "2001", transaction: nil, result: "refused"))
        #expect(refused.events.filter { $0.kind == .extension }.map(\.sources) == [[.action], [.notification]])
        // Said plainly: Apple refused it (not "we extended …: refused").
        words.said(refused.events.first { $0.kind == .extension && $0.sources == [.action] }?.summary)
        words.check()
        // Signed more than a day after the write: another extension's.
        let late = Self.story(Self.extend(original: "2001", transaction: nil, result: "success"), extendedAt: 71.5)
        #expect(late.events.filter { $0.kind == .extension }.count == 2)
        // Another subscription's notification is not this write's.
        let other = Self.story(Self.extend(original: "3001", transaction: nil, result: "success"))
        #expect(other.events.filter { $0.kind == .extension }.count == 2)
    }

    // MARK: A mass extension names a product: it joins the story through this customer's notification

    static func massExtend(product: String = "pro.monthly", result: String = "success", at days: Double = 70) -> AuditAction {
        AuditAction(
            id: 7, at: Dana.date(days), user: "sam", action: "mass-extend", environment: "Production", requestID: "outage-42",
            originalTransactionID: nil, transactionID: nil, productID: product,
            requestBody: #"{"extendByDays":3,"requestIdentifier":"outage-42"}"#, httpStatus: result == "success" ? 200 : 400, apiError: nil,
            result: result)
    }

    static func massStory(_ write: AuditAction, _ type: String = "RENEWAL_EXTENDED", _ subtype: String? = nil, at days: Double = 70.2)
        -> CustomerStory
    {
        var stored = Dana.stored
        stored.actions = [write]
        stored.notifications.append(Dana.notification("n-mass", type, subtype, transaction: "2003", at: days))
        return CustomerStory.build(CustomerInputs(at: Dana.now, lookup: Dana.lookup, stored: stored))
    }

    @Test func aMassExtensionAndThisCustomersNotificationAreOneEvent() throws {
        let words = Wording("write-and-notification")
        let story = Self.massStory(Self.massExtend())
        let extensions = story.events.filter { $0.kind == .extension }
        #expect(extensions.count == 1)
        let event = try #require(extensions.first)
        #expect(event.sources == [.notification, .action].sorted())
        #expect(event.refs == ["action:outage-42", "notification:n-mass"])
        #expect(event.at == Dana.date(70))
        #expect(event.outcome == "success")
        #expect(event.originalTransactionID == "2001")
        #expect(event.transactionID == "2003")
        #expect(event.productID == "pro.monthly")
        words.said(event.summary)
        words.check()
    }

    @Test func aMassExtensionThatMissedThisSubscriptionSaysSo() throws {
        let words = Wording("write-and-notification")
        let story = Self.massStory(Self.massExtend(), "RENEWAL_EXTENSION", "FAILURE")
        #expect(!story.events.contains { $0.kind == .extension })
        let event = try #require(story.events.first { $0.kind == .extensionFailed })
        #expect(event.sources == [.notification, .action].sorted())
        #expect(event.outcome == "failed")
        words.said(event.summary)
        // Alone, Apple's FAILURE is not read as an extension either.
        var stored = Dana.stored
        stored.notifications.append(Dana.notification("n-fail", "RENEWAL_EXTENSION", "FAILURE", transaction: "2003", at: 70))
        let alone = CustomerStory.build(CustomerInputs(at: Dana.now, lookup: Dana.lookup, stored: stored))
        #expect(alone.events.filter { $0.refs == ["notification:n-fail"] }.map(\.kind) == [.extensionFailed])
        words.check()
    }

    @Test func aMassExtensionAppleSaidNothingOfForThisCustomerIsNotTheirs() {
        // Another product's, one Apple refused, one with no notification in the day after it.
        for write in [Self.massExtend(product: "pro.yearly"), Self.massExtend(result: "refused")] {
            let story = Self.massStory(write)
            #expect(story.events.filter { $0.kind == .extension }.map(\.sources) == [[.notification]])
            #expect(!story.events.contains { $0.sources.contains(.action) })
        }
        let late = Self.massStory(Self.massExtend(), at: 71.5)
        #expect(late.events.filter { $0.kind == .extension }.map(\.sources) == [[.notification]])
    }

    // MARK: What Apple confirms is known at once

    @Test func anExtensionsNewDateInApplesAnswerMovesTheEnd() throws {
        let words = Wording("write-and-notification")
        let at = Dana.date(92)
        var write = Self.extend(original: "2001", transaction: nil, result: "success")
        write.responseBody = #"{"effective_date":"\#(AppleDate.iso8601(Dana.date(93)))","original_transaction_id":"2001","success":true}"#
        var stored = Dana.stored
        stored.actions = []
        // Offline, the trail's last period ended on day 90: expired on day 92.
        let before = CustomerStory.build(CustomerInputs(at: at, stored: stored))
        let was = try #require(before.subscriptions.first { $0.originalTransactionID == "2001" })
        #expect(was.state == "expired")
        #expect(was.until == Dana.date(90))
        stored.actions = [write]
        let after = CustomerStory.build(CustomerInputs(at: at, stored: stored))
        let now = try #require(after.subscriptions.first { $0.originalTransactionID == "2001" })
        #expect(now.state == "active")
        #expect(now.until == Dana.date(93))
        words.said(now.explanation)
        let event = try #require(after.events.first { $0.kind == .extension })
        words.said(event.summary)
        #expect(!after.events.contains { $0.kind == .expired })
        // A refused write's body names no new date; an earlier date moves nothing.
        write.result = "refused"
        stored.actions = [write]
        #expect(CustomerStory.build(CustomerInputs(at: at, stored: stored)).subscriptions.first { $0.originalTransactionID == "2001" }?.state == "expired")
        write.result = "success"
        write.responseBody = #"{"effective_date":"\#(AppleDate.iso8601(Dana.date(80)))"}"#
        stored.actions = [write]
        #expect(CustomerStory.build(CustomerInputs(at: at, stored: stored)).subscriptions.first { $0.originalTransactionID == "2001" }?.until == Dana.date(90))
        words.check()
    }

    /// A consumption answer a receiver's policy sent says the policy, in its summary and its
    /// detail; one a person sent does not.
    @Test func aPolicysConsumptionAnswerSaysThePolicy() throws {
        let words = Wording("write-and-notification")
        for policy in ["coins-spent", nil] as [String?] {
            var builder = TimelineBuilder(at: Dana.now)
            builder.addActions([
                AuditAction(
                    id: 7, at: Dana.date(71), user: "receiver", action: "consumption", environment: "Production", requestID: "r-1",
                    originalTransactionID: "2001", transactionID: "2003", productID: "pro.monthly", requestBody: "{}", httpStatus: 202, apiError: nil,
                    result: "success", policy: policy)
            ])
            let event = try #require(builder.finish().first)
            #expect(event.kind == .consumptionAnswered)
            #expect(event.details.first?.lines.contains { $0.hasPrefix("by policy ") } == (policy != nil))
            words.said(event.summary)
        }
        words.check()
    }
}
