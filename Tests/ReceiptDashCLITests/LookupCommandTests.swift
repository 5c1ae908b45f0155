import Crypto
import Foundation
import Testing
import TestSupport

/// `receiptdash simulator` (its App Store Server API) and `receiptdash lookup` as processes, the
/// way a support engineer runs them: exact transactions, states, refunds and requests for the
/// simulator's demo customer; `auto` through 4040010; the receipt bridge; `--db`; and the
/// private key in no output and not in the database.
@Suite struct LookupCommandTests {
    let cli = InspectCommandTests()

    /// A temporary folder with a fresh P-256 key (`key.p8`, mode 600) and the simulator's root.
    struct Workspace {
        let folder: URL
        let key: P256.Signing.PrivateKey
        var keyFile: String { folder.appendingPathComponent("key.p8").path }
        var rootFile: String { folder.appendingPathComponent("root.der").path }

        init() throws {
            folder = TemporaryFolder("lookup").url
            key = P256.Signing.PrivateKey()
            try Data(key.pemRepresentation.utf8).write(to: folder.appendingPathComponent("key.p8"))
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyFile)
        }

        /// The base64 body of the PEM: what must never appear anywhere.
        var keySecret: String {
            key.pemRepresentation.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        }
    }

    /// Starts `simulator --port 0` with the API and returns it with its API base URLs.
    func startSimulator(_ extra: [String]) throws -> (Process, String, String) {
        let (process, production, sandbox, _) = try startSimulatorWithBanner(extra)
        return (process, production, sandbox)
    }

    /// ``startSimulator(_:)`` with the banner the simulator printed.
    func startSimulatorWithBanner(_ extra: [String]) throws -> (Process, String, String, String) {
        let process = Process()
        process.executableURL = InspectCommandTests.binary
        process.arguments = ["simulator", "--port", "0"] + extra
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        var text = ""
        let handle = out.fileHandleForReading
        while !(text.contains("API data:") && (!extra.contains("--ocsp") || text.contains("OCSP responder:")) && text.hasSuffix("\n")) {
            let chunk = handle.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        func url(_ label: String) -> String {
            text.split(separator: "\n").first { $0.hasPrefix(label) }.map { String($0.split(separator: " ").last ?? "") } ?? ""
        }
        return (process, url("App Store Server API production:"), url("App Store Server API sandbox:"), text)
    }

    func lookup(_ workspace: Workspace, _ urls: (String, String), bundle: String = "com.example.receiptdash", _ arguments: [String])
        async throws -> InspectCommandTests.Run
    {
        try await cli.run(
            ["lookup"] + arguments + [
                "--issuer-id", "57246542-96fe-1a63-e053-0824d011072a", "--key-id", "2X9R4HXF34", "--private-key-file",
                workspace.keyFile, "--bundle-id", bundle, "--api-production-url", urls.0, "--api-sandbox-url", urls.1,
            ])
    }

    static func transactions(_ json: [String: Any]) -> [[String: Any]] { json["transactions"] as? [[String: Any]] ?? [] }
    static func requests(_ json: [String: Any]) -> [String] {
        func text(_ value: Any?) -> String {
            guard let value, !(value is NSNull) else { return "-" }
            return "\(value)"
        }
        return (json["requests"] as? [[String: Any]] ?? []).map {
            [text($0["endpoint"]), text($0["environment"]), text($0["http_status"]), text($0["api_error"])].joined(separator: " ")
        }
    }

    @Test func orderIDThroughTheSimulator() async throws {
        let workspace = try Workspace()
        let (simulator, production, sandbox) = try startSimulator([
            "--api-key-file", workspace.keyFile, "--api-root-out", workspace.rootFile,
        ])
        defer { simulator.terminate() }
        #expect(production.hasPrefix("http://127.0.0.1:") && production.hasSuffix("/api/production"))

        let run = try await lookup(workspace, (production, sandbox), ["--order-id", "MQ5X7ABCDE", "--format", "json", "--root-ca", workspace.rootFile])
        #expect(run.status == 0, "\(run.stderr)")
        let json = try #require(run.json as? [String: Any])
        #expect(json["environment"] as? String == "Production")
        #expect(json["query"] as? [String: String] == ["order_id": "MQ5X7ABCDE"])
        let rows = Self.transactions(json)
        #expect(
            rows.map { $0["transaction_id"] as? String } == [
                "2000000900000020", "2000000900000001", "2000000900000002", "2000000900000010", "2000000900000003",
            ])
        #expect(rows.map { ($0["trust"] as? [String: Any])?["verdict"] as? String } == Array(repeating: "test", count: 5))
        #expect(rows[3]["type"] as? String == "Consumable")
        #expect(rows[3]["revocation_reason"] as? Int == 0)
        let states = (json["subscriptions"] as? [[String: Any]] ?? []).map { "\($0["original_transaction_id"] ?? "") \($0["state"] ?? "")" }
        #expect(states == ["2000000900000001 active", "2000000900000020 expired"])
        #expect(json["refunds"] as? [String] == ["2000000900000010"])
        #expect(
            Self.requests(json) == [
                "look-up-order-id Production 200 -", "transaction-history Production 200 -", "subscription-statuses Production 200 -",
                "refund-history Production 200 -", "app-transaction-info Production 200 -",
            ])
        #expect(json["error"] == nil)
        let app = try #require(json["app_transaction"] as? [String: Any])
        #expect(app["app_transaction_id"] as? String == "704000000000000001")
        #expect(app["original_platform"] as? String == "iOS")
        #expect(app["original_application_version"] as? String == "7")
        #expect(app["app_apple_id"] as? Int == 1_234_567_890)
        #expect((app["trust"] as? [String: Any])?["verdict"] as? String == "test")

        // The same in text, and without --root-ca every item fails at its root: trust is checked.
        let text = try await lookup(workspace, (production, sandbox), ["--order-id", "MQ5X7ABCDE", "--root-ca", workspace.rootFile])
        #expect(text.status == 0)
        #expect(text.stdout.contains("Subscription com.example.receiptdash.pro.monthly (original 2000000900000001): active"))
        #expect(text.stdout.contains("Refunds: 2000000900000010"))
        let untrusted = try await lookup(workspace, (production, sandbox), ["--order-id", "MQ5X7ABCDE", "--format", "json"])
        let untrustedRows = Self.transactions(try #require(untrusted.json as? [String: Any]))
        #expect(untrustedRows.count == 5)
        for row in untrustedRows {
            let trust = try #require(row["trust"] as? [String: Any])
            #expect(trust["verdict"] as? String == "invalid")
            let failing = (trust["steps"] as? [[String: Any]] ?? []).filter { $0["outcome"] as? String == "fail" }.map { $0["name"] as? String }
            #expect(failing == ["root"])
        }
        for output in [run.stdout, run.stderr, text.stdout, text.stderr, untrusted.stdout] {
            #expect(!output.contains(workspace.keySecret))
        }
    }

    /// Apple's history and status filters: each page asked with them, the rows only the
    /// history's, the answer saying it is not the whole customer; a word no filter takes is a
    /// usage error that lists the words.
    @Test func filtersNarrowTheHistoryAndTheStatuses() async throws {
        let words = Wording("lookup-command")
        let workspace = try Workspace()
        let (simulator, production, sandbox) = try startSimulator(["--api-key-file", workspace.keyFile, "--api-root-out", workspace.rootFile])
        defer { simulator.terminate() }
        let urls = (production, sandbox)
        let base = ["--transaction-id", "2000000900000001", "--root-ca", workspace.rootFile]

        let consumables = try await lookup(workspace, urls, base + ["--product-type", "consumable", "--format", "json"])
        #expect(consumables.status == 0, "\(consumables.stderr)")
        let json = try #require(consumables.json as? [String: Any])
        #expect(Self.transactions(json).map { $0["transaction_id"] as? String } == ["2000000900000010"])
        #expect(json["refunds"] as? [String] == ["2000000900000010"])
        #expect(json["filters"] as? [String: [String]] == ["product_types": ["CONSUMABLE"]])

        let revoked = try await lookup(workspace, urls, base + ["--revoked", "--product-id", "com.example.receiptdash.coins100", "--format", "json"])
        let revokedJSON = try #require(revoked.json as? [String: Any])
        #expect(Self.transactions(revokedJSON).map { $0["transaction_id"] as? String } == ["2000000900000010"])
        let filters = try #require(revokedJSON["filters"] as? [String: Any])
        #expect(filters["revoked"] as? Bool == true)
        #expect(filters["product_ids"] as? [String] == ["com.example.receiptdash.coins100"])

        let active = try await lookup(workspace, urls, base + ["--status", "active", "--format", "json"])
        let activeJSON = try #require(active.json as? [String: Any])
        let statuses = (activeJSON["api_subscription_statuses"] as? [[String: Any]] ?? []).map { "\($0["original_transaction_id"] ?? "") \($0["status"] ?? "")" }
        #expect(statuses == ["2000000900000001 1"])
        #expect(activeJSON["filters"] as? [String: [String]] == ["statuses": ["active"]])
        #expect(Self.transactions(activeJSON).count == 5, "a status filter narrows the statuses, not the history")

        let whole = try await lookup(workspace, urls, base + ["--format", "json"])
        #expect((whole.json as? [String: Any])?["filters"] == nil)

        let text = try await lookup(workspace, urls, base + ["--product-type", "consumable"])
        words.said(text.stdout.split(separator: "\n").dropFirst().first)

        for wrong in [["--status", "paused"], ["--product-type", "subscription"], ["--revoked", "--not-revoked"], ["--start", "2026-11-02", "--end", "2026-11-01"]] {
            #expect(try await lookup(workspace, urls, base + wrong).status == 64, "\(wrong)")
        }
        // An id of the wrong shape is a usage error that names the shape, before anything is sent.
        for (flag, value) in [("--transaction-id", "2000000900000001x"), ("--app-transaction-id", "abc"), ("--order-id", "MQ5X7-ABCD")] {
            let wrong = try await lookup(workspace, urls, [flag, value])
            #expect(wrong.status == 64, "\(flag) \(value)")
            #expect(wrong.stderr.hasPrefix("Error: \(flag) takes "), "\(wrong.stderr)")
        }
        words.check()
    }

    /// The answer comes first: a line per subscription (state, until when, auto-renew) and per
    /// one-time purchase, before the rows it was judged from, with the dates the JSON gives.
    @Test func theAnswerComesBeforeTheRows() async throws {
        let workspace = try Workspace()
        let (simulator, production, sandbox) = try startSimulator(["--api-key-file", workspace.keyFile, "--api-root-out", workspace.rootFile])
        defer { simulator.terminate() }
        let arguments = ["--order-id", "MQ5X7ABCDE", "--root-ca", workspace.rootFile]
        let json = try await #require(try lookup(workspace, (production, sandbox), arguments + ["--format", "json"]).json as? [String: Any])
        let expires = Dictionary(
            uniqueKeysWithValues: (json["subscriptions"] as? [[String: Any]] ?? []).map {
                ($0["product_id"] as? String ?? "", String(($0["expires_date"] as? String ?? "").prefix(10)))
            })
        let text = try await lookup(workspace, (production, sandbox), arguments)
        #expect(text.status == 0, "\(text.stderr)")
        let lines = text.stdout.components(separatedBy: "\n")
        let start = try #require(lines.firstIndex(of: "Answer"))
        #expect(lines[start + 1] == "  com.example.receiptdash.pro.monthly: active (until \(expires["com.example.receiptdash.pro.monthly"] ?? "?"), auto-renew on)")
        #expect(lines[start + 2] == "  com.example.receiptdash.archive.yearly: expired (since \(expires["com.example.receiptdash.archive.yearly"] ?? "?"), auto-renew off)")
        #expect(lines[start + 3] == "  com.example.receiptdash.coins100 (consumable): refunded")
        #expect(lines.firstIndex(of: "Transactions (5)") == start + 5)
    }

    @Test func autoGoesToSandboxOn4040010AndTheDatabaseKeepsIt() async throws {
        let words = Wording("lookup-command", matching: Wording.runVariables)
        let workspace = try Workspace()
        let (simulator, production, sandbox) = try startSimulator([
            "--api-key-file", workspace.keyFile, "--api-root-out", workspace.rootFile,
        ])
        defer { simulator.terminate() }
        let db = workspace.folder.appendingPathComponent("audit.sqlite").path
        let run = try await lookup(
            workspace, (production, sandbox),
            ["--transaction-id", "2000000500000001", "--format", "json", "--root-ca", workspace.rootFile, "--db", db])
        #expect(run.status == 0, "\(run.stderr)")
        let json = try #require(run.json as? [String: Any])
        #expect(json["environment"] as? String == "Sandbox")
        #expect(
            Self.requests(json) == [
                "transaction-history Production 404 4040010", "transaction-history Sandbox 200 -",
                "subscription-statuses Production 404 4040010", "subscription-statuses Sandbox 200 -",
                "refund-history Production 404 4040010", "refund-history Sandbox 200 -",
                "app-transaction-info Production 404 4040010", "app-transaction-info Sandbox 200 -",
            ])
        #expect(Self.transactions(json).map { $0["transaction_id"] as? String } == ["2000000500000001", "2000000500000005"])
        let states = (json["subscriptions"] as? [[String: Any]] ?? []).map { $0["state"] as? String }
        #expect(states == ["in-grace-period"])

        let history = try await cli.run(["history", "--db", db, "--transaction-id", "2000000500000005"])
        #expect(history.status == 0)
        words.said(history.stdout)
        #expect(history.stdout.contains("com.example.receiptdash.lifetime  2000000500000005"))
        let stored = try Data(contentsOf: URL(fileURLWithPath: db))
        #expect(!String(decoding: stored, as: UTF8.self).contains(workspace.keySecret))
        #expect(stored.range(of: Data(workspace.key.rawRepresentation)) == nil)
        words.check()
    }

    @Test func unknownOrderAndWrongKeyFailInWords() async throws {
        let words = Wording("lookup-command")
        let workspace = try Workspace()
        let other = P256.Signing.PrivateKey()
        let serverKey = workspace.folder.appendingPathComponent("server.pem")
        try Data(other.publicKey.pemRepresentation.utf8).write(to: serverKey)
        let (strict, production, sandbox) = try startSimulator(["--api-key-file", serverKey.path])
        defer { strict.terminate() }
        let refused = try await lookup(workspace, (production, sandbox), ["--transaction-id", "2000000900000001", "--format", "json"])
        #expect(refused.status == 1)
        let error = try #require((refused.json as? [String: Any])?["error"] as? [String: Any])
        #expect(error["code"] as? String == "unauthorized")
        #expect((error["message"] as? String)?.contains("key") == true)
        // Each of the four side-by-side calls is refused once; none goes on to sandbox.
        #expect(
            Self.requests(try #require(refused.json as? [String: Any])) == [
                "transaction-history Production 401 -", "subscription-statuses Production 401 -", "refund-history Production 401 -",
                "app-transaction-info Production 401 -",
            ])

        let (open, production2, sandbox2) = try startSimulator(["--api-key-file", workspace.keyFile])
        defer { open.terminate() }
        let unknown = try await lookup(workspace, (production2, sandbox2), ["--order-id", "NOPE123456", "--format", "json"])
        #expect(unknown.status == 1)
        let message = ((unknown.json as? [String: Any])?["error"] as? [String: Any])?["message"] as? String
        words.said(message)

        let usage = try await cli.run(["lookup", "--order-id", "MQ5X7ABCDE", "--environment", "sandbox"])
        #expect(usage.status == 64)
        words.said(usage.stderr)
        words.check()
    }

    /// The bridge: a corpus receipt, decoded and checked offline, then its newest transaction
    /// id looked up (served by the simulator from a data file naming it).
    @Test func receiptBridge() async throws {
        let workspace = try Workspace()
        let receipt = cli.fixture("sandbox-2023.der")
        let inspected = try await #require(try cli.run(["inspect", "--format", "json", receipt]).json as? [String: Any])
        let inApp = try #require((inspected["receipt"] as? [String: Any])?["in_app"] as? [[String: Any]])
        let newest = try #require(inApp.max { ($0["purchase_date"] as? String ?? "") < ($1["purchase_date"] as? String ?? "") })
        let id = try #require(newest["transaction_id"] as? String)
        let bundle = "com.hannesoid.PurchasingExperiments"
        let data: [String: Any] = [
            "bundleId": bundle,
            "transactions": [[
                "transactionId": id, "originalTransactionId": newest["original_transaction_id"] ?? id, "bundleId": bundle,
                "productId": newest["product_id"] ?? "p", "type": "Non-Consumable", "purchaseDate": 1_700_000_000_000,
                "environment": "Sandbox",
            ]],
        ]
        let dataFile = workspace.folder.appendingPathComponent("data.json")
        try JSONSerialization.data(withJSONObject: data).write(to: dataFile)
        let (simulator, production, sandbox) = try startSimulator([
            "--api-key-file", workspace.keyFile, "--api-root-out", workspace.rootFile, "--api-data", dataFile.path,
        ])
        defer { simulator.terminate() }

        let run = try await lookup(workspace, (production, sandbox), bundle: bundle, [receipt, "--format", "json", "--root-ca", workspace.rootFile])
        #expect(run.status == 0, "\(run.stderr)")
        let json = try #require(run.json as? [String: Any])
        #expect(json["query"] as? [String: String] == ["source": receipt, "transaction_id": id, "receipt_trust": "valid"])
        #expect(json["environment"] as? String == "Sandbox")
        #expect(Self.transactions(json).map { $0["transaction_id"] as? String } == [id])
        #expect(Self.requests(json).prefix(2) == ["transaction-history Production 404 4040010", "transaction-history Sandbox 200 -"])
    }
}
