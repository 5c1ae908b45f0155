import AppStoreClients
import Crypto
import Foundation
import ReceiptCore
import ReceiptSimulator
import Testing
import TestSupport

/// `extend`, `consumption`, `app-account-token`, `finish` and `test-notification` as processes
/// against the API simulator (in this process, so its log of writes is read directly): the plan,
/// `--dry-run` and a missing `--yes` send nothing, read-only refuses, a sent write is recorded
/// and listed by `history --actions`, a refusal explains its code.
@Suite struct ActionCommandsTests {
    static let subscription = "2000000900000001"

    /// A simulator checking tokens against a fresh key, and the files the commands name.
    final class Setup: @unchecked Sendable {
        let folder: URL
        let simulator: ServerAPISimulator
        let keyFile: String
        let rootFile: String
        var db: String { folder.appendingPathComponent("audit.sqlite").path }

        init(configure: (inout ServerAPIConfiguration) -> Void = { _ in }) async throws {
            folder = TemporaryFolder("actions").url
            let key = P256.Signing.PrivateKey()
            keyFile = folder.appendingPathComponent("key.p8").path
            try Data(key.pemRepresentation.utf8).write(to: URL(fileURLWithPath: keyFile))
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyFile)
            var configuration = ServerAPIConfiguration(publicKey: key.publicKey)
            configure(&configuration)
            simulator = try await ServerAPISimulator.start(configuration)
            rootFile = folder.appendingPathComponent("root.der").path
            try Data(simulator.pki.rootDER).write(to: URL(fileURLWithPath: rootFile))
        }

        var api: [String] {
            [
                "--issuer-id", "57246542-96fe-1a63-e053-0824d011072a", "--key-id", "2X9R4HXF34", "--private-key-file", keyFile, "--bundle-id",
                "com.example.receiptdash", "--root-ca", rootFile, "--api-production-url", simulator.productionURL, "--api-sandbox-url",
                simulator.sandboxURL,
            ]
        }

        func run(_ arguments: [String], environment: [String: String] = [:]) async throws -> InspectCommandTests.Run {
            try await NewUserCommandTests.run(
                arguments + api, environment: environment.merging(["XDG_CONFIG_HOME": folder.path]) { a, _ in a },
                removing: ["RECEIPTDASH_READ_ONLY"])
        }

        /// A command that takes no API options (`history`).
        func plain(_ arguments: [String]) async throws -> InspectCommandTests.Run {
            try await NewUserCommandTests.run(arguments, environment: ["XDG_CONFIG_HOME": folder.path])
        }

        /// `history --actions --format json`'s rows, newest first.
        func actionRows() async throws -> [[String: Any]] {
            let history = try await plain(["history", "--actions", "--db", db, "--format", "json"])
            #expect(history.status == 0, "\(history.stderr)")
            return try #require(history.json as? [[String: Any]])
        }

        func stop() async throws { try await simulator.stop() }
    }

    /// The binary with exactly `arguments` (no API options added), in `folder`'s config home.
    static func runRaw(_ arguments: [String], folder: URL) async throws -> InspectCommandTests.Run {
        try await NewUserCommandTests.run(arguments, environment: ["XDG_CONFIG_HOME": folder.path], removing: ["RECEIPTDASH_READ_ONLY"])
    }

    @Test func aDryRunPrintsTheRequestAndSendsNothing() async throws {
        let setup = try await Setup()
        let run = try await setup.run([
            "extend", "--original-transaction-id", Self.subscription, "--days", "7", "--reason", "service-issue", "--request-id", "ticket-1",
            "--dry-run", "--db", setup.db,
        ])
        #expect(run.status == 0)
        #expect(
            run.stdout.hasSuffix("""
                dry run: nothing sent
                PUT /inApps/v1/subscriptions/extend/\(Self.subscription)
                {"extendByDays":7,"extendReasonCode":3,"requestIdentifier":"ticket-1"}

                """))
        #expect(setup.simulator.service.writes.isEmpty)
        try await setup.stop()
    }

    @Test func withoutATerminalAWriteNeedsYes() async throws {
        let words = Wording("action-commands")
        let setup = try await Setup()
        let run = try await setup.run(["extend", "--original-transaction-id", Self.subscription, "--days", "7", "--reason", "other"])
        #expect(run.status == 64)
        words.said(run.stderr)
        // The plan was shown before the refusal.
        #expect(run.stdout.contains("  product: com.example.receiptdash.pro.monthly (active)\n"))
        #expect(setup.simulator.service.writes.isEmpty)
        try await setup.stop()
        words.check()
    }

    @Test func aWriteThatCouldNotBeRecordedIsNotSent() async throws {
        let words = Wording("action-commands")
        let setup = try await Setup()
        // --db names a folder: the audit trail cannot be opened.
        let run = try await setup.run(["finish", "--transaction-id", "2000000900000010", "--yes", "--db", setup.folder.path])
        #expect(run.status == 1)
        words.said(run.stderr)
        words.said(run.stderr)
        #expect(setup.simulator.service.writes.isEmpty)
        try await setup.stop()
        words.check()
    }

    @Test func readOnlyRefusesEveryWriteAndNoRead() async throws {
        let words = Wording("action-commands")
        let setup = try await Setup()
        let profile = setup.folder.appendingPathComponent("receiptdash")
        try FileManager.default.createDirectory(at: profile, withIntermediateDirectories: true)
        try "[support]\nread_only = true\n".write(to: profile.appendingPathComponent("api.toml"), atomically: true, encoding: .utf8)
        let write = ["finish", "--transaction-id", "2000000900000010", "--yes"]
        let refusals = await [
            try setup.run(write + ["--read-only"]),
            try setup.run(write, environment: ["RECEIPTDASH_READ_ONLY": "1"]),
            try setup.run(write + ["--api-profile", "support"]),
        ]
        #expect(refusals.map(\.status) == [64, 64, 64])
        words.said(refusals[0].stderr)
        words.said(refusals[1].stderr)
        words.said(refusals[2].stderr)
        #expect(setup.simulator.service.writes.isEmpty)
        // A read is unaffected.
        let status = try await setup.run(
            ["extend", "--status", "--product-id", "p", "--request-id", UUID().uuidString, "--read-only", "--format", "json"])
        #expect(status.status == 1)
        #expect((status.json as? [String: Any])?["error"] != nil)
        try await setup.stop()
        words.check()
    }

    @Test func aSentExtensionIsAnsweredInJSONAndRecorded() async throws {
        let setup = try await Setup()
        let run = try await setup.run([
            "extend", "--original-transaction-id", Self.subscription, "--days", "7", "--reason", "service-issue", "--request-id", "ticket-2",
            "--yes", "--format", "json", "--db", setup.db,
        ])
        #expect(run.status == 0, "\(run.stderr)")
        let json = try #require(run.json as? [String: Any])
        #expect(Set(json.keys) == ["action", "dry_run", "environment", "request", "request_id", "requests", "result"])
        #expect(json["action"] as? String == "extend")
        #expect(json["request_id"] as? String == "ticket-2")
        #expect(json["dry_run"] as? Bool == false)
        let result = try #require(json["result"] as? [String: Any])
        #expect(Set(result.keys) == ["effective_date", "original_transaction_id", "success", "web_order_line_item_id"])
        #expect(setup.simulator.service.writes.count == 1)

        let rows = try await setup.actionRows()
        #expect(rows.count == 1)
        let row = try #require(rows.first)
        #expect(
            Set(row.keys) == [
                "action", "at", "user", "environment", "request_id", "original_transaction_id", "transaction_id", "product_id", "request_body",
                "http_status", "api_error", "result", "pending", "completed_at", "response_body", "repeat_command", "plan", "app_transaction_id",
            ])
        #expect(row["action"] as? String == "extend")
        #expect(row["request_id"] as? String == "ticket-2")
        #expect(row["original_transaction_id"] as? String == Self.subscription)
        #expect(row["product_id"] as? String == "com.example.receiptdash.pro.monthly")
        #expect(row["http_status"] as? Int == 200)
        #expect(row["result"] as? String == "success")
        #expect((row["request_body"] as? [String: Any])?["extendByDays"] as? Int == 7)
        // Apple's answer is kept: the new renewal date is known to the trail at once, and the
        // write is linked to the customer's app transaction the plan's look-up named.
        let effective = try #require(result["effective_date"] as? String)
        #expect((row["response_body"] as? String)?.contains(#""effective_date":"\#(effective)""#) == true)
        #expect((row["app_transaction_id"] as? String)?.isEmpty == false)
        let offline = try await setup.plain(["customer", "--offline", "--original-transaction-id", Self.subscription, "--db", setup.db, "--format", "json"])
        #expect(offline.status == 0, "\(offline.stderr)")
        let subscriptions = (offline.json as? [String: Any])?["subscriptions"] as? [[String: Any]] ?? []
        #expect(subscriptions.map { $0["until"] as? String } == [effective])
        // Nothing of the key reaches the trail.
        let key = try String(contentsOfFile: setup.keyFile, encoding: .utf8).split(separator: "\n")[1]
        #expect(!(try Data(contentsOf: URL(fileURLWithPath: setup.db))).contains(Data(key.utf8)))
        try await setup.stop()
    }

    @Test func aRefusalExplainsItsCodeExitsOneAndIsRecorded() async throws {
        let words = Wording("action-commands", matching: Wording.runVariables)
        let setup = try await Setup()
        let run = try await setup.run([
            "extend", "--original-transaction-id", "2000000900000020", "--days", "3", "--reason", "customer-satisfaction", "--yes", "--db", setup.db,
        ])
        #expect(run.status == 1)
        words.said(run.stderr)
        let history = try await setup.plain(["history", "--actions", "--db", setup.db, "--transaction-id", "2000000900000020", "--format", "json"])
        let rows = try #require(history.json as? [[String: Any]])
        #expect(rows.map { $0["result"] as? String } == ["refused"])
        #expect(rows.first?["api_error"] as? Int == 4_030_004)
        try await setup.stop()
        words.check()
    }

    @Test(arguments: [
        (["extend", "--original-transaction-id", "1", "--days", "0", "--reason", "other"], "--days must be 1 to 90"),
        (["extend", "--original-transaction-id", "1", "--days", "7", "--reason", "because"], "--reason"),
        (["consumption", "--transaction-id", "1", "--delivery-status", "delivered", "--sample-content-provided", "false"], "--customer-consented is required"),
        (
            ["consumption", "--transaction-id", "1", "--delivery-status", "undelivered-other", "--customer-consented", "--sample-content-provided", "true", "--consumed-percent", "20"],
            "--consumed-percent must be 0 when the item was not delivered"
        ),
        (["app-account-token", "--original-transaction-id", "1", "--token", "abc"], "--token must be a UUID"),
        (["extend", "--all-active", "--product-id", "p", "--days", "3", "--reason", "other", "--request-id", "x"], "--request-id must be a UUID"),
    ])
    func valuesAppleWouldRefuseAreUsageErrors(_ arguments: [String], _ said: String) async throws {
        let setup = try await Setup()
        let run = try await setup.run(arguments)
        #expect(run.status == 64)
        #expect(run.stderr.contains(said), "\(run.stderr)")
        #expect(setup.simulator.service.writes.isEmpty)
        try await setup.stop()
    }

    @Test func consumptionTokenFinishAndTestNotificationAreSentAndRecorded() async throws {
        let words = Wording("action-commands", matching: Wording.runVariables)
        let setup = try await Setup()
        let runs = await [
            try setup.run([
                "consumption", "--transaction-id", "2000000900000010", "--delivery-status", "delivered", "--customer-consented",
                "--sample-content-provided", "false", "--consumed-percent", "40", "--yes", "--db", setup.db,
            ]),
            try setup.run([
                "app-account-token", "--original-transaction-id", Self.subscription, "--token", "7e3fb20b-4cdb-47cc-936d-99d65f608138", "--yes",
                "--db", setup.db,
            ]),
            try setup.run(["finish", "--transaction-id", "2000000900000010", "--yes", "--db", setup.db]),
            try setup.run(["test-notification", "--wait", "--yes", "--environment", "production", "--db", setup.db, "--format", "json"]),
        ]
        #expect(runs.map(\.status) == [0, 0, 0, 0], "\(runs.map(\.stderr))")
        words.said(runs[0].stdout)
        let test = try #require(runs[3].json as? [String: Any])
        let attempts = (test["result"] as? [String: Any])?["send_attempts"] as? [[String: Any]]
        #expect(attempts?.map { $0["send_attempt_result"] as? String } == ["SUCCESS"])
        #expect(setup.simulator.service.writes.map(\.path) == [
            "/inApps/v2/transactions/consumption/2000000900000010", "/inApps/v1/transactions/\(Self.subscription)/appAccountToken",
            "/inApps/v1/transactions/2000000900000010/finish", "/inApps/v1/notifications/test",
        ])
        #expect(setup.simulator.service.writes[0].body.contains(#""consumptionPercentage":40000"#))
        let history = try await setup.plain(["history", "--actions", "--db", setup.db, "--format", "json"])
        let rows = try #require(history.json as? [[String: Any]])
        #expect(Set(rows.compactMap { $0["action"] as? String }) == ["consumption", "app-account-token", "finish", "test-notification"])

        // The token Apple took is known to the trail at once: the customer is found by it,
        // offline, with no look-up in between, and the write is in the story.
        let byToken = try await setup.plain([
            "customer", "--offline", "--app-account-token", "7E3FB20B-4CDB-47CC-936D-99D65F608138", "--db", setup.db, "--format", "json",
        ])
        #expect(byToken.status == 0, "\(byToken.stderr)")
        let story = try #require(byToken.json as? [String: Any])
        #expect((story["customer"] as? [String: Any])?["app_account_tokens"] as? [String] == ["7e3fb20b-4cdb-47cc-936d-99d65f608138"])
        #expect((story["customer"] as? [String: Any])?["original_transaction_ids"] as? [String] == [Self.subscription])
        #expect((story["events"] as? [[String: Any]] ?? []).compactMap { $0["kind"] as? String }.contains("token-set"))
        // A transaction the trail knows only by our writes is found by it too, and both writes'
        // plans named the same app transaction: one customer, one story, whichever is asked.
        for (id, kinds) in [(Self.subscription, ["consumption-answered", "token-set", "finished"]), ("2000000900000010", ["consumption-answered", "token-set", "finished"])] {
            let found = try await setup.plain(["customer", "--offline", "--transaction-id", id, "--db", setup.db, "--format", "json"])
            #expect(found.status == 0, "\(id): \(found.stderr)")
            let events = (found.json as? [String: Any])?["events"] as? [[String: Any]] ?? []
            #expect(events.compactMap { $0["kind"] as? String } == kinds, "\(id)")
        }
        // Online, the customer's subscription and its consumable tell one story: the
        // consumption answer for 2000000900000010 shows whichever of the two is asked.
        var online: [[String]] = []
        for id in [Self.subscription, "2000000900000010"] {
            let found = try await setup.run(["customer", "--transaction-id", id, "--db", setup.db, "--format", "json"])
            #expect(found.status == 0, "\(id): \(found.stderr)")
            let events = (found.json as? [String: Any])?["events"] as? [[String: Any]] ?? []
            online.append(events.map { "\($0["kind"] ?? "") \($0["transaction_id"] ?? "") \($0["sources"] ?? "")" })
        }
        #expect(online[0] == online[1])
        #expect(online[0].contains { $0.hasPrefix("consumption-answered 2000000900000010") })
        // Each write is linked to the customer's app transaction id its plan's look-up named:
        // offline, that id alone finds the customer and all three writes.
        let asked = try await setup.run(["customer", "--transaction-id", Self.subscription, "--db", setup.db, "--format", "json"])
        let appIDs = ((asked.json as? [String: Any])?["customer"] as? [String: Any])?["app_transaction_ids"] as? [String] ?? []
        let appID = try #require(appIDs.first)
        let byApp = try await setup.plain(["customer", "--offline", "--app-transaction-id", appID, "--db", setup.db, "--format", "json"])
        #expect(byApp.status == 0, "\(byApp.stderr)")
        let appEvents = (byApp.json as? [String: Any])?["events"] as? [[String: Any]] ?? []
        #expect(appEvents.compactMap { $0["kind"] as? String }.sorted() == ["consumption-answered", "finished", "token-set"])
        // Another token is still nobody's.
        let other = try await setup.plain(["customer", "--offline", "--app-account-token", "00000000-0000-4000-8000-000000000000", "--db", setup.db])
        #expect(other.status == 1)
        try await setup.stop()
        words.check()
    }
}
