import AuditTrail
import Foundation
import NotificationReceiver
import Testing
import TestSupport

/// The refund-request doors of the command line on one stored CONSUMPTION_REQUEST: `policy
/// check`, `policy explain` and `notifications --consumption` in each format say the same
/// request, the same policy and the same body.
@Suite struct ConsumptionCommandsTests {
    let cli = InspectCommandTests()

    static let game = """
        customer_consented = true

        [[policy]]
        name = "pass"
        product = "com.example.game.pass.*"
        respond = false

        [[policy]]
        name = "coins-within-a-day"
        product_type = "consumable"
        days_since_purchase = "< 1"
        refund_preference = "grant-full"
        consumption_percent = 0
        sample_content_provided = false

        [[policy]]
        name = "coins-spent"
        product_type = "consumable"
        refund_preference = "decline"
        consumption_percent = 100
        sample_content_provided = false
        """

    /// A trail holding one open request for coins bought a day and a half ago.
    func trail() async throws -> (db: String, policy: String) {
        let folder = TemporaryFolder("consumption")
        let db = folder.appending("audit.sqlite").path
        let policy = folder.appending("game.toml").path
        try Self.game.write(toFile: policy, atomically: true, encoding: .utf8)
        let now = Date()
        let uuid = "3f1e2d4c-0000-4000-8000-000000000001"
        let store = try NotificationStore(path: db).started()
        _ = try await store.append(
            NotificationRecord(
                notificationUUID: uuid, version: .v2, notificationType: "CONSUMPTION_REQUEST", environment: "Sandbox",
                signedDate: now.addingTimeInterval(-3600), receivedAt: now, verdict: .valid, transactionID: "2000000955000001",
                originalTransactionID: "2000000955000001", productID: "com.example.game.coins.500",
                signedPayload: ConsumptionRequestPayload.make(
                    uuid: uuid, transactionID: "2000000955000001", productID: "com.example.game.coins.500", purchased: now.addingTimeInterval(-36 * 3600),
                    signed: now.addingTimeInterval(-3600))))
        await store.close()
        return (db, policy)
    }

    @Test func explainAndTheListingSayTheSameRequestAndBody() async throws {
        let (db, policy) = try await trail()
        let check = try await cli.run(["policy", "check", policy, "--format", "json"])
        #expect(check.status == 0, "\(check.stderr)")
        let checked = try #require(check.json as? [String: Any])
        #expect((checked["policies"] as? [[String: Any]])?.compactMap { $0["name"] as? String } == ["pass", "coins-within-a-day", "coins-spent"])

        let explain = try await cli.run(["policy", "explain", policy, "--transaction-id", "2000000955000001", "--db", db, "--format", "json"])
        #expect(explain.status == 0, "\(explain.stderr)")
        let explained = try #require(explain.json as? [String: Any])
        #expect(explained["outcome"] as? String == "send")
        #expect(explained["policy"] as? String == "coins-spent")
        #expect(explained["state"] as? String == "open")
        let facts = try #require(explained["facts"] as? [String: Any])
        #expect(facts["days_since_purchase"] as? Int == 1)
        #expect(facts["product_type"] as? String == "Consumable")
        #expect(facts["reason"] as? String == "UNINTENDED_PURCHASE")
        let body = try #require(explained["body"] as? [String: Any])
        #expect(body["refundPreference"] as? String == "DECLINE")
        #expect(body["consumptionPercentage"] as? Int == 100_000)

        let json = try await cli.run(["notifications", "--db", db, "--consumption", "--format", "json"])
        #expect(json.status == 0, "\(json.stderr)")
        let listed = try #require((json.json as? [String: Any])?["requests"] as? [[String: Any]])
        #expect(Set(listed.first?.keys.map { $0 } ?? []) == Set(ConsumptionListing.columns))
        #expect(listed.map { $0["transaction_id"] as? String } == ["2000000955000001"])
        #expect(listed.first?["state"] as? String == "open")
        let csv = try await cli.run(["notifications", "--db", db, "--consumption", "--format", "csv"])
        #expect(csv.stdout.split(separator: "\r\n").first.map(String.init) == ConsumptionListing.columns.joined(separator: ","))
        #expect(csv.stdout.split(separator: "\r\n").count == 2)
        let text = try await cli.run(["notifications", "--db", db, "--consumption"])
        #expect(text.status == 0)
        #expect(text.stdout.contains("open  2000000955000001  com.example.game.coins.500"))

        // Nothing was sent or recorded as sent by explaining.
        let again = try await cli.run(["notifications", "--db", db, "--consumption", "--format", "json"])
        #expect(((again.json as? [String: Any])?["summary"] as? [String: Any])?["open"] as? Int == 1)
    }

    @Test func aFaultyFileIsExit64WithItsCodeAndAnUnknownTransactionExit1() async throws {
        let (db, policy) = try await trail()
        let broken = TemporaryFolder("consumption-broken").appending("broken.toml").path
        try "[[policy]]\nname = \"x\"\nrefund_preference = \"refuse\"\nsample_content_provided = false\n".write(toFile: broken, atomically: true, encoding: .utf8)
        let check = try await cli.run(["policy", "check", broken, "--format", "json"])
        #expect(check.status == 64)
        #expect(((check.json as? [String: Any])?["error"] as? [String: Any])?["code"] as? String == "bad-value")
        let unknown = try await cli.run(["policy", "explain", policy, "--transaction-id", "2000000955999999", "--db", db, "--format", "json"])
        #expect(unknown.status == 1)
        #expect(((unknown.json as? [String: Any])?["error"] as? [String: Any])?["code"] as? String == "no-request")
        let mixed = try await cli.run(["notifications", "--db", db, "--consumption", "--retention"])
        #expect(mixed.status == 64)
    }
}
