import Foundation
import Testing

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

    @Test func verifyThroughTheSimulatorWithoutLeakingTheSecret() throws {
        let secret = "f3a9c1e07b6d4a2e9c8b7a6d5e4f3a2b"
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("secret-\(UUID())")
        try Data((secret + "\n").utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let (simulator, production, sandbox) = try startSimulator(secretFile: file.path)
        defer { simulator.terminate() }
        #expect(production.hasPrefix("http://127.0.0.1:"))

        let json = try cli.run([
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

        let text = try cli.run([
            "verify", "--shared-secret-file", file.path, "--production-url", production, "--sandbox-url", sandbox,
            cli.fixture("production.b64"),
        ])
        #expect(text.status == 0)
        #expect(text.stdout.contains("Status          0 Valid"))
        for output in [json.stdout, json.stderr, text.stdout, text.stderr] {
            #expect(!output.contains(secret))
        }
    }

    @Test func wrongSecretExitsWithFailureAndSaysWhy() throws {
        let right = FileManager.default.temporaryDirectory.appendingPathComponent("right-\(UUID())")
        let wrong = FileManager.default.temporaryDirectory.appendingPathComponent("wrong-\(UUID())")
        try Data("right-secret-0000".utf8).write(to: right)
        try Data("wrong-secret-1111".utf8).write(to: wrong)
        defer {
            try? FileManager.default.removeItem(at: right)
            try? FileManager.default.removeItem(at: wrong)
        }
        let (simulator, production, sandbox) = try startSimulator(secretFile: right.path)
        defer { simulator.terminate() }
        let result = try cli.run([
            "verify", "--shared-secret-file", wrong.path, "--production-url", production, "--sandbox-url", sandbox,
            cli.fixture("production.b64"),
        ])
        #expect(result.status == 1)
        #expect(result.stdout.contains("Status          21004 Shared secret mismatch"))
        #expect(!result.stdout.contains("wrong-secret-1111") && !result.stderr.contains("wrong-secret-1111"))
    }

    @Test func secretIsNeverAnArgument() throws {
        let result = try cli.run(["verify", "--password", "x", cli.fixture("production.b64")])
        #expect(result.status == 64)
        #expect(result.stderr.contains("Unknown option '--password'"))
    }
}
