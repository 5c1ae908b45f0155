import APITestSupport
import AppStoreAPI
import AppStoreClients
import AuditTrail
import ConsumptionAnswering
import ConsumptionPolicy
import Foundation
import Logging
import ReceiptCore
import ReceiptTrust
import RetryEngine
import ServiceLifecycle
import Synchronization
import Testing
import TestSupport

/// Refund requests answered by policy, on both stores: each stored CONSUMPTION_REQUEST answered
/// once through the write gate (intent, one request id, outcome), whatever the number of
/// receivers; nothing sent in a dry run, without consent or past the deadline; a receiver
/// stopped after recording its intent is resumed with the same request id.
@Suite(.timeLimit(.minutes(5))) struct ConsumptionAnswererTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    static let policyFile = """
        customer_consented = true

        [[policy]]
        name = "coins"
        product = "com.example.coins.*"
        refund_preference = "decline"
        consumption_percent = 100
        sample_content_provided = false
        """

    /// A stored CONSUMPTION_REQUEST whose payload carries its transaction (the receiver verified
    /// it before storing; the answerer reads the stored verdict).
    static func request(_ n: Int, signedAgo: TimeInterval = 60, product: String = "com.example.coins.100") -> NotificationWrite {
        let transaction = "20000009\(String(format: "%05d", n))"
        let signed = t0.addingTimeInterval(-signedAgo)
        let uuid = "7c0e5a2b-0000-4000-8000-\(String(format: "%012d", n))"
        let payload = ConsumptionRequestPayload.make(
            uuid: uuid, transactionID: transaction, productID: product, purchased: signed.addingTimeInterval(-86_400), signed: signed)
        return .notification(
            NotificationRecord(
                notificationUUID: uuid, version: .v2, notificationType: "CONSUMPTION_REQUEST", bundleID: "com.example.app", environment: "Sandbox",
                signedDate: signed, receivedAt: t0, verdict: .valid, transactionID: transaction, originalTransactionID: transaction, productID: product,
                signedPayload: payload))
    }

    /// Apple's consumption endpoint, as a loopback server answering 202 and keeping each request.
    static func apple() async throws -> (ScriptedServer, CustomerActions) {
        let server = try await ScriptedServer.start { request in
            request.method == "PUT" && request.path.hasPrefix("/inApps/v2/transactions/consumption/") ? .empty(202) : .error(404, 4040010)
        }
        let client = AppStoreServerAPIClient(
            credentials: makeTestCredentials().0, hosts: try APIHosts(production: server.baseURL, sandbox: server.baseURL), retry: wallClockRetry,
            requestTimeout: .seconds(120))
        return (server, CustomerActions(client: client, pipeline: ReceiptPipeline(at: t0, evaluator: TrustEvaluator(anchors: .apple))))
    }

    static func answerer(
        _ store: any AuditBackend, _ sender: CustomerActions, file: String = policyFile, mode: ConsumptionPolicyMode = .send, owner: String,
        now: TestNow
    ) throws -> ConsumptionAnswerer {
        var configuration = ConsumptionAnswerer.Configuration(policies: try ConsumptionPolicies.parse(file, path: "policy.toml"), mode: mode)
        configuration.owner = owner
        configuration.user = "test"
        // Small claims, so two receivers interleave theirs.
        configuration.batch = 16
        return ConsumptionAnswerer(
            store: store, sender: sender, configuration: configuration,
            clock: ServiceClock(now: { now.date }, clock: ContinuousClock()), logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    static func consumptionPUTs(_ server: ScriptedServer) -> [String] {
        server.requests.filter { $0.method == "PUT" }.map { $0.path.split(separator: "/").last.map(String.init) ?? "" }
    }

    // SQLite here; PostgreSQL's decisions, lateness and answers are in the two-receiver test
    // (each PostgreSQL case is a database of its own: the suite's heaviest I/O).
    @Test(arguments: [BackendKind.sqlite]) func aRequestIsAnsweredOnceByItsPolicy(_ kind: BackendKind) async throws {
        try await TestAuditDatabase.with(kind) { db in
            let store = try await db.open()
            let (server, actions) = try await Self.apple()
            let now = TestNow(Self.t0)
            _ = try await store.writeNotifications([Self.request(1), Self.request(2, product: "com.example.monthly")])
            let answerer = try Self.answerer(store, actions, owner: "a", now: now)
            let pass = try await answerer.answerDue()
            #expect(pass.results == [.answered: 1, .noMatch: 1])
            #expect(try await answerer.answerDue().handled == 0)
            #expect(Self.consumptionPUTs(server) == ["2000000900001"])
            let body = try #require(server.requests.first { $0.method == "PUT" }?.body)
            #expect(String(decoding: body, as: UTF8.self) == #"{"consumptionPercentage":100000,"customerConsented":true,"deliveryStatus":"DELIVERED","refundPreference":"DECLINE","sampleContentProvided":false}"#)
            let listed = try await store.consumptionRequests(transactionID: nil, limit: 10)
            #expect(Set(listed.map { [$0.transactionID, $0.state.rawValue, $0.policy ?? "-", $0.httpStatus.map(String.init) ?? "-"] }) == [
                ["2000000900001", "answered", "coins", "202"], ["2000000900002", "no-match", "-", "-"],
            ])
            let rows = try await store.actions(AuditActionQuery(transactionID: "2000000900001"))
            #expect(rows.map { [$0.action, $0.result, $0.policy ?? "-", String($0.httpStatus ?? 0)] } == [["consumption", "success", "coins", "202"]])
            #expect(rows.first?.requestID == listed.first { $0.state == .answered }?.requestID)
            #expect(try await store.openConsumptionRequests().open == 0)
            try await shutDown(actions, server: server)
            await store.close()
        }
    }

    /// A policy matching on `customer_refunds` counts the trail's refunds for the customer: one
    /// with a stored REFUND gets it, one without falls through to the next.
    @Test func theTrailsRefundsPickThePolicy() async throws {
        try await TestAuditDatabase.with(.sqlite) { db in
            let store = try await db.open()
            let (server, actions) = try await Self.apple()
            let refunded = "2000000900001"
            _ = try await store.writeNotifications([
                .notification(
                    NotificationRecord(
                        notificationUUID: "7c0e5a2b-0000-4000-8000-refund000001", version: .v2, notificationType: "REFUND",
                        bundleID: "com.example.app", environment: "Sandbox", signedDate: Self.t0.addingTimeInterval(-7_200),
                        receivedAt: Self.t0.addingTimeInterval(-7_200), verdict: .valid, transactionID: refunded, originalTransactionID: refunded,
                        productID: "com.example.coins.100")),
                Self.request(1), Self.request(2),
            ])
            let file = Self.policyFile.replacingOccurrences(
                of: "[[policy]]", with: "[[policy]]\nname = \"refunded before\"\ncustomer_refunds = \">= 1\"\nrespond = false\n\n[[policy]]")
            let answerer = try Self.answerer(store, actions, file: file, mode: .dryRun, owner: "a", now: TestNow(Self.t0))
            #expect(try await answerer.answerDue().results == [.noResponse: 1, .dryRun: 1])
            let listed = try await store.consumptionRequests(transactionID: nil, limit: 10)
            #expect(Set(listed.map { [$0.transactionID, $0.state.rawValue, $0.policy ?? "-"] }) == [
                [refunded, "no-response", "refunded before"], ["2000000900002", "dry-run", "coins"],
            ])
            #expect(server.requests.isEmpty)
            try await shutDown(actions, server: server)
            await store.close()
        }
    }

    // SQLite here; PostgreSQL's decisions, lateness and answers are in the two-receiver test
    // (each PostgreSQL case is a database of its own: the suite's heaviest I/O).
    @Test(arguments: [BackendKind.sqlite]) func aDryRunAndAFileWithoutConsentSendNothing(_ kind: BackendKind) async throws {
        try await TestAuditDatabase.with(kind) { db in
            let store = try await db.open()
            let (server, actions) = try await Self.apple()
            let now = TestNow(Self.t0)
            _ = try await store.writeNotifications([Self.request(1)])
            let dry = try Self.answerer(store, actions, mode: .dryRun, owner: "a", now: now)
            #expect(try await dry.answerDue().results == [.dryRun: 1])
            _ = try await store.writeNotifications([Self.request(2)])
            let unconsented = try Self.answerer(
                store, actions, file: Self.policyFile.replacingOccurrences(of: "customer_consented = true", with: ""), owner: "b", now: now)
            #expect(try await unconsented.answerDue().results == [.noConsent: 1])
            #expect(server.requests.isEmpty)
            let listed = try await store.consumptionRequests(transactionID: nil, limit: 10)
            #expect(Set(listed.map { [$0.state.rawValue, $0.policy ?? "-", String($0.body != nil)] }) == [["dry-run", "coins", "true"], ["no-consent", "coins", "false"]])
            #expect(try await store.actions(AuditActionQuery()).isEmpty)
            try await shutDown(actions, server: server)
            await store.close()
        }
    }

    // SQLite here; PostgreSQL's decisions, lateness and answers are in the two-receiver test
    // (each PostgreSQL case is a database of its own: the suite's heaviest I/O).
    @Test(arguments: [BackendKind.sqlite]) func aRequestPastItsDeadlineIsReportedNotAnswered(_ kind: BackendKind) async throws {
        try await TestAuditDatabase.with(kind) { db in
            let store = try await db.open()
            let (server, actions) = try await Self.apple()
            let now = TestNow(Self.t0)
            _ = try await store.writeNotifications([Self.request(1, signedAgo: 12 * 3600 + 1), Self.request(2, signedAgo: 11 * 3600)])
            let answerer = try Self.answerer(store, actions, owner: "a", now: now)
            #expect(try await answerer.answerDue().results == [.late: 1, .answered: 1])
            #expect(Self.consumptionPUTs(server) == ["2000000900002"])
            let late = try #require(try await store.consumptionRequests(transactionID: "2000000900001", limit: 1).first)
            #expect(late.state == .late && late.requestID == nil && late.decidedAt == Self.t0)
            try await shutDown(actions, server: server)
            await store.close()
        }
    }

    /// The receiver recorded its intent and was killed before Apple's answer: a restarted one
    /// (another owner, once the lease ended) sends the same body with the same request id, and
    /// the one write row gets the outcome.
    @Test(arguments: BackendKind.allCases) func aReceiverKilledAfterItsIntentIsResumedWithTheSameRequestID(_ kind: BackendKind) async throws {
        try await TestAuditDatabase.with(kind) { db in
            let store = try await db.open()
            let (server, actions) = try await Self.apple()
            _ = try await store.writeNotifications([Self.request(1)])
            // The first receiver's claim and intent, as it leaves them when killed.
            let claim = try await store.claimConsumptionRequests(owner: "killed", now: Self.t0, leaseUntil: Self.t0.addingTimeInterval(600), limit: 10)
            let request = try #require(claim.claimed.first)
            let body = #"{"consumptionPercentage":100000,"customerConsented":true,"deliveryStatus":"DELIVERED","refundPreference":"DECLINE","sampleContentProvided":false}"#
            let intent = AuditAction(
                at: Self.t0, user: "test", action: "consumption", environment: "Sandbox", requestID: "5b6a2f0e-1111-4222-8333-444455556666",
                originalTransactionID: request.transactionID, transactionID: request.transactionID, productID: request.productID, requestBody: body,
                httpStatus: nil, apiError: nil, result: AuditAction.pending, policy: "coins")
            let actionID = try #require(try await store.beginConsumptionAnswer(request.id, owner: "killed", policy: "coins", body: body, action: intent, at: Self.t0))
            // Within the lease nobody takes it; after it, the restarted receiver does.
            let now = TestNow(Self.t0.addingTimeInterval(60))
            let restarted = try Self.answerer(store, actions, owner: "restarted", now: now)
            #expect(try await restarted.answerDue().handled == 0)
            now.date = Self.t0.addingTimeInterval(601)
            #expect(try await restarted.answerDue().results == [.answered: 1])
            #expect(Self.consumptionPUTs(server) == ["2000000900001"])
            let rows = try await store.actions(AuditActionQuery(transactionID: "2000000900001"))
            #expect(rows.map { [String($0.id ?? 0), $0.requestID ?? "-", $0.result] } == [[String(actionID), "5b6a2f0e-1111-4222-8333-444455556666", "success"]])
            let answered = try #require(try await store.consumptionRequests(transactionID: "2000000900001", limit: 1).first)
            #expect(answered.state == .answered && answered.requestID == "5b6a2f0e-1111-4222-8333-444455556666")
            try await shutDown(actions, server: server)
            await store.close()
        }
    }

    /// Two receivers on one trail and 200 requests: 200 answers, each transaction sent once.
    @Test(arguments: BackendKind.allCases) func twoReceiversOnOneTrailAnswerTwoHundredRequestsOnce(_ kind: BackendKind) async throws {
        try await TestAuditDatabase.with(kind) { db in
            let first = try await db.open()
            let second = try await db.open()
            let (server, actions) = try await Self.apple()
            let now = TestNow(Self.t0)
            // 200 to answer, one no policy matches and one past its deadline.
            _ = try await first.writeNotifications(
                (1...200).map { Self.request($0) } + [Self.request(201, product: "com.example.monthly"), Self.request(202, signedAgo: 12 * 3600 + 1)])
            let a = try Self.answerer(first, actions, owner: "a", now: now)
            let b = try Self.answerer(second, actions, owner: "b", now: now)
            func passes(_ answerer: ConsumptionAnswerer) async throws -> [ConsumptionResult: Int] {
                var results: [ConsumptionResult: Int] = [:]
                for _ in 0..<20 { results.merge(try await answerer.answerDue().results, uniquingKeysWith: +) }
                return results
            }
            async let passesA = passes(a)
            async let passesB = passes(b)
            let (resultsA, resultsB) = try await (passesA, passesB)
            #expect(resultsA.merging(resultsB, uniquingKeysWith: +) == [.answered: 200, .noMatch: 1, .late: 1])
            let sent = Self.consumptionPUTs(server)
            #expect(sent.count == 200)
            #expect(Set(sent).count == 200)
            let states = try await first.consumptionRequests(transactionID: nil, limit: 500).map(\.state)
            #expect(states.count { $0 == .answered } == 200 && states.contains(.noMatch) && states.contains(.late))
            #expect(try await first.actions(AuditActionQuery(limit: 500)).count == 200)
            try await shutDown(actions, server: server)
            await first.close()
            await second.close()
        }
    }
}

extension ConsumptionAnswererTests {
    /// The service in a group, on the test clock: it answers what the trail holds, polls at its
    /// interval, and on a graceful shutdown ends its pass (the outcome recorded) before it stops.
    @Test func theServiceAnswersOnItsClockAndEndsItsPassOnShutdown() async throws {
        try await TestAuditDatabase.with(.sqlite) { db in
            let store = try await db.open()
            let puts = AwaitedCount()
            let server = try await ScriptedServer.start { request in
                guard request.method == "PUT" else { return .error(404, 4040010) }
                puts.add()
                return .empty(202)
            }
            let client = AppStoreServerAPIClient(
                credentials: makeTestCredentials().0, hosts: try APIHosts(production: server.baseURL, sandbox: server.baseURL), retry: wallClockRetry,
                requestTimeout: .seconds(120))
            let actions = CustomerActions(client: client, pipeline: ReceiptPipeline(at: Self.t0, evaluator: TrustEvaluator(anchors: .apple)))
            _ = try await store.writeNotifications([Self.request(1), Self.request(2)])
            let testClock = TestClock()
            var configuration = ConsumptionAnswerer.Configuration(policies: try ConsumptionPolicies.parse(Self.policyFile, path: "policy.toml"), mode: .send)
            configuration.owner = "service"
            let answerer = ConsumptionAnswerer(
                store: store, sender: actions, configuration: configuration, clock: .driven(by: testClock, start: Self.t0),
                logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
            let group = ServiceGroup(services: [answerer], logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
            async let running: Void = group.run()
            await puts.wait(atLeast: 2)
            await group.triggerGracefulShutdown()
            try await running
            let listed = try await store.consumptionRequests(transactionID: nil, limit: 10)
            #expect(listed.map(\.state) == [.answered, .answered])
            #expect(testClock.waits.allSatisfy { $0 == .seconds(1) })
            // The service released its client when it ended.
            await #expect(throws: (any Error).self) { try await client.shutdown() }
            try await server.stop()
            await store.close()
        }
    }
}

extension ConsumptionAnswererTests {
    /// Beside a receiver taking notifications, a pass waits for a second without any (its
    /// writes would take the store's writer between the receiver's group commits), unless a
    /// request has waited `maximumWait` since Apple signed it: then it runs under traffic.
    @Test func aPassWaitsForTheReceiversQuietOrARequestsLongestWait() async throws {
        try await TestAuditDatabase.with(.sqlite) { db in
            let store = try await db.open()
            let (server, actions) = try await Self.apple()
            let now = TestNow(Self.t0)
            let activity = ActivityMark()
            var configuration = ConsumptionAnswerer.Configuration(policies: try ConsumptionPolicies.parse(Self.policyFile, path: "policy.toml"), mode: .send)
            configuration.owner = "quiet"
            configuration.maximumWait = 300
            let answerer = ConsumptionAnswerer(
                store: store, sender: actions, configuration: configuration, clock: ServiceClock(now: { now.date }, clock: ContinuousClock()),
                logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), activity: activity)
            // Nothing open, nothing taken yet: a pass may run (it finds nothing).
            #expect(try await answerer.mayRunPass())
            activity.mark(Self.t0)
            #expect(try await answerer.mayRunPass() == false)
            // A request signed 60 s before t0, while notifications keep coming.
            _ = try await store.writeNotifications([Self.request(1, signedAgo: 60)])
            #expect(try await answerer.mayRunPass() == false)
            // A second without one: a pass may run.
            now.date = Self.t0.addingTimeInterval(1)
            #expect(try await answerer.mayRunPass())
            _ = try await store.writeNotifications([Self.request(2, signedAgo: 60)])
            // Traffic again: request 2 waits until it was signed 300 s ago (t0 + 240), not longer.
            now.date = Self.t0.addingTimeInterval(239)
            activity.mark(now.date)
            #expect(try await answerer.mayRunPass() == false)
            now.date = Self.t0.addingTimeInterval(240)
            activity.mark(now.date)
            #expect(try await answerer.mayRunPass())
            let pass = try await answerer.answerDue()
            #expect(pass.results == [.answered: 2])
            #expect(Self.consumptionPUTs(server).sorted() == ["2000000900001", "2000000900002"])
            try await shutDown(actions, server: server)
            await store.close()
        }
    }
}

/// The answerer's wall time, moved by the test.
final class TestNow: Sendable {
    private let value: Mutex<Date>
    init(_ date: Date) { value = Mutex(date) }
    var date: Date {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}

/// Stops the loopback "Apple".
private func shutDown(_ actions: CustomerActions, server: ScriptedServer) async throws {
    try await actions.client.shutdown()
    try await server.stop()
}
