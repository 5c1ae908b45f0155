import AuditTrail
import AuditTrailSQLite
import Foundation
import ReceiptSimulator
import Testing
import TestSupport

/// A verifying process killed with SIGKILL mid-batch leaves a consistent audit database;
/// resuming finishes the rest without doing anything twice.
@Suite struct AuditCrashTests {
    let cli = InspectCommandTests()

    @Test func killedBatchResumesWithoutDuplicates() async throws {
        let folder = TemporaryFolder("crash").url
        let receipts = folder.appendingPathComponent("receipts")
        try FileManager.default.createDirectory(at: receipts, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        for n in 0..<1000 {
            try Data(SyntheticReceipt.base64(n).utf8).write(to: receipts.appendingPathComponent(String(format: "r%04d.b64", n)))
        }
        let secretFile = folder.appendingPathComponent("secret")
        try Data("crash-test-secret-value".utf8).write(to: secretFile)
        let simulator = Process()
        simulator.executableURL = InspectCommandTests.binary
        simulator.arguments = ["simulator", "--port", "0", "--latency", "100"]
        let out = Pipe()
        simulator.standardOutput = out
        try simulator.run()
        defer { simulator.terminate() }
        var banner = ""
        while !banner.contains("sandbox:") {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            banner += String(decoding: chunk, as: UTF8.self)
        }
        let urls = banner.split(separator: "\n").compactMap { line -> String? in
            line.hasPrefix("production:") || line.hasPrefix("sandbox:") ? String(line.split(separator: " ").last!) : nil
        }
        #expect(urls.count == 2)
        let db = folder.appendingPathComponent("audit.sqlite").path
        let common = ["--db", db, "--production-url", urls[0], "--sandbox-url", urls[1], "--format", "json"]

        // First run: killed with SIGKILL once some results are on record.
        let victim = Process()
        victim.executableURL = InspectCommandTests.binary
        // 1,000 receipts at 8 in flight and 100 ms each take over 12 s: plenty of time to kill it.
        victim.arguments = ["verify"] + common + ["--concurrency", "8", receipts.path]
        victim.standardOutput = FileHandle.nullDevice
        // Its progress: a line on standard error per result ("done INPUT: …"), written only once
        // that result is on record (AuditedVerification records each before passing it on).
        let progress = Pipe()
        victim.standardError = progress
        try victim.run()
        var counts: [String: Int] = [:]
        // Watched by blocking reads on this thread, not a task: while other tests block the
        // cooperative pool, a suspended watcher could wake only after the batch had finished.
        var doneLines = 0
        var unfinished = Data()
        while doneLines < 50 {
            let chunk = progress.fileHandleForReading.availableData
            if chunk.isEmpty { break }  // the batch ended (or died) first
            unfinished += chunk
            while let newline = unfinished.firstIndex(of: UInt8(ascii: "\n")) {
                if unfinished[unfinished.startIndex..<newline].starts(with: Data("done ".utf8)) { doneLines += 1 }
                unfinished = unfinished[(newline + 1)...]
            }
        }
        if doneLines >= 50, let c = try? AuditStore(readOnlyPath: db).countsNow() { counts = c }
        kill(victim.processIdentifier, SIGKILL)
        victim.waitUntilExit()
        #expect(victim.terminationReason == .uncaughtSignal)
        #expect((counts["done"] ?? 0) >= 50)

        let afterKill = try await AuditStore(path: db).counts()
        let done = afterKill["done"] ?? 0
        let pending = afterKill["pending"] ?? 0
        #expect(done > 0 && done < 1000, "killed mid-batch: \(afterKill)")
        #expect(done + pending == 1000, "every receipt is done or pending: \(afterKill)")
        #expect(afterKill["failed"] == nil)

        // Resume: only the pending ones are verified.
        let resumed = try await cli.run(["verify"] + common + ["--concurrency", "64", "--resume"])
        #expect(resumed.status == 0)
        #expect(resumed.stderr.contains("verified \(pending): \(pending) answered"), "\(resumed.stderr)")
        let store = try AuditStore(path: db)
        #expect(try await store.counts() == ["done": 1000])
        let attempts = try await store.attemptsPerReceipt()
        #expect(attempts.count == 1000)
        #expect(attempts.values.allSatisfy { $0 == 1 }, "no receipt was recorded twice")
        // And the history has one row per receipt.
        let history = try await cli.run(["history", "--db", db, "--format", "json", "--status", "0"])
        #expect((history.json as? [Any])?.count == 1000)
    }
}
