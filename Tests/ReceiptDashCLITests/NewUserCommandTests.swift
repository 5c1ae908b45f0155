@testable import AuditTrail
@testable import AuditTrailSQLite
import Crypto
import Foundation
import GRDB
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a new user meets first. Each test reproduces one defect as a user types it,
/// from a scratch folder with relative file names.
@Suite(.timeLimit(.minutes(3))) struct NewUserCommandTests {
    let cli = InspectCommandTests()

    /// A fresh folder under the temporary directory.
    static func scratch(_ name: String) throws -> URL {
        TemporaryFolder(name).url
    }

    /// A scratch folder with `drop/` holding two receipts.
    func folderWithDrop() throws -> URL {
        let folder = try Self.scratch("bare-db")
        let drop = folder.appendingPathComponent("drop")
        try FileManager.default.createDirectory(at: drop, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: cli.fixture("sandbox-2023.der"), toPath: drop.appendingPathComponent("a.der").path)
        try FileManager.default.copyItem(atPath: cli.fixture("production.b64"), toPath: drop.appendingPathComponent("b.b64").path)
        return folder
    }

    /// Runs the binary (or `executable`) with an environment of its own: added to this
    /// process's, or alone when `inheriting` is false.
    static func run(
        _ arguments: [String], environment: [String: String], removing: [String] = [], inheriting: Bool = true, currentDirectory: URL? = nil,
        executable: URL = InspectCommandTests.binary
    ) async throws -> InspectCommandTests.Run {
        var env = inheriting ? ProcessInfo.processInfo.environment : [:]
        for name in removing { env[name] = nil }
        env.merge(environment) { _, new in new }
        return try await CLIRunner.run(arguments, environment: env, currentDirectory: currentDirectory, executable: executable)
    }

    // MARK: (1) --db with a bare file name

    /// `--db notes.sqlite` relative to the current folder, absent and then present, in every
    /// command that writes and in `history`.
    @Test func aBareFileNameWorksInEveryCommand() async throws {
        let folder = try folderWithDrop()
        defer { try? FileManager.default.removeItem(at: folder) }
        let said = Transcript(replacing: [(folder.path, "<folder>")])
        func run(_ arguments: [String]) async throws -> InspectCommandTests.Run {
            said.record(arguments, try await cli.run(arguments, currentDirectory: folder))
        }
        let first = try await run(["watch", "--once", "--db", "notes.sqlite", "drop"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("notes.sqlite").path))
        let again = try await run(["watch", "--once", "--db", "notes.sqlite", "drop"])
        #expect(again.status == 0, "\(again.stderr)")

        #expect(try await run(["db", "migrate", "--db", "fresh.sqlite"]).status == 0)
        #expect(try await run(["db", "migrate", "--db", "notes.sqlite"]).status == 0)
        #expect(try await run(["db", "copy", "--to", "other.sqlite", "--from", "notes.sqlite"]).status == 0)
        #expect(try await run(["db", "copy", "--to", "other.sqlite", "--from", "notes.sqlite"]).status == 0)

        for db in ["notes.sqlite", "other.sqlite"] {
            let history = try await cli.run(["history", "--db", db, "--format", "json"], currentDirectory: folder)
            #expect(history.status == 0, "\(history.stderr)")
            let rows = try #require(history.json as? [[String: Any]], "\(history.stdout)")
            #expect(rows.compactMap { $0["bundle_id"] as? String }.sorted() == ["com.hannesoid.PurchasingExperiments", "org.getpure.pure-iphone"])
        }
        #expect(try await run(["history", "--db", "absent.sqlite"]).status == 66)
        // The counts each command says (2 new, then 2 seen again; copied, then already there).
        Golden.check("bare-file-names", said.text)
    }

    /// `db migrate` says what it did: created, migrated from an older version, or nothing to do.
    @Test func migrateSaysWhatItDid() async throws {
        let folder = try Self.scratch("migrate")
        defer { try? FileManager.default.removeItem(at: folder) }
        let said = Transcript()
        func run(_ arguments: [String]) async throws -> InspectCommandTests.Run {
            said.record(arguments, try await cli.run(arguments, currentDirectory: folder))
        }
        #expect(try await run(["db", "migrate", "--db", "team.sqlite"]).status == 0)
        #expect(try await run(["db", "migrate", "--db", "team.sqlite"]).status == 0)
        // An older trail: made by the migrations up to v3 (as receiptdash made it before
        // notifications existed).
        let old = folder.appendingPathComponent("old.sqlite").path
        try AuditStore.migrator.migrate(try DatabaseQueue(path: old), upTo: "v3")
        #expect(try await run(["db", "migrate", "--db", "old.sqlite"]).status == 0)
        // Created, then nothing to do, then migrated from v3.
        Golden.check("db-migrate", said.text)
    }

    // MARK: (5) verify without an answer keeps its attempts

    @Test func aVerifyThatGetsNoAnswerKeepsEveryAttempt() async throws {
        let port = TestPorts.refusing()
        let production = "http://127.0.0.1:\(port)/production/verifyReceipt"
        let sandbox = "http://127.0.0.1:\(port)/sandbox/verifyReceipt"
        let result = try await cli.run([
            "verify", "--format", "json", "--production-url", production, "--sandbox-url", sandbox, cli.fixture("production.b64"),
        ])
        #expect(result.status == 1)
        let row = try #require(result.json as? [String: Any], "\(result.stdout)")
        #expect(row["status"] is NSNull)
        #expect(row["environment"] as? String == "Production")
        let error = try #require(row["error"] as? [String: Any])
        #expect(error["code"] as? String == "retries-exhausted")
        let attempts = try #require(row["attempts"] as? [[String: Any]], "\(row)")
        // The first try and 4 retries, every one refused at once (never a connect timeout).
        #expect(attempts.count == 5)
        #expect(attempts.map { $0["url"] as? String } == Array(repeating: production, count: 5))
        #expect(attempts.map { ($0["error"] as? [String: Any])?["code"] as? String } == Array(repeating: "refused", count: 5))
        #expect(attempts.map { ($0["error"] as? [String: Any])?["message"] as? String } == Array(repeating: "connection refused", count: 5))
        #expect(attempts.allSatisfy { $0["latency_ms"] is Double || $0["latency_ms"] is Int })
        #expect(attempts.allSatisfy { $0["status"] == nil })
        #expect(!result.stderr.contains("SingleConnectionFailure"), "\(result.stderr)")
    }

    // MARK: (7) watch --once - reads to the end of its input

    @Test func watchOnceOnStandardInputReadsToTheEnd() throws {
        let folder = try Self.scratch("watch-stdin")
        defer { try? FileManager.default.removeItem(at: folder) }
        let process = Process()
        process.executableURL = InspectCommandTests.binary
        process.arguments = ["watch", "--once", "--db", "w.sqlite", "-"]
        process.currentDirectoryURL = folder
        let input = Pipe()
        let out = Pipe()
        process.standardInput = input
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let first = try String(contentsOfFile: cli.fixture("production.b64"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let second = try String(contentsOfFile: cli.fixture("legacy-sandbox.b64"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        input.fileHandleForWriting.write(Data("\(first)\nnot a receipt\n".utf8))
        // The writer pauses until the watch has recorded the first receipt (it has read what
        // was there and not seen the end): --once must still read until the pipe is closed.
        #if canImport(Glibc)
        let database = folder.appendingPathComponent("w.sqlite").path
        let recorded = Self.waitForChanges(in: folder, unlessReadable: out.fileHandleForReading) {
            ((try? AuditStore(readOnlyPath: database).countsNow())?.values.reduce(0, +) ?? 0) >= 1
        }
        #expect(recorded, "the watch ended before it recorded the first receipt")
        #endif
        input.fileHandleForWriting.write(Data("\(second)\n\(first)\n".utf8))
        try input.fileHandleForWriting.close()
        let output = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(output.contains("ingested 4 lines and 0 files: 2 new receipts, 1 seen again, 1 skipped"), "\(output)")
    }

    #if canImport(Glibc)
    /// Waits, with no timer, until `ready()` holds: asked now and again at each change inotify
    /// reports in `folder` (a file created, written or moved in). False if `output` turns
    /// readable first (the process wrote or ended) and `ready()` still does not hold.
    static func waitForChanges(in folder: URL, unlessReadable output: FileHandle, until ready: () -> Bool) -> Bool {
        let watcher = inotify_init()
        guard watcher >= 0 else { return ready() }
        defer { close(watcher) }
        guard inotify_add_watch(watcher, folder.path, UInt32(IN_CREATE | IN_MODIFY | IN_MOVED_TO)) >= 0 else { return ready() }
        var events = [UInt8](repeating: 0, count: 4096)
        while !ready() {
            var waiting = [
                pollfd(fd: watcher, events: Int16(POLLIN), revents: 0), pollfd(fd: output.fileDescriptor, events: Int16(POLLIN), revents: 0),
            ]
            if poll(&waiting, 2, -1) < 0 {
                if errno == EINTR { continue }
                return ready()
            }
            if waiting[1].revents != 0 { return ready() }
            _ = read(watcher, &events, events.count)
        }
        return true
    }
    #endif

    // MARK: (8) PostgreSQL errors in plain words

    @Test func aRefusedPostgreSQLConnectionIsSaidPlainly() async throws {
        let words = Wording("new-user-command")
        let port = TestPorts.refusing()
        let result = try await cli.run(["db", "migrate", "--db", "postgres://team@127.0.0.1:\(port)/audit"])
        #expect(result.status == 1)
        words.said(result.stderr)
        words.check()
    }

    /// Against the test server (skipped without one): a refused password, a database that does
    /// not exist and a certificate nobody trusts, each in words and without the password.
    @Test func postgreSQLFailuresAreSaidPlainly() async throws {
        guard let url = ProcessInfo.processInfo.environment["RECEIPTDASH_TEST_POSTGRES_URL"], !url.isEmpty,
            let components = URLComponents(string: url), let port = components.port
        else { try Test.cancel("RECEIPTDASH_TEST_POSTGRES_URL is not set: PostgreSQL case skipped") }
        let base = String(url[..<(url.lastIndex(of: "/") ?? url.endIndex)])
        // The server named as the test's URL names it (its port and user change with the set-up).
        let words = Wording("new-user-command", replacing: [(base, "<server>")])
        let wrong = "not-the-password-\(UUID().uuidString.prefix(6))"
        let auth = try await Self.run(
            ["db", "migrate", "--db", url], environment: ["PGPASSWORD": wrong, "PGPASSFILE": "/nonexistent/pgpass"])
        #expect(auth.status == 1)
        words.said(auth.stderr)
        #expect(!auth.stderr.contains(wrong))

        let missing = try await Self.run(["db", "migrate", "--db", base + "/no_such_database_24"], environment: [:])
        #expect(missing.status == 1)
        words.said(missing.stderr)
        words.check()

        guard ProcessInfo.processInfo.environment["RECEIPTDASH_TEST_POSTGRES_CA"] != nil else { return }
        let tls = Wording("new-user-command", case: "TLS")
        let untrusted = try await Self.run(["db", "migrate", "--db", "postgres://receiptdash@localhost:\(port)/receiptdash_test?sslmode=verify-full"], environment: [:])
        #expect(untrusted.status == 1)
        tls.said(untrusted.stderr)
        tls.check()
    }

    // MARK: (11) smaller

    @Test func aFailedLookupSaysNothingAboutRefunds() async throws {
        let words = Wording("new-user-command", matching: Wording.runVariables)
        let lookups = LookupCommandTests()
        let workspace = try LookupCommandTests.Workspace()
        defer { try? FileManager.default.removeItem(at: workspace.folder) }
        let serverKey = workspace.folder.appendingPathComponent("server.pem")
        try Data(P256.Signing.PrivateKey().publicKey.pemRepresentation.utf8).write(to: serverKey)
        let (simulator, production, sandbox) = try lookups.startSimulator(["--api-key-file", serverKey.path])
        defer { simulator.terminate() }
        let refused = try await lookups.lookup(workspace, (production, sandbox), ["--transaction-id", "2000000900000001"])
        #expect(refused.status == 1)
        words.said(refused.stdout)
        #expect(refused.stdout.contains("  Failed: "), "\(refused.stdout)")
        #expect(!refused.stdout.contains("Refunds"), "\(refused.stdout)")
        words.check()
    }

    @Test func notificationTypesMatchWhateverTheCase() async throws {
        let words = Wording("new-user-command")
        let db = try await NotificationsCommandTests().database()
        defer { try? FileManager.default.removeItem(atPath: db) }
        for type in ["DID_RENEW", "did_renew", "Did_Renew"] {
            let listed = try await cli.run(["notifications", "--db", db, "--format", "json", "--type", type])
            #expect(listed.status == 0, "\(listed.stderr)")
            #expect((listed.json as? [[String: Any]])?.map { $0["notification_uuid"] as? String } == ["5b1a7e1c-0002-4d7e-9c1e-5f1f0a000002"])
        }
        let unknown = try await cli.run(["notifications", "--db", db, "--type", "refunded"])
        #expect(unknown.status == 64)
        words.said(unknown.stderr)
        #expect(unknown.stderr.contains("REFUND, "), "\(unknown.stderr)")
        words.check()
    }

    @Test func aDateAloneIsMidnightUTC() async throws {
        let words = Wording("new-user-command")
        let db = try await NotificationsCommandTests().database()
        defer { try? FileManager.default.removeItem(atPath: db) }
        // Received 2026-09-21T14:13:21Z and 2026-09-21T14:15:00Z.
        let sameDay = try await cli.run(["notifications", "--db", db, "--format", "json", "--since", "2026-09-21"])
        #expect(sameDay.status == 0, "\(sameDay.stderr)")
        #expect((sameDay.json as? [[String: Any]])?.count == 2)
        let nextDay = try await cli.run(["notifications", "--db", db, "--format", "json", "--since", "2026-09-22"])
        #expect(nextDay.status == 0, "\(nextDay.stderr)")
        #expect((nextDay.json as? [[String: Any]])?.count == 0)

        let folder = try folderWithDrop()
        defer { try? FileManager.default.removeItem(at: folder) }
        let watched = try await cli.run(["watch", "--once", "--db", "h.sqlite", "drop"], currentDirectory: folder)
        #expect(watched.status == 0, "\(watched.stderr)")
        let history = try await cli.run(["history", "--db", "h.sqlite", "--since", "2000-01-01", "--format", "json"], currentDirectory: folder)
        #expect(history.status == 0, "\(history.stderr)")
        #expect((history.json as? [[String: Any]])?.count == 2)
        let future = try await cli.run(["history", "--db", "h.sqlite", "--since", "2999-01-01", "--format", "json"], currentDirectory: folder)
        #expect(future.status == 0, "\(future.stderr)")
        #expect((future.json as? [[String: Any]])?.count == 0)
        for bad in ["2026-13-01", "yesterday", "2026-11-25T"] {
            let refused = try await cli.run(["history", "--db", "h.sqlite", "--since", bad], currentDirectory: folder)
            #expect(refused.status == 64)
            words.said(refused.stderr)
        }
        words.check()
    }

    @Test func copyFromAMissingFileSaysNoSuchFile() async throws {
        let words = Wording("new-user-command")
        let folder = try Self.scratch("copy-missing")
        defer { try? FileManager.default.removeItem(at: folder) }
        let result = try await cli.run(["db", "copy", "--from", "./nope.sqlite", "--to", "t.sqlite"], currentDirectory: folder)
        #expect(result.status == 66)
        words.said(result.stderr)
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("t.sqlite").path))
        words.check()
    }

    @Test func keepDaysZeroIsRefused() async throws {
        let words = Wording("new-user-command")
        let folder = try folderWithDrop()
        defer { try? FileManager.default.removeItem(at: folder) }
        let result = try await cli.run(["watch", "--once", "--keep-days", "0", "--db", "k.sqlite", "drop"], currentDirectory: folder)
        #expect(result.status == 64)
        words.said(result.stderr)
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("k.sqlite").path))
        let one = try await cli.run(["watch", "--once", "--keep-days", "1", "--db", "k.sqlite", "drop"], currentDirectory: folder)
        #expect(one.status == 0, "\(one.stderr)")
        words.said(one.stdout)
        words.check()
    }
}
