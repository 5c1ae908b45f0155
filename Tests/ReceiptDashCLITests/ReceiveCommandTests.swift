import AuditTrail
import Foundation
import NotificationReceiver
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ServiceTestSupport
import Testing
import TestSupport

/// `receiptdash receive` as it runs: prints where it listens, stores a genuine notification
/// before answering 200, and on SIGTERM stops, closes the store and exits 0.
@Suite struct ReceiveCommandTests {
    @Test func receivesThenStopsCleanlyOnSIGTERM() async throws {
        let folder = TemporaryFolder("receive-cli").url
        defer { try? FileManager.default.removeItem(at: folder) }
        let db = folder.appendingPathComponent("audit.sqlite").path

        let receiver = Process()
        receiver.executableURL = InspectCommandTests.binary
        receiver.arguments = [
            "receive", "--port", "0", "--db", db, "--bundle-id", "com.loki-project.loki-messenger", "--environment", "sandbox",
            "--max-age", "none", "--metrics-port", "0",
        ]
        let out = Pipe()
        receiver.standardOutput = out
        receiver.standardError = FileHandle.nullDevice
        try receiver.run()
        defer { if receiver.isRunning { receiver.terminate() } }
        var banner = ""
        while banner.split(separator: "\n").count < 2 {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            banner += String(decoding: chunk, as: UTF8.self)
        }
        let url = try #require(banner.split(whereSeparator: { $0 == " " || $0 == "\n" }).first { $0.hasSuffix("/notifications") }.map(String.init))
        #expect(url.hasPrefix("http://127.0.0.1:") && url.hasSuffix("/notifications"), "\(banner)")
        // The metrics listener: its own port, on loopback.
        let metricsURL = try #require(banner.split(whereSeparator: { $0 == " " || $0 == "\n" }).first { $0.hasSuffix("/metrics") }.map(String.init))
        #expect(metricsURL.hasPrefix("http://127.0.0.1:"), "\(banner)")

        let token = String(
            decoding: try Data(
                contentsOf: InspectCommandTests.packageRoot.appendingPathComponent(
                    "Tests/ServiceTestSupport/Fixtures/notifications/session-pro_00_DID_RENEW.jws")),
            as: UTF8.self
        ).filter { !$0.isWhitespace }
        var request = URLRequest(url: try #require(URL(string: url)))
        request.httpMethod = "POST"
        request.httpBody = Data("{\"signedPayload\":\"\(token)\"}".utf8)
        let (_, response) = try await URLSession.shared.data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        let (metrics, metricsResponse) = try await URLSession.shared.data(from: try #require(URL(string: metricsURL)))
        #expect((metricsResponse as? HTTPURLResponse)?.statusCode == 200)
        #expect(String(decoding: metrics, as: UTF8.self).contains(#"receiptdash_notifications_total{type="DID_RENEW",outcome="accepted"} 1"#))

        kill(receiver.processIdentifier, SIGTERM)
        receiver.waitUntilExit()
        #expect(receiver.terminationReason == .exit)
        #expect(receiver.terminationStatus == 0)
        let rest = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(rest.contains("receiptdash: stopped; store closed"))

        let store = try NotificationStore(path: db).started()
        #expect(try await store.notifications().map(\.record.notificationUUID) == ["1a7cdc3d-9360-49c3-ae37-0423e4c6e7c7"])
        await store.close()
    }

    /// The gates are required: no bundle id, or --accept-v1 without a secret, is a usage error
    /// (exit 64) that names what to add, before anything listens.
    @Test func refusesToStartWithoutItsGates() async throws {
        let words = Wording("receive-command")
        let cli = InspectCommandTests()
        let folder = TemporaryFolder("receive-gates").url
        defer { try? FileManager.default.removeItem(at: folder) }
        let db = folder.appendingPathComponent("audit.sqlite").path
        let noBundle = try await cli.run(["receive", "--port", "0", "--db", db])
        #expect(noBundle.status == 64)
        words.said(noBundle.stderr)
        let noSecret = try await cli.run(["receive", "--port", "0", "--db", db, "--bundle-id", "com.example.app", "--accept-v1"])
        #expect(noSecret.status == 64)
        words.said(noSecret.stderr)
        let badAge = try await cli.run(["receive", "--port", "0", "--db", db, "--bundle-id", "com.example.app", "--max-age", "soon"])
        #expect(badAge.status == 64)
        words.said(badAge.stderr)
        let badEnvironment = try await cli.run(["receive", "--port", "0", "--db", db, "--bundle-id", "com.example.app", "--environment", "xcode"])
        #expect(badEnvironment.status == 64)
        // The API settings serve --reconcile-every or --consumption-policy; a faulty policy file
        // is refused with its line before anything listens.
        let keyAlone = try await cli.run(["receive", "--port", "0", "--db", db, "--bundle-id", "com.example.app", "--key-id", "2X9R4HXF34"])
        #expect(keyAlone.status == 64)
        words.said(keyAlone.stderr)
        let policy = folder.appendingPathComponent("policy.toml").path
        try "[[policy]]\nname = \"x\"\nrespond = true\n".write(toFile: policy, atomically: true, encoding: .utf8)
        let badPolicy = try await cli.run(["receive", "--port", "0", "--db", db, "--bundle-id", "com.example.app", "--consumption-policy", policy])
        #expect(badPolicy.status == 64)
        words.said(badPolicy.stderr.replacingOccurrences(of: policy, with: "POLICY"))
        // A request may wait for a quiet moment at most 10 hours: the unanswered alert's age.
        let longWait = try await cli.run([
            "receive", "--port", "0", "--db", db, "--bundle-id", "com.example.app", "--consumption-policy", policy, "--consumption-max-wait", "11h",
        ])
        #expect(longWait.status == 64)
        words.said(longWait.stderr)
        let dash = try await cli.run(["--receive", "0", "--db", db])
        #expect(dash.status == 64)
        #expect(dash.stderr.contains("--receive needs --bundle-id"), "\(dash.stderr)")
        #expect(!FileManager.default.fileExists(atPath: db))
        words.check()
    }
}
