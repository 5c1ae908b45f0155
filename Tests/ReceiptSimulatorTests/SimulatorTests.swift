import AsyncHTTPClient
import Foundation
import NIOCore
import AppStoreAPI
import ReceiptCore
import ReceiptSimulator
@testable import ReceiptSimulator
import Testing
import TestSupport

/// What the simulator answers, on its pure part and over HTTP.
@Suite struct SimulatorTests {
    func answer(_ body: String, endpoint: SimulatedResponse.Endpoint = .production, secret: SharedSecret? = nil) -> JSONValue {
        SimulatedResponse.answer(.init(endpoint: endpoint, body: Array(body.utf8), now: Date()), secret: secret)
    }

    @Test func statusesAsAppleAnswers() throws {
        let sandbox = try ServiceFixture.receiptData("sandbox-2023.der")
        let production = try ServiceFixture.receiptData("production.b64")
        #expect(answer("not json")["status"]?.int64 == 21000)
        #expect(answer(#"{"receipt-data": "!!!"}"#)["status"]?.int64 == 21002)
        #expect(answer(#"{"receipt-data": ""}"#)["status"]?.int64 == 21002)
        #expect(answer(#"{"receipt-data": "\#(sandbox)"}"#)["status"]?.int64 == 21007)
        #expect(answer(#"{"receipt-data": "\#(sandbox)"}"#, endpoint: .sandbox)["status"]?.int64 == 0)
        #expect(answer(#"{"receipt-data": "\#(production)"}"#, endpoint: .sandbox)["status"]?.int64 == 21008)
        let wrong = answer(#"{"receipt-data": "\#(production)", "password": "nope"}"#, secret: SharedSecret("yes-secret-value"))
        #expect(wrong["status"]?.int64 == 21004)
    }

    /// iOS 6 receipt for an expired subscription: 21006 with latest_expired_receipt_info.
    @Test func expiredIOS6SubscriptionIs21006() throws {
        let purchase = #"{ "transaction-id" = "5"; "original-transaction-id" = "5"; "product-id" = "sub"; "purchase-date-ms" = "1300000000000"; "expires-date" = "1300003600000"; "bid" = "a.b"; }"#
        let info = Data(purchase.utf8).base64EncodedString()
        let receipt = Data(#"{ "purchase-info" = "\#(info)"; "environment" = "Sandbox"; }"#.utf8).base64EncodedString()
        let result = answer(#"{"receipt-data": "\#(receipt)"}"#, endpoint: .sandbox)
        #expect(result["status"]?.int64 == 21006)
        #expect(result["latest_expired_receipt_info"]?["transaction_id"]?.text == "5")
        // And the decoder reads that answer back.
        let decoded = try ReceiptDecoder().decode(Array(result.compactJSON.utf8))
        #expect(decoded.status == 21006)
        #expect(decoded.latestReceiptInfo.first?.expiresDate?.timeIntervalSince1970 == 1_300_003_600)
    }

    @Test func answersDecodeAsVerifyResponses() throws {
        let production = try ServiceFixture.receiptData("production.b64")
        let secret = SharedSecret("right-secret-abcdef")
        let body = #"{"receipt-data": "\#(production)", "password": "right-secret-abcdef", "exclude-old-transactions": true}"#
        let decoded = try ReceiptDecoder().decode(Array(answer(body, secret: secret).compactJSON.utf8))
        #expect(decoded.format == .verifyResponse)
        #expect(decoded.receipt?.bundleID == "org.getpure.pure-iphone")
        #expect(decoded.receipt?.inApp.count == 4)
        #expect(decoded.latestReceiptInfo.count == 1, "exclude-old-transactions keeps the latest renewal per subscription")
        #expect(decoded.latestReceiptInfo.first?.transactionID == "340001311555626")
    }

    /// Bad requests over HTTP: Apple's codes, never a crash, and the server keeps serving.
    @Test func hostileRequestsOverHTTP() async throws {
        var configuration = SimulatorConfiguration()
        configuration.maximumBodyBytes = 64 * 1024
        let simulator = try await VerifyReceiptSimulator.start(configuration)
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        func post(_ body: [UInt8], path: String = "/production/verifyReceipt") async throws -> (Int, String) {
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(simulator.port)\(path)")
            request.method = .POST
            request.body = .bytes(ByteBuffer(bytes: body))
            let response = try await http.execute(request, timeout: .seconds(600))
            let text = String(buffer: try await response.body.collect(upTo: 1 << 20))
            return (Int(response.status.code), text)
        }
        #expect(try await post(Array("{{{{".utf8)) == (200, #"{"status":21000}"#))
        #expect(try await post([UInt8](repeating: 0x41, count: 200 * 1024)) == (200, #"{"status":21000}"#))
        #expect(try await post(Array(#"{"receipt-data": 12}"#.utf8)) == (200, #"{"status":21002}"#))
        #expect(try await post([0xFF, 0xFE, 0x00]).1 == #"{"status":21000}"#)
        #expect(try await post(Array("{}".utf8), path: "/elsewhere").0 == 404)
        #expect(try await post(Array(String(repeating: "[", count: 100_000).utf8)).1 == #"{"status":21000}"#)
        try await http.shutdown()
        try await simulator.stop()
    }

    @Test func faultsAreRepeatableWithASeed() {
        func sequence(_ seed: UInt64) -> [InjectedFault?] {
            let state = SimulatorState(configuration: SimulatorConfiguration(faultRate: 0.3, seed: seed), script: [])
            return (0..<200).map { _ in state.nextFault() }
        }
        #expect(sequence(7) == sequence(7))
        #expect(sequence(7) != sequence(8))
        let faults = sequence(7).compactMap { $0 }.count
        #expect((40...80).contains(faults), "about 30% of 200, got \(faults)")
    }
}
