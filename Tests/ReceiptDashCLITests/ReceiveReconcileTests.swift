import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import TestSupport

/// `receive --reconcile-every`: at start, the receiver asks the simulator's Notification History
/// and backfills what its store lacks (counted on /metrics, said in one log line); a second
/// receiver on the same store within the period skips the run instead of doing it again.
@Suite struct ReceiveReconcileTests {
    let cli = InspectCommandTests()
    let lookups = LookupCommandTests()

    /// A running receiver, its banner's metrics URL, and its log read line by line.
    final class Running {
        let process = Process()
        let log = Pipe()
        var metricsURL = ""
        var logText = ""

        init(_ arguments: [String]) throws {
            process.executableURL = InspectCommandTests.binary
            process.arguments = arguments
            let out = Pipe()
            process.standardOutput = out
            process.standardError = log
            try process.run()
            var banner = ""
            while !banner.contains("/metrics\n") {
                let chunk = out.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                banner += String(decoding: chunk, as: UTF8.self)
            }
            metricsURL = banner.split(whereSeparator: { $0 == " " || $0 == "\n" }).first { $0.hasSuffix("/metrics") }.map(String.init) ?? ""
        }

        /// Reads the log until a line holds `text` (or the process ends), and returns that line.
        func waitForLog(_ text: String) -> String? {
            while true {
                if let line = logText.split(separator: "\n").first(where: { $0.contains(text) }) { return String(line) }
                let chunk = log.fileHandleForReading.availableData
                if chunk.isEmpty { return nil }
                logText += String(decoding: chunk, as: UTF8.self)
            }
        }

        func metrics() async throws -> String {
            let (data, _) = try await URLSession.shared.data(from: try #require(URL(string: metricsURL)))
            return String(decoding: data, as: UTF8.self)
        }

        func stop() {
            kill(process.processIdentifier, SIGTERM)
            process.waitUntilExit()
        }
    }

    @Test func backfillsAtStartAndASecondReceiverSkipsTheWindow() async throws {
        let words = Wording("receive-reconcile", matching: Wording.runVariables)
        let workspace = try LookupCommandTests.Workspace()
        let (simulator, production, sandbox) = try lookups.startSimulator(["--api-key-file", workspace.keyFile, "--api-root-out", workspace.rootFile])
        defer { simulator.terminate() }
        let db = workspace.folder.appendingPathComponent("trail.sqlite").path
        let arguments = [
            "receive", "--port", "0", "--metrics-port", "0", "--db", db, "--bundle-id", "com.example.receiptdash", "--root-ca", workspace.rootFile,
            "--reconcile-every", "1h", "--reconcile-window", "175d", "--issuer-id", "57246542-96fe-1a63-e053-0824d011072a", "--key-id",
            "2X9R4HXF34", "--private-key-file", workspace.keyFile, "--api-production-url", production, "--api-sandbox-url", sandbox,
        ]
        let first = try Running(arguments)
        defer { if first.process.isRunning { first.stop() } }
        let line = try #require(first.waitForLog("reconcile production"), "\(first.logText)")
        words.said(line)
        let metrics = try await first.metrics()
        #expect(metrics.contains("receiptdash_reconcile_recovered_total 27"))
        #expect(metrics.contains(#"receiptdash_reconcile_runs_total{result="ok"} 1"#))
        #expect(metrics.contains(#"receiptdash_notifications_stored_total{environment="production",source="history"} 27"#))
        first.stop()
        #expect(first.process.terminationStatus == 0)

        let second = try Running(arguments)
        defer { if second.process.isRunning { second.stop() } }
        let skipped = try #require(second.waitForLog("reconcile production"), "\(second.logText)")
        words.said(skipped)
        #expect(try await second.metrics().contains(#"receiptdash_reconcile_runs_total{result="skipped"} 1"#))
        second.stop()

        let listed = try await cli.run(["notifications", "--db", db, "--format", "json"])
        let rows = try #require(listed.json as? [[String: Any]])
        #expect(rows.count == 27)
        #expect(Set(rows.compactMap { $0["source"] as? String }) == ["history"])

        let usage = try await cli.run(["receive", "--port", "0", "--db", db, "--bundle-id", "com.example.app", "--reconcile-every", "1h", "--reconcile-window", "200d"])
        #expect(usage.status == 64)
        words.said(usage.stderr)
        words.check()
    }
}
