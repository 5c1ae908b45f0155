@testable import AppStoreClients
@testable import AuditTrail
@testable import AuditTrailSQLite
import Foundation
import GRDB
import ReceiptCore
import ReceiptSimulator
@testable import ReceiptWatch
import RetryEngine
import Testing
import TestSupport

@Suite struct WatchSourceTests {
    func temporaryFolder() throws -> URL {
        let url = TemporaryFolder("watch").url
        return url
    }

    func append(_ text: String, to url: URL) throws {
        let handle = try FileHandle(forWritingTo: url)
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(text.utf8))
        try handle.close()
    }

    @Test func logFollowerHandlesPartialLinesRotationAndTruncation() throws {
        let folder = try temporaryFolder()
        let log = folder.appendingPathComponent("app.log")
        try Data("one\ntwo\nthr".utf8).write(to: log)
        let follower = LogFollower(path: log.path)
        #expect(follower.poll() == ["one", "two"])
        try append("ee\nfour\n", to: log)
        #expect(follower.poll() == ["three", "four"])
        #expect(follower.poll().isEmpty)
        // Rotation: the file is moved away and a new one starts.
        try FileManager.default.moveItem(at: log, to: folder.appendingPathComponent("app.log.1"))
        try Data("five\n".utf8).write(to: log)
        #expect(follower.poll() == ["five"])
        // Truncation in place.
        try Data("six\n".utf8).write(to: log)
        #expect(follower.poll() == ["six"])
        // From the end: what is already there is skipped.
        let tail = LogFollower(path: log.path, fromStart: false)
        #expect(tail.poll().isEmpty)
        try append("seven\n", to: log)
        #expect(tail.poll() == ["seven"])
    }

    @Test func folderWatcherReportsEachSettledFileOnce() throws {
        let folder = try temporaryFolder()
        let watcher = FolderWatcher(path: folder.path)
        try Data("a".utf8).write(to: folder.appendingPathComponent("a.b64"))
        #expect(watcher.poll().isEmpty, "first sight: wait for the size to settle")
        #expect(watcher.poll().map { ($0 as NSString).lastPathComponent } == ["a.b64"])
        #expect(watcher.poll().isEmpty, "each file once")
        try Data("b".utf8).write(to: folder.appendingPathComponent("b.b64"))
        try Data(".".utf8).write(to: folder.appendingPathComponent(".hidden"))
        _ = watcher.poll()
        #expect(watcher.poll().map { ($0 as NSString).lastPathComponent } == ["b.b64"])
    }

    @Test func ingestorCountsEveryLineOnce() async throws {
        let store = try AuditStore(path: TemporaryFolder("ingest").appending("ingest.sqlite").path)
        let ingestor = Ingestor(store: store)
        let receipt = String(decoding: try Data(contentsOf: ServiceFixture.folder.appendingPathComponent("production.b64")), as: UTF8.self).filter { !$0.isWhitespace }
        let response = String(decoding: try Data(contentsOf: ServiceFixture.folder.appendingPathComponent("verify-response.json")), as: UTF8.self).replacingOccurrences(of: "\n", with: " ")
        let lines = ["noise", "", receipt, #"{"receipt-data": "\#(receipt)"}"#, response, "GET /health 200", "MIIT but broken !!"]
        let recorded = try await ingestor.ingest(lines: lines, kind: .watch, source: "app.log", at: Date())
        #expect(recorded.count == 3)
        #expect(recorded.map(\.isNew) == [true, false, true])
        let counts = ingestor.counts
        #expect(counts.lines == 7)
        #expect(counts.newReceipts == 2)
        #expect(counts.seenAgain == 1)
        #expect(counts.skipped == 4)
    }
}
