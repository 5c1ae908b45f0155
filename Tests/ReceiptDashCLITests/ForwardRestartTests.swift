import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import TestSupport

/// `receive --forward` killed with -9 while a delivery is pending (its downstream failing): the
/// delivery waits in the outbox and goes out after the restart, once, signed.
@Suite(.timeLimit(.minutes(3))) struct ForwardRestartTests {
    let cli = InspectCommandTests()

    /// Starts `arguments` and reads its standard output until a line holds `text`.
    func start(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil, until text: String?) throws -> (Process, Pipe, String) {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        var seen = ""
        while let text, !seen.contains(text) {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            seen += String(decoding: chunk, as: UTF8.self)
        }
        return (process, out, seen)
    }

    @Test func aPendingDeliveryGoesOutAfterKill9() async throws {
        let folder = TemporaryFolder("forward-restart").url
        defer { try? FileManager.default.removeItem(at: folder) }
        let db = folder.appendingPathComponent("audit.sqlite").path
        let secret = folder.appendingPathComponent("forward.secret").path
        try Data("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n".utf8).write(to: URL(fileURLWithPath: secret))
        chmod(secret, 0o600)
        let port = TestPorts.closed()
        let sinkScript = InspectCommandTests.packageRoot.appendingPathComponent("Benchmarks/webhook-sink.py").path
        func sink(status: Int) throws -> (Process, Pipe) {
            let (process, out, _) = try start(
                URL(fileURLWithPath: "/usr/bin/env"), ["python3", sinkScript, String(port), secret],
                environment: ["SINK_VERBOSE": "1", "SINK_STATUS": String(status), "SINK_SECONDS": "90"], until: nil)
            return (process, out)
        }
        func heard(_ out: Pipe, _ text: String, in seen: inout String) {
            while !seen.contains(text) {
                let chunk = out.fileHandleForReading.availableData
                if chunk.isEmpty { return }
                seen += String(decoding: chunk, as: UTF8.self)
            }
        }
        let uuid = "1a7cdc3d-9360-49c3-ae37-0423e4c6e7c7"
        // The downstream fails every delivery (503).
        let (failing, failingOut) = try sink(status: 503)
        defer { if failing.isRunning { failing.terminate() } }
        let receive = [
            "receive", "--port", "0", "--metrics-port", "none", "--db", db, "--bundle-id", "com.loki-project.loki-messenger", "--environment",
            "sandbox", "--max-age", "none", "--forward", "http://127.0.0.1:\(port)/apple", "--forward-secret-file", secret,
        ]
        // The delivery is queued, sent, answered 503.
        let (first, _, banner) = try start(InspectCommandTests.binary, receive, until: "/notifications")
        let url = try #require(banner.split(whereSeparator: { $0 == " " || $0 == "\n" }).first { $0.hasSuffix("/notifications") }.map(String.init))
        let token = String(
            decoding: try Data(contentsOf: InspectCommandTests.packageRoot.appendingPathComponent(
                "Tests/ServiceTestSupport/Fixtures/notifications/session-pro_00_DID_RENEW.jws")), as: UTF8.self
        ).filter { !$0.isWhitespace }
        var request = URLRequest(url: try #require(URL(string: url)))
        request.httpMethod = "POST"
        request.httpBody = Data("{\"signedPayload\":\"\(token)\"}".utf8)
        let (_, response) = try await URLSession.shared.data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        var failed = ""
        heard(failingOut, "delivered \(uuid)", in: &failed)
        // Once its failed attempt is recorded, kill -9 (a crash before it would only hold its
        // lease for a minute).
        var attempts = 0
        for _ in 0..<200 where attempts == 0 {
            let listed = try await cli.run(["notifications", "--db", db, "--outbox", "--format", "json"])
            attempts = ((listed.json as? [String: Any])?["deliveries"] as? [[String: Any]])?.first?["attempts"] as? Int ?? 0
        }
        // One, or more when this machine is slow enough for the 5 s backoff to pass meanwhile.
        #expect(attempts >= 1)
        kill(first.processIdentifier, SIGKILL)
        first.waitUntilExit()
        // SIGKILL: the test process's children inherit its blocked SIGTERM.
        kill(failing.processIdentifier, SIGKILL)
        failing.waitUntilExit()
        let pending = try await cli.run(["notifications", "--db", db, "--outbox", "--format", "json"])
        let summary = try #require((pending.json as? [String: Any])?["summary"] as? [String: Any])
        #expect(summary["pending"] as? Int == 1)

        // The downstream is fixed, the receiver restarts: the delivery goes out at its next try
        // (the backoff's first wait, about 5 s).
        let (sink, sinkOut) = try sink(status: 204)
        defer { if sink.isRunning { sink.terminate() } }
        let (second, _, _) = try start(InspectCommandTests.binary, receive, until: "/notifications")
        defer { if second.isRunning { second.terminate() } }
        var delivered = ""
        heard(sinkOut, "delivered \(uuid)", in: &delivered)
        kill(second.processIdentifier, SIGTERM)
        second.waitUntilExit()
        kill(sink.processIdentifier, SIGKILL)
        sink.waitUntilExit()
        delivered += String(decoding: sinkOut.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        // Once, with a good signature.
        #expect(delivered.split(separator: "\n") == ["delivered \(uuid) signature ok"], "\(delivered)")
        let after = try await cli.run(["notifications", "--db", db, "--outbox", "--format", "json"])
        let done = try #require((after.json as? [String: Any])?["summary"] as? [String: Any])
        #expect(done["delivered"] as? Int == 1)
        #expect(done["pending"] as? Int == 0)
    }
}
