import Foundation
import Testing
import TestSupport

/// `receiptdash simulator` and `receiptdash verify` as processes, the way a user runs them.
@Suite struct VerifyCommandTests {
    let cli = InspectCommandTests()

    /// Starts the simulator on a free port and returns it with its production and sandbox URLs.
    func startSimulator(secretFile: String) throws -> (Process, String, String) {
        let process = Process()
        process.executableURL = InspectCommandTests.binary
        process.arguments = ["simulator", "--port", "0", "--secret-file", secretFile]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        var text = ""
        let handle = out.fileHandleForReading
        while !text.contains("sandbox:") {
            let chunk = handle.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        func url(_ label: String) -> String {
            text.split(separator: "\n").first { $0.hasPrefix(label) }.map { String($0.split(separator: " ").last ?? "") } ?? ""
        }
        return (process, url("production:"), url("sandbox:"))
    }

    @Test func verifyThroughTheSimulatorWithoutLeakingTheSecret() async throws {
        let secret = "f3a9c1e07b6d4a2e9c8b7a6d5e4f3a2b"
        let scratch = TemporaryFolder("secret")
        defer { scratch.remove() }
        let file = scratch.appending("secret")
        try Data((secret + "\n").utf8).write(to: file)
        let (simulator, production, sandbox) = try startSimulator(secretFile: file.path)
        defer { simulator.terminate() }
        #expect(production.hasPrefix("http://127.0.0.1:"))

        let json = try await cli.run([
            "verify", "--format", "json", "--shared-secret-file", file.path, "--production-url", production, "--sandbox-url", sandbox,
            cli.fixture("production.b64"), cli.fixture("sandbox-2023.der"),
        ])
        #expect(json.status == 0)
        let results = try #require(json.json as? [[String: Any]])
        #expect(results.map { $0["status"] as? Int } == [0, 0])
        #expect(results.map { $0["environment"] as? String } == ["Production", "Sandbox"])
        #expect((results[1]["attempts"] as? [[String: Any]])?.map { $0["status"] as? Int } == [21007, 0])
        let response = try #require(results[0]["response"] as? [String: Any])
        #expect((response["latest_receipt_info"] as? [Any])?.count == 4)
        #expect(json.stderr.contains("verified 2: 2 answered (0: 2), 0 failed, 0 duplicates"))

        let text = try await cli.run([
            "verify", "--shared-secret-file", file.path, "--production-url", production, "--sandbox-url", sandbox,
            cli.fixture("production.b64"),
        ])
        #expect(text.status == 0)
        #expect(text.stdout.contains("Status          0 Valid"))
        for output in [json.stdout, json.stderr, text.stdout, text.stderr] {
            #expect(!output.contains(secret))
        }
    }

    @Test func wrongSecretExitsWithFailureAndSaysWhy() async throws {
        let words = Wording("verify-command")
        let scratch = TemporaryFolder("secrets")
        defer { scratch.remove() }
        let right = scratch.appending("right")
        let wrong = scratch.appending("wrong")
        try Data("right-secret-0000".utf8).write(to: right)
        try Data("wrong-secret-1111".utf8).write(to: wrong)
        let (simulator, production, sandbox) = try startSimulator(secretFile: right.path)
        defer { simulator.terminate() }
        let result = try await cli.run([
            "verify", "--shared-secret-file", wrong.path, "--production-url", production, "--sandbox-url", sandbox,
            cli.fixture("production.b64"),
        ])
        #expect(result.status == 1)
        words.said(result.stdout)
        #expect(!result.stdout.contains("wrong-secret-1111") && !result.stderr.contains("wrong-secret-1111"))
        words.check()
    }

    @Test func secretIsNeverAnArgument() async throws {
        let words = Wording("verify-command")
        let result = try await cli.run(["verify", "--password", "x", cli.fixture("production.b64")])
        #expect(result.status == 64)
        words.said(result.stderr)
        words.check()
    }

    // MARK: - Plain http only on loopback (exit 64 before anything is sent)

    /// A non-loopback http URL is a usage error naming https, for verify, watch and dash alike.
    @Test(arguments: [
        ["verify", "--production-url", "http://example.invalid/verifyReceipt"],
        ["verify", "--sandbox-url", "http://sandbox.example.invalid/verifyReceipt"],
        ["watch", "--verify", "--once", "--db", "/nonexistent/never-created.sqlite", "--production-url", "http://127.0.0.1.example.com/v"],
    ])
    func plainHTTPToANonLoopbackHostIsAUsageError(arguments: [String]) async throws {
        let words = Wording("verify-command", case: "\(arguments)")
        let result = try await cli.run(arguments + [cli.fixture("production.b64")])
        #expect(result.status == 64, "\(result.stderr)")
        words.said(result.stderr)
        #expect(result.stdout.isEmpty)
        words.check()
    }

    // MARK: - The simulator's secret: a file or the environment, never argv

    /// `--secret` is gone (argv is visible in ps): a usage error, and the simulator never
    /// starts. A watchdog ends the process if it does start.
    @Test func simulatorRefusesASecretOnTheCommandLine() throws {
        let words = Wording("verify-command")
        let process = Process()
        process.executableURL = InspectCommandTests.binary
        process.arguments = ["simulator", "--port", "0", "--secret", "visible-in-ps-0000"]
        let err = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = err
        try process.run()
        let watchdog = DispatchWorkItem { process.terminate() }
        DispatchQueue.global().asyncAfter(deadline: .now() + 10, execute: watchdog)
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        watchdog.cancel()
        #expect(process.terminationStatus == 64)
        words.said(stderr)
        words.check()
    }

    /// The simulator takes its secret from RECEIPTDASH_SHARED_SECRET and shows it masked.
    @Test func simulatorReadsItsSecretFromTheEnvironment() throws {
        let process = Process()
        process.executableURL = InspectCommandTests.binary
        process.arguments = ["simulator", "--port", "0"]
        process.environment = ["RECEIPTDASH_SHARED_SECRET": "env-secret-abcdef-9876"]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        defer { process.terminate() }
        var text = ""
        while !text.contains("shared secret:") {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        #expect(text.contains("shared secret: required (••••…9876)"), "\(text)")
        #expect(!text.contains("env-secret-abcdef"))
    }

    // MARK: - Every input accounted for

    /// One row per input, in order: the undecodable input gets an error row as `inspect`
    /// writes it (today it has none: `[]` for it alone).
    @Test func jsonHasARowForEveryInput() async throws {
        let words = Wording("verify-command")
        let folder = TemporaryFolder("rows").url
        defer { try? FileManager.default.removeItem(at: folder) }
        let junk = folder.appendingPathComponent("junk.txt").path
        try Data("not a receipt at all\n".utf8).write(to: URL(fileURLWithPath: junk))
        let secret = folder.appendingPathComponent("secret")
        try Data("row-test-secret-value".utf8).write(to: secret)
        let (simulator, production, sandbox) = try startSimulator(secretFile: secret.path)
        defer { simulator.terminate() }
        let online = ["--shared-secret-file", secret.path, "--production-url", production, "--sandbox-url", sandbox]

        let alone = try await cli.run(["verify", "--format", "json"] + online + [junk])
        #expect(alone.status == 1)
        let row = try #require(alone.json as? [String: Any], "\(alone.stdout)")
        #expect(row["source"] as? String == junk)
        #expect(row.keys.sorted() == ["error", "source"])
        let error = try #require(row["error"] as? [String: Any])
        #expect(error["code"] as? String == "unrecognised format")
        words.said(error["message"] as? String)

        let both = try await cli.run(["verify", "--format", "json"] + online + [junk, cli.fixture("production.b64"), cli.fixture("notification-v2.jws")])
        #expect(both.status == 1)
        let rows = try #require(both.json as? [[String: Any]], "\(both.stdout)")
        #expect(rows.map { $0["source"] as? String } == [junk, cli.fixture("production.b64"), cli.fixture("notification-v2.jws")])
        #expect((rows[0]["error"] as? [String: Any])?["code"] as? String == "unrecognised format")
        #expect(rows[1]["status"] as? Int == 0)
        let notReceipt = try #require(rows[2]["error"] as? [String: String])
        #expect(notReceipt.keys.sorted() == ["code", "message"])
        words.said(notReceipt["code"])
        words.said(notReceipt["message"])
        words.check()
    }

    /// `--send-undecodable` sends what the decoder cannot read as it is, and records Apple's
    /// answer (the simulator cannot read it either: 21002, retried once).
    @Test func sendUndecodableSendsItAsItIs() async throws {
        let words = Wording("verify-command")
        let folder = TemporaryFolder("undecodable").url
        defer { try? FileManager.default.removeItem(at: folder) }
        let odd = folder.appendingPathComponent("odd.b64").path
        try Data("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=\n".utf8).write(to: URL(fileURLWithPath: odd))
        let secret = folder.appendingPathComponent("secret")
        try Data("row-test-secret-value".utf8).write(to: secret)
        let (simulator, production, sandbox) = try startSimulator(secretFile: secret.path)
        defer { simulator.terminate() }
        let db = folder.appendingPathComponent("audit.sqlite").path
        let result = try await cli.run([
            "verify", "--format", "json", "--send-undecodable", "--db", db, "--shared-secret-file", secret.path, "--production-url", production,
            "--sandbox-url", sandbox, odd,
        ])
        #expect(result.status == 1)
        let row = try #require(result.json as? [String: Any], "\(result.stdout) \(result.stderr)")
        #expect(row["source"] as? String == odd)
        #expect(row["status"] as? Int == 21002)
        #expect((row["attempts"] as? [[String: Any]])?.map { $0["status"] as? Int } == [21002, 21002])
        words.said(result.stderr)
        let history = try await cli.run(["history", "--db", db, "--format", "json"])
        let rows = try #require(history.json as? [[String: Any]])
        #expect(rows.map { $0["format"] as? String } == ["undecodable"])
        #expect(rows.map { $0["status"] as? Int } == [21002])
        words.check()
    }
}
