import Foundation
import ReceiptSimulator
import Testing
import TestSupport

/// A fleet on one PostgreSQL trail, as processes: four validators ingesting overlapping folders
/// at once make one row per receipt with every sighting, no row lost or doubled.
// A time limit: a test that waits for ever fails by name instead of stalling the run.
@Suite(.timeLimit(.minutes(2))) struct PostgresWritersTests {
    let cli = InspectCommandTests()

    /// A database of its own on the test server (CI always runs one), or the test is skipped.
    static func freshDatabase() throws -> String {
        guard let url = ProcessInfo.processInfo.environment["RECEIPTDASH_TEST_POSTGRES_URL"], !url.isEmpty else {
            try Test.cancel("RECEIPTDASH_TEST_POSTGRES_URL is not set: PostgreSQL case skipped")
        }
        let name = "receiptdash_cli_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
        let psql = Process()
        psql.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        psql.arguments = ["psql", url, "-q", "-c", "CREATE DATABASE \(name)"]
        try psql.run()
        psql.waitUntilExit()
        #expect(psql.terminationStatus == 0)
        // The server's URL with this database's name in place of the last path part.
        return String(url[..<(url.lastIndex(of: "/") ?? url.endIndex)]) + "/\(name)"
    }

    @Test func fourWritersOnOverlappingFoldersMakeExactCounts() async throws {
        let url = try Self.freshDatabase()
        let migrated = try await cli.run(["db", "migrate", "--db", url])
        #expect(migrated.status == 0, "\(migrated.stderr)")
        let root = TemporaryFolder("writers").url
        defer { try? FileManager.default.removeItem(at: root) }
        // 160 receipts; writer k's folder holds those with i % 4 == k or (k + 1) % 4: every
        // receipt is in exactly two folders, so it must end as one row with two sightings.
        let count = 160
        var folders: [URL] = []
        for k in 0..<4 {
            let folder = root.appendingPathComponent("w\(k)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            for i in 0..<count where i % 4 == k || i % 4 == (k + 1) % 4 {
                try Data(SyntheticReceipt.base64(i).utf8).write(to: folder.appendingPathComponent("r\(i).b64"))
            }
            folders.append(folder)
        }
        let results = try await withThrowingTaskGroup(of: InspectCommandTests.Run.self) { group in
            for folder in folders {
                group.addTask { try await cli.run(["watch", "--once", "--db", url, folder.path]) }
            }
            var all: [InspectCommandTests.Run] = []
            for try await run in group { all.append(run) }
            return all
        }
        for run in results { #expect(run.status == 0, "\(run.stderr)") }
        // Each writer saw 80 files; between them 160 new receipts, 160 seen again.
        let news = results.compactMap { run in
            run.stdout.split(separator: "\n").first { $0.hasPrefix("ingested") }.map(String.init)
        }
        #expect(news.count == 4)
        let history = try await cli.run(["history", "--db", url, "--format", "json"])
        #expect(history.status == 0, "\(history.stderr)")
        let rows = try #require(history.json as? [[String: Any]])
        #expect(rows.count == count)
        #expect(Set(rows.compactMap { $0["sightings"] as? Int }) == [2])
        #expect(rows.compactMap { $0["sightings"] as? Int }.reduce(0, +) == 2 * count)
    }
}
