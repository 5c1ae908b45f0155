import APITestSupport
import Synchronization
@testable import AppStoreClients
import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import AppStoreAPI
import ReceiptCore
@testable import ReceiptSimulator
import ReceiptTrust
import RetryEngine
import ServiceTestSupport
import Testing
import TestSupport

// The EXISTING AppStoreServerAPIClient against the API simulator on loopback: what a support
// engineer's look-up does, end to end, with the simulator's clock shared with the client's so
// token expiry, statuses and Retry-After are exact.

/// A simulator and a client sharing `clock`; the simulator checks tokens against the
/// client's key unless `serverKey` says otherwise.
func withAPISimulator(
    data: ServerAPIData? = nil, clock: TestTime = TestTime(), clientClock: ServiceClock? = nil, serverKey: P256.Signing.PublicKey? = nil,
    faultRate: Double = 0, seed: UInt64 = 1, script: [APIFault] = [], pageSize: Int = 20,
    bundleID: String = ServerAPIData.demoBundleID,
    _ body: (AppStoreServerAPIClient, ServerAPISimulator) async throws -> Void
) async throws {
    let (credentials, key) = makeTestCredentials(bundleID: bundleID)
    let simulator = try await ServerAPISimulator.start(
        ServerAPIConfiguration(
            faultRate: faultRate, seed: seed, data: data, publicKey: serverKey ?? key.publicKey, clock: clock.clock, pageSize: pageSize),
        script: script)
    // A long timeout: under a full parallel `swift test` on two cores the test's task can wait
    // seconds for a thread, and a timed-out page would add a retry to the exact records.
    let client = AppStoreServerAPIClient(
        credentials: credentials, hosts: try simulator.hosts, retry: wallClockRetry, requestTimeout: .seconds(60),
        clock: clientClock ?? clock.clock, random: { 0.5 })
    do {
        try await body(client, simulator)
    } catch {
        try await client.shutdown()
        try await simulator.stop()
        throw error
    }
    try await client.shutdown()
    try await simulator.stop()
}

/// The payload of a compact JWS (not verified: trust is checked separately).
func jwsPayload(_ jws: String) throws -> JSONValue {
    try JWSToken(compact: Array(jws.utf8)).payload
}

/// `count` production transactions of one customer, a day apart, oldest first; every third
/// one a consumable.
func manyTransactions(_ count: Int, start: Int64 = 1_700_000_000_000) -> ServerAPIData {
    var transactions: [[String: JSONValue]] = []
    for i in 0..<count {
        let id: JSONValue = .string(String(2_000_000_100_000_000 + i))
        let consumable = i % 3 == 0
        var t: [String: JSONValue] = ["transactionId": id, "originalTransactionId": id, "bundleId": .string("com.example.app")]
        t["productId"] = .string(consumable ? "coins" : "pro")
        t["type"] = .string(consumable ? "Consumable" : "Non-Consumable")
        t["purchaseDate"] = .integer(start + Int64(i) * 86_400_000)
        t["environment"] = .string("Production")
        t["appTransactionId"] = .string("704")
        transactions.append(t)
    }
    return ServerAPIData(bundleID: "com.example.app", appAppleID: 1_234_567_890, transactions: transactions)
}

/// A bearer token made by hand, so the claims can be what `APIToken` refuses to make.
func handMadeToken(key: P256.Signing.PrivateKey, claims: String, alg: String = "ES256") throws -> String {
    func b64(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
    let input = b64(Data(#"{"alg":"\#(alg)","kid":"2X9R4HXF34","typ":"JWT"}"#.utf8)) + "." + b64(Data(claims.utf8))
    return input + "." + b64(try key.signature(for: Data(input.utf8)).rawRepresentation)
}

@Suite struct ServerAPISimulatorTests {
    static let now = Int64(TestTime.start.timeIntervalSince1970)

    // MARK: Look-ups

    @Test func orderIDLooksUpTheCustomersPurchase() async throws {
        try await withAPISimulator { client, _ in
            let answer = await client.lookUpOrder(ServerAPIData.demoOrderID)
            let order = try #require(answer.value)
            #expect(order.status == 0)
            #expect(try order.signedTransactions.map { try jwsPayload($0)["transactionId"]?.text } == ["2000000900000001"])
            #expect(answer.environment == .production)
            let unknown = await client.lookUpOrder("ZZZZ9ZZZZZ")
            #expect(unknown.value?.isValid == false)
            #expect(unknown.value?.signedTransactions == [])
        }
    }

    @Test func transactionInfoIsSignedWithTheSimulatorsNow() async throws {
        try await withAPISimulator { client, _ in
            let answer = await client.transactionInfo(ServerAPIData.demoTransactionID, environment: .production)
            let payload = try jwsPayload(try #require(answer.value).signedTransactionInfo)
            #expect(payload["productId"]?.text == "com.example.receiptdash.pro.monthly")
            #expect(payload["signedDate"]?.int64 == Self.now * 1000)
            #expect(payload["purchaseDate"]?.int64 == (Self.now - 75 * 86_400) * 1000)
            #expect(payload["environment"]?.text == "Production")
        }
    }

    @Test func autoEnvironmentReachesSandboxThrough4040010() async throws {
        try await withAPISimulator { client, _ in
            let answer = await client.transactionInfo(ServerAPIData.demoSandboxTransactionID)
            #expect(answer.environment == .sandbox)
            #expect(answer.records.map(\.environment) == [.production, .sandbox])
            #expect(answer.records.map(\.result) == [.apiError(httpStatus: 404, code: .transactionIDNotFound), .success(httpStatus: 200)])
            let info = try #require(answer.value).signedTransactionInfo
            #expect(try jwsPayload(info)["environment"]?.text == "Sandbox")
            // Found nowhere: 4040010 from both, sandbox tried.
            let missing = await client.transactionInfo("2000000999999999")
            #expect(missing.failure?.apiError == .transactionIDNotFound)
            #expect(missing.records.count == 2)
        }
    }

    @Test func historyComesInPagesOf20WithTheSameFiltersOnEveryPage() async throws {
        try await withAPISimulator(data: manyTransactions(45), bundleID: "com.example.app") { client, _ in
            let all = await client.transactionHistory("2000000100000007")
            let pages = try #require(all.value)
            #expect(pages.pages == 3)
            #expect(try pages.signedTransactions.map { try jwsPayload($0)["transactionId"]?.text } == (0..<45).map { String(2_000_000_100_000_000 + $0) })
            #expect(pages.bundleId == "com.example.app")
            #expect(pages.appAppleId == 1_234_567_890)
            #expect(all.records.map { $0.url.contains("revision=") } == [false, true, true])

            // Each page is handed over as it arrives, in order, with the environment that
            // answered: the look-up judges one page while the next is asked.
            let handed = Mutex<[([String], APIEnvironment)]>([])
            let streamed = await client.transactionHistory("2000000100000007", onPage: { tokens, environment in
                handed.withLock { $0.append((tokens, environment)) }
            })
            let pagesHanded = handed.withLock { $0 }
            #expect(pagesHanded.map(\.0.count) == [20, 20, 5])
            #expect(pagesHanded.map(\.1) == [.production, .production, .production])
            #expect(pagesHanded.flatMap(\.0) == streamed.value?.signedTransactions)

            // 30 non-consumables, newest first: two pages, the filters sent again with the revision.
            let filter = TransactionHistoryFilter(productIDs: ["pro"], sort: .descending, revoked: false)
            let filtered = await client.transactionHistory("2000000100000000", filter: filter)
            let ids = try #require(filtered.value).signedTransactions.map { try jwsPayload($0)["transactionId"]?.text }
            #expect(ids == (0..<45).reversed().filter { $0 % 3 != 0 }.map { String(2_000_000_100_000_000 + $0) })
            #expect(filtered.records.count == 2)
            #expect(filtered.records.allSatisfy { $0.url.contains("productId=pro") && $0.url.contains("sort=DESCENDING") })
        }
    }

    @Test func aRevisionIsRefusedWithOtherFilters() async throws {
        let clock = TestTime()
        let service = try ServerAPIService(ServerAPIConfiguration(data: manyTransactions(45), clock: clock.clock))
        let (credentials, _) = makeTestCredentials()
        let token = try APIToken.mint(credentials, now: TestTime.start)
        func get(_ uri: String) -> ServerAPIReply {
            service.answer(ServerAPIRequest(method: "GET", uri: uri, authorization: "Bearer \(token)"))
        }
        let first = get("/api/production/inApps/v2/history/2000000100000000?productId=pro")
        let revision = try #require(first.json?["revision"]?.text)
        #expect(first.json?["hasMore"]?.bool == true)
        #expect(get("/api/production/inApps/v2/history/2000000100000000?productId=pro&revision=\(revision)").status == 200)
        let other = get("/api/production/inApps/v2/history/2000000100000000?productId=coins&revision=\(revision)")
        #expect(other.status == 400)
        #expect(other.json?["errorCode"]?.int64 == 4_000_005)
        #expect(get("/api/production/inApps/v2/history/2000000100000000?revision=bm9wZQ").json?["errorCode"]?.int64 == 4_000_005)
    }

    // MARK: Statuses, refunds, notifications

    @Test func subscriptionStatusesAreComputedAtNow() async throws {
        try await withAPISimulator { client, _ in
            let production = try #require(await client.subscriptionStatuses(ServerAPIData.demoTransactionID).value)
            let found = production.data.map { group in
                (group.subscriptionGroupIdentifier, group.lastTransactions.map { ($0.originalTransactionId, $0.subscriptionStatus) })
            }
            #expect(found.count == 2)
            #expect(found.first?.0 == "21000001")
            #expect(found.first?.1.first?.0 == "2000000900000001")
            #expect(found.first?.1.first?.1 == .active)
            #expect(found.last?.0 == "21000002")
            #expect(found.last?.1.first?.1 == .expired)
            // The active one's latest transaction is the second renewal; its renewal info is Apple's shape.
            let last = try #require(production.data.first?.lastTransactions.first)
            #expect(try jwsPayload(try #require(last.signedTransactionInfo))["transactionId"]?.text == "2000000900000003")
            #expect(try jwsPayload(try #require(last.signedRenewalInfo))["autoRenewStatus"]?.int64 == 1)

            let sandbox = try #require(await client.subscriptionStatuses(ServerAPIData.demoSandboxTransactionID).value)
            #expect(sandbox.data.flatMap(\.lastTransactions).map(\.subscriptionStatus) == [.gracePeriod])
            let onlyExpired = try #require(
                await client.subscriptionStatuses(ServerAPIData.demoTransactionID, status: [.expired], environment: .production).value)
            #expect(onlyExpired.data.map(\.subscriptionGroupIdentifier) == ["21000002"])
        }
    }

    @Test(arguments: [
        // (expires, grace period ends, in billing retry, revoked) relative to now in days → status
        (5, nil, false, nil, SubscriptionAPIStatus.active), (-1, nil, false, nil, .expired), (-1, 3, true, nil, .gracePeriod),
        (-1, nil, true, nil, .billingRetry), (5, nil, false, -1, .revoked), (-1, -0.5, true, nil, .billingRetry),
    ] as [(Double, Double?, Bool, Double?, SubscriptionAPIStatus)])
    func statusFromData(_ expires: Double, _ grace: Double?, _ retry: Bool, _ revoked: Double?, _ expected: SubscriptionAPIStatus) {
        let now: Int64 = 1_800_000_000_000
        func at(_ days: Double) -> Int64 { now + Int64(days * 86_400_000) }
        let row = TransactionRow(
            object: [:], id: "1", originalID: "1", productID: "p", type: TransactionRow.autoRenewable, purchaseMS: at(-30),
            expiresMS: at(expires), revocationMS: revoked.map(at), groupID: "g", ownership: nil, customer: "")
        var renewal: [String: JSONValue] = ["isInBillingRetryPeriod": .bool(retry)]
        if let grace { renewal["gracePeriodExpiresDate"] = .integer(at(grace)) }
        #expect(ServerAPIService.status(row, renewal: renewal, nowMS: now) == expected)
    }

    @Test func refundsAndNotificationHistory() async throws {
        try await withAPISimulator { client, _ in
            let refunds = try #require(await client.refundHistory(ServerAPIData.demoTransactionID).value)
            #expect(try refunds.signedTransactions.map { try jwsPayload($0)["transactionId"]?.text } == ["2000000900000010"])

            let range = NotificationHistoryFilter(
                startDate: TestTime.start.addingTimeInterval(-100 * 86_400), endDate: TestTime.start)
            let all = try #require(await client.notificationHistoryItems(range, environment: .production).value)
            /// The app transaction id of the transaction a notification carries.
            func customer(_ item: NotificationHistoryPage.Item) throws -> String? {
                guard let nested = try jwsPayload(item.signedPayload)["data"]?["signedTransactionInfo"]?.text else { return nil }
                return try jwsPayload(nested)["appTransactionId"]?.text
            }
            let third = try all.filter { try customer($0) == ServerAPIData.demoKindsAppTransactionID }
            #expect(try all.filter { try customer($0) != ServerAPIData.demoKindsAppTransactionID }.map { try jwsPayload($0.signedPayload)["notificationType"]?.text } == [
                    "SUBSCRIBED", "SUBSCRIBED", "DID_RENEW", "EXPIRED", "REFUND", "DID_RENEW", "DID_RENEW", "REFUND", "RESCIND_CONSENT",
                ])
            // The third customer's, in the window (its first purchase is older), by type.
            #expect(
                try third.map { try jwsPayload($0.signedPayload)["notificationType"]?.text ?? "" }.sorted() == [
                    "CONSUMPTION_REQUEST", "DID_CHANGE_RENEWAL_PREF", "DID_CHANGE_RENEWAL_PREF", "DID_CHANGE_RENEWAL_PREF",
                    "DID_CHANGE_RENEWAL_STATUS", "DID_FAIL_TO_RENEW", "DID_FAIL_TO_RENEW", "DID_RENEW", "DID_RENEW", "DID_RENEW", "EXPIRED",
                    "OFFER_REDEEMED", "PRICE_INCREASE", "REFUND", "RENEWAL_EXTENDED", "REVOKE", "SUBSCRIBED",
                ])
            var failures = range
            failures.onlyFailures = true
            let failed = try #require(await client.notificationHistoryItems(failures, environment: .production).value)
            // The first customer's refund, and the two of the third customer's never delivered.
            #expect(
                failed.map { $0.sendAttempts.map(\.sendAttemptResult) } == [
                    ["UNSUCCESSFUL_HTTP_RESPONSE_CODE", "TIMED_OUT"], ["UNSUCCESSFUL_HTTP_RESPONSE_CODE"], ["UNSUCCESSFUL_HTTP_RESPONSE_CODE", "TIMED_OUT"],
                ])
            var byTransaction = range
            byTransaction.transactionID = "2000000900000020"
            #expect(try #require(await client.notificationHistoryItems(byTransaction, environment: .production).value).count == 5)

            let test = try #require(await client.requestTestNotification(environment: .sandbox).value)
            let status = try #require(await client.testNotificationStatus(test.testNotificationToken, environment: .sandbox).value)
            let payload = try jwsPayload(try #require(status.signedPayload))
            #expect(payload["notificationType"]?.text == "TEST")
            #expect(payload["data"]?["environment"]?.text == "Sandbox")
            let elsewhere = await client.testNotificationStatus(test.testNotificationToken, environment: .production)
            #expect(elsewhere.failure?.apiError == .testNotificationNotFound)
        }
    }

    @Test func notificationHistoryPagesWithAToken() async throws {
        let start: Int64 = (Self.now - 10 * 86_400) * 1000
        let notifications: [[String: JSONValue]] = (0..<25).map { i in
            ["notificationType": .string("DID_RENEW"), "notificationUUID": .string("n\(i)"), "signedDate": .integer(start + Int64(i) * 1000)]
        }
        try await withAPISimulator(data: ServerAPIData(notifications: notifications)) { client, _ in
            let filter = NotificationHistoryFilter(startDate: TestTime.start.addingTimeInterval(-20 * 86_400), endDate: TestTime.start)
            let answer = await client.notificationHistoryItems(filter, environment: .production)
            let items = try #require(answer.value)
            let uuids = try items.map { try jwsPayload($0.signedPayload)["notificationUUID"]?.text }
            #expect(uuids == (0..<25).map { "n\($0)" })
            #expect(answer.records.count == 2)
            #expect(answer.records.last?.url.contains("paginationToken=") == true)
        }
    }

    // MARK: The data file

    @Test func theDataFileIsReadAsDocumented() async throws {
        let day: Int64 = 86_400_000
        let now = Self.now * 1000
        let json = """
            {"bundleId": "com.example.app", "appAppleId": 42,
             "orders": {"MQ5X7AAAAA": ["2000000000000002"]},
             "transactions": [
               {"transactionId": "2000000000000001", "originalTransactionId": "2000000000000001", "productId": "m",
                "type": "Auto-Renewable Subscription", "subscriptionGroupIdentifier": "g", "purchaseDate": \(now - 40 * day),
                "expiresDate": \(now - 10 * day), "environment": "Production", "bundleId": "com.example.app"},
               {"transactionId": "2000000000000002", "originalTransactionId": "2000000000000001", "productId": "m",
                "type": "Auto-Renewable Subscription", "subscriptionGroupIdentifier": "g", "purchaseDate": \(now - 10 * day),
                "expiresDate": \(now - 1 * day), "environment": "Production", "bundleId": "com.example.app"}],
             "renewals": [{"originalTransactionId": "2000000000000001", "environment": "Production", "autoRenewStatus": 1,
                           "isInBillingRetryPeriod": true}],
             "notifications": [{"notificationType": "DID_FAIL_TO_RENEW", "signedDate": \(now - day),
                                "data": {"environment": "Production", "signedTransactionInfo": {"transactionId": "2000000000000002"}},
                                "sendAttempts": [{"attemptDate": \(now - day), "sendAttemptResult": "TIMED_OUT"}]}]}
            """
        let data = try ServerAPIData(json: Array(json.utf8))
        try await withAPISimulator(data: data, bundleID: "com.example.app") { client, _ in
            let order = try #require(await client.lookUpOrder("MQ5X7AAAAA").value)
            #expect(try order.signedTransactions.map { try jwsPayload($0)["transactionId"]?.text } == ["2000000000000002"])
            let statuses = try #require(await client.subscriptionStatuses("2000000000000001").value)
            #expect(statuses.appAppleId == 42)
            #expect(statuses.data.flatMap(\.lastTransactions).map(\.subscriptionStatus) == [.billingRetry])
            let range = NotificationHistoryFilter(startDate: TestTime.start.addingTimeInterval(-86_400 * 2), endDate: TestTime.start)
            let items = try #require(await client.notificationHistoryItems(range, environment: .production).value)
            #expect(items.map { $0.sendAttempts.map(\.sendAttemptResult) } == [["TIMED_OUT"]])
            let payload = try jwsPayload(try #require(items.first).signedPayload)
            #expect(payload["sendAttempts"] == nil)
            let nested = try jwsPayload(try #require(payload["data"]?["signedTransactionInfo"]?.text))
            #expect(nested["transactionId"]?.text == "2000000000000002")
        }
        for bad in [
            #"{"transactions": [{"transactionId": "1", "purchaseDate": 1}]}"#, #"{"transactions": [{"environment": "Sandbox", "purchaseDate": 1}]}"#,
            #"{"transactions": [{"transactionId": "1", "environment": "Sandbox"}]}"#, #"{"orders": {"A": "1"}}"#, #"{"renewals": [{}]}"#,
            #"{"transactions": {}}"#, "[]", "not json",
        ] {
            #expect(throws: ServerAPISimulatorError(.invalidData, "")) { try ServerAPIData(json: Array(bad.utf8)) }
        }
    }

    // MARK: Tokens

    @Test func aTokenSignedWithAnotherKeyIs401WithNoBody() async throws {
        try await withAPISimulator(serverKey: P256.Signing.PrivateKey().publicKey) { client, _ in
            let answer = await client.transactionInfo(ServerAPIData.demoTransactionID)
            #expect(answer.failure?.code == .unauthorized)
            // Not retried, not asked in sandbox.
            #expect(answer.records.map(\.result) == [.http(status: 401)])
        }
    }

    @Test func anExpiredTokenIs401() async throws {
        // The client's clock is two hours behind the simulator's: its 5-minute tokens expired long ago.
        let clock = TestTime()
        let behind = ServiceClock(now: { TestTime.start.addingTimeInterval(-7200) }, clock: TestClock())
        try await withAPISimulator(clock: clock, clientClock: behind) { client, _ in
            let answer = await client.transactionInfo(ServerAPIData.demoTransactionID, environment: .production)
            #expect(answer.failure?.code == .unauthorized)
            #expect(answer.records.map(\.result) == [.http(status: 401)])
        }
    }

    @Test func tokensAreCheckedAsAppleChecksThem() throws {
        let key = P256.Signing.PrivateKey()
        let service = try ServerAPIService(ServerAPIConfiguration(publicKey: key.publicKey, clock: TestTime().clock))
        let n = Self.now
        func status(_ claims: String, alg: String = "ES256", signer: P256.Signing.PrivateKey? = nil) throws -> Int {
            let token = try handMadeToken(key: signer ?? key, claims: claims, alg: alg)
            let reply = service.answer(
                ServerAPIRequest(
                    method: "GET", uri: "/api/production/inApps/v1/transactions/\(ServerAPIData.demoTransactionID)",
                    authorization: "Bearer \(token)"))
            if reply.status == 401 { #expect(reply.body.isEmpty) }
            return reply.status
        }
        let bid = ServerAPIData.demoBundleID
        #expect(try status(#"{"aud":"appstoreconnect-v1","bid":"\#(bid)","exp":\#(n + 300),"iat":\#(n),"iss":"i"}"#) == 200)
        #expect(try status(#"{"aud":"appstoreconnect-v1","bid":"\#(bid)","exp":\#(n + 3600),"iat":\#(n),"iss":"i"}"#) == 200)
        // exp more than 60 minutes after iat
        #expect(try status(#"{"aud":"appstoreconnect-v1","bid":"\#(bid)","exp":\#(n + 3601),"iat":\#(n),"iss":"i"}"#) == 401)
        // expired
        #expect(try status(#"{"aud":"appstoreconnect-v1","bid":"\#(bid)","exp":\#(n - 1),"iat":\#(n - 301),"iss":"i"}"#) == 401)
        // wrong audience, no bid, another app's bid, no iss
        #expect(try status(#"{"aud":"appstoreconnect-v2","bid":"\#(bid)","exp":\#(n + 300),"iat":\#(n),"iss":"i"}"#) == 401)
        #expect(try status(#"{"aud":"appstoreconnect-v1","exp":\#(n + 300),"iat":\#(n),"iss":"i"}"#) == 401)
        #expect(try status(#"{"aud":"appstoreconnect-v1","bid":"com.other","exp":\#(n + 300),"iat":\#(n),"iss":"i"}"#) == 401)
        #expect(try status(#"{"aud":"appstoreconnect-v1","bid":"\#(bid)","exp":\#(n + 300),"iat":\#(n)}"#) == 401)
        // another key; another algorithm named
        #expect(
            try status(#"{"aud":"appstoreconnect-v1","bid":"\#(bid)","exp":\#(n + 300),"iat":\#(n),"iss":"i"}"#, signer: P256.Signing.PrivateKey())
                == 401)
        #expect(try status(#"{"aud":"appstoreconnect-v1","bid":"\#(bid)","exp":\#(n + 300),"iat":\#(n),"iss":"i"}"#, alg: "none") == 401)
        // no token, garbage
        for header in [nil, "Bearer", "Bearer a.b.c", "Basic abc", String(repeating: "A", count: 100_000)] {
            #expect(service.answer(ServerAPIRequest(method: "GET", uri: "/api/production/inApps/v1/transactions/1", authorization: header)).status == 401)
        }
    }

    @Test func theKeyFileMayBeAPublicOrAPrivateKey() throws {
        let key = P256.Signing.PrivateKey()
        #expect(try ServerAPIConfiguration.publicKey(pem: key.publicKey.pemRepresentation).rawRepresentation == key.publicKey.rawRepresentation)
        #expect(try ServerAPIConfiguration.publicKey(pem: key.pemRepresentation).rawRepresentation == key.publicKey.rawRepresentation)
        #expect(throws: ServerAPISimulatorError(.invalidKey, "")) { try ServerAPIConfiguration.publicKey(pem: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----") }
    }

    // MARK: Faults

    @Test func aRateLimitIsWaitedOutUntilRetryAfter() async throws {
        let clock = TestTime()
        try await withAPISimulator(clock: clock, script: [.rateLimited(retryAfterSeconds: 1.5), .apiError(httpStatus: 500, code: 5_000_001)]) {
            client, _ in
            let answer = await client.transactionInfo(ServerAPIData.demoTransactionID, environment: .production)
            #expect(answer.value != nil)
            #expect(
                answer.records.map(\.result) == [
                    .apiError(httpStatus: 429, code: .rateLimitExceeded), .apiError(httpStatus: 500, code: .generalInternalRetryable),
                    .success(httpStatus: 200),
                ])
            #expect(answer.records.first?.retryAfter == TestTime.start.addingTimeInterval(1.5))
            #expect(clock.waits.first == 1.5)
        }
    }

    /// The results of every request in a run of look-ups at `faultRate` 0.4.
    static func faultyRun(seed: UInt64) async throws -> (results: [APIAttemptResult], failures: Int, faults: Int) {
        var results: [APIAttemptResult] = []
        var failures = 0
        var faults = 0
        try await withAPISimulator(faultRate: 0.4, seed: seed) { client, simulator in
            for _ in 0..<12 {
                let answer = await client.transactionInfo(ServerAPIData.demoTransactionID, environment: .production)
                if answer.value == nil { failures += 1 }
                results += answer.records.map(\.result)
            }
            faults = simulator.service.faultCount
        }
        return (results, failures, faults)
    }

    @Test func faultsAreRepeatableWithASeedAndRetriedToSuccess() async throws {
        let first = try await Self.faultyRun(seed: 2)
        let again = try await Self.faultyRun(seed: 2)
        #expect(first.failures == 0)
        #expect(first.faults >= 4)
        #expect(first.results.count == 12 + first.faults)
        #expect(first.results == again.results)
        // Each kind of fault is in the mix.
        #expect(first.results.contains(.apiError(httpStatus: 429, code: .rateLimitExceeded)))
        #expect(first.results.contains(.apiError(httpStatus: 500, code: .generalInternalRetryable)))
        #expect(first.results.contains(.http(status: 503)))
        #expect(first.results.contains { if case .transport = $0 { true } else { false } })
        let other = try await Self.faultyRun(seed: 12)
        #expect(other.results != first.results)
    }

    // MARK: Trust

    @Test func everySignedItemVerifiesWithTheSimulatorsRootAsAnchor() async throws {
        try await withAPISimulator { client, simulator in
            var tokens: [String] = []
            tokens += try #require(await client.lookUpOrder(ServerAPIData.demoOrderID).value).signedTransactions
            tokens.append(try #require(await client.transactionInfo(ServerAPIData.demoSandboxTransactionID).value).signedTransactionInfo)
            tokens += try #require(await client.transactionHistory(ServerAPIData.demoTransactionID).value).signedTransactions
            tokens += try #require(await client.refundHistory(ServerAPIData.demoTransactionID).value).signedTransactions
            for id in [ServerAPIData.demoTransactionID, ServerAPIData.demoSandboxTransactionID] {
                for last in try #require(await client.subscriptionStatuses(id).value).data.flatMap(\.lastTransactions) {
                    tokens += [last.signedTransactionInfo, last.signedRenewalInfo].compactMap { $0 }
                }
            }
            let range = NotificationHistoryFilter(startDate: TestTime.start.addingTimeInterval(-100 * 86_400), endDate: TestTime.start)
            for item in try #require(await client.notificationHistoryItems(range, environment: .production).value) {
                tokens.append(item.signedPayload)
                tokens += ["signedTransactionInfo", "signedRenewalInfo"].compactMap { try? jwsPayload(item.signedPayload)["data"]?[$0]?.text }
                tokens += [try? jwsPayload(item.signedPayload)["appData"]?["signedAppTransactionInfo"]?.text].compactMap { $0 }
            }
            // 1 order + 1 info + 5 history + 1 refund + 6 statuses + 9 notifications, 8 with a
            // nested transaction and RESCIND_CONSENT with its app transaction; and the third
            // customer's 17 notifications in the window, each with its transaction.
            #expect(tokens.count == 32 + 17 * 2)

            let ours = TrustEvaluator(anchors: try TrustAnchors.apple.addingTestRoots([simulator.pki.rootDER]))
            let apple = TrustEvaluator()
            let options = TrustOptions(now: TestTime.start)
            for token in tokens {
                let decoded = try ReceiptDecoder().decode(text: token)
                let report = await ours.evaluate(decoded, options: options)
                #expect(report.verdict == .test, "\(report.steps.filter { $0.outcome != .pass && $0.name != "root" }.map(\.reason))")
                #expect(await apple.evaluate(decoded, options: options).verdict == .invalid)
            }
            // The root written for --root-ca is the x5c root.
            let header = try JWSToken(compact: Array(tokens[0].utf8))
            #expect(header.certificateChain == [simulator.pki.leafDER, simulator.pki.intermediateDER, simulator.pki.rootDER])
        }
    }

    // MARK: Hostile requests

    @Test func hostileRequestsAreAnsweredNotCrashedOn() throws {
        let service = try ServerAPIService(ServerAPIConfiguration(clock: TestTime().clock))
        let (credentials, _) = makeTestCredentials(bundleID: ServerAPIData.demoBundleID)
        let auth = "Bearer " + (try APIToken.mint(credentials, now: TestTime.start))
        func ask(_ method: String, _ uri: String, body: [UInt8] = [], tooLarge: Bool = false) -> (Int, Int64?) {
            let reply = service.answer(ServerAPIRequest(method: method, uri: uri, authorization: auth, body: body, bodyTooLarge: tooLarge))
            return (reply.status, reply.json?["errorCode"]?.int64)
        }
        #expect(ask("GET", "/api/production/inApps/v1/transactions/..%2F..%2Fetc").0 == 400)
        #expect(ask("GET", "/api/production/inApps/v1/transactions/%zz") == (400, 4_000_000))
        #expect(ask("GET", "/api/production/inApps/v1/transactions/99999") == (404, 4_040_010))
        #expect(ask("GET", "/api/production/inApps/v1/transactions/abc") == (400, 4_000_006))
        #expect(ask("GET", "/api/production/inApps/v1/lookup/MQ5X7ABCDE").0 == 200)
        #expect(ask("GET", "/api/sandbox/inApps/v1/lookup/MQ5X7ABCDE") == (404, 4_040_010))
        #expect(ask("GET", "/api/staging/inApps/v1/transactions/1").0 == 404)
        #expect(ask("GET", "/api/production/../../inApps").0 == 404)
        #expect(ask("DELETE", "/api/production/inApps/v1/transactions/2000000900000001").0 == 404)
        #expect(ask("GET", "/api/production/inApps/v2/history/2000000900000001?" + String(repeating: "a=b&", count: 500)) == (400, 4_000_000))
        #expect(ask("GET", "/api/production/inApps/v2/history/2000000900000001?productType=GIFT") == (400, 4_000_000))
        #expect(ask("GET", "/api/production/inApps/v2/history/2000000900000001?startDate=yesterday") == (400, 4_000_000))
        #expect(ask("GET", "/api/production/inApps/v1/subscriptions/2000000900000001?status=9") == (400, 4_000_000))
        #expect(ask("POST", "/api/production/inApps/v1/notifications/history", body: Array("[[[[[[[[[[[[[[[[[[[[".utf8)) == (400, 4_000_000))
        #expect(ask("POST", "/api/production/inApps/v1/notifications/history", tooLarge: true) == (400, 4_000_000))
        let both = #"{"startDate":\#(Self.now * 1000 - 1000),"endDate":\#(Self.now * 1000),"notificationType":"REFUND","transactionId":"1"}"#
        #expect(ask("POST", "/api/production/inApps/v1/notifications/history", body: Array(both.utf8)) == (400, 4_000_019))
        #expect(ask("GET", "/api/production/inApps/v1/notifications/test/nope") == (404, 4_040_008))
    }

    @Test func aHugeBodyIsCappedOnTheSocket() async throws {
        let (credentials, key) = makeTestCredentials(bundleID: ServerAPIData.demoBundleID)
        let simulator = try await ServerAPISimulator.start(ServerAPIConfiguration(publicKey: key.publicKey, clock: TestTime().clock))
        var request = HTTPClientRequest(url: simulator.productionURL + "/inApps/v1/notifications/history")
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer " + (try APIToken.mint(credentials, now: TestTime.start)))
        request.body = .bytes(ByteBuffer(repeating: UInt8(ascii: "["), count: 4 * 1024 * 1024))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(600))
        let body = try await response.body.collect(upTo: 1 << 20)
        try await simulator.stop()
        #expect(response.status.code == 400)
        #expect(try JSONValue.parse(Array(buffer: body))["errorCode"]?.int64 == 4_000_000)
    }

    // MARK: Beside verifyReceipt

    @Test func theSimulatorCommandsServerAnswersBothAPIs() async throws {
        let (credentials, key) = makeTestCredentials(bundleID: ServerAPIData.demoBundleID)
        let clock = TestTime()
        let service = try ServerAPIService(ServerAPIConfiguration(publicKey: key.publicKey, clock: clock.clock))
        let simulator = try await VerifyReceiptSimulator.start(SimulatorConfiguration(), api: service)
        let client = AppStoreServerAPIClient(
            credentials: credentials, hosts: try APIHosts(production: simulator.apiProductionURL, sandbox: simulator.apiSandboxURL),
            retry: wallClockRetry, requestTimeout: .seconds(60), clock: clock.clock)
        let order = await client.lookUpOrder(ServerAPIData.demoRefundedOrderID)
        let verify = VerifyReceiptClient(endpoints: try simulator.endpoints, retry: wallClockRetry)
        let receipt = await verify.verify(receiptData: try ServiceFixture.receiptData("production.b64"))
        try await client.shutdown()
        try await verify.shutdown()
        try await simulator.stop()
        #expect(try order.value?.signedTransactions.map { try jwsPayload($0)["transactionId"]?.text } == ["2000000900000010"])
        #expect(receipt.status == 0)
    }
}
