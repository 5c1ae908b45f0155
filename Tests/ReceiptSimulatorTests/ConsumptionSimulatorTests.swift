@testable import AppStoreClients
@testable import AuditTrail
import Foundation
@testable import AppStoreAPI
@testable import ReceiptCore
@testable import ReceiptSimulator
import RetryEngine
import Testing
import TestSupport

/// The simulator as Apple's refund-request side (issue 56): it checks each Send Consumption
/// Information body by Apple's rules and keeps what it received, and it sends
/// `CONSUMPTION_REQUEST`s on demand and in the bulk stream, each about a purchase it keeps.
@Suite(.timeLimit(.minutes(5))) struct ConsumptionSimulatorTests {
    static let consumable = "2000000900000010"
    static let subscription = ServerAPIActionsTests.subscription

    /// PUTs `body` as sent for `transactionID`.
    private func put(_ client: AppStoreServerAPIClient, _ transactionID: String, _ body: String, in environment: APIEnvironment = .production)
        async
    {
        let request = APIRequest(
            endpoint: .consumption, method: .put, path: "/inApps/v2/transactions/consumption/\(transactionID)", body: Array(body.utf8))
        _ = await client.send(request, in: environment, as: APINoContent.self)
    }

    /// A control request to the service, answered as the API port answers it.
    private func control(_ service: ServerAPIService, _ method: String, _ uri: String) async -> (status: Int, json: JSONValue?) {
        var reply = service.answer(ServerAPIRequest(method: method, uri: uri, authorization: nil))
        if let deferred = reply.deferred { reply = await deferred() }
        return (reply.status, reply.json)
    }

    @Test func eachConsumptionBodyIsAnsweredWithApplesStatusAndCode() async throws {
        let ok = #""customerConsented":true,"sampleContentProvided":false"#
        // (transaction, body, status, error code)
        let table: [(String, String, Int, Int?)] = [
            (Self.consumable, #"{\#(ok),"deliveryStatus":"DELIVERED"}"#, 202, nil),
            (Self.consumable, #"{\#(ok),"deliveryStatus":"DELIVERED","consumptionPercentage":40000,"refundPreference":"GRANT_PRORATED"}"#, 202, nil),
            (Self.consumable, #"{\#(ok),"deliveryStatus":"UNDELIVERED_OTHER","consumptionPercentage":0,"refundPreference":"GRANT_FULL"}"#, 202, nil),
            (Self.consumable, #"{\#(ok),"deliveryStatus":"DELIVERED","refundPreference":null,"consumptionPercentage":null}"#, 202, nil),
            (Self.consumable, #"{\#(ok),"deliveryStatus":"DELIVERED","playTime":3}"#, 400, 4_000_000),
            (Self.consumable, #"{"customerConsented":false,"sampleContentProvided":false,"deliveryStatus":"DELIVERED"}"#, 400, 4_000_035),
            (Self.consumable, #"{"customerConsented":"true","sampleContentProvided":false,"deliveryStatus":"DELIVERED"}"#, 400, 4_000_035),
            (Self.consumable, #"{"sampleContentProvided":false,"deliveryStatus":"DELIVERED"}"#, 400, 4_000_035),
            (Self.consumable, #"{\#(ok),"deliveryStatus":"LOST"}"#, 400, 4_000_036),
            (Self.consumable, #"{\#(ok),"deliveryStatus":0}"#, 400, 4_000_036),
            (Self.consumable, #"{"customerConsented":true,"deliveryStatus":"DELIVERED"}"#, 400, 4_000_041),
            (Self.consumable, #"{"customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":"no"}"#, 400, 4_000_041),
            (Self.consumable, #"{\#(ok),"deliveryStatus":"DELIVERED","consumptionPercentage":100001}"#, 400, 4_000_000),
            (Self.consumable, #"{\#(ok),"deliveryStatus":"DELIVERED","consumptionPercentage":-1}"#, 400, 4_000_000),
            (Self.consumable, #"{\#(ok),"deliveryStatus":"DELIVERED","consumptionPercentage":40.5}"#, 400, 4_000_000),
            (Self.consumable, #"{\#(ok),"deliveryStatus":"DELIVERED","consumptionPercentage":"40000"}"#, 400, 4_000_000),
            (Self.consumable, #"{\#(ok),"deliveryStatus":"UNDELIVERED_QUALITY_ISSUE","consumptionPercentage":10000}"#, 400, 4_000_000),
            (Self.consumable, #"{\#(ok),"deliveryStatus":"DELIVERED","consumptionPercentage":100000,"refundPreference":"GRANT_PRORATED"}"#, 400, 4_000_000),
            (Self.consumable, #"{\#(ok),"deliveryStatus":"DELIVERED","refundPreference":"GRANT_PRORATED"}"#, 400, 4_000_000),
            (Self.consumable, #"{\#(ok),"deliveryStatus":"DELIVERED","refundPreference":"PREFER_GRANT"}"#, 400, 4_000_000),
            (Self.consumable, #"{\#(ok),"deliveryStatus":"DELIVERED","refundPreference":1}"#, 400, 4_000_000),
            (Self.consumable, "[]", 400, 4_000_000),
            (Self.consumable, "customerConsented=true", 400, 4_000_000),
            (Self.subscription, #"{\#(ok),"deliveryStatus":"DELIVERED","consumptionPercentage":40000}"#, 400, 4_000_000),
            (Self.subscription, #"{\#(ok),"deliveryStatus":"DELIVERED","refundPreference":"GRANT_PRORATED"}"#, 202, nil),
            ("2999999999999999", #"{\#(ok),"deliveryStatus":"DELIVERED"}"#, 404, 4_040_010),
            ("abc", #"{\#(ok),"deliveryStatus":"DELIVERED"}"#, 400, 4_000_006),
        ]
        try await withAPISimulator { client, simulator in
            for (transaction, body, _, _) in table { await put(client, transaction, body) }
            let received = simulator.service.consumptionReceived()
            #expect(received.map(\.transactionID) == table.map(\.0))
            #expect(received.map { String(decoding: $0.body, as: UTF8.self) } == table.map(\.1))
            for (entry, row) in zip(received, table) {
                #expect(entry.status == row.2, "\(row.1)")
                #expect(entry.errorCode?.rawValue == row.3, "\(row.1)")
                #expect(entry.environment == .production)
                #expect(entry.receivedMS == Int64(TestTime.start.timeIntervalSince1970 * 1000))
            }
            #expect(simulator.service.consumptionAccepted() == [Self.consumable: 4, Self.subscription: 1])

            // The control listing: the same, as JSON, and the accepted PUTs per transaction.
            let listing = await control(simulator.service, "GET", "/control/consumption")
            #expect(listing.status == 200)
            let entries = try #require(listing.json?["received"]?.array)
            #expect(entries.count == table.count)
            #expect(entries.first == .object([
                "environment": .string("Production"), "transaction_id": .string(Self.consumable), "status": .integer(202), "error_code": .null,
                "received_ms": .integer(1_800_000_000_000),
                "body": .object(["customerConsented": .bool(true), "sampleContentProvided": .bool(false), "deliveryStatus": .string("DELIVERED")]),
            ]))
            #expect(entries.last?["error_code"] == .integer(4_000_006))
            #expect(entries[22]["body"] == .string("customerConsented=true"))
            #expect(listing.json?["per_transaction"] == .object([Self.consumable: .integer(4), Self.subscription: .integer(1)]))
            #expect(listing.json?["dropped"] == .integer(0))
            #expect(await control(simulator.service, "POST", "/control/consumption").status == 405)
            #expect(await control(simulator.service, "GET", "/control/consumption?x=1").status == 400)
        }
    }

    @Test func theLogKeepsTheNewestAndCountsWhatItDropped() async throws {
        try await withAPISimulator { client, simulator in
            simulator.service.limitConsumptionLog(to: 3)
            for percent in [10_000, 20_000, 30_000, 40_000, 50_000] {
                await put(
                    client, Self.consumable,
                    #"{"customerConsented":true,"sampleContentProvided":false,"deliveryStatus":"DELIVERED","consumptionPercentage":\#(percent)}"#)
            }
            let kept = simulator.service.consumptionReceived().map { try? JSONValue.parse($0.body)["consumptionPercentage"] }
            #expect(kept == [.integer(30_000), .integer(40_000), .integer(50_000)])
            #expect(simulator.service.consumptionDropped == 2)
            #expect(simulator.service.consumptionAccepted() == [Self.consumable: 5])
            let listing = await control(simulator.service, "GET", "/control/consumption")
            #expect(listing.json?["dropped"] == .integer(2))
            #expect(listing.json?["received"]?.array?.count == 3)
        }
    }

    /// The payload of a `CONSUMPTION_REQUEST` and of the transaction it carries.
    private func decoded(_ signedPayload: String) throws -> (data: [String: JSONValue], transaction: [String: JSONValue]) {
        let data = try #require(try jwsPayload(signedPayload)["data"]?.object)
        let signedTransaction = try #require(data["signedTransactionInfo"]?.text)
        let transaction = try #require(try jwsPayload(signedTransaction).object)
        return (data, transaction)
    }

    @Test func requestsOnDemandPassTheReceiversTrustCheckAndTheirPurchasesTakeAConsumptionAnswer() async throws {
        try await withAPISimulator { client, simulator in
            let service = simulator.service
            let receiver = try await LoopbackReceiver.start(trusting: service.pki)
            let made = try await service.sendConsumptionRequests(
                ConsumptionRequestOrder(count: 3, environment: .sandbox, reason: .fulfillmentIssue), to: receiver.url)
            let stored = try await receiver.store.notifications()
            await receiver.stop()
            #expect(made.map(\.result) == [.success, .success, .success])
            #expect(made.map(\.transactionID) == ["4500000000000001", "4500000000000002", "4500000000000003"])
            #expect(Set(stored.map(\.record.notificationUUID)) == Set(made.map(\.notificationUUID)))
            #expect(Set(stored.map(\.record.notificationType)) == ["CONSUMPTION_REQUEST"])
            #expect(Set(stored.map(\.record.verdict)) == [.test])
            #expect(Set(stored.compactMap(\.record.transactionID)) == Set(made.map(\.transactionID)))
            #expect(Set(stored.map(\.record.environment)) == ["Sandbox"])
            let first = try #require(made.first)
            let (data, transaction) = try decoded(first.notification.signedPayload)
            #expect(data["consumptionRequestReason"] == .string("FULFILLMENT_ISSUE"))
            #expect(data["bundleId"] == .string(ServerAPIData.demoBundleID))
            #expect(data["status"] == nil)
            #expect(transaction["type"] == .string("Consumable"))
            #expect(transaction["productId"] == .string("com.example.receiptdash.coins100"))
            #expect(transaction["originalTransactionId"] == .string("4500000000000001"))
            #expect(transaction["purchaseDate"] == .integer(1_800_000_000_000))
            #expect(transaction["storefront"] == .string("USA"))
            #expect(transaction["environment"] == .string("Sandbox"))
            #expect(transaction["expiresDate"] == nil)

            // The purchase is the simulator's now: looked up, and answered with 202.
            let lookedUp = try await client.transactionInfo("4500000000000001", environment: .sandbox).result.get()
            #expect(try jwsPayload(lookedUp.signedTransactionInfo)["transactionId"] == .string("4500000000000001"))
            await put(client, "4500000000000001", #"{"customerConsented":true,"sampleContentProvided":false,"deliveryStatus":"DELIVERED"}"#, in: .sandbox)
            await put(client, "4500000000000001", #"{"customerConsented":true,"sampleContentProvided":false,"deliveryStatus":"DELIVERED"}"#)
            #expect(service.consumptionReceived().map(\.status) == [202, 404])
            #expect(service.consumptionAccepted() == ["4500000000000001": 1])
        }
    }

    @Test func theControlMakesSubscriptionRequestsAndRefusesWhatItCannotDo() async throws {
        try await withAPISimulator { _, simulator in
            let service = simulator.service
            let receiver = try await LoopbackReceiver.start(trusting: service.pki)
            let url = try #require(receiver.url.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
            let answer = await control(
                service, "POST",
                "/control/consumption-request?count=2&environment=production&product-type=auto-renewable&days-ago=3&reason=LEGAL&storefront=fra&url=\(url)")
            let stored = try await receiver.store.notifications()
            await receiver.stop()
            #expect(answer.status == 200)
            let requests = try #require(answer.json?["requests"]?.array)
            #expect(requests.map { $0["transaction_id"] } == [.string("4500000000000001"), .string("4500000000000002")])
            #expect(requests.map { $0["send_attempt_result"] } == [.string("SUCCESS"), .string("SUCCESS")])
            #expect(requests.map { $0["reason"] } == [.string("LEGAL"), .string("LEGAL")])
            #expect(Set(stored.map(\.record.verdict)) == [.test])
            let signed = try #require(stored.first { $0.record.transactionID == "4500000000000001" }?.record.signedPayload)
            let (data, transaction) = try decoded(signed)
            let purchase: Int64 = 1_800_000_000_000 - 3 * 86_400_000
            #expect(data["status"] == .integer(1))
            #expect(data["signedRenewalInfo"] != nil)
            #expect(data["appAppleId"] != nil)
            #expect(transaction["type"] == .string("Auto-Renewable Subscription"))
            #expect(transaction["productId"] == .string("com.example.receiptdash.pro.monthly"))
            #expect(transaction["purchaseDate"] == .integer(purchase))
            #expect(transaction["expiresDate"] == .integer(purchase + 30 * 86_400_000))
            #expect(transaction["storefront"] == .string("FRA"))
            #expect(transaction["currency"] == nil)

            // An existing transaction, asked about again; what cannot be made is refused with 400.
            #expect(await control(service, "POST", "/control/consumption-request?transaction-id=\(Self.consumable)&url=\(url)").status == 200)
            for query in [
                "count=0", "count=10001", "environment=test", "reason=BORED", "product-type=bundle", "storefront=US", "days-ago=-1",
                "colour=red", "transaction-id=2999999999999999", "transaction-id=\(Self.consumable)&product-type=consumable&days-ago=2",
            ] {
                let refused = await control(service, "POST", "/control/consumption-request?\(query)&url=\(url)")
                #expect(refused.status == 400, "\(query)")
                #expect(refused.json?["error"]?.text != nil, "\(query)")
            }
            // Without url, they go to the live sender; with none listening, there is nothing to send to.
            #expect(await control(service, "POST", "/control/consumption-request?count=1").status == 400)
            #expect(await control(service, "GET", "/control/consumption-request?count=1").status == 405)
        }
    }

    @Test func theLiveSenderDeliversRequestsPostedWithoutAURL() async throws {
        try await withAPISimulator { _, simulator in
            let service = simulator.service
            let receiver = try await LoopbackReceiver.start(trusting: service.pki)
            let sender = try NotificationSender(NotificationSenderConfiguration(url: receiver.url, concurrency: 4, retrySchedule: .none))
            let lines = LiveNotificationsTests.NIOLockedLines()
            let runner = LiveNotificationSender(api: service, sender: sender) { lines.append($0) }
            let task = Task { await runner.run() }
            let answer = await control(service, "POST", "/control/consumption-request?count=2&environment=sandbox")
            await lines.waitForAnswers(atLeast: 2)
            let stored = try await receiver.store.notifications()
            task.cancel()
            await task.value
            await sender.shutdown()
            await receiver.stop()
            let requests = try #require(answer.json?["requests"]?.array)
            #expect(requests.map { $0["queued"] } == [.bool(true), .bool(true)])
            #expect(Set(stored.map(\.record.notificationUUID)) == Set(requests.compactMap { $0["notification_uuid"]?.text }))
            #expect(Set(stored.map(\.record.notificationType)) == ["CONSUMPTION_REQUEST"])
        }
    }

    @Test func theBulkStreamCarriesTheShareAskedForAboutPurchasesTheSimulatorKeeps() async throws {
        try await withAPISimulator { client, simulator in
            let service = simulator.service
            let notifications = try await service.outgoingNotifications(includingData: false, count: 1000, consumptionShare: 10)
            let requests = notifications.filter { $0.notificationType == "CONSUMPTION_REQUEST" }
            #expect(notifications.count == 1000)
            #expect(requests.count == 100)
            let ids = try requests.map { try #require(try decoded($0.signedPayload).transaction["transactionId"]?.text) }
            #expect(Set(ids).count == 100)
            let types = Set(try requests.map { try decoded($0.signedPayload).transaction["type"] })
            #expect(types == [.string("Consumable"), .string("Auto-Renewable Subscription")])
            let first = try #require(try requests.first { try decoded($0.signedPayload).transaction["type"] == .string("Consumable") })
            let consumable = try #require(try decoded(first.signedPayload).transaction["transactionId"]?.text)
            await put(client, consumable, #"{"customerConsented":true,"sampleContentProvided":true,"deliveryStatus":"DELIVERED","consumptionPercentage":5000}"#)
            #expect(service.consumptionReceived().map(\.status) == [202])
            let none = try await service.outgoingNotifications(includingData: false, count: 200)
            #expect(none.filter { $0.notificationType == "CONSUMPTION_REQUEST" }.isEmpty)
            #expect(NotificationPlan.isConsumptionRequest(9, basisPoints: 1000))
            #expect(!NotificationPlan.isConsumptionRequest(0, basisPoints: 1000))
            #expect((0..<1000).filter { NotificationPlan.isConsumptionRequest($0, basisPoints: 333) }.count == 33)
        }
    }
}
