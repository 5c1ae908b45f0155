import AppStoreAPI
import AsyncHTTPClient
import Foundation
import NIOCore
import ReceiptCore
@testable import ReceiptSimulator
import ReceiptTrust
import Synchronization
import Testing
import TestSupport
import APITestSupport

/// A sandbox app whose subscriptions cover each answer of Initiate Performance Test.
enum RetentionFixture {
    static let bundleID = "com.example.retention"
    static let appAppleID: Int64 = 1_234_567_890
    static let product = "com.example.retention.pro.monthly"
    /// The active subscription's original id, and its renewal (a transaction id, not original).
    static let active = "3000000000000001"
    static let renewal = "3000000000000002"
    static let familyShared = "3000000000000010"
    static let consumable = "3000000000000020"
    static let expired = "3000000000000030"
    /// Known only in production.
    static let productionOnly = "2000000000000001"
    static let appTransaction = "705000000000000001"

    static var data: ServerAPIData {
        let now = Int64(TestTime.start.timeIntervalSince1970 * 1000)
        let day: Int64 = 86_400_000
        func row(
            _ id: String, original: String, type: String = "Auto-Renewable Subscription", purchase: Int64, expires: Int64?,
            environment: String = "Sandbox", ownership: String = "PURCHASED"
        ) -> [String: JSONValue] {
            var object: [String: JSONValue] = [
                "transactionId": .string(id), "originalTransactionId": .string(original), "bundleId": .string(bundleID),
                "productId": .string(type == "Consumable" ? "com.example.retention.coins" : product), "type": .string(type),
                "purchaseDate": .integer(now + purchase * day), "environment": .string(environment),
                "inAppOwnershipType": .string(ownership), "appTransactionId": .string(appTransaction),
            ]
            if let expires { object["expiresDate"] = .integer(now + expires * day) }
            return object
        }
        return ServerAPIData(
            bundleID: bundleID, appAppleID: appAppleID,
            transactions: [
                row(active, original: active, purchase: -40, expires: -10),
                row(renewal, original: active, purchase: -10, expires: 20),
                row(familyShared, original: familyShared, purchase: -5, expires: 25, ownership: "FAMILY_SHARED"),
                row(consumable, original: consumable, type: "Consumable", purchase: -3, expires: nil),
                row(expired, original: expired, purchase: -60, expires: -30),
                row(productionOnly, original: productionOnly, purchase: -5, expires: 25, environment: "Production"),
            ])
    }

    /// A service on the test clock with `settings`, its realtime URLs kept in `book`.
    static func service(_ settings: PerformanceTestSettings, book: RealtimeURLBook) throws -> ServerAPIService {
        let service = try ServerAPIService(ServerAPIConfiguration(data: data, clock: TestTime().clock))
        service.performanceTests.settings = settings
        service.performanceTests.source = book
        return service
    }

    static let authorization: String = {
        let (credentials, _) = makeTestCredentials(bundleID: bundleID)
        return "Bearer " + ((try? APIToken.mint(credentials, now: TestTime.start)) ?? "")
    }()

    /// Asks the service as a client would (no socket).
    static func ask(_ service: ServerAPIService, _ method: String, _ path: String, body: String = "", environment: String = "sandbox")
        -> ServerAPIReply
    {
        service.answer(ServerAPIRequest(method: method, uri: "/api/\(environment)/inApps/v1/messaging/\(path)", authorization: authorization, body: Array(body.utf8)))
    }

    static func start(_ service: ServerAPIService, _ id: String = active) -> ServerAPIReply {
        ask(service, "POST", "performanceTest", body: #"{"originalTransactionId":"\#(id)"}"#)
    }

    /// A valid realtime answer.
    static let message = #"{"message":{"messageIdentifier":"a1b2c3d4-e5f6-7890-a1b2-c3d4e5f67890"}}"#
}

@Suite struct RealtimeRequestsFromTheSimulator {
    @Test func aSignedRequestVerifiesToTheSimulatorRootWithEveryFieldAsGiven() async throws {
        let book = RealtimeURLBook()
        let service = try RetentionFixture.service(PerformanceTestSettings(totalDuration: 86_400_000, responseTimeThreshold: 600_000), book: book)
        let responder = try await ScriptedServer.start { _ in .json(200, RetentionFixture.message) }
        let fields = RealtimeRequestFields(
            originalTransactionId: RetentionFixture.active, appAppleId: RetentionFixture.appAppleID, productId: RetentionFixture.product,
            userLocale: "fr-CA", environment: .sandbox)
        // What is checked is the request, not its speed: only a hang is late (a full parallel run
        // on two cores has taken over 30 s to answer here).
        let first = try await service.sendRealtimeRequest(fields, to: responder.baseURL + "/retention", limit: 300)
        let second = try await service.sendRealtimeRequest(fields, to: responder.baseURL + "/retention", limit: 300)
        try await responder.stop()

        #expect(first.attempt.result == .success)
        #expect(first.attempt.httpStatus == 200)
        #expect(first.attempt.answer == .message)
        #expect(responder.requests.map(\.method) == ["POST", "POST"])
        #expect(responder.requests.map(\.path) == ["/retention", "/retention"])
        #expect(responder.requests[0].header("Content-Type") == "application/json")
        // The body is RealtimeRequestBody: one key, the JWS.
        let body = try JSONValue.parse(responder.requests[0].body)
        #expect(body.object?.keys.sorted() == ["signedPayload"])
        let token = try #require(body["signedPayload"]?.text)
        #expect(token == first.request.signedPayload)

        let decoded = try ReceiptDecoder().decode(text: token)
        #expect(decoded.format == .realtimeRequest)
        let request = try #require(decoded.realtimeRequest)
        #expect(request.originalTransactionID == RetentionFixture.active)
        #expect(request.appAppleID == RetentionFixture.appAppleID)
        #expect(request.productID == RetentionFixture.product)
        #expect(request.userLocale == "fr-CA")
        #expect(request.environment == "Sandbox")
        #expect(request.signedDate == TestTime.start)
        #expect(request.otherFields.isEmpty)
        let identifier = try #require(request.requestIdentifier)
        #expect(UUID(uuidString: identifier) != nil)
        #expect(identifier == identifier.lowercased())
        // Each request has its own identifier.
        #expect(second.request.requestIdentifier != first.request.requestIdentifier)

        // Trusted through the simulator's root only, by the project's own trust code.
        let options = TrustOptions(now: TestTime.start)
        let ours = TrustEvaluator(anchors: try TrustAnchors.apple.addingTestRoots([service.pki.rootDER]))
        #expect(await ours.evaluate(decoded, options: options).verdict == .test)
        #expect(await TrustEvaluator().evaluate(decoded, options: options).verdict == .invalid)
        let header = try JWSToken(compact: Array(token.utf8))
        #expect(header.certificateChain == [service.pki.leafDER, service.pki.intermediateDER, service.pki.rootDER])
    }

    @Test func theControlEndpointSendsOneAndAnswersWhatTheResponderSaid() async throws {
        let simulator = try await ServerAPISimulator.start(ServerAPIConfiguration(data: RetentionFixture.data, clock: TestTime().clock))
        let responder = try await ScriptedServer.start { _ in .json(200, RetentionFixture.message) }
        let base = "http://127.0.0.1:\(simulator.port)"
        func control(_ query: String) async throws -> (Int, JSONValue?) {
            var request = HTTPClientRequest(url: base + "/control/realtime?" + query)
            request.method = .POST
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(600))
            let bytes = try await response.body.collect(upTo: 1 << 20)
            return (Int(response.status.code), try? JSONValue.parse(Array(buffer: bytes)))
        }
        let target = (responder.baseURL + "/retention").addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        let (status, answer) = try await control(
            "url=\(target)&original-transaction-id=\(RetentionFixture.active)&locale=de-DE&environment=sandbox&timeout-ms=600000")
        #expect(status == 200)
        #expect(answer?["sendAttemptResult"]?.text == "SUCCESS")
        #expect(answer?["httpStatus"]?.int64 == 200)
        #expect(answer?["answer"]?.text == "message")
        #expect(answer?["body"] == (try JSONValue.parse(Array(RetentionFixture.message.utf8))))
        #expect(answer?["url"]?.text == responder.baseURL + "/retention")
        // The product is the subscription's, from the simulator's data; the app is the data's.
        #expect(answer?["request"]?["productId"]?.text == RetentionFixture.product)
        #expect(answer?["request"]?["appAppleId"]?.int64 == RetentionFixture.appAppleID)
        #expect(answer?["request"]?["userLocale"]?.text == "de-DE")
        #expect(answer?["request"]?["environment"]?.text == "Sandbox")
        #expect(answer?["request"]?["originalTransactionId"]?.text == RetentionFixture.active)
        #expect(responder.requests.count == 1)

        // Refused before anything is sent: no id, an unknown subscription without a product,
        // an unknown parameter, plain http off loopback, no URL set.
        #expect(try await control("url=\(target)").0 == 400)
        #expect(try await control("url=\(target)&original-transaction-id=1").0 == 400)
        #expect(try await control("url=\(target)&original-transaction-id=1&product-id=p&colour=red").0 == 400)
        #expect(try await control("url=http%3A%2F%2Fexample.com%2Fr&original-transaction-id=1&product-id=p").0 == 400)
        #expect(try await control("original-transaction-id=\(RetentionFixture.active)&environment=sandbox").0 == 400)
        #expect(responder.requests.count == 1)
        // With the URL set for the environment, it is the default target.
        simulator.service.performanceTests.source = RealtimeURLBook([.sandbox: responder.baseURL + "/sandbox"])
        let (defaulted, sent) = try await control("original-transaction-id=1&product-id=p&environment=sandbox&timeout-ms=600000")
        #expect(defaulted == 200)
        #expect(sent?["url"]?.text == responder.baseURL + "/sandbox")
        #expect(responder.requests.last?.path == "/sandbox")
        try await responder.stop()
        try await simulator.stop()
    }
}

@Suite struct RealtimeAnswersJudgedAsApple {
    @Test func exactlyOneOfTheFourAnswersIsValid() {
        let id = #""messageIdentifier":"a1b2c3d4-e5f6-7890-a1b2-c3d4e5f67890""#
        let table: [(String, RealtimeAnswerKind?)] = [
            (#"{"message":{\#(id)}}"#, .message),
            (#"{"message":{\#(id)},"alternateProduct":null}"#, .message),
            (#"{"message":{\#(id)},"extra":1}"#, .message),
            (#"{"alternateProduct":{\#(id),"productId":"p.yearly"}}"#, .alternateProduct),
            (#"{"alternateProduct":{\#(id),"productId":"p.yearly","billingPlanType":"MONTHLY"}}"#, .alternateProduct),
            (#"{"alternateProduct":{\#(id),"productId":"p.yearly","billingPlanType":"WEEKLY"}}"#, nil),
            (#"{"alternateProduct":{\#(id)}}"#, nil),
            (#"{"promotionalOffer":{\#(id),"promotionalOfferSignatureV2":"a.b.c"}}"#, .promotionalOffer),
            (#"{"promotionalOffer":{\#(id),"promotionalOfferSignatureV1":{"keyId":"k"}}}"#, .promotionalOffer),
            (#"{"promotionalOffer":{\#(id),"promotionalOfferSignatureV2":"a.b.c","promotionalOfferSignatureV1":{}}}"#, nil),
            (#"{"promotionalOffer":{\#(id)}}"#, nil),
            (#"{"advancedCommerceInfo":{\#(id),"advancedCommerceData":"e30="}}"#, .advancedCommerceInfo),
            (#"{"message":{\#(id)},"alternateProduct":{\#(id),"productId":"p"}}"#, nil),
            (#"{"message":{"messageIdentifier":"not-a-uuid"}}"#, nil),
            (#"{"message":{}}"#, nil),
            (#"{"message":"a1b2c3d4-e5f6-7890-a1b2-c3d4e5f67890"}"#, nil),
            ("{}", nil),
            ("[]", nil),
            ("OK", nil),
            ("", nil),
        ]
        for (body, kind) in table {
            #expect(RealtimeAnswerKind.of(Array(body.utf8)) == kind, "\(body)")
        }
    }
}

@Suite struct PerformanceTestVerdicts {
    /// Starts a test against `responder`'s URL and awaits its end: the start's answer and the
    /// result document.
    func run(_ settings: PerformanceTestSettings, responder: @escaping @Sendable (Int) -> ScriptedResponse) async throws -> (
        start: JSONValue?, result: JSONValue, requests: [SeenRequest], book: RealtimeURLBook
    ) {
        let count = Mutex(0)
        let server = try await ScriptedServer.start { _ in
            responder(count.withLock { n in
                n += 1
                return n
            })
        }
        let book = RealtimeURLBook([.sandbox: server.baseURL + "/retention"])
        let service = try RetentionFixture.service(settings, book: book)
        let started = RetentionFixture.start(service)
        #expect(started.status == 200)
        let id = try #require(started.json?["requestId"]?.text)
        let result = try #require(await service.performanceTests.completion(of: id))
        // Get Performance Test Results says the same.
        #expect(RetentionFixture.ask(service, "GET", "performanceTest/result/\(id)").json == result)
        try await server.stop()
        return (started.json, result, server.requests, book)
    }

    @Test func aResponderThatAnswersAtOncePasses() async throws {
        // A threshold far above any loopback answer: this test is about the verdict, and a
        // loaded machine must not turn it into a timing test.
        let settings = PerformanceTestSettings(maxConcurrentRequests: 10, totalRequests: 20, totalDuration: 86_400_000, responseTimeThreshold: 600_000)
        let (start, result, requests, book) = try await run(settings) { _ in .json(200, RetentionFixture.message) }
        #expect(start?["config"] == settings.config)
        #expect(start?["config"]?["maxConcurrentRequests"]?.int64 == 10)
        #expect(start?["config"]?["successRateThreshold"]?.int64 == 95)
        #expect(result["result"]?.text == "PASS")
        #expect(result["successRate"]?.int64 == 100)
        #expect(result["numPending"]?.int64 == 0)
        #expect(result["failures"] == .object([:]))
        #expect(result["target"]?.text == book.passedTargets.first)
        #expect(result["responseTimes"]?.object?.keys.sorted() == ["average", "p50", "p90", "p95", "p99"])
        #expect(book.passedTargets.count == 1)
        // 20 signed requests for the subscription, each with its own identifier.
        #expect(requests.count == 20)
        let payloads = try requests.map { request in
            try #require(ReceiptDecoder().decode(text: try JSONValue.parse(request.body)["signedPayload"]?.text ?? "").realtimeRequest)
        }
        #expect(Set(payloads.compactMap(\.requestIdentifier)).count == 20)
        #expect(Set(payloads.compactMap(\.originalTransactionID)) == [RetentionFixture.active])
        #expect(Set(payloads.compactMap(\.productID)) == [RetentionFixture.product])
        #expect(Set(payloads.compactMap(\.environment)) == ["Sandbox"])
        #expect(Set(payloads.compactMap(\.appAppleID)) == [RetentionFixture.appAppleID])
    }

    @Test func aResponderThatTakes800msFailsWithEveryRequestTimedOut() async throws {
        // Apple's 700 ms: each answer comes 100 ms too late and is not waited for. 20 requests,
        // 10 at a time: two rounds of 700 ms, not 20 × 800 ms.
        let settings = PerformanceTestSettings(maxConcurrentRequests: 10, totalRequests: 20, totalDuration: 86_400_000, responseTimeThreshold: 700)
        let (_, result, requests, book) = try await run(settings) { _ in .later(milliseconds: 800, .json(200, RetentionFixture.message)) }
        #expect(result["result"]?.text == "FAIL")
        #expect(result["successRate"]?.int64 == 0)
        #expect(result["numPending"]?.int64 == 0)
        #expect(result["failures"] == .object(["TIMED_OUT": .integer(20)]))
        #expect(requests.count == 20)
        #expect(book.passedTargets.isEmpty)
    }

    @Test func eachFaultIsNamedAsApplesSendAttemptResult() async throws {
        let settings = PerformanceTestSettings(maxConcurrentRequests: 2, totalRequests: 4, totalDuration: 86_400_000, responseTimeThreshold: 600_000)
        let table: [(ScriptedResponse, String)] = [
            (.json(200, "<html>OK</html>"), "INVALID_RESPONSE"),
            (.json(200, "{}"), "INVALID_RESPONSE"),
            (.json(500, RetentionFixture.message), "UNSUCCESSFUL_HTTP_RESPONSE_CODE"),
            (.json(204, ""), "UNSUCCESSFUL_HTTP_RESPONSE_CODE"),
            (.json(302, "", headers: [("Location", "/elsewhere")]), "UNSUCCESSFUL_HTTP_RESPONSE_CODE"),
            (.json(200, RetentionFixture.message, headers: [("Content-Type", "application/json; charset=iso-8859-1")]), "UNSUPPORTED_CHARSET"),
            (.drop, "PREMATURE_CLOSE"),
        ]
        for (response, name) in table {
            let (_, result, _, book) = try await run(settings) { _ in response }
            #expect(result["result"]?.text == "FAIL", "\(name)")
            #expect(result["failures"] == .object([name: .integer(4)]), "\(name)")
            #expect(book.passedTargets.isEmpty)
        }
    }

    @Test func passingTakesTheSuccessRateThreshold() async throws {
        let settings = PerformanceTestSettings(maxConcurrentRequests: 1, totalRequests: 20, totalDuration: 86_400_000, responseTimeThreshold: 600_000)
        // One failure in 20 is 95 %: a pass at 95; two are 90 %: a fail.
        for (failing, verdict, rate) in [(1, "PASS", 95), (2, "FAIL", 90)] {
            let (_, result, _, book) = try await run(settings) { n in n <= failing ? .json(500, "{}") : .json(200, RetentionFixture.message) }
            #expect(result["result"]?.text == verdict)
            #expect(result["successRate"]?.int64 == Int64(rate))
            #expect(result["failures"] == .object(["UNSUCCESSFUL_HTTP_RESPONSE_CODE": .integer(Int64(failing))]))
            #expect(book.passedTargets.count == (verdict == "PASS" ? 1 : 0))
        }
    }

    @Test func aRefusedConnectionIsNoResponse() async throws {
        // Port 1 is privileged and never listened on here: refused at once, and no server of a
        // test running beside this one can take it over (a freed ephemeral port can be).
        let url = "http://127.0.0.1:1/retention"
        let book = RealtimeURLBook([.sandbox: url])
        // A refusal is at once; the threshold only keeps a loaded machine from making it late.
        let service = try RetentionFixture.service(
            PerformanceTestSettings(maxConcurrentRequests: 2, totalRequests: 3, totalDuration: 86_400_000, responseTimeThreshold: 600_000), book: book)
        let id = try #require(RetentionFixture.start(service).json?["requestId"]?.text)
        let result = try #require(await service.performanceTests.completion(of: id))
        #expect(result["failures"] == .object(["NO_RESPONSE": .integer(3)]))
        #expect(result["result"]?.text == "FAIL")
    }
}

@Suite struct PerformanceTestRefusals {
    func code(_ reply: ServerAPIReply) -> Int64? { reply.json?["errorCode"]?.int64 }

    @Test func initiateRefusesWhatApplesRefusesWithItsCodes() throws {
        let service = try RetentionFixture.service(PerformanceTestSettings(), book: RealtimeURLBook([.sandbox: "http://127.0.0.1:1/r"]))
        func start(_ body: String) -> (Int, Int64?) {
            let reply = RetentionFixture.ask(service, "POST", "performanceTest", body: body)
            return (reply.status, code(reply))
        }
        func id(_ text: String) -> String { #"{"originalTransactionId":"\#(text)"}"# }
        #expect(start("") == (400, 4_000_211))
        #expect(start("[1]") == (400, 4_000_211))
        #expect(start(#"{"originalTransactionId":3000000000000001}"#) == (400, 4_000_211))
        #expect(start(#"{"transactionId":"3000000000000001"}"#) == (400, 4_000_211))
        #expect(start(id("abc")) == (400, 4_000_006))
        #expect(start(id("9999999999")) == (400, 4_000_006))
        #expect(start(id(RetentionFixture.productionOnly)) == (400, 4_000_006))
        #expect(start(id(RetentionFixture.appTransaction)) == (400, 4_000_048))
        #expect(start(id(RetentionFixture.renewal)) == (400, 4_000_187))
        #expect(start(id(RetentionFixture.familyShared)) == (400, 4_000_185))
        #expect(start(id(RetentionFixture.consumable)) == (400, 4_000_211))
        #expect(start(id(RetentionFixture.expired)) == (400, 4_000_211))
        // Apple's host for production has no such path.
        let production = RetentionFixture.ask(service, "POST", "performanceTest", body: id(RetentionFixture.active), environment: "production")
        #expect(production.status == 404)
        #expect(production.body.isEmpty)
        #expect(RetentionFixture.ask(service, "GET", "performanceTest/result/\(UUID().uuidString)", environment: "production").status == 404)
        // Without a token: 401, as every endpoint.
        let anonymous = service.answer(
            ServerAPIRequest(method: "POST", uri: "/api/sandbox/inApps/v1/messaging/performanceTest", authorization: nil, body: Array(id(RetentionFixture.active).utf8)))
        #expect(anonymous.status == 401)
    }

    @Test func initiateNeedsASandboxRealtimeURL() throws {
        let book = RealtimeURLBook([.production: "https://example.com/realtime"])
        let service = try RetentionFixture.service(PerformanceTestSettings(), book: book)
        let reply = RetentionFixture.start(service)
        #expect(reply.status == 404)
        #expect(code(reply) == 4_040_021)
    }

    @Test func aSecondRunWaitsForTheFirstAndResultsAreFoundByTheirID() async throws {
        // A responder that never answers, and a threshold no test reaches: the run stays
        // PENDING until it is cancelled.
        let silent = try await SilentListener.start()
        let book = RealtimeURLBook([.sandbox: silent.url])
        let service = try RetentionFixture.service(PerformanceTestSettings(maxConcurrentRequests: 1, totalRequests: 2, totalDuration: 86_400_000, responseTimeThreshold: 600_000), book: book)
        let first = RetentionFixture.start(service)
        #expect(first.status == 200)
        let id = try #require(first.json?["requestId"]?.text)
        #expect(UUID(uuidString: id) != nil)
        let second = RetentionFixture.start(service)
        #expect(second.status == 400)
        #expect(code(second) == 4_000_213)

        let pending = RetentionFixture.ask(service, "GET", "performanceTest/result/\(id.uppercased())")
        #expect(pending.status == 200)
        #expect(pending.json?["result"]?.text == "PENDING")
        #expect(pending.json?["numPending"]?.int64 == 2)
        #expect(pending.json?["target"]?.text == silent.url)

        let malformed = RetentionFixture.ask(service, "GET", "performanceTest/result/not-a-uuid")
        #expect((malformed.status, code(malformed)) == (400, 4_000_212))
        let unknown = RetentionFixture.ask(service, "GET", "performanceTest/result/\(UUID().uuidString)")
        #expect((unknown.status, code(unknown)) == (404, 4_040_018))

        service.performanceTests.cancelRunning()
        let ended = try #require(await service.performanceTests.completion(of: id))
        #expect(ended["result"]?.text == "FAIL")
        #expect(ended["numPending"]?.int64 == 0)
        #expect(ended["failures"] == .object(["OTHER": .integer(2)]))
        // Once it ended, another may start.
        #expect(RetentionFixture.start(service).status == 200)
        service.performanceTests.cancelRunning()
        try await silent.stop()
    }

    @Test func theSettingsAreChangedThroughTheControlEndpoint() throws {
        let service = try RetentionFixture.service(PerformanceTestSettings(), book: RealtimeURLBook())
        func control(_ method: String, _ query: String) -> ServerAPIReply {
            service.answer(ServerAPIRequest(method: method, uri: "/control/performance-test" + query, authorization: nil))
        }
        let changed = control("POST", "?total-requests=1000&response-time-threshold-ms=500")
        #expect(changed.status == 200)
        #expect(changed.json?["config"] == PerformanceTestSettings(totalRequests: 1000, responseTimeThreshold: 500).config)
        #expect(service.performanceTests.settings == PerformanceTestSettings(totalRequests: 1000, responseTimeThreshold: 500))
        #expect(control("GET", "").json?["config"]?["totalRequests"]?.int64 == 1000)
        #expect(control("POST", "?total-requests=0").status == 400)
        #expect(control("POST", "?success-rate-threshold=101").status == 400)
        #expect(control("POST", "?speed=fast").status == 400)
        #expect(control("DELETE", "").status == 405)
        #expect(service.performanceTests.settings.totalRequests == 1000)
    }
}
