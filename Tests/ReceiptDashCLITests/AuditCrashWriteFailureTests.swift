import AuditTrail
import AuditTrailSQLite
import Foundation
import GRDB
import Testing
import TestSupport

/// A write to the audit database that fails is never dropped: `verify --db` and
/// `watch --db --verify` exit non-zero and name it. The database refuses writes through a
/// trigger that RAISEs on every recorded attempt (file permissions do not stop root).
@Suite struct AuditCrashWriteFailureTests {
    let cli = InspectCommandTests()

    func refusingDatabase(in folder: URL) throws -> String {
        let path = folder.appendingPathComponent("audit.sqlite").path
        _ = try AuditStore(path: path)  // created and migrated
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            try db.execute(
                sql: "CREATE TRIGGER refuse_attempts BEFORE INSERT ON attempt BEGIN SELECT RAISE(ABORT, 'disk quota exceeded (test)'); END")
        }
        return path
    }

    func simulator(in folder: URL) throws -> (Process, [String]) {
        let secret = folder.appendingPathComponent("secret")
        try Data("write-failure-secret".utf8).write(to: secret)
        let (process, production, sandbox) = try VerifyCommandTests().startSimulator(secretFile: secret.path)
        return (process, ["--shared-secret-file", secret.path, "--production-url", production, "--sandbox-url", sandbox])
    }

    @Test func verifyExitsNonZeroNamingTheFailedWrite() async throws {
        let words = Wording("audit-crash-write-failure")
        let folder = TemporaryFolder("refusing").url
        defer { try? FileManager.default.removeItem(at: folder) }
        let db = try refusingDatabase(in: folder)
        let (simulator, online) = try simulator(in: folder)
        defer { simulator.terminate() }
        let result = try await cli.run(["verify", "--db", db] + online + [cli.fixture("production.b64")])
        #expect(result.status == 1, "\(result.stdout) \(result.stderr)")
        #expect(result.stdout.contains("Status          0 Valid"), "Apple's answer is still shown")
        words.said(result.stderr)
        words.check()
    }

    @Test func watchExitsNonZeroNamingTheFailedWrite() async throws {
        let words = Wording("audit-crash-write-failure")
        let folder = TemporaryFolder("refusing-watch").url
        let drop = folder.appendingPathComponent("drop")
        try FileManager.default.createDirectory(at: drop, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.copyItem(atPath: cli.fixture("production.b64"), toPath: drop.appendingPathComponent("a.b64").path)
        let db = try refusingDatabase(in: folder)
        let (simulator, online) = try simulator(in: folder)
        defer { simulator.terminate() }
        let result = try await cli.run(["watch", "--once", "--verify", "--db", db] + online + [drop.path])
        #expect(result.status == 1, "\(result.stdout) \(result.stderr)")
        words.said(result.stderr)
        words.check()
    }
}
