@testable import AppStoreClients
import APITestSupport
import Crypto
import Foundation
import AppStoreAPI
import ReceiptCore
import RetryEngine
import ServiceTestSupport
import Synchronization
import Testing
import TestSupport

/// Answers in order from a script, then `otherwise`.
final class Script: Sendable {
    private let queue: Mutex<[ScriptedResponse]>
    let otherwise: @Sendable (SeenRequest) -> ScriptedResponse

    init(_ responses: [ScriptedResponse], otherwise: @escaping @Sendable (SeenRequest) -> ScriptedResponse) {
        queue = Mutex(responses)
        self.otherwise = otherwise
    }

    func next(_ request: SeenRequest) -> ScriptedResponse {
        queue.withLock { queue -> ScriptedResponse? in queue.isEmpty ? nil : queue.removeFirst() } ?? otherwise(request)
    }
}

let transactionInfoBody = #"{"signedTransactionInfo":"eyJhbGciOiJFUzI1NiJ9.e30.c2ln"}"#

/// A client on a scripted loopback server: production under `/production`, sandbox under
/// `/sandbox`; waits go to `clock`.
func withAPIServer(
    clock: TestTime = TestTime(), retry: RetryPolicy = quickRetry, credentials: APICredentials = makeTestCredentials().0,
    _ handler: @escaping @Sendable (SeenRequest) -> ScriptedResponse,
    _ body: (AppStoreServerAPIClient, ScriptedServer) async throws -> Void
) async throws {
    let server = try await ScriptedServer.start(handler)
    let hosts = try APIHosts(production: server.baseURL + "/production", sandbox: server.baseURL + "/sandbox/")
    let client = AppStoreServerAPIClient(
        credentials: credentials, hosts: hosts, retry: retry, requestTimeout: .seconds(10), clock: clock.clock, random: { 0.5 })
    do {
        try await body(client, server)
    } catch {
        try await client.shutdown()
        try await server.stop()
        throw error
    }
    try await client.shutdown()
    try await server.stop()
}

@Suite struct ServerAPIClientTests {
    // MARK: Retry table through the client

    static let retryable: [ScriptedResponse] = [
        .error(404, 4_040_002), .error(404, 4_040_004), .error(404, 4_040_006), .error(500, 5_000_001), .empty(503), .error(503, 9_999_999),
        .drop,
    ]

    @Test(arguments: retryable)
    func retryableAnswersAreRetriedWithBackoff(_ fault: ScriptedResponse) async throws {
        let clock = TestTime()
        let script = Script([fault]) { _ in .json(200, transactionInfoBody) }
        try await withAPIServer(clock: clock, { script.next($0) }) { client, server in
            let answer = await client.transactionInfo("2000000000000001", environment: .production)
            #expect(answer.value?.signedTransactionInfo == "eyJhbGciOiJFUzI1NiJ9.e30.c2ln")
            #expect(answer.records.count == 2)
            #expect(server.requests.count == 2)
            #expect(answer.records.last?.result == .success(httpStatus: 200))
            // random 0.5: no jitter; first backoff is the base delay.
            #expect(clock.waits == [0.01])
            #expect(answer.records.first?.waitSeconds == 0.01)
        }
    }

    static let permanent: [(ScriptedResponse, APIFailure.Code, Int?)] = [
        (.error(400, 4_000_000), .apiError, 4_000_000), (.error(400, 4_000_006), .apiError, 4_000_006),
        (.error(400, 4_000_005), .apiError, 4_000_005), (.error(404, 4_040_001), .apiError, 4_040_001),
        (.error(404, 4_040_003), .apiError, 4_040_003), (.error(404, 4_040_005), .apiError, 4_040_005),
        (.error(404, 4_040_010), .apiError, 4_040_010), (.error(500, 5_000_000), .apiError, 5_000_000),
        (.empty(401), .unauthorized, nil), (.empty(403), .http, nil), (.json(200, "not json"), .invalidResponse, nil),
    ]

    @Test(arguments: permanent)
    func permanentAnswersAreNotRetried(_ fault: ScriptedResponse, _ code: APIFailure.Code, _ apiError: Int?) async throws {
        let clock = TestTime()
        let script = Script([fault]) { _ in .json(200, transactionInfoBody) }
        try await withAPIServer(clock: clock, { script.next($0) }) { client, server in
            let answer = await client.transactionInfo("2000000000000001", environment: .production)
            #expect(answer.value == nil)
            #expect(answer.failure?.code == code)
            #expect(answer.failure?.apiError?.rawValue == apiError)
            #expect(answer.records.count == 1)
            #expect(answer.records.first?.apiError?.rawValue == apiError)
            #expect(server.requests.count == 1)
            #expect(clock.waits.isEmpty)
        }
    }

    @Test func rateLimitWaitsUntilRetryAfterExactly() async throws {
        let clock = TestTime()
        // 7.25 s after the test clock's start, as UNIX milliseconds.
        let until = Int64(TestTime.start.timeIntervalSince1970 * 1000) + 7_250
        let script = Script([.error(429, 4_290_000, headers: [("Retry-After", String(until))])]) { _ in .json(200, transactionInfoBody) }
        try await withAPIServer(clock: clock, { script.next($0) }) { client, _ in
            let events = EventBox()
            let answer = await client.transactionInfo("2000000000000001", environment: .production) { events.add($0) }
            #expect(answer.value != nil)
            #expect(clock.waits == [7.25])
            #expect(answer.records.first?.httpStatus == 429)
            #expect(answer.records.first?.apiError == .rateLimitExceeded)
            #expect(answer.records.first?.retryAfter == Date(timeIntervalSince1970: 1_800_000_007.25))
            #expect(answer.records.first?.waitSeconds == 7.25)
            #expect(
                events.events.contains(
                    .retrying(
                        endpoint: .transactionInfo, inSeconds: 7.25, until: Date(timeIntervalSince1970: 1_800_000_007.25),
                        after: .apiError(httpStatus: 429, code: .rateLimitExceeded))))
        }
    }

    @Test func rateLimitPastTheBudgetIsNotWaitedFor() async throws {
        let words = Wording("serverapi-client")
        let clock = TestTime()
        let until = Int64(TestTime.start.timeIntervalSince1970 * 1000) + 30_000
        let script = Script([.error(429, 4_290_000, headers: [("Retry-After", String(until))])]) { _ in .json(200, transactionInfoBody) }
        try await withAPIServer(clock: clock, { script.next($0) }) { client, server in
            let answer = await client.transactionInfo("2000000000000001", environment: .production)
            #expect(answer.failure?.code == .retryBudgetExhausted)
            words.said(answer.failure?.reason)
            #expect(clock.waits.isEmpty)
            #expect(server.requests.count == 1)
        }
        words.check()
    }

    @Test func retriesAreBoundedByCount() async throws {
        let clock = TestTime()
        try await withAPIServer(clock: clock, { _ in .error(500, 5_000_001) }) { client, server in
            let answer = await client.transactionInfo("2000000000000001", environment: .production)
            #expect(answer.failure?.code == .retriesExhausted)
            #expect(server.requests.count == 5)
            #expect(clock.waits == [0.01, 0.02, 0.04, 0.05])
        }
    }

    // MARK: Tokens as the server sees them

    @Test func everyRequestCarriesAFreshVerifiableToken() async throws {
        let (credentials, key) = makeTestCredentials()
        let script = Script([.empty(503)]) { _ in .json(200, transactionInfoBody) }
        try await withAPIServer(credentials: credentials, { script.next($0) }) { client, server in
            _ = await client.transactionInfo("2000000000000001", environment: .production)
            #expect(server.requests.count == 2)
            for request in server.requests {
                let authorization = try #require(request.header("Authorization"))
                #expect(authorization.hasPrefix("Bearer "))
                let token = try DecodedJWT(String(authorization.dropFirst("Bearer ".count)))
                #expect(token.verifies(with: key.publicKey))
                #expect(token.claims["bid"]?.text == "com.example.app")
                #expect(request.header("Accept") == "application/json")
            }
        }
    }

    // MARK: Paging

    @Test func historyReadsEveryPageWithTheSameFilters() async throws {
        let pages: [String: String] = [
            "": #"{"revision":"r1","hasMore":true,"bundleId":"com.example.app","appAppleId":1234567890,"environment":"Production","signedTransactions":["t1","t2"]}"#,
            "r1": #"{"revision":"r2","hasMore":true,"environment":"Production","signedTransactions":["t3"]}"#,
            "r2": #"{"revision":"r3","hasMore":false,"environment":"Production","signedTransactions":["t4","t5"]}"#,
        ]
        try await withAPIServer({ request in
            let revision = request.query.split(separator: "&").first { $0.hasPrefix("revision=") }.map { String($0.dropFirst(9)) } ?? ""
            return pages[revision].map { .json(200, $0) } ?? .error(400, 4_000_005)
        }) { client, server in
            let filter = TransactionHistoryFilter(
                startDate: Date(timeIntervalSince1970: 1_700_000_000.5), productIDs: ["com.example.monthly", "com.example.yearly"],
                productTypes: [.autoRenewable], sort: .ascending, revoked: false)
            let answer = await client.transactionHistory("2000000000000001", filter: filter)
            let value = try #require(answer.value)
            #expect(value.signedTransactions == ["t1", "t2", "t3", "t4", "t5"])
            #expect(value.pages == 3)
            #expect(value.revision == "r3")
            #expect(value.bundleId == "com.example.app")
            #expect(value.appAppleId == 1_234_567_890)
            #expect(answer.environment == .production)
            #expect(answer.records.map(\.endpoint) == [.transactionHistory, .transactionHistory, .transactionHistory])
            let filters = "startDate=1700000000500&productId=com.example.monthly&productId=com.example.yearly&productType=AUTO_RENEWABLE&sort=ASCENDING&revoked=false"
            #expect(server.requests.map(\.uri) == [
                "/production/inApps/v2/history/2000000000000001?\(filters)",
                "/production/inApps/v2/history/2000000000000001?\(filters)&revision=r1",
                "/production/inApps/v2/history/2000000000000001?\(filters)&revision=r2",
            ])
            #expect(answer.records.map(\.url) == server.requests.map { server.baseURL + $0.uri })
        }
    }

    @Test func refundHistoryPagesInSandboxAfterAuto() async throws {
        try await withAPIServer({ request in
            if request.path.hasPrefix("/production/") { return .error(404, 4_040_010) }
            return request.query.isEmpty
                ? .json(200, #"{"revision":"a","hasMore":true,"signedTransactions":["r1"]}"#)
                : .json(200, #"{"revision":"b","hasMore":false,"signedTransactions":["r2"]}"#)
        }) { client, server in
            let answer = await client.refundHistory("2000000000000001")
            #expect(answer.value?.signedTransactions == ["r1", "r2"])
            #expect(answer.environment == .sandbox)
            #expect(server.requests.map(\.uri) == [
                "/production/inApps/v2/refund/lookup/2000000000000001",
                "/sandbox/inApps/v2/refund/lookup/2000000000000001",
                "/sandbox/inApps/v2/refund/lookup/2000000000000001?revision=a",
            ])
        }
    }

    @Test func notificationHistoryFollowsThePaginationToken() async throws {
        try await withAPIServer({ request in
            switch request.query {
            case "":
                .json(
                    200,
                    #"{"paginationToken":"p1","hasMore":true,"notificationHistory":[{"signedPayload":"n1","sendAttempts":[{"attemptDate":1800000000123,"sendAttemptResult":"TIMED_OUT"}]}]}"#
                )
            case "paginationToken=p1": .json(200, #"{"paginationToken":"p2","hasMore":true,"notificationHistory":[{"signedPayload":"n2"}]}"#)
            case "paginationToken=p2": .json(200, #"{"hasMore":false,"notificationHistory":[{"signedPayload":"n3"}]}"#)
            default: .error(400, 4_000_014)
            }
        }) { client, server in
            let filter = NotificationHistoryFilter(
                startDate: Date(timeIntervalSince1970: 1_799_000_000), endDate: Date(timeIntervalSince1970: 1_800_000_000),
                transactionID: "2000000000000001", onlyFailures: true)
            var pages: [[NotificationHistoryPage.Item]] = []
            let answer = await client.notificationHistory(filter, environment: .sandbox) { pages.append($0.notificationHistory) }
            #expect(answer.value == 3)
            #expect(pages.map { $0.map(\.signedPayload) } == [["n1"], ["n2"], ["n3"]])
            #expect(pages[0][0].sendAttempts == [SendAttempt(attemptDate: 1_800_000_000_123, sendAttemptResult: "TIMED_OUT")])
            #expect(server.requests.map(\.method) == ["POST", "POST", "POST"])
            let body = #"{"endDate":1800000000000,"onlyFailures":true,"startDate":1799000000000,"transactionId":"2000000000000001"}"#
            #expect(server.requests.allSatisfy { String(decoding: $0.body, as: UTF8.self) == body })
            #expect(server.requests.allSatisfy { $0.header("Content-Type") == "application/json" })
        }
    }

    /// A failure part-way: the pages before it were handed over, the failing one is not, and
    /// the answer says why by code, with every request's record.
    @Test func notificationHistoryHandsOverThePagesBeforeAFailure() async throws {
        let filter = NotificationHistoryFilter(startDate: Date(timeIntervalSince1970: 1_799_000_000), endDate: Date(timeIntervalSince1970: 1_800_000_000))
        try await withAPIServer({ request in
            switch request.query {
            case "": .json(200, #"{"paginationToken":"p1","hasMore":true,"notificationHistory":[{"signedPayload":"n1"}]}"#)
            case "paginationToken=p1": .json(200, #"{"hasMore":true,"notificationHistory":[{"signedPayload":"n2"}]}"#)
            default: .error(400, 4_000_014)
            }
        }) { client, server in
            var pages: [[String]] = []
            let answer = await client.notificationHistory(filter, environment: .production) { pages.append($0.notificationHistory.map(\.signedPayload)) }
            #expect(pages == [["n1"]])
            #expect(answer.failure?.code == .invalidResponse)
            #expect(answer.records.count == 2)
            #expect(server.requests.count == 2)
        }
        try await withAPIServer({ request in
            request.query.isEmpty
                ? .json(200, #"{"paginationToken":"p1","hasMore":true,"notificationHistory":[{"signedPayload":"n1"}]}"#) : .error(400, 4_000_014)
        }) { client, _ in
            var pages = 0
            let answer = await client.notificationHistory(filter, environment: .production) { _ in pages += 1 }
            #expect(pages == 1)
            #expect(answer.failure?.code == .apiError)
            #expect(answer.failure?.apiError == .invalidPaginationToken)
            #expect(answer.records.map(\.apiError) == [nil, .invalidPaginationToken])
        }
    }

    // MARK: Environments

    @Test func autoAsksSandboxAfter4040010() async throws {
        try await withAPIServer({ request in
            request.path.hasPrefix("/production/") ? .error(404, 4_040_010) : .json(200, transactionInfoBody)
        }) { client, server in
            let events = EventBox()
            let answer = await client.transactionInfo("2000000000000001") { events.add($0) }
            #expect(answer.value != nil)
            #expect(answer.environment == .sandbox)
            #expect(answer.records.map(\.environment) == [.production, .sandbox])
            #expect(answer.records.map(\.apiError) == [.transactionIDNotFound, nil])
            #expect(server.requests.map(\.path) == ["/production/inApps/v1/transactions/2000000000000001", "/sandbox/inApps/v1/transactions/2000000000000001"])
            #expect(events.events.contains(.switchingToSandbox(endpoint: .transactionInfo)))
        }
    }

    @Test func autoNotFoundAnywhereSaysSandboxWasTried() async throws {
        let words = Wording("serverapi-client")
        try await withAPIServer({ _ in .error(404, 4_040_010) }) { client, server in
            let answer = await client.transactionInfo("2000000000000001")
            #expect(answer.failure?.code == .apiError)
            #expect(answer.failure?.apiError == .transactionIDNotFound)
            words.said(answer.failure?.reason)
            #expect(server.requests.count == 2)
        }
        words.check()
    }

    @Test func productionUnauthorizedIsExplainedAndNotRetriedInSandbox() async throws {
        let words = Wording("serverapi-client")
        try await withAPIServer({ request in request.path.hasPrefix("/production/") ? .empty(401) : .json(200, transactionInfoBody) }) {
            client, server in
            let answer = await client.transactionInfo("2000000000000001")
            #expect(answer.failure?.code == .unauthorized)
            words.said(answer.failure?.reason)
            words.said(answer.failure?.reason)
            #expect(server.requests.count == 1)
            #expect(answer.records.map(\.httpStatus) == [401])
        }
        words.check()
    }

    @Test func orderLookUpIsProductionOnly() async throws {
        try await withAPIServer({ _ in .json(200, #"{"status":0,"signedTransactions":["o1","o2"]}"#) }) { client, server in
            let refused = await client.lookUpOrder("MQ5X7ABCDE", environment: .sandbox)
            #expect(refused.failure?.code == .notInSandbox)
            #expect(refused.records.isEmpty)
            #expect(server.requests.isEmpty)
            let answer = await client.lookUpOrder("MQ5X7ABCDE")
            #expect(answer.value == OrderLookupResponse(status: 0, signedTransactions: ["o1", "o2"]))
            #expect(answer.value?.isValid == true)
            #expect(server.requests.map(\.path) == ["/production/inApps/v1/lookup/MQ5X7ABCDE"])
        }
    }

    @Test func statusesDecode() async throws {
        let body = #"{"environment":"Sandbox","bundleId":"com.example.app","appAppleId":1234567890,"data":[{"subscriptionGroupIdentifier":"21000001","lastTransactions":[{"status":3,"originalTransactionId":"2000000000000001","signedTransactionInfo":"st","signedRenewalInfo":"sr"}]}]}"#
        try await withAPIServer({ _ in .json(200, body) }) { client, server in
            let answer = await client.subscriptionStatuses("2000000000000001", status: [.active, .billingRetry], environment: .sandbox)
            let last = try #require(answer.value?.data.first?.lastTransactions.first)
            #expect(last.subscriptionStatus == .billingRetry)
            #expect(last.signedRenewalInfo == "sr")
            #expect(server.requests.map(\.uri) == ["/sandbox/inApps/v1/subscriptions/2000000000000001?status=1&status=3"])
        }
    }

    @Test func testNotificationAndItsStatus() async throws {
        try await withAPIServer({ request in
            request.method == "POST"
                ? .json(200, #"{"testNotificationToken":"ce3af791-365e-4c60-841b-1674b43c1609_1698148900000"}"#)
                : .json(200, #"{"signedPayload":"n","sendAttempts":[{"attemptDate":1698148900000,"sendAttemptResult":"SUCCESS"}]}"#)
        }) { client, server in
            let requested = await client.requestTestNotification(environment: .sandbox)
            let token = try #require(requested.value?.testNotificationToken)
            let status = await client.testNotificationStatus(token, environment: .sandbox)
            #expect(status.value?.sendAttempts.first?.sendAttemptResult == "SUCCESS")
            #expect(server.requests.map(\.uri) == [
                "/sandbox/inApps/v1/notifications/test",
                "/sandbox/inApps/v1/notifications/test/ce3af791-365e-4c60-841b-1674b43c1609_1698148900000",
            ])
        }
    }

    @Test func idsCannotChangeThePathOrQuery() async throws {
        try await withAPIServer({ _ in .json(200, transactionInfoBody) }) { client, server in
            _ = await client.transactionInfo("../x?y=1#", environment: .production)
            #expect(server.requests.map(\.uri) == ["/production/inApps/v1/transactions/%2E%2E%2Fx%3Fy%3D1%23"])
            let empty = await client.transactionInfo(" ", environment: .production)
            #expect(empty.failure?.code == .invalidRequest)
            #expect(server.requests.count == 1)
        }
    }
}

/// Collects client events from concurrent callbacks.
final class EventBox: Sendable {
    private let storage = Mutex<[APIClientEvent]>([])
    func add(_ event: APIClientEvent) { storage.withLock { $0.append(event) } }
    var events: [APIClientEvent] { storage.withLock { $0 } }
}
