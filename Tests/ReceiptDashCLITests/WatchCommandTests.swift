import AuditTrail
import AuditTrailSQLite
import Foundation
import Testing
import TestSupport

/// `receiptdash watch --once` over a folder and a log file: receipts recorded once each,
/// everything else counted as skipped, and nothing read beyond the decoder's size limit.
@Suite struct WatchCommandTests {
    let cli = InspectCommandTests()

    /// `watch --once .` takes the files of the current folder (a path starting with a dot is
    /// not a hidden file), and skips hidden files and subfolders.
    @Test func onceOverTheCurrentFolderSkipsOnlyHiddenFilesAndFolders() async throws {
        let folder = TemporaryFolder("watch-once").url
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("nested"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.copyItem(atPath: cli.fixture("sandbox-2023.der"), toPath: folder.appendingPathComponent("a.der").path)
        try FileManager.default.copyItem(atPath: cli.fixture("production.b64"), toPath: folder.appendingPathComponent(".hidden.b64").path)
        let trail = TemporaryFolder("watch-once-db")
        defer { trail.remove() }
        let db = trail.appending("watch-once.sqlite").path
        let result = try await cli.run(["watch", "--once", "--db", db, "."], currentDirectory: folder)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains(".: 1 file, 1 new"), "\(result.stdout)")
        #expect(result.stdout.contains("ingested 0 lines and 1 files: 1 new receipts, 0 seen again, 0 skipped"), "\(result.stdout)")
    }

    @Test func folderAndLogIngestedOnceEachWithSkipsCounted() async throws {
        let words = Wording("watch-command")
        let folder = TemporaryFolder("watch").url
        let drop = folder.appendingPathComponent("drop")
        try FileManager.default.createDirectory(at: drop, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let production = try Data(contentsOf: URL(fileURLWithPath: cli.fixture("production.b64")))
        try FileManager.default.copyItem(atPath: cli.fixture("sandbox-2023.der"), toPath: drop.appendingPathComponent("a.der").path)
        try production.write(to: drop.appendingPathComponent("b.b64"))
        try Data("not a receipt\n".utf8).write(to: drop.appendingPathComponent("notes.txt"))
        // A file one byte over the decoder's limit (sparse, so it costs no disk): skipped unread.
        let huge = drop.appendingPathComponent("huge.der")
        _ = FileManager.default.createFile(atPath: huge.path, contents: nil)
        let handle = try FileHandle(forWritingTo: huge)
        try handle.truncate(atOffset: UInt64(8 * 1024 * 1024 + 1))
        try handle.close()

        // The log holds noise, the same production receipt again (one row, a second sighting)
        // and a receipt wrapped in a request body.
        let base64 = String(decoding: production, as: UTF8.self).filter { !$0.isWhitespace }
        let xcode = try Data(contentsOf: URL(fileURLWithPath: cli.fixture("xcode.der"))).base64EncodedString()
        let log = folder.appendingPathComponent("app.log")
        try Data("""
            2026-11-22 INFO started
            \(base64)
            2026-11-22 WARN {"unrelated": true}
            {"receipt-data": "\(xcode)"}

            """.utf8).write(to: log)

        let db = folder.appendingPathComponent("audit.sqlite").path
        let result = try await cli.run(["watch", "--once", "--db", db, drop.path, log.path])
        #expect(result.status == 0, "\(result.stderr)")
        words.said(result.stdout)
        #expect(result.stdout.contains("\(drop.path): 3 files, 2 new"), "\(result.stdout)")
        #expect(result.stdout.contains("\(log.path): 4 lines, 1 new, 2 skipped"), "\(result.stdout)")
        #expect(
            result.stdout.contains("ingested 4 lines and 3 files: 3 new receipts, 1 seen again, 4 skipped"), "\(result.stdout)")

        let store = try AuditStore(readOnlyPath: db)
        let history = try await cli.run(["history", "--db", db, "--format", "json"])
        let rows = try #require(history.json as? [[String: Any]])
        #expect(rows.count == 3)
        #expect(Set(rows.compactMap { $0["bundle_id"] as? String }).count == 3)
        #expect(rows.compactMap { $0["sightings"] as? Int }.sorted() == [1, 1, 2])
        // The production receipt: one row, seen in the folder and then in the log.
        let twice = try #require(rows.first { $0["sightings"] as? Int == 2 })
        #expect(twice["bundle_id"] as? String == "org.getpure.pure-iphone")
        let seen = try #require(twice["seen"] as? [[String: Any]])
        #expect(seen.map { $0["kind"] as? String } == ["watch", "watch"])
        #expect(Set(seen.compactMap { $0["source"] as? String }) == [drop.appendingPathComponent("b.b64").path, log.path])
        #expect(try await store.counts() == ["decoded": 3], "recorded, not sent: watch ran without --verify")
        words.check()
    }
}
