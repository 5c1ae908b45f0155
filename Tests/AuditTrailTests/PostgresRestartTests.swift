@testable import AuditTrail
@testable import AuditTrailPostgres
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import ReceiptCore
import Synchronization
import Testing
import TestSupport

/// PostgreSQL restarted and stopped under a writer: on a server of the test's own
/// (`Tests/support/postgres.sh`), so no other test sees the outage.
///
/// Runs with the PostgreSQL cases (`RECEIPTDASH_TEST_POSTGRES_URL` set: the machine has a
/// server to start), in the one `swift test` beside every other suite: pinned to one core
/// (`taskset -c 0 swift test`) the whole run passed twice with it. An earlier stall of the
/// whole process beside it is not seen since the OCSP tests ask their responder in process.
@Suite(
    .enabled(
        if: ProcessInfo.processInfo.environment["RECEIPTDASH_TEST_POSTGRES_URL"] != nil,
        "starts its own PostgreSQL: runs where the PostgreSQL cases run (RECEIPTDASH_TEST_POSTGRES_URL)"))
struct PostgresRestartTests {
    /// A throwaway server started for one test and removed after it.
    final class OwnServer: Sendable {
        static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("support/postgres.sh").path
        let environment: [String: String]

        init() async throws {
            let exports = try await Self.run(["start"], environment: ProcessInfo.processInfo.environment)
            var environment = ProcessInfo.processInfo.environment
            for line in exports.split(separator: "\n") where line.hasPrefix("export ") {
                let pair = line.dropFirst("export ".count).split(separator: "=", maxSplits: 1)
                guard pair.count == 2 else { continue }
                environment[String(pair[0])] = pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "'"))
            }
            self.environment = environment
        }

        var url: String { environment["RECEIPTDASH_TEST_POSTGRES_URL"] ?? "" }

        func run(_ command: String) async throws { _ = try await Self.run([command], environment: environment) }

        func stop() async { _ = try? await Self.run(["stop"], environment: environment) }

        /// Runs the script (posix_spawn and waitpid on a thread of its own: Foundation's Process
        /// did not see this child exit here), its output to a file (the server it starts keeps
        /// the descriptor), and returns the output.
        static func run(_ arguments: [String], environment: [String: String]) async throws -> String {
            let scratch = TemporaryFolder("postgres-sh")
            defer { scratch.remove() }
            let outputPath = scratch.appending("postgres-sh.out").path
            let argv = ["/bin/bash", script] + arguments
            let envp = environment.map { "\($0.key)=\($0.value)" }
            let status: Int32 = try await withCheckedThrowingContinuation { continuation in
                Thread.detachNewThread {
                    var actions = posix_spawn_file_actions_t()
                    posix_spawn_file_actions_init(&actions)
                    posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
                    defer { posix_spawn_file_actions_destroy(&actions) }
                    var cArgs = argv.map { strdup($0) } + [nil]
                    var cEnv = envp.map { strdup($0) } + [nil]
                    defer {
                        for p in cArgs { free(p) }
                        for p in cEnv { free(p) }
                    }
                    var pid: pid_t = 0
                    let spawned = posix_spawn(&pid, "/bin/bash", &actions, nil, &cArgs, &cEnv)
                    guard spawned == 0 else {
                        continuation.resume(throwing: AuditDatabaseError(.unavailable, "cannot run postgres.sh: error \(spawned)"))
                        return
                    }
                    var status: Int32 = 0
                    while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
                    continuation.resume(returning: status)
                }
            }
            let text = String(decoding: FileManager.default.contents(atPath: outputPath) ?? Data(), as: UTF8.self)
            guard status == 0 else {
                throw AuditDatabaseError(.unavailable, "postgres.sh \(arguments.joined(separator: " ")) failed (wait status \(status))")
            }
            return text
        }
    }

    func notification(_ n: Int) -> NotificationRecord {
        NotificationRecord(
            notificationUUID: "restart-\(n)", version: .v2, notificationType: "DID_RENEW", receivedAt: Date(timeIntervalSince1970: 1_760_000_000 + Double(n)),
            verdict: .test)
    }

    @Test func writersRecoverFromARestartAndAnOutageAndLoseNothingAcknowledged() async throws {
        guard TestAuditDatabase.postgresURL != nil else {
            try Test.cancel("RECEIPTDASH_TEST_POSTGRES_URL is not set (Tests/support/postgres.sh start): PostgreSQL restart skipped")
        }
        let server = try await OwnServer()
        do {
            try await recoverFromARestartAndAnOutage(server)
            await server.stop()
        } catch {
            await server.stop()
            throw error
        }
    }

    /// The wall clock, counting every wait asked of it: the store's retries wait on it, so a
    /// test can wait for a retry to begin.
    struct CountingClock: Clock {
        typealias Duration = Swift.Duration
        typealias Instant = ContinuousClock.Instant
        let waits = Signal(0)
        var now: Instant { ContinuousClock.now }
        var minimumResolution: Duration { ContinuousClock().minimumResolution }

        func sleep(until deadline: Instant, tolerance: Duration?) async throws {
            waits.update { $0 += 1 }
            try await ContinuousClock().sleep(until: deadline, tolerance: tolerance)
        }
    }

    func recoverFromARestartAndAnOutage(_ server: OwnServer) async throws {
        let location = try PostgresLocation(url: server.url, environment: server.environment)
        let clock = CountingClock()
        let store = try await PostgresAuditStore(location: location, clock: clock).runningForTest()

        // A receiver-like writer: one notification per commit, each acknowledged or not.
        let restarted = Mutex(false)
        let acknowledgedSoFar = Signal(0)
        let writer = Task {
            var acknowledged: [String] = []
            var failures: [String] = []
            var afterRestart = 0
            var n = 0
            while afterRestart < 50 {
                n += 1
                do {
                    if case .success = try await store.writeNotifications([.notification(notification(n))])[0] {
                        acknowledged.append("restart-\(n)")
                        acknowledgedSoFar.update { $0 += 1 }
                    }
                } catch {
                    failures.append("\(error)")
                }
                if restarted.withLock({ $0 }) { afterRestart += 1 }
            }
            return (n, acknowledged, failures)
        }
        // Restarted under a writer that is writing: once its first write is acknowledged.
        await acknowledgedSoFar.wait { $0 >= 1 }
        try await server.run("restart")
        restarted.withLock { $0 = true }
        let (written, acknowledged, failures) = await writer.value
        #expect(acknowledged.count + failures.count == written)
        // Only a write whose COMMIT got no answer may fail, and it says so.
        #expect(failures.allSatisfy { $0.contains("whether it was recorded is unknown") }, "\(failures)")
        let stored = Set(try await store.notifications().map(\.record.notificationUUID))
        #expect(Set(acknowledged).subtracting(stored).isEmpty, "acknowledged but lost")
        #expect(await store.isWritable())

        // An outage: not writable while the server is down; a write made then waits (retrying)
        // and commits once it is back.
        try await server.run("down")
        #expect(await store.isWritable() == false)
        let bytes = [UInt8](try Data(contentsOf: ServiceFixture.folder.appendingPathComponent("production.b64")))
        let ingest = AuditIngest(decoded: try ReceiptDecoder().decode(bytes), bytes: bytes, kind: .file, source: "outage", seenAt: Date())
        let waitsBefore = clock.waits.value
        let waiting = Task { try await store.record([ingest]) }
        // Back up once the write has failed and waits to retry.
        await clock.waits.wait { $0 > waitsBefore }
        try await server.run("up")
        let recorded = try await waiting.value
        #expect(recorded.map(\.isNew) == [true])
        #expect(await store.isWritable())
        #expect(try await store.history(HistoryQuery()).map(\.seen.first?.source) == ["outage"])
        await store.close()
    }
}
