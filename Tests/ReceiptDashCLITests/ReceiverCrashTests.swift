import AuditTrail
import AuditTrailSQLite
import Foundation
import ReceiptSimulator
import Synchronization
import Testing
import TestSupport

/// A count shared with the sender's callbacks.
final class Counter: Sendable {
    private let value = Mutex(0)

    func increment() -> Int {
        value.withLock { v in
            v += 1
            return v
        }
    }
}

/// `receiptdash receive` killed with SIGKILL under load: every notification it answered 200
/// (counted on the sender's side) is in its database, and `notifications --reconcile` against
/// the simulator's Notification History finds exactly the ones it missed, with their attempts.
@Suite struct ReceiverCrashTests {
    let cli = InspectCommandTests()

    static let bundleID = "com.example.crash"
    static let total = 1200
    static let killAfter = 300

    /// Starts `receive` on a free port; returns the process and its notifications URL.
    func startReceiver(db: String, root: String) throws -> (Process, String) {
        let receiver = Process()
        receiver.executableURL = InspectCommandTests.binary
        receiver.arguments = ["receive", "--port", "0", "--db", db, "--root-ca", root, "--bundle-id", Self.bundleID]
        let out = Pipe()
        receiver.standardOutput = out
        receiver.standardError = FileHandle.nullDevice
        try receiver.run()
        var banner = ""
        while !banner.contains("/notifications") {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            banner += String(decoding: chunk, as: UTF8.self)
        }
        let url = banner.split(whereSeparator: { $0 == " " || $0 == "\n" }).first { $0.hasSuffix("/notifications") }.map(String.init) ?? ""
        return (receiver, url)
    }

    @Test func killedReceiverLosesNothingAcknowledgedAndReconcileFindsWhatItMissed() async throws {
        let workspace = try LookupCommandTests.Workspace()
        defer { try? FileManager.default.removeItem(at: workspace.folder) }
        let db = workspace.folder.appendingPathComponent("audit.sqlite").path
        let simulator = try await ServerAPISimulator.start(
            ServerAPIConfiguration(data: ServerAPIData(bundleID: Self.bundleID, appAppleID: 1_234_567_890), publicKey: workspace.key.publicKey))
        try Data(simulator.pki.rootDER).write(to: URL(fileURLWithPath: workspace.rootFile))
        let api = simulator.service
        let notifications = try await api.outgoingNotifications(includingData: false, count: Self.total, environment: .production)
        let all = Set(notifications.map(\.notificationUUID))
        #expect(all.count == Self.total)

        let (receiver, url) = try startReceiver(db: db, root: workspace.rootFile)
        defer { if receiver.isRunning { kill(receiver.processIdentifier, SIGKILL) } }
        #expect(url.hasPrefix("http://127.0.0.1:"))
        let pid = receiver.processIdentifier
        let successes = Counter()
        // One retry 2 s later: the receiver is gone by then (its process torn down and its port
        // closed, even on a loaded machine), so the retry finds nobody listening.
        let sender = try NotificationSender(
            NotificationSenderConfiguration(url: url, concurrency: 32, retrySchedule: try RetrySchedule(parsing: "2s"), timeout: 30),
            onAttempt: { notification, attempt in
                api.recordSendAttempt(notification, attempt)
                guard attempt.result == .success else { return }
                if successes.increment() == Self.killAfter {
                    kill(pid, SIGKILL)
                }
            })
        let report = await sender.send(notifications)
        await sender.shutdown()
        receiver.waitUntilExit()
        #expect(receiver.terminationReason == .uncaughtSignal)
        #expect(receiver.terminationStatus == SIGKILL)

        let acknowledged = Set(report.deliveries.filter(\.acknowledged).map(\.notificationUUID))
        #expect(acknowledged.count == report.summary.acknowledged)
        #expect(acknowledged.count >= Self.killAfter && acknowledged.count < Self.total, "killed mid-load: \(report.summary.line)")
        // Nothing is acknowledged after the kill, and what was not acknowledged was tried twice.
        let unacknowledged = report.deliveries.filter { !$0.acknowledged }
        #expect(unacknowledged.count == Self.total - acknowledged.count)
        #expect(unacknowledged.allSatisfy { $0.attempts.count == 2 })
        #expect(Set(unacknowledged.flatMap { $0.attempts.map(\.result) }).isSubset(of: [.noResponse, .prematureClose, .socketIssue]))
        #expect(unacknowledged.allSatisfy { $0.attempts[1].result == .noResponse })

        // Every 200 is in the database: counted exactly.
        let stored = Set(try await AuditStore(readOnlyPath: db).notifications().map(\.record.notificationUUID))
        #expect(acknowledged.subtracting(stored).isEmpty, "acknowledged but lost: \(acknowledged.subtracting(stored).count)")
        #expect(acknowledged.intersection(stored).count == acknowledged.count)
        // Beyond them, only notifications committed just before the kill whose 200 never left (at most one per request in flight).
        #expect(stored.isSubset(of: all))
        #expect(stored.count - acknowledged.count <= 32)

        // Reconciliation: Apple's (the simulator's) history against the database.
        let start = ISO8601DateFormatter().string(from: Date().addingTimeInterval(-3600))
        let run = try await cli.run([
            "notifications", "--db", db, "--reconcile", "--start", start, "--format", "json", "--issuer-id",
            "57246542-96fe-1a63-e053-0824d011072a", "--key-id", "2X9R4HXF34", "--private-key-file", workspace.keyFile, "--bundle-id",
            Self.bundleID, "--api-production-url", simulator.productionURL, "--api-sandbox-url", simulator.sandboxURL,
        ])
        try await simulator.stop()
        #expect(run.status == 1, "missing notifications make the exit status 1: \(run.stderr)")
        let reconciliation = try #require(run.json as? [String: Any])
        #expect(reconciliation["sent"] as? Int == Self.total)
        #expect(reconciliation["received"] as? Int == stored.count)
        let missing = try #require(reconciliation["missing"] as? [[String: Any]])
        #expect(missing.count == Self.total - stored.count)
        #expect(Set(missing.compactMap { $0["notification_uuid"] as? String }) == all.subtracting(stored))
        let results = missing.map { ($0["send_attempts"] as? [[String: Any]] ?? []).compactMap { $0["result"] as? String } }
        #expect(results.allSatisfy { $0.count == 2 && $0[1] == "NO_RESPONSE" && !$0.contains("SUCCESS") })
    }
}

/// `simulator --send-notifications` as a command: plain-words refusals, and with nobody
/// listening every notification fails after its retries and the summary says so.
@Suite struct SimulatorSendCommandTests {
    let cli = InspectCommandTests()

    @Test func refusesBadSettingsInPlainWords() async throws {
        let words = Wording("receiver-crash")
        let schedule = try await cli.run([
            "simulator", "--port", "0", "--send-notifications", "http://127.0.0.1:\(TestPorts.refusing())/n", "--retry-schedule", "1s,2x",
        ])
        #expect(schedule.status == 64)
        words.said(schedule.stderr)
        let remote = try await cli.run(["simulator", "--port", "0", "--send-notifications", "http://example.com/notifications"])
        #expect(remote.status == 64)
        words.said(remote.stderr)
        let alone = try await cli.run(["simulator", "--port", "0", "--exit-when-sent"])
        #expect(alone.status == 64)
        words.said(alone.stderr)
        words.check()
    }

    @Test func nobodyListeningFailsEveryNotificationAfterItsRetries() async throws {
        let words = Wording("receiver-crash", matching: Wording.runVariables)
        // A port that refuses: bound by a socket that never listens.
        let port = TestPorts.refusing()
        #expect(port > 0)

        let run = try await cli.run([
            "simulator", "--port", "0", "--send-notifications", "http://127.0.0.1:\(port)/notifications", "--notification-count", "3",
            "--retry-schedule", "10ms,20ms", "--exit-when-sent",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        words.said(run.stdout)
        words.said(run.stdout)
        #expect(run.stdout.contains("p50 -, p99 -"))
        words.check()
    }
}
