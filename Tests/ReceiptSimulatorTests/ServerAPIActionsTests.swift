@testable import AppStoreClients
import Foundation
@testable import AppStoreAPI
import JSONWriting
@testable import ReceiptRendering
@testable import ReceiptCore
import ReceiptSimulator
@testable import ReceiptTrust
import RetryEngine
import Testing
import TestSupport

/// The writes, planned and sent by `CustomerActions` to the API simulator, which answers with
/// Apple's rules: what a support engineer's `extend`, `consumption`, … do, end to end.
@Suite struct ServerAPIActionsTests {
    static let subscription = "2000000900000001"
    static let day: Double = 86_400

    /// The simulator's data is signed by its own test root: trusted as `test`, as `--root-ca`
    /// makes it (with Apple's roots alone it is `invalid`, and a write is refused).
    private func makeActions(_ client: AppStoreServerAPIClient, _ simulator: ServerAPISimulator) throws -> CustomerActions {
        let anchors = try TrustAnchors.apple.addingTestRoots([simulator.pki.rootDER])
        return CustomerActions(client: client, pipeline: ReceiptPipeline(at: TestTime.start, evaluator: TrustEvaluator(anchors: anchors)))
    }

    private func extendPlan(
        _ actions: CustomerActions, _ original: String = subscription, days: Int = 7, requestID: String, selection: APIEnvironmentSelection = .auto
    ) async throws -> ActionPlan {
        let body = try ExtendRenewalDateBody(days: days, reason: .serviceIssue, requestIdentifier: requestID)
        return try await actions.plan(
            .extend, try .extendRenewalDate(original, body), ids: ActionIDs(originalTransactionID: original), selection: selection,
            requestID: requestID, extendDays: days
        ).get()
    }

    /// The current period's expiry as a later look-up sees it, in the history and in the
    /// subscription statuses alike (nil when they differ).
    private func currentExpiry(_ client: AppStoreServerAPIClient) async throws -> Date? {
        func latest(_ signed: [String]) throws -> Date? {
            try signed.compactMap { try jwsPayload($0).object?["expiresDate"]?.int64 }.max().map { Date(timeIntervalSince1970: Double($0) / 1000) }
        }
        let history = try await client.transactionHistory(Self.subscription, environment: .production).result.get()
        let statuses = try await client.subscriptionStatuses(Self.subscription, environment: .production).result.get()
        let fromHistory = try latest(history.signedTransactions)
        let fromStatuses = try latest(statuses.data.flatMap(\.lastTransactions).compactMap(\.signedTransactionInfo))
        return fromHistory == fromStatuses ? fromHistory : nil
    }

    @Test func anExtensionShowsItsPlanMovesTheExpiryAndIsAppliedOncePerRequestID() async throws {
        let words = Wording("serverapi-actions")
        try await withAPISimulator { client, simulator in
            let actions = try makeActions(client, simulator)
            let before = try #require(try await currentExpiry(client))
            let plan = try await extendPlan(actions, requestID: "ticket-4711")
            #expect(plan.environment == .production)
            #expect(plan.ids.productID == "com.example.receiptdash.pro.monthly")
            let after = before.addingTimeInterval(7 * Self.day)
            #expect(plan.lines.contains("expires \(AppleDate.iso8601(before)) → \(AppleDate.iso8601(after)) (+7 days)"))
            #expect(plan.lines.contains("product: com.example.receiptdash.pro.monthly (active)"))
            words.said(plan.text)
            #expect(simulator.service.writes.isEmpty)

            let report = await actions.send(plan)
            #expect(report.outcome == .success)
            guard case .object(let result)? = report.result else { throw ReportMissing() }
            #expect(result["effective_date"]?.text == AppleDate.iso8601(after))
            #expect(result["original_transaction_id"]?.text == Self.subscription)
            #expect(result["success"]?.bool == true)
            let extended = try await currentExpiry(client)
            #expect(extended == after)

            // The same request id again (a retry after a lost answer): the same answer, extended once.
            let again = await actions.send(plan)
            #expect(again.outcome == .success)
            #expect(again.result == report.result)
            let still = try await currentExpiry(client)
            #expect(still == after)
            #expect(simulator.service.writes.map(\.path) == Array(repeating: "/inApps/v1/subscriptions/extend/\(Self.subscription)", count: 2))
            #expect(simulator.service.writes.first?.body == #"{"extendByDays":7,"extendReasonCode":3,"requestIdentifier":"ticket-4711"}"#)
        }
        words.check()
    }

    @Test func aRetryAfterALostAnswerSendsTheSameRequestIDAndExtendsOnce() async throws {
        // The first extend is taken, then its connection dropped before the answer.
        try await withAPISimulator(script: [.dropAfterAnswering]) { client, simulator in
            let actions = try makeActions(client, simulator)
            let body = try ExtendRenewalDateBody(days: 7, reason: .serviceIssue, requestIdentifier: "ticket-lost")
            let plan = ActionPlan(
                action: .extend, request: try .extendRenewalDate(Self.subscription, body), requestID: "ticket-lost", environment: .production,
                ids: ActionIDs(originalTransactionID: Self.subscription), lines: [])
            let report = await actions.send(plan)
            #expect(report.outcome == .success)
            #expect(report.records.map(\.endpoint) == [.extendRenewalDate, .extendRenewalDate])
            #expect(simulator.service.writes.map(\.body) == Array(repeating: String(decoding: APIRequest.json(body), as: UTF8.self), count: 2))
            let expiry = try #require(try await currentExpiry(client))
            let effective = try #require(report.result?.object?["effective_date"]?.text)
            #expect(AppleDate.iso8601(expiry) == effective)
            // Extended once: a second extension with a new id is still allowed (the first counted once).
            let second = await actions.send(try await extendPlan(actions, days: 1, requestID: "ticket-next"))
            #expect(second.outcome == .success)
        }
    }

    @Test func whatAppleAnswersIsEscapedInTheText() throws {
        let words = Wording("serverapi-actions")
        let plan = ActionPlan(
            action: .testNotification, request: .requestTestNotification(), requestID: nil, environment: .production, ids: ActionIDs(), lines: [])
        let report = ActionReport(
            plan: plan, dryRun: false, outcome: .success, result: .object(["test_notification_token": .string("t\u{1B}]0;pwned\u{07}")]),
            records: [], failure: nil)
        words.said(report.text)
        words.check()
    }

    @Test func aWriteWhoseAnswerNeverComesIsUnknownAndSaysHowToRepeatIt() async throws {
        let words = Wording("serverapi-actions")
        let plan = ActionPlan(
            action: .extend, request: try .extendRenewalDate(Self.subscription, try ExtendRenewalDateBody(days: 7, reason: .other, requestIdentifier: "r9")),
            requestID: "r9", environment: .production, ids: ActionIDs(originalTransactionID: Self.subscription), lines: [])
        let timeout = APIAttemptResult.transport(TransportFailure(.timeout, detail: "no answer in 20 s"))
        let failure = APIFailure.final(timeout, environment: .production)
        let attempt = APIRequestRecord(endpoint: .extendRenewalDate, environment: .production, url: "u", result: timeout, latencyMilliseconds: 1)
        let report = ActionReport(
            plan: plan, dryRun: false, outcome: CustomerActions.outcome(of: [attempt]), result: nil, records: [attempt], failure: failure)
        #expect(report.outcome == .unknown)
        words.said(report.failureText)
        words.said(report.failureText)
        #expect(report.json.object?["error"]?.object?["code"]?.text == "unknown-outcome")
        words.check()
    }

    /// Every attempt counts, not the last alone: what each sequence of answers makes of a write.
    @Test(arguments: [
        ([APIAttemptResult.transport(TransportFailure(.timeout)), .apiError(httpStatus: 500, code: APIErrorCode(5_000_000))], ActionOutcome.unknown),
        ([.transport(TransportFailure(.dropped)), .success(httpStatus: 200)], .success),
        ([.apiError(httpStatus: 500, code: APIErrorCode(5_000_001)), .apiError(httpStatus: 403, code: .subscriptionMaxExtension)], .refused),
        ([.apiError(httpStatus: 403, code: .subscriptionExtensionIneligible)], .refused),
        ([.http(status: 503), .http(status: 503)], .unknown),
        ([.transport(TransportFailure(.refused)), .transport(TransportFailure(.refused))], .failed),
        ([.transport(TransportFailure(.tls))], .failed),
        ([.http(status: 401)], .refused),
        ([.apiError(httpStatus: 429, code: .rateLimitExceeded), .transport(TransportFailure(.timeout)), .apiError(httpStatus: 429, code: .rateLimitExceeded)], .unknown),
        ([.transport(TransportFailure(.cancelled))], .unknown),
    ])
    func anOutcomeIsJudgedFromEveryAttempt(_ results: [APIAttemptResult], _ expected: ActionOutcome) {
        let attempts = results.map {
            APIRequestRecord(endpoint: .extendRenewalDate, environment: .production, url: "u", result: $0, latencyMilliseconds: 1)
        }
        #expect(CustomerActions.outcome(of: attempts) == expected)
    }

    @Test func aLostAnswerFollowedByA500IsUnknownNotRefused() async throws {
        // The first PUT is taken and its answer lost; the retry is answered 500 / 5000000.
        try await withAPISimulator(script: [.dropAfterAnswering, .apiError(httpStatus: 500, code: 5_000_000)]) { client, simulator in
            let actions = try makeActions(client, simulator)
            let plan = ActionPlan(
                action: .extend,
                request: try .extendRenewalDate(Self.subscription, try ExtendRenewalDateBody(days: 7, reason: .other, requestIdentifier: "lost-500")),
                requestID: "lost-500", environment: .production, ids: ActionIDs(originalTransactionID: Self.subscription), lines: [])
            let report = await actions.send(plan)
            #expect(report.records.map(\.httpStatus) == [nil, 500])
            #expect(report.outcome == .unknown)
            #expect(report.json.object?["error"]?.object?["code"]?.text == "unknown-outcome")
            // It was applied: the same request id again is answered with that extension, which
            // is the subscription's expiry now.
            let again = await actions.send(plan)
            #expect(again.outcome == .success)
            let effective = try #require(again.result?.object?["effective_date"]?.text)
            let expiry = try #require(try await currentExpiry(client))
            #expect(AppleDate.iso8601(expiry) == effective)
            #expect(simulator.service.writes.count == 2)
        }
    }

    @Test func aSuccessWhoseBodyDoesNotDecodeIsAppliedAndKeepsTheBody() async throws {
        let words = Wording("serverapi-actions")
        try await withAPISimulator(script: [.garbleAnswer]) { client, simulator in
            let actions = try makeActions(client, simulator)
            let plan = ActionPlan(
                action: .extend,
                request: try .extendRenewalDate(Self.subscription, try ExtendRenewalDateBody(days: 3, reason: .other, requestIdentifier: "garbled")),
                requestID: "garbled", environment: .production, ids: ActionIDs(originalTransactionID: Self.subscription), lines: [])
            let report = await actions.send(plan)
            #expect(report.outcome == .success)
            #expect(report.failure == nil)
            #expect(report.httpStatus == nil)
            #expect(report.responseBody == "<html><body>502 Bad Gateway</body></html>")
            #expect(report.json.object?["response_body"]?.text == "<html><body>502 Bad Gateway</body></html>")
            words.said(report.text)
        }
        words.check()
    }

    @Test func aThirdExtensionWithinAYearIsRefusedWith4030005() async throws {
        let words = Wording("serverapi-actions")
        try await withAPISimulator { client, simulator in
            let actions = try makeActions(client, simulator)
            for id in ["first", "second"] {
                #expect(await actions.send(try await extendPlan(actions, days: 3, requestID: id)).outcome == .success)
            }
            let third = await actions.send(try await extendPlan(actions, days: 3, requestID: "third"))
            #expect(third.outcome == .refused)
            #expect(third.apiError == .subscriptionMaxExtension)
            #expect(third.httpStatus == 403)
            words.said(third.failureText)
            guard case .object(let error)? = third.json.object?["error"] else { throw ReportMissing() }
            #expect(error["api_error"]?.int64 == 4_030_005)
            #expect(error["code"]?.text == "api-error")
        }
        words.check()
    }

    @Test(arguments: [
        // Expired (turned auto-renew off 35 days ago).
        ("2000000900000020", APIEnvironmentSelection.production),
        // Sandbox: in billing retry with a grace period.
        ("2000000500000001", APIEnvironmentSelection.auto),
    ])
    func aSubscriptionThatIsNotActiveIsNotEligible(_ original: String, _ selection: APIEnvironmentSelection) async throws {
        try await withAPISimulator { client, simulator in
            let actions = try makeActions(client, simulator)
            let report = await actions.send(try await extendPlan(actions, original, requestID: "r-\(original)", selection: selection))
            #expect(report.outcome == .refused)
            #expect(report.apiError == .subscriptionExtensionIneligible)
        }
    }

    @Test func anUnknownSubscriptionFailsThePlanAndSendsNothing() async throws {
        try await withAPISimulator { client, simulator in
            let body = try ExtendRenewalDateBody(days: 7, reason: .other, requestIdentifier: "x")
            let planned = try await makeActions(client, simulator).plan(
                .extend, try .extendRenewalDate("2000000999999999", body), ids: ActionIDs(originalTransactionID: "2000000999999999"),
                selection: .auto, requestID: "x", extendDays: 7)
            guard case .failure(let failure) = planned else { throw ReportMissing() }
            #expect(failure.apiError == .transactionIDNotFound)
            #expect(simulator.service.writes.isEmpty)
        }
    }

    @Test func bodiesApplesRulesWouldRefuseAreRefusedBeforeSending() throws {
        let words = Wording("serverapi-actions")
        #expect(throws: ActionRuleError(.daysOutOfRange)) { try ExtendRenewalDateBody(days: 0, reason: .other, requestIdentifier: "a") }
        #expect(throws: ActionRuleError(.daysOutOfRange)) { try ExtendRenewalDateBody(days: 91, reason: .other, requestIdentifier: "a") }
        #expect(throws: ActionRuleError(.requestIDLength)) {
            try ExtendRenewalDateBody(days: 1, reason: .other, requestIdentifier: String(repeating: "x", count: 129))
        }
        #expect(throws: ActionRuleError(.requestIDNotUUID)) {
            try MassExtendBody(days: 3, reason: .other, productID: "p", requestIdentifier: "not-a-uuid", storefronts: [])
        }
        #expect(throws: ActionRuleError(.consentMissing)) {
            try ConsumptionBody(customerConsented: false, deliveryStatus: .delivered, sampleContentProvided: false, consumedPercent: nil, refundPreference: nil)
        }
        #expect(throws: ActionRuleError(.consumedWhileUndelivered)) {
            try ConsumptionBody(
                customerConsented: true, deliveryStatus: .undeliveredOther, sampleContentProvided: false, consumedPercent: 10, refundPreference: nil)
        }
        #expect(throws: ActionRuleError(.proratedNeedsPartialConsumption)) {
            try ConsumptionBody(
                customerConsented: true, deliveryStatus: .delivered, sampleContentProvided: false, consumedPercent: 100, refundPreference: .grantProrated)
        }
        #expect(throws: ActionRuleError(.tokenNotUUID)) { try AppAccountTokenBody(token: "not-a-uuid") }
        // The value that broke the rule is kept; the form's words name it, not a flag.
        do {
            _ = try MassExtendBody(days: 3, reason: .other, productID: "p", requestIdentifier: UUID().uuidString, storefronts: ["US"])
            Issue.record("a two-letter storefront was taken")
        } catch {
            #expect(error.code == .storefrontInvalid)
            #expect(error.value == "US")
            words.said(error.reason)
        }
        let body = try ConsumptionBody(
            customerConsented: true, deliveryStatus: .delivered, sampleContentProvided: true, consumedPercent: 40, refundPreference: .grantProrated)
        #expect(body.consumptionPercentage == 40_000)
        #expect(
            String(decoding: APIRequest.json(body), as: UTF8.self)
                == #"{"consumptionPercentage":40000,"customerConsented":true,"deliveryStatus":"DELIVERED","refundPreference":"GRANT_PRORATED","sampleContentProvided":true}"#
        )
        #expect(ExtendReason(argument: "service-issue") == .serviceIssue)
        #expect(ExtendReason(argument: "2") == .other)
        #expect(ExtendReason(argument: "4") == nil)
        #expect(DeliveryStatus(argument: "undelivered-server-outage") == .undeliveredServerOutage)
        words.check()
    }

    @Test func consumptionIsAcceptedWith202AndItsFieldsAreChecked() async throws {
        try await withAPISimulator { client, simulator in
            let actions = try makeActions(client, simulator)
            let body = try ConsumptionBody(
                customerConsented: true, deliveryStatus: .delivered, sampleContentProvided: false, consumedPercent: 40, refundPreference: .decline)
            let plan = try await actions.plan(
                .consumption, try .consumption("2000000900000010", body), ids: ActionIDs(transactionID: "2000000900000010"), selection: .auto,
                requestID: "c1"
            ).get()
            #expect(plan.ids.productID == "com.example.receiptdash.coins100")
            let report = await actions.send(plan)
            #expect(report.outcome == .success)
            #expect(report.httpStatus == 202)
            // What Apple's checks refuse, sent as raw bodies.
            for (fields, code) in [
                (#"{"customerConsented":false,"deliveryStatus":"DELIVERED","sampleContentProvided":false}"#, APIErrorCode.invalidCustomerConsented),
                (#"{"customerConsented":true,"deliveryStatus":"LOST","sampleContentProvided":false}"#, .invalidDeliveryStatus),
                (#"{"customerConsented":true,"deliveryStatus":"DELIVERED"}"#, .invalidSampleContentProvided),
            ] {
                let request = APIRequest(
                    endpoint: .consumption, method: .put, path: "/inApps/v2/transactions/consumption/2000000900000010", body: Array(fields.utf8))
                let answer = await client.send(request, in: .production, as: APINoContent.self)
                #expect(answer.failure?.apiError == code, "\(fields)")
            }
            #expect(simulator.service.writes.count == 4)
        }
    }

    @Test func anAppAccountTokenShowsOnLaterLookUpsAndOnlyOnAnOriginalTransaction() async throws {
        let words = Wording("serverapi-actions")
        try await withAPISimulator { client, simulator in
            let actions = try makeActions(client, simulator)
            let body = try AppAccountTokenBody(token: "7E3FB20B-4CDB-47CC-936D-99D65F608138")
            #expect(body.appAccountToken == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
            let plan = try await actions.plan(
                .appAccountToken, try .setAppAccountToken(Self.subscription, body), ids: ActionIDs(originalTransactionID: Self.subscription),
                selection: .auto, requestID: "t1"
            ).get()
            words.said(plan.lines)
            #expect(await actions.send(plan).outcome == .success)
            let lookup = await CustomerLookupService(client: client, pipeline: ReceiptPipeline(at: TestTime.start))
                .lookUp(.transactionID(Self.subscription), environment: .production)
            let tokens = Set(lookup.transactions.compactMap(\.transaction).filter { $0.originalTransactionID == Self.subscription }.map(\.appAccountToken))
            #expect(tokens == ["7e3fb20b-4cdb-47cc-936d-99d65f608138"])
            // `lookup --format json` shows it on each of the subscription's transactions.
            var json = JSONOutput()
            LookupJSON.write(lookup, into: &json)
            let rows = try #require(try JSONValue.parse(json.bytes).object?["transactions"]?.array)
            let shown = rows.compactMap(\.object).filter { $0["original_transaction_id"] == .string(Self.subscription) }.map { $0["app_account_token"] }
            #expect(shown == Array(repeating: .string("7e3fb20b-4cdb-47cc-936d-99d65f608138"), count: 3))
            #expect(rows.compactMap(\.object).first { $0["transaction_id"] == .string("2000000900000010") }?["app_account_token"] == .null)

            let renewal = try APIRequest.setAppAccountToken("2000000900000003", body)
            let refused = await client.send(renewal, in: .production, as: APINoContent.self)
            #expect(refused.failure?.apiError == .notOriginalTransactionID)
        }
        words.check()
    }

    @Test func finishAndTestNotificationAreTaken() async throws {
        try await withAPISimulator { client, simulator in
            let actions = try makeActions(client, simulator)
            let finish = try await actions.plan(
                .finish, try .finishTransaction("2000000900000010"), ids: ActionIDs(transactionID: "2000000900000010"), selection: .auto, requestID: nil
            ).get()
            #expect(await actions.send(finish).outcome == .success)
            let missing = await client.send(try .finishTransaction("2000000999999999"), in: .production, as: APINoContent.self)
            #expect(missing.failure?.apiError == .transactionIDNotFound)

            let test = try await actions.plan(.testNotification, .requestTestNotification(), ids: ActionIDs(), selection: .production, requestID: nil).get()
            let report = await actions.send(test)
            #expect(report.outcome == .success)
            let token = try #require(report.result?.object?["test_notification_token"]?.text)
            let attempts = try #require(await actions.testNotificationAttempts(token, environment: .production))
            #expect(attempts.compactMap { $0.object?["send_attempt_result"]?.text } == ["SUCCESS"])
            #expect(
                simulator.service.writes.map(\.path) == [
                    "/inApps/v1/transactions/2000000900000010/finish", "/inApps/v1/transactions/2000000999999999/finish", "/inApps/v1/notifications/test",
                ])
        }
    }

    @Test func aMassExtensionCompletesAfterItsDelayAndCountsWhatItExtended() async throws {
        let clock = TestTime()
        try await withAPISimulator(clock: clock) { client, simulator in
            let actions = try makeActions(client, simulator)
            let id = "3f1c7e1e-0d6b-4a34-9a11-0c7f1b2a4e55"
            let body = try MassExtendBody(
                days: 5, reason: .serviceIssue, productID: "com.example.receiptdash.pro.monthly", requestIdentifier: id, storefronts: [])
            // Under auto a write to no customer is not placed by a guess.
            let guessed = await actions.plan(.massExtend, .massExtend(body), ids: ActionIDs(productID: body.productId), selection: .auto, requestID: id)
            #expect(guessed.failureCode == .environmentUnknown)
            let plan = try await actions.plan(.massExtend, .massExtend(body), ids: ActionIDs(productID: body.productId), selection: .production, requestID: id)
                .get()
            #expect(await actions.send(plan).result?.object?["request_identifier"]?.text == id)
            let status = ActionPlan(
                action: .massExtendStatus, request: try .massExtendStatus(productID: body.productId, requestIdentifier: id), requestID: id,
                environment: .production, ids: plan.ids, lines: [])
            let early = await actions.send(status)
            #expect(early.result?.object?["complete"]?.bool == false)
            clock.testClock.advance(by: .seconds(3))
            let done = await actions.send(status)
            let fields = try #require(done.result?.object)
            #expect(fields["complete"]?.bool == true)
            // Production's one active monthly subscriber is extended.
            #expect(fields["succeeded_count"]?.int64 == 1)
            #expect(fields["failed_count"]?.int64 == 0)
            // Under auto, a status is asked where Apple knows the request id.
            let found = try await actions.plan(.massExtendStatus, status.request, ids: plan.ids, selection: .auto, requestID: id).get()
            #expect(found.environment == .production)
            let unknown = await client.send(try .massExtendStatus(productID: body.productId, requestIdentifier: UUID().uuidString), in: .production, as: MassExtendStatusResponse.self)
            #expect(unknown.failure?.apiError == .statusRequestNotFound)
        }
    }

    @Test func everyActionCodeIsExplainedWithWhatToDo() {
        let words = Wording("serverapi-actions")
        for code in APIErrorCode.actionCodes {
            #expect(code.isKnown, "\(code.rawValue)")
            #expect(code.explanation == code.actionExplanation, "\(code.rawValue)")
            // What it means, then what to do.
            #expect(code.actionExplanation.contains(": "), "\(code.rawValue): \(code.actionExplanation)")
        }
        #expect(APIErrorCode.subscriptionExtensionIneligible.actionExplanation.hasPrefix("not eligible: "))
        words.said(APIErrorCode.familySharedSubscriptionExtensionIneligible.actionExplanation)
        words.check()
    }
}

private struct ReportMissing: Error {}

extension Result where Failure == APIFailure {
    /// The failure's code, nil on success.
    var failureCode: APIFailure.Code? {
        if case .failure(let failure) = self { return failure.code }
        return nil
    }
}
