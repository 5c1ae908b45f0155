import AuditTrail
import CustomerTimeline
import Foundation
import JSONWriting
import Testing
import TestSupport

@testable import Dashboard
import AppStoreAPI
import ReceiptCore
import ReceiptRendering
import ReceiptTrust
import TerminalUI

/// The Customer view: `l`'s answer opens it with the answer, the issues and one timeline of
/// every source; `Enter` shows an event's sources; `x`, `c`, `a` act from it and it comes back;
/// the same customer asked again replaces the story in place; an answered refund request says
/// when Apple took the answer.
@Suite struct CustomerViewTests {
    let lookups = DashboardLookupTests()

    func screen(_ state: DashboardState) -> String { DashboardView.render(state, width: state.width, height: state.height).text }

    /// The notifications the trail holds about the fixture's customer: its renewal, and a
    /// refund request for its first transaction.
    static func stored(requestAt: Date) -> StoredCustomerRecords {
        func notification(_ uuid: String, _ type: String, _ transaction: String, at: Date) -> StoredNotification {
            StoredNotification(
                record: NotificationRecord(
                    notificationUUID: uuid, version: .v2, notificationType: type, bundleID: DashboardLookupTests.bundle, environment: "Sandbox",
                    signedDate: at, receivedAt: at, verdict: .valid, transactionID: transaction, originalTransactionID: "2000001024993299",
                    productID: "com.getsession.org.pro_sub"),
                deliveries: 1, lastReceivedAt: at)
        }
        return StoredCustomerRecords(
            originalTransactionIDs: ["2000001024993299"],
            notifications: [
                notification("n-renew", "DID_RENEW", "2000001025686313", at: AppleDate.parse("2025-10-02T07:06:00Z")!),
                notification("n-consume", "CONSUMPTION_REQUEST", "2000001024998954", at: requestAt),
            ])
    }

    func lookedUp() async throws -> DashboardState {
        var state = await DashboardLookupTests.lookupState()
        lookups.press(&state, .resize(width: 180, height: 42))
        lookups.press(&state, .character("l"))
        lookups.type(&state, "2000001025686313")
        #expect(lookups.press(&state, .enter) == [.lookUp(.transactionID("2000001025686313"))])
        state.wallClock = DashboardTests.now
        state.add(try await DashboardLookupTests.customer(), stored: StoredCustomerRecordsBox(Self.stored(requestAt: DashboardTests.now.addingTimeInterval(-3600))))
        return state
    }

    @Test func lsAnswerOpensTheCustomerViewWithEverySource() async throws {
        let words = Wording("customer-view")
        let state = try await lookedUp()
        let story = try #require(state.customerStory)
        #expect(state.mode == .customer(selected: story.events.count - 1, scroll: 0))
        #expect(story.events.map(\.kind) == [.renewal, .renewal, .crossgrade, .crossgrade, .expired, .consumptionRequest, .refund])
        #expect(story.events[1].sources == [.api, .notification])
        let text = screen(state)
        #expect(text.contains("Timeline (7 events)"))
        words.said(text)
        words.said(text)
        #expect(text.contains("2025-10-02 07:06:07  renewal             renewed com.getsession.org.pro_sub, until 2025-10-02T07:09:07Z (DID_RENEW)  [api+notification, valid]"))
        // Trust on top: one of the seven signed items is not genuine.
        words.said(text)
        #expect(story.trust == CustomerTrust(verdict: .invalid, items: 7, itemsNotGenuine: 1, why: story.trust.why))
        words.check()
    }

    @Test func enterShowsAnEventsSourcesAndEscapeGoesBack() async throws {
        var state = try await lookedUp()
        lookups.press(&state, .character("g"), .down)
        lookups.press(&state, .enter)
        #expect(state.mode == .customerEvent(selected: 1, scroll: 0))
        let text = screen(state)
        #expect(text.contains("renewed com.getsession.org.pro_sub, until 2025-10-02T07:09:07Z (DID_RENEW)"))
        #expect(text.contains("refs: api:2000001025686313, notification:n-renew"))
        #expect(text.contains("from api"))
        #expect(text.contains("  transaction_reason: PURCHASE"))
        // Its end: the notification's part, with its trust.
        for _ in 0..<5 { lookups.press(&state, .pageDown) }
        let end = screen(state)
        #expect(end.contains("from notification"))
        #expect(end.contains("  notificationUUID n-renew"))
        #expect(end.contains("  trust: valid"))
        lookups.press(&state, .escape)
        #expect(state.mode == .customer(selected: 1, scroll: 0))
        lookups.press(&state, .escape)
        #expect(state.mode == .normal)
        // u opens it again on the selected look-up, at its newest event.
        lookups.press(&state, .character("u"))
        #expect(state.mode == .customer(selected: 6, scroll: 0))
    }

    /// Enter on an event a stored notification reported: its payload is judged (the loop's
    /// effect, as in the Notifications pane), then its trust steps show.
    @Test func enterJudgesANotificationsPayloadAndShowsItsTrustSteps() async throws {
        let words = Wording("customer-view")
        var state = await DashboardLookupTests.lookupState()
        lookups.press(&state, .resize(width: 180, height: 60))
        let payload = try String(decoding: Data(contentsOf: DashboardTests.demoFile("notification-v2-expired.jws")), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        var stored = Self.stored(requestAt: DashboardTests.now)
        stored.notifications[0].record.signedPayload = payload
        let id = state.add(try await DashboardLookupTests.customer(), stored: StoredCustomerRecordsBox(stored))
        state.openCustomer(id)
        lookups.press(&state, .character("g"), .down)
        #expect(lookups.press(&state, .enter) == [.inspectNotification(uuid: "n-renew", signedPayload: payload)])
        for _ in 0..<5 { lookups.press(&state, .pageDown) }
        words.said(screen(state))
        let pipeline = ReceiptPipeline(at: DashboardTests.now, trustOptions: TrustOptions(now: DashboardTests.now))
        state.notificationDetails["n-renew"] = await DashboardApp.inspect(notification: "n-renew", payload: payload, pipeline: pipeline)
        let text = screen(state)
        #expect(text.contains("  Trust (judged now): valid"))
        words.said(text)
        // Asked once: Enter again sends nothing to judge.
        lookups.press(&state, .escape)
        #expect(lookups.press(&state, .enter).isEmpty)
        words.check()
    }

    @Test func aFormOpenedFromTheViewGivesTheKeyboardBack() async throws {
        var state = try await lookedUp()
        state.actionsAvailable = true
        lookups.press(&state, .character("g"))
        lookups.press(&state, .character("c"))
        // The first event is the transaction the refund request is about.
        guard case .consumptionForm(let form) = state.mode else {
            Issue.record("c did not open the consumption form: \(state.mode), \(state.message?.text ?? "")")
            return
        }
        #expect(form.transactionID == "2000001024998954")
        lookups.press(&state, .escape)
        #expect(state.mode == .customer(selected: 0, scroll: 0))
    }

    @Test func anAnsweredRefundRequestSaysWhenAndItsIssueEnds() async throws {
        let words = Wording("customer-view")
        var state = try await lookedUp()
        state.consumptionAnswers["2000001024998954"] = (DashboardTests.now.addingTimeInterval(-60), 202)
        let text = screen(state)
        // The line is cut at the view's edge after its sources, marked: it scrolls sideways.
        #expect(text.contains("· answered at 23:59:00 (HTTP 202)  [notification, va▶"))
        words.said(text)
        words.check()
    }

    @Test func theSameCustomerAskedAgainReplacesTheStoryInPlace() async throws {
        var state = try await lookedUp()
        let id = try #require(state.customerItemID)
        var again = try await DashboardLookupTests.customer()
        again.transactions.removeLast()
        #expect(state.add(again, stored: nil) == id)
        #expect(state.items.filter { $0.lookup != nil }.count == 1)
        // Without the trail's rows this time: the refund request is not in the new story.
        #expect(state.customerStory?.events.count == 5)
        #expect(state.mode == .customer(selected: 4, scroll: 0))
        #expect(screen(state).contains("Timeline (5 events)"))
    }

    /// A story of 10,000 events draws only the rows on screen (the frame budget is measured by
    /// `bench --render-customer`; here, that it draws and the selection is shown).
    @Test func tenThousandEventsDrawTheSelectedRow() async throws {
        var state = await DashboardLookupTests.lookupState()
        lookups.press(&state, .resize(width: 120, height: 40))
        let result = try await DashboardLookupTests.customer()
        var stored = Self.stored(requestAt: DashboardTests.now)
        stored.notifications = (0..<10_000).map { i in
            StoredNotification(
                record: NotificationRecord(
                    notificationUUID: "n\(i)", version: .v2, notificationType: "DID_RENEW", signedDate: Date(timeIntervalSince1970: 1_700_000_000 + Double(i) * 60),
                    receivedAt: Date(timeIntervalSince1970: 1_700_000_000 + Double(i) * 60), verdict: .valid, transactionID: "9\(i)",
                    originalTransactionID: "2000001024993299"),
                deliveries: 1, lastReceivedAt: Date(timeIntervalSince1970: 1_700_000_000))
        }
        let id = state.add(result, stored: StoredCustomerRecordsBox(stored))
        state.openCustomer(id)
        #expect(state.customerStory?.events.count == 10_006)
        lookups.press(&state, .character("g"))
        #expect(state.mode == .customer(selected: 0, scroll: 0))
        #expect(screen(state).contains("2023-11-14 22:13:20  renewal             renewed (DID_RENEW)  [notification, valid]"))
    }

    @Test func eExportsTheStoryAsTheCustomerCommandGivesItAndTheViewComesBack() async throws {
        let words = Wording("customer-view")
        var state = try await lookedUp()
        state.exportFolder = "/srv/support"
        let story = try #require(state.customerStory)
        lookups.press(&state, .character("g"), .down)
        lookups.press(&state, .character("e"))
        #expect(state.mode == .export(ExportForm(view: .customer, format: .json, folder: "/srv/support")))
        words.said(screen(state))
        guard case .save(let json)? = state.handle(.enter, environment: DashboardTests.env).first else {
            Issue.record("no file")
            return
        }
        // Back where it was.
        #expect(state.mode == .customer(selected: 1, scroll: 0))
        var expected = JSONOutput()
        CustomerJSON.render([story], into: &expected)
        #expect(json.contents == expected.text)
        #expect(json.fileName == "receiptdash-customer-20261122-000000.json")
        #expect(json.folder == "/srv/support")
        words.said(json.what)
        // Tab: the CSV `customer --format csv` writes, a header and a row per event.
        lookups.press(&state, .character("e"), .tab)
        guard case .save(let csv)? = state.handle(.enter, environment: DashboardTests.env).first else {
            Issue.record("no file")
            return
        }
        #expect(csv.contents == CustomerCSV.render([story]))
        #expect(csv.contents.split(separator: "\n").first == Substring(CustomerCSV.header.joined(separator: ",")))
        #expect(csv.contents.split(separator: "\n").count == 8)
        // Esc gives the view back too, with nothing written.
        lookups.press(&state, .character("e"), .escape)
        #expect(state.mode == .customer(selected: 1, scroll: 0))
        words.check()
    }
}
