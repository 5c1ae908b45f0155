import Foundation
import Testing
import TestSupport

/// `receiptdash db migrate` / `db copy` and `--db` values as a user types them: copying twice
/// changes nothing, a PostgreSQL password never reaches any output.
// A time limit: a test that waits for ever fails by name instead of stalling the run.
@Suite(.timeLimit(.minutes(2))) struct DatabaseCommandTests {
    let cli = InspectCommandTests()

    /// A folder with two receipts recorded into a new SQLite trail by `watch --once`.
    func recordedTrail() async throws -> (folder: URL, db: String) {
        let folder = TemporaryFolder("db-cli").url
        let drop = folder.appendingPathComponent("drop")
        try FileManager.default.createDirectory(at: drop, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: cli.fixture("sandbox-2023.der"), toPath: drop.appendingPathComponent("a.der").path)
        try FileManager.default.copyItem(atPath: cli.fixture("production.b64"), toPath: drop.appendingPathComponent("b.b64").path)
        let db = folder.appendingPathComponent("audit.sqlite").path
        let watched = try await cli.run(["watch", "--once", "--db", db, drop.path])
        #expect(watched.status == 0, "\(watched.stderr)")
        return (folder, db)
    }

    func copyTwice(from db: String, to target: String, shownAs shown: String) async throws {
        let first = try await cli.run(["db", "copy", "--from", db, "--to", target])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(
            first.stdout
                == "receiptdash: copied \(db) into \(shown): 2 receipts added, 0 already there, 2 sightings and 0 attempts added, 0 notifications and 0 refusals added\n")
        let second = try await cli.run(["db", "copy", "--from", db, "--to", target])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(
            second.stdout
                == "receiptdash: copied \(db) into \(shown): 0 receipts added, 2 already there, 0 sightings and 0 attempts added, 0 notifications and 0 refusals added\n")
        let history = try await cli.run(["history", "--db", target, "--format", "json"])
        #expect(history.status == 0, "\(history.stderr)")
        let rows = try #require(history.json as? [[String: Any]])
        #expect(rows.compactMap { $0["bundle_id"] as? String }.sorted() == ["com.hannesoid.PurchasingExperiments", "org.getpure.pure-iphone"])
    }

    @Test func copyIntoSQLiteTwiceAddsNothingTheSecondTime() async throws {
        let words = Wording("database-command")
        let (folder, db) = try await recordedTrail()
        defer { try? FileManager.default.removeItem(at: folder) }
        let target = folder.appendingPathComponent("team.sqlite").path
        let migrated = try await cli.run(["db", "migrate", "--db", target])
        #expect(migrated.status == 0, "\(migrated.stderr)")
        words.said(migrated.stdout)
        try await copyTwice(from: db, to: target, shownAs: target)
        words.check()
    }

    /// Against the test server when one runs (CI always starts one): a database of its own,
    /// made with psql, migrated twice, then the copy.
    @Test func copyIntoPostgreSQLTwiceAddsNothingTheSecondTime() async throws {
        let target = try PostgresWritersTests.freshDatabase()
        let (folder, db) = try await recordedTrail()
        defer { try? FileManager.default.removeItem(at: folder) }
        // The first creates the tables; the second has nothing to do.
        for expected in ["created \(target) at schema v15", "\(target) is at the current schema (v15)"] {
            let migrated = try await cli.run(["db", "migrate", "--db", target])
            #expect(migrated.status == 0, "\(migrated.stderr)")
            #expect(migrated.stdout == "receiptdash: \(expected)\n")
        }
        try await copyTwice(from: db, to: target, shownAs: target)
    }

    @Test func aPasswordInTheURLIsWarnedAboutAndNeverShown() async throws {
        let words = Wording("database-command")
        let secret = "hunter2-\(UUID().uuidString.prefix(8))"
        // Port 1: nothing listens; the command fails in words, without the password.
        let port = TestPorts.refusing()
        let result = try await cli.run(["history", "--db", "postgres://team:\(secret)@127.0.0.1:\(port)/audit"])
        #expect(result.status == 1)
        #expect(!result.stdout.contains(secret))
        #expect(!result.stderr.contains(secret), "\(result.stderr)")
        words.said(result.stderr)
        #expect(result.stderr.contains("postgres://team@127.0.0.1:\(port)/audit"), "\(result.stderr)")
        words.check()
    }

    @Test func unusableLocationsAreUsageErrors() async throws {
        let words = Wording("database-command")
        let other = try await cli.run(["history", "--db", "mysql://root@db/audit"])
        #expect(other.status == 64)
        words.said(other.stderr)
        let plain = try await cli.run(["history", "--db", "postgres://team@db.example.com/audit?sslmode=disable"])
        #expect(plain.status == 64)
        words.said(plain.stderr)
        let same = try await cli.run(["db", "copy", "--from", "/tmp/a.sqlite", "--to", "/tmp/a.sqlite"])
        #expect(same.status == 64)
        words.said(same.stderr)
        words.check()
    }
}
