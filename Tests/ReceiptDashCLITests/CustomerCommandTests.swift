import Foundation
import Testing
import TestSupport

/// `receiptdash customer` as a support engineer runs it, against the simulator's demo customer:
/// the API's history and Apple's notification history merged with the trail's writes, the
/// JSON contract's keys, the trail alone (`--offline`), CSV, and the usage errors that name the
/// shape an id takes.
@Suite struct CustomerCommandTests {
    let cli = InspectCommandTests()
    let lookups = LookupCommandTests()

    func customer(_ workspace: LookupCommandTests.Workspace, _ urls: (String, String), _ arguments: [String]) async throws -> InspectCommandTests.Run {
        try await cli.run(
            ["customer"] + arguments + [
                "--issuer-id", "57246542-96fe-1a63-e053-0824d011072a", "--key-id", "2X9R4HXF34", "--private-key-file", workspace.keyFile,
                "--bundle-id", "com.example.receiptdash", "--api-production-url", urls.0, "--api-sandbox-url", urls.1, "--root-ca", workspace.rootFile,
            ])
    }

    static func events(_ json: [String: Any]) -> [String] {
        (json["events"] as? [[String: Any]] ?? []).map {
            "\($0["kind"] ?? "") \(($0["sources"] as? [String] ?? []).joined(separator: "+")) \($0["transaction_id"] as? String ?? "-")"
        }
    }

    @Test func theAPIAndTheTrailMakeOneStory() async throws {
        let words = Wording("customer-command", matching: Wording.instants)
        let workspace = try LookupCommandTests.Workspace()
        let (simulator, production, sandbox) = try lookups.startSimulator(["--api-key-file", workspace.keyFile, "--api-root-out", workspace.rootFile])
        defer { simulator.terminate() }
        let db = workspace.folder.appendingPathComponent("trail.sqlite").path
        let extend = try await cli.run([
            "extend", "--original-transaction-id", "2000000900000001", "--days", "7", "--reason", "service-issue", "--yes", "--db", db,
            "--request-id", "ticket-4711", "--issuer-id", "57246542-96fe-1a63-e053-0824d011072a", "--key-id", "2X9R4HXF34",
            "--private-key-file", workspace.keyFile, "--bundle-id", "com.example.receiptdash", "--api-production-url", production,
            "--api-sandbox-url", sandbox, "--root-ca", workspace.rootFile,
        ])
        #expect(extend.status == 0, "\(extend.stderr)")

        let run = try await customer(workspace, (production, sandbox), ["--transaction-id", "2000000900000001", "--db", db, "--format", "json"])
        #expect(run.status == 0, "\(run.stderr)")
        let json = try #require(run.json as? [String: Any])
        #expect(Set(json.keys) == ["at", "at_is_chosen", "customer", "events", "issues", "offline", "products", "sources", "subscriptions", "truncated", "trust"])
        #expect(json["offline"] as? Bool == false)
        #expect(json["at_is_chosen"] as? Bool == false)
        let ids = try #require(json["customer"] as? [String: Any])
        #expect(ids["app_transaction_ids"] as? [String] == ["704000000000000001"])
        #expect(ids["environment"] as? String == "Production")
        #expect(
            Self.events(json) == [
                "purchase api 2000000900000020", "purchase api 2000000900000001", "renewal api 2000000900000002", "expired api 2000000900000020",
                "purchase api 2000000900000010", "refund api 2000000900000010", "renewal api 2000000900000003", "extension action -",
            ])
        let issues = (json["issues"] as? [[String: Any]] ?? []).map { "\($0["code"] ?? "") \($0["transaction_id"] as? String ?? "-")" }
        #expect(
            issues == [
                "refund-not-notified 2000000900000010", "notification-missing 2000000900000001", "notification-missing 2000000900000002",
                "notification-missing 2000000900000020", "notification-missing 2000000900000010", "notification-missing 2000000900000003",
            ])
        let sources = try #require(json["sources"] as? [String: [String: Any]])
        #expect(sources.keys.sorted() == ["action", "api", "notification", "receipt", "verify"])
        #expect(sources["api"]?["asked"] as? Bool == true)
        #expect(sources["api"]?["errors"] as? [String] == [])
        #expect(sources["action"]?["rows"] as? Int == 1)
        let states = (json["subscriptions"] as? [[String: Any]] ?? []).map { "\($0["original_transaction_id"] ?? "") \($0["state"] ?? "") \($0["api_status"] ?? "")" }
        #expect(states == ["2000000900000001 active active", "2000000900000020 expired expired"])
        #expect((json["products"] as? [[String: Any]] ?? []).map { $0["state"] as? String } == ["refunded"])

        // The answer comes first in text, the issues before the timeline.
        let text = try await customer(workspace, (production, sandbox), ["--transaction-id", "2000000900000001", "--db", db, "--newest-first"])
        #expect(text.status == 0)
        let lines = text.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "Customer: app transaction 704000000000000001; original transactions 2000000900000020, 2000000900000001, 2000000900000010 (Production)")
        #expect(lines.firstIndex(of: "Answer")! < lines.firstIndex(of: "Issues (6)")!)
        #expect(lines.firstIndex(of: "Issues (6)")! < lines.firstIndex(of: "Timeline (8 events)")!)
        let timeline = lines.firstIndex(of: "Timeline (8 events)")!
        words.said(lines[timeline + 1])
        #expect(lines[timeline + 1].hasSuffix("Z  [action]"))

        // The trail alone: the write, and what the extension is about; Apple not asked.
        let offline = try await cli.run(["customer", "--offline", "--original-transaction-id", "2000000900000001", "--db", db, "--format", "json"])
        #expect(offline.status == 0, "\(offline.stderr)")
        let offlineJSON = try #require(offline.json as? [String: Any])
        #expect(offlineJSON["offline"] as? Bool == true)
        #expect(Self.events(offlineJSON) == ["extension action -"])
        #expect((offlineJSON["sources"] as? [String: [String: Any]])?["api"]?["asked"] as? Bool == false)

        let csv = try await cli.run(["customer", "--offline", "--original-transaction-id", "2000000900000001", "--db", db, "--format", "csv"])
        #expect(csv.status == 0)
        let rows = csv.stdout.split(separator: "\n")
        #expect(rows.first == "customer,at,kind,sources,transaction_id,original_transaction_id,product_id,trust,outcome,summary,refs")
        #expect(rows.count == 2)
        #expect(rows.last?.contains(",extension,action,,2000000900000001,com.example.receiptdash.pro.monthly,,success,") == true)

        // Not in the trail: exit 1, and where it looked.
        let missing = try await cli.run(["customer", "--offline", "--app-account-token", "7E3FB20B-4CDB-47CC-936D-99D65F608138", "--db", db])
        #expect(missing.status == 1)
        words.said(missing.stderr)
        for output in [run.stdout, run.stderr, text.stdout, offline.stdout] { #expect(!output.contains(workspace.keySecret)) }
        words.check()
    }

    /// The simulator's third customer holds every kind of event Apple reports, an app account
    /// token, and two notifications Apple lists but never delivered. A look-up recorded in the
    /// trail indexes the token: the trail alone then finds the customer by it.
    @Test func theThirdDemoCustomerShowsEveryKindAndIsFoundByItsToken() async throws {
        let workspace = try LookupCommandTests.Workspace()
        let (simulator, production, sandbox) = try lookups.startSimulator(["--api-key-file", workspace.keyFile, "--api-root-out", workspace.rootFile])
        defer { simulator.terminate() }
        let db = workspace.folder.appendingPathComponent("trail.sqlite").path
        let recorded = try await lookups.lookup(workspace, (production, sandbox), ["--order-id", "MQ5X7UVWXY", "--db", db, "--root-ca", workspace.rootFile])
        #expect(recorded.status == 0, "\(recorded.stderr)")

        let offline = try await cli.run(["customer", "--offline", "--app-account-token", "7E3FB20B-4CDB-47CC-936D-99D65F608138", "--db", db, "--format", "json"])
        #expect(offline.status == 0, "\(offline.stderr)")
        let stored = try #require(offline.json as? [String: Any])
        #expect((stored["customer"] as? [String: Any])?["app_transaction_ids"] as? [String] == ["704000000000000004"])
        #expect((stored["customer"] as? [String: Any])?["app_account_tokens"] as? [String] == ["7e3fb20b-4cdb-47cc-936d-99d65f608138"])
        let kinds = (stored["events"] as? [[String: Any]] ?? []).compactMap { $0["kind"] as? String }
        #expect(
            kinds == [
                "purchase", "purchase", "renewal", "renewal", "upgrade", "purchase", "renewal", "expired", "purchase", "refund", "renewal", "revoke",
                "purchase",
            ])

        let online = try await customer(workspace, (production, sandbox), ["--order-id", "MQ5X7UVWXY", "--db", db, "--format", "json"])
        #expect(online.status == 0, "\(online.stderr)")
        let json = try #require(online.json as? [String: Any])
        let codes = (json["issues"] as? [[String: Any]] ?? []).compactMap { $0["code"] as? String }
        // No receiver wrote into this trail: every notification Apple sent is missing from it,
        // and so are the REFUND and the REVOKE of the two refunds its history shows.
        #expect(codes.filter { $0 == "refund-not-notified" }.count == 2)
        #expect(codes.filter { $0 == "notification-missing" }.count == 18)
        let undelivered = (json["issues"] as? [[String: Any]] ?? []).filter { ($0["summary"] as? String)?.contains("UNSUCCESSFUL_HTTP_RESPONSE_CODE") == true }
        #expect(undelivered.compactMap { $0["transaction_id"] as? String } == ["2000000900000101", "2000000900000121"])
        let subscriptions = (json["subscriptions"] as? [[String: Any]] ?? []).map { "\($0["state"] ?? "") \($0["price_increase"] as? String ?? "none")" }
        #expect(subscriptions == ["active-will-not-renew pending", "expired none"])
    }

    @Test func anIdOfTheWrongShapeIsAUsageErrorThatNamesTheShape() async throws {
        let cases: [([String], String)] = [
            (["--transaction-id", "12ab"], "--transaction-id takes digits only (e.g. 2000000123456789), not 12ab."),
            (["--app-account-token", "not-a-uuid"], "--app-account-token takes a UUID (e.g. 7e3fb20b-4cdb-47cc-936d-99d65f608138), not not-a-uuid."),
            (["--order-id", "MQ5X-7"], "--order-id takes letters and digits only, as on the App Store invoice (e.g. MQ5X7ABCDE), not MQ5X-7."),
            (["--order-id", "MQ5X7ABCDE", "--offline"], "--order-id is known to Apple only: drop --offline, or name the customer by --transaction-id."),
            (["--transaction-id", "1", "--original-transaction-id", "2"], "Name exactly one of --transaction-id, --original-transaction-id, --order-id, --app-transaction-id or --app-account-token."),
        ]
        for (arguments, message) in cases {
            let run = try await cli.run(["customer"] + arguments)
            #expect(run.status == 64, "\(arguments)")
            #expect(run.stderr.contains("Error: \(message)"), "\(run.stderr)")
        }
    }
}
