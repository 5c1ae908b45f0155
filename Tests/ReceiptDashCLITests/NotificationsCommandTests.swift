import AuditTrail
import Foundation
import NotificationReceiver
import ServiceTestSupport
import Testing
import TestSupport

/// `receiptdash notifications` on a receiver's database: the list in json, csv and text with
/// its filters, and `--reconcile` against the simulator's Notification History.
@Suite struct NotificationsCommandTests {
    let cli = InspectCommandTests()
    let lookups = LookupCommandTests()

    /// A database holding two notifications as a receiver stores them: a DID_RENEW (one of the
    /// simulator demo's, delivered twice) and a TEST.
    func database() async throws -> String {
        let path = TemporaryFolder("notifications").appending("notifications.sqlite").path
        let store = try NotificationStore(path: path).started()
        let renew = NotificationRecord(
            notificationUUID: "5b1a7e1c-0002-4d7e-9c1e-5f1f0a000002", version: .v2, notificationType: "DID_RENEW",
            bundleID: "com.example.receiptdash", environment: "Production", signedDate: Date(timeIntervalSince1970: 1_790_000_000),
            receivedAt: Date(timeIntervalSince1970: 1_790_000_001), verdict: .test, transactionID: "2000000900000002",
            originalTransactionID: "2000000900000001", productID: "com.example.receiptdash.pro.monthly")
        let test = NotificationRecord(
            notificationUUID: "0c1d2e3f-0000-4000-8000-000000000001", version: .v2, notificationType: "TEST",
            bundleID: "com.example.other", environment: "Sandbox", receivedAt: Date(timeIntervalSince1970: 1_790_000_100),
            verdict: .valid)
        _ = try await store.append(renew)
        _ = try await store.append(renew)
        _ = try await store.append(test)
        await store.close()
        return path
    }

    /// `--outbox` lists the forwarding outbox with its totals; `--replay` queues notifications
    /// again for the targets registered in the trail (none registered: exit 1 and how to name
    /// one) and says which UUIDs the store lacks; `--enable` lets a target gone 410 be sent to.
    @Test func outboxListsAndReplayQueuesAgain() async throws {
        let words = Wording("notifications-command")
        let path = TemporaryFolder("outbox").appending("audit.sqlite").path
        let store = try NotificationStore(path: path)
        let unregistered = try await cli.run(["notifications", "--db", path, "--replay", "5b1a7e1c-0002-4d7e-9c1e-5f1f0a000002"])
        #expect(unregistered.status == 1)
        #expect(unregistered.stdout == "")
        words.said(unregistered.stderr)
        try await store.backend.registerForwardTargets(["https://hooks.example.com/apple"], types: [], at: Date(timeIntervalSince1970: 1_790_000_000))
        let forwarding = NotificationStore(backend: store.backend).started()
        let renew = NotificationRecord(
            notificationUUID: "5b1a7e1c-0002-4d7e-9c1e-5f1f0a000002", version: .v2, notificationType: "DID_RENEW",
            receivedAt: Date(timeIntervalSince1970: 1_790_000_001), verdict: .test, originalTransactionID: "2000000900000001")
        _ = try await forwarding.append(renew)
        await forwarding.close()
        await store.close()

        let json = try await cli.run(["notifications", "--db", path, "--outbox", "--format", "json"])
        #expect(json.status == 0, "\(json.stderr)")
        let top = try #require(json.json as? [String: Any])
        let deliveries = try #require(top["deliveries"] as? [[String: Any]])
        #expect(deliveries.count == 1)
        #expect(Set(deliveries[0].keys) == [
            "id", "notification_uuid", "target", "order_key", "state", "attempts", "queued_at", "next_attempt_at", "completed_at", "last_status",
            "last_error", "notification_type", "subtype",
        ])
        #expect(deliveries[0]["notification_type"] as? String == "DID_RENEW")
        #expect(deliveries[0]["state"] as? String == "pending")
        #expect(deliveries[0]["order_key"] as? String == "2000000900000001")
        #expect(deliveries[0]["queued_at"] as? String == "2026-09-21T14:13:21Z")
        let summary = try #require(top["summary"] as? [String: Any])
        #expect(summary["pending"] as? Int == 1)
        #expect(summary["dead"] as? Int == 0)
        let text = try await cli.run(["notifications", "--db", path, "--outbox", "--state", "pending"])
        #expect(text.stdout.hasPrefix(
            "2026-09-21 14:13:21  pending    DID_RENEW  5b1a7e1c-0002-4d7e-9c1e-5f1f0a000002 → https://hooks.example.com/apple  (not tried yet)\n"))
        #expect(text.stdout.contains("outbox: 1 pending (oldest queued "))

        let replay = try await cli.run(["notifications", "--db", path, "--replay", "5b1a7e1c-0002-4d7e-9c1e-5f1f0a000002", "0000-nope"])
        #expect(replay.status == 1)
        words.said(replay.stdout)
        words.said(replay.stderr)

        let enable = try await cli.run(["notifications", "--db", path, "--outbox", "--enable", "https://hooks.example.com/apple"])
        #expect(enable.status == 0, "\(enable.stderr)")
        let unknown = try await cli.run(["notifications", "--db", path, "--outbox", "--enable", "https://elsewhere.example.com/"])
        #expect(unknown.status == 1)
        #expect(unknown.stderr.contains("registered: https://hooks.example.com/apple"))
        for (arguments, message) in [
            (["--replay"], "--replay needs notificationUUIDs or --since TIME"),
            (["--outbox", "--replay", "x"], "--outbox lists and --replay queues"),
            (["--state", "dead"], "--state, --limit and --enable belong to --outbox."),
            (["--replay", "x", "--to", "http://hooks.example.com/"], "--to hooks.example.com over plain http"),
            (["--replay", "x", "--to", "https://hooks.example.com/?token=abc"], "--forward-header-file FILE"),
        ] {
            let usage = try await cli.run(["notifications", "--db", path] + arguments)
            #expect(usage.status == 64, "\(arguments)")
            #expect(usage.stderr.contains(message), "\(usage.stderr)")
        }
        words.check()
    }

    /// `--follow --format jsonl`: one JSON line per notification, each with its row id; from
    /// `--after-id`, then what is stored while it runs; `--since` starts from a time.
    @Test func followStreamsJSONLinesAsTheyAreStored() async throws {
        let words = Wording("notifications-command")
        let db = try await database()
        let process = Process()
        process.executableURL = InspectCommandTests.binary
        process.arguments = ["notifications", "--db", db, "--follow", "--format", "jsonl", "--after-id", "0"]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        var text = ""
        func lines(_ count: Int) -> [[String: Any]] {
            while text.split(separator: "\n").count < count {
                let chunk = out.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                text += String(decoding: chunk, as: UTF8.self)
            }
            return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        }
        var rows = lines(2)
        #expect(rows.map { $0["id"] as? Int } == [1, 2])
        #expect(rows.map { $0["notification_type"] as? String } == ["DID_RENEW", "TEST"])
        #expect(rows[0]["deliveries"] as? Int == 2)

        let store = try NotificationStore(path: db).started()
        _ = try await store.append(
            NotificationRecord(
                notificationUUID: "0c1d2e3f-0000-4000-8000-000000000003", version: .v2, notificationType: "REFUND",
                receivedAt: Date(timeIntervalSince1970: 1_790_000_200), verdict: .valid))
        await store.close()
        rows = lines(3)
        #expect(rows.map { $0["id"] as? Int } == [1, 2, 3])
        #expect(rows.last?["notification_type"] as? String == "REFUND")
        process.terminate()
        process.waitUntilExit()

        let usage = try await cli.run(["notifications", "--db", db, "--format", "jsonl"])
        #expect(usage.status == 64)
        words.said(usage.stderr)
        words.check()
    }

    @Test func listsWhatTheReceiverStored() async throws {
        let words = Wording("notifications-command")
        let db = try await database()
        let json = try await cli.run(["notifications", "--db", db, "--format", "json"])
        #expect(json.status == 0, "\(json.stderr)")
        let rows = try #require(json.json as? [[String: Any]])
        #expect(rows.map { $0["notification_uuid"] as? String } == ["5b1a7e1c-0002-4d7e-9c1e-5f1f0a000002", "0c1d2e3f-0000-4000-8000-000000000001"])
        #expect(rows.map { $0["deliveries"] as? Int } == [2, 1])
        #expect(rows[0]["explanation"] as? String == "DID_RENEW: renewed: access continues")
        #expect(rows[0]["received_at"] as? String == "2026-09-21T14:13:21Z")
        #expect(rows[1]["subtype"] is NSNull)
        #expect(Set(rows[0].keys) == [
            "notification_uuid", "notification_type", "subtype", "bundle_id", "environment", "signed_date", "received_at", "deliveries",
            "verdict", "transaction_id", "original_transaction_id", "product_id", "explanation", "consumption_request_reason", "source",
        ])
        #expect(rows.map { $0["source"] as? String } == ["receiver", "receiver"])

        let renewals = try await cli.run(["notifications", "--db", db, "--format", "json", "--type", "DID_RENEW"])
        #expect((renewals.json as? [[String: Any]])?.count == 1)
        let other = try await cli.run(["notifications", "--db", db, "--format", "json", "--bundle-id", "com.example.other"])
        #expect((other.json as? [[String: Any]])?.map { $0["notification_type"] as? String } == ["TEST"])

        let csv = try await cli.run(["notifications", "--db", db, "--format", "csv"])
        let lines = csv.stdout.components(separatedBy: "\r\n")
        #expect(lines[0] == "notification_uuid,notification_type,subtype,bundle_id,environment,signed_date,received_at,deliveries,verdict,transaction_id,original_transaction_id,product_id,explanation,consumption_request_reason,source")
        #expect(lines.count == 4)  // header, two rows, the final empty line
        let text = try await cli.run(["notifications", "--db", db])
        #expect(text.stdout.contains("T DID_RENEW: renewed: access continues"))
        #expect(text.stdout.contains("delivered 2×"))
        #expect(text.stdout.hasSuffix("2 notifications\n"))

        let missing = try await cli.run(["notifications", "--db", db + ".absent"])
        #expect(missing.status == 66)
        words.said(missing.stderr)
        words.check()
    }

    /// The simulator's demo history lists 27 production notifications (9 of its first two
    /// customers, 18 of its third); the database holds one of them: the other 26 are reported
    /// missing with Apple's send attempts, read over two pages.
    @Test func reconcileFindsWhatWasMissed() async throws {
        let db = try await database()
        let workspace = try LookupCommandTests.Workspace()
        let (simulator, production, sandbox) = try lookups.startSimulator(["--api-key-file", workspace.keyFile])
        defer { simulator.terminate() }
        let start = String(ISO8601DateFormatter().string(from: Date().addingTimeInterval(-170 * 86_400)))
        let run = try await cli.run([
            "notifications", "--db", db, "--reconcile", "--start", start, "--format", "json", "--issuer-id",
            "57246542-96fe-1a63-e053-0824d011072a", "--key-id", "2X9R4HXF34", "--private-key-file", workspace.keyFile, "--bundle-id",
            "com.example.receiptdash", "--api-production-url", production, "--api-sandbox-url", sandbox,
        ])
        #expect(run.status == 1, "missing notifications make the exit status 1")
        let report = try #require(run.json as? [String: Any])
        #expect(report["sent"] as? Int == 27)
        #expect(report["received"] as? Int == 1)
        let missing = try #require(report["missing"] as? [[String: Any]])
        #expect(
            Set(missing.compactMap { $0["notification_uuid"] as? String }) == Set<String>([
                "5b1a7e1c-0001-4d7e-9c1e-5f1f0a000001", "5b1a7e1c-0003-4d7e-9c1e-5f1f0a000003", "5b1a7e1c-0004-4d7e-9c1e-5f1f0a000004",
                "5b1a7e1c-0005-4d7e-9c1e-5f1f0a000005", "5b1a7e1c-0007-4d7e-9c1e-5f1f0a000007", "5b1a7e1c-0008-4d7e-9c1e-5f1f0a000008",
                "5b1a7e1c-0009-4d7e-9c1e-5f1f0a000009", "5b1a7e1c-0010-4d7e-9c1e-5f1f0a000010",
            ]).union((1...18).map { String(format: "5b1a7e1c-01%02d-4d7e-9c1e-5f1f0a0001%02d", $0, $0) }))
        let timedOut = try #require(missing.first { $0["notification_uuid"] as? String == "5b1a7e1c-0003-4d7e-9c1e-5f1f0a000003" })
        #expect((timedOut["send_attempts"] as? [[String: Any]])?.map { $0["result"] as? String } == ["TIMED_OUT", "SUCCESS"])
        #expect((report["requests"] as? [[String: Any]])?.map { $0["endpoint"] as? String } == ["notification-history", "notification-history"])

        let usage = try await cli.run(["notifications", "--db", db, "--reconcile"])
        #expect(usage.status == 64)
    }

    /// `--ingest`: each notification Apple's history lists and the trail lacks goes through the
    /// receiver's checks and is stored from `history`; a second run finds nothing missing.
    @Test func reconcileIngestBackfillsFromHistory() async throws {
        let words = Wording("notifications-command", matching: Wording.runVariables)
        let workspace = try LookupCommandTests.Workspace()
        let (simulator, production, sandbox) = try lookups.startSimulator(["--api-key-file", workspace.keyFile, "--api-root-out", workspace.rootFile])
        defer { simulator.terminate() }
        let db = workspace.folder.appendingPathComponent("trail.sqlite").path
        let start = String(ISO8601DateFormatter().string(from: Date().addingTimeInterval(-170 * 86_400)))
        let api = [
            "--issuer-id", "57246542-96fe-1a63-e053-0824d011072a", "--key-id", "2X9R4HXF34", "--private-key-file", workspace.keyFile, "--bundle-id",
            "com.example.receiptdash", "--api-production-url", production, "--api-sandbox-url", sandbox, "--root-ca", workspace.rootFile,
        ]
        let run = try await cli.run(["notifications", "--db", db, "--reconcile", "--ingest", "--start", start, "--format", "json"] + api)
        #expect(run.status == 0, "\(run.stderr)")
        let report = try #require(run.json as? [String: Any])
        #expect(report["sent"] as? Int == 27)
        let ingested = try #require(report["ingested"] as? [[String: Any]])
        #expect(ingested.count == 27)
        #expect(Set(ingested.compactMap { $0["outcome"] as? String }) == ["accepted"])

        let listed = try await cli.run(["notifications", "--db", db, "--format", "json"])
        let rows = try #require(listed.json as? [[String: Any]])
        #expect(rows.count == 27)
        #expect(Set(rows.compactMap { $0["source"] as? String }) == ["history"])
        #expect(Set(rows.compactMap { $0["verdict"] as? String }) == ["test"])

        let again = try await cli.run(["notifications", "--db", db, "--reconcile", "--ingest", "--start", start] + api)
        #expect(again.status == 0, "\(again.stderr)")
        words.said(again.stdout)
        words.said(again.stdout)

        // Apple's filters, and its 180-day limit.
        let one = try await cli.run(
            ["notifications", "--db", db, "--reconcile", "--start", start, "--transaction-id", "2000000900000001", "--format", "json"] + api)
        #expect((one.json as? [String: Any])?["sent"] as? Int == 5)
        let tooOld = try await cli.run(["notifications", "--db", db, "--reconcile", "--start", "2020-01-01T00:00:00Z"] + api)
        #expect(tooOld.status == 64)
        words.said(tooOld.stderr)
        words.check()
    }
}
