@testable import AppStoreClients
import Foundation
@testable import AppStoreAPI
import JSONWriting
@testable import ReceiptRendering
@testable import ReceiptCore
import ReceiptSimulator
@testable import ReceiptTrust
import RetryEngine
import ServiceTestSupport
import Testing
import TestSupport

/// The demo's second customer speaks today's Apple: a commitment plan first bought with a
/// win-back offer, a prorated refund, a one-time offer code, and an AppTransaction a look-up
/// finds by its `appTransactionId`.
@Suite struct TodaysLookupTests {
    private func lookUp(_ client: AppStoreServerAPIClient, _ query: LookupQuery, simulator: ServerAPISimulator) async throws -> CustomerLookupResult {
        let anchors = try TrustAnchors.apple.addingTestRoots([simulator.pki.rootDER])
        let pipeline = ReceiptPipeline(at: TestTime.start, evaluator: TrustEvaluator(anchors: anchors))
        return await CustomerLookupService(client: client, pipeline: pipeline).lookUp(query)
    }

    @Test func anAppTransactionIDFindsTheCustomerAndItsAppTransaction() async throws {
        let words = Wording("todays-lookup")
        try await withAPISimulator { client, simulator in
            let result = try await lookUp(client, .appTransactionID(ServerAPIData.demoTodayAppTransactionID), simulator: simulator)
            #expect(result.failure == nil)
            #expect(result.environment == .production)
            #expect(result.records.map(\.endpoint) == [.transactionHistory, .subscriptionStatuses, .refundHistory, .appTransactionInfo])
            let app = try #require(result.appTransaction?.appTransaction)
            #expect(app.appTransactionID == ServerAPIData.demoTodayAppTransactionID)
            #expect(app.originalPlatform == "iOS")
            #expect(app.originalApplicationVersion == "7")
            #expect(app.bundleID == ServerAPIData.demoBundleID)
            #expect(result.appTransaction?.trust.verdict == .test)
            #expect(
                result.transactions.compactMap(\.transaction?.transactionID) == [
                    "2000000900000040", "2000000900000050", "2000000900000041", "2000000900000051", "2000000900000042", "2000000900000060",
                ])
            let states = result.analysis?.subscriptions.map { "\($0.originalTransactionID) \($0.state.rawValue)" }
            #expect(states == ["2000000900000040 active", "2000000900000050 refunded-prorated"])
            let plan = try #require(result.analysis?.subscriptions.first)
            #expect(plan.commitment?.billingPeriodNumber == 3)
            words.said(plan.explanation)
            words.said(plan.explanation)
            words.said(plan.periods.map(\.offer))
            let refunded = try #require(result.analysis?.subscriptions.last)
            #expect(refunded.revocationPercentage == 80000)
            words.said(refunded.explanation)
            words.said(result.analysis?.oneTimePurchases.first?.explanation)
            #expect(result.refunds == [ServerAPIData.demoProratedTransactionID])

            var json = JSONOutput()
            LookupJSON.write(result, into: &json)
            let object = try #require(try JSONValue.parse(json.bytes).object)
            #expect(object["query"] == .object(["app_transaction_id": .string(ServerAPIData.demoTodayAppTransactionID)]))
            #expect(object["app_transaction"]?.object?["original_platform"] == .string("iOS"))
            let rows = try #require(object["transactions"]?.array)
            #expect(rows[3].object?["revocation_type"] == .string("REFUND_PRORATED"))
            #expect(rows[3].object?["revocation_percentage"] == .integer(80000))
            #expect(rows[0].object?["offer_type"] == .integer(4))
            #expect(rows[0].object?["billing_plan_type"] == .string("MONTHLY"))
            #expect(rows[0].object?["commitment_info"]?.object?["billing_period_number"] == .integer(1))
            #expect(rows[1].object?["commitment_info"] == .null)
        }
        words.check()
    }

    @Test func noAppTransactionIs4040019AndTheLookUpStands() async throws {
        let words = Wording("todays-lookup")
        var data = ServerAPIData.demo(now: TestTime.start)
        data.appTransactions = []
        try await withAPISimulator(data: data) { client, simulator in
            let answer = await client.appTransactionInfo(ServerAPIData.demoTransactionID, environment: .production)
            #expect(answer.failure?.apiError == .appTransactionDoesNotExist)
            words.said(APIErrorCode.appTransactionDoesNotExist.description)
            let unknown = await client.appTransactionInfo("2000000999999999", environment: .production)
            #expect(unknown.failure?.apiError == .transactionIDNotFound)
            let result = try await lookUp(client, .transactionID(ServerAPIData.demoTransactionID), simulator: simulator)
            #expect(result.failure == nil)
            #expect(result.appTransaction == nil)
            #expect(result.notes.isEmpty)
            #expect(result.analysis?.subscriptions.count == 2)
        }
        words.check()
    }

    @Test func rescindConsentIsInTheHistoryWithItsVerifiedAppTransaction() async throws {
        try await withAPISimulator { client, simulator in
            let range = NotificationHistoryFilter(startDate: TestTime.start.addingTimeInterval(-2 * 86_400), endDate: TestTime.start)
            let items = try #require(await client.notificationHistoryItems(range, environment: .production).value)
            let rescind = try #require(items.first { (try? jwsPayload($0.signedPayload)["notificationType"]?.text) == "RESCIND_CONSENT" })
            let decoded = try ReceiptDecoder().decode(text: rescind.signedPayload)
            #expect(decoded.nested.map(\.field) == ["appData.signedAppTransactionInfo"])
            #expect(decoded.receipt?.appTransactionID == ServerAPIData.demoTodayAppTransactionID)
            let evaluator = TrustEvaluator(anchors: try TrustAnchors.apple.addingTestRoots([simulator.pki.rootDER]))
            let report = await evaluator.evaluate(decoded, options: TrustOptions(now: TestTime.start))
            #expect(report.verdict == .test)
            #expect(report.steps.last.map { "\($0.name): \($0.outcome.rawValue)" } == "nested appData.signedAppTransactionInfo: pass")
        }
    }
}
