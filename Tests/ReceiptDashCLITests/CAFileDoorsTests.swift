import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ServiceTestSupport
import TestSupport
import Testing

/// The commands that send over TLS to a target of the team's choosing take `--ca-file` too:
/// `receive --forward`, `notifications --replay --to` and the simulator's sender. A target whose
/// certificate a private CA signed is refused without it (TLS stays verified) and accepted with
/// it; the downstream says which happened, nothing sleeps.
@Suite(.timeLimit(.minutes(2))) struct CAFileDoorsTests {
    let cli = InspectCommandTests()

    func folder() throws -> URL {
        TemporaryFolder("ca-doors").url
    }

    func secretFile(in folder: URL) throws -> String {
        let secret = folder.appendingPathComponent("forward.secret").path
        try Data("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n".utf8).write(to: URL(fileURLWithPath: secret))
        chmod(secret, 0o600)
        return secret
    }

    @Test func replayToATargetBehindAPrivateCA() async throws {
        let folder = try folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let downstream = try await TLSDownstream.start(folder: folder)
        let db = try await NotificationsCommandTests().database()
        let uuid = "0c1d2e3f-0000-4000-8000-000000000001"
        let replay = ["notifications", "--db", db, "--replay", uuid, "--to", downstream.url("/hook"), "--forward-secret-file", try secretFile(in: folder)]

        let refused = try await cli.run(replay)
        #expect(refused.status == 1, "\(refused.stderr)")
        #expect(
            refused.stdout
                == "queued 1 delivery to \(downstream.url("/hook")): 0 delivered, 1 failed (kept pending: run again, or forward to it from a receiver)\n")
        #expect(await downstream.seen.wait { $0.refused >= 1 }.requests == 0)

        let accepted = try await cli.run(replay + ["--ca-file", downstream.caFile])
        #expect(accepted.status == 0, "\(accepted.stderr)")
        #expect(accepted.stdout == "queued 1 delivery to \(downstream.url("/hook")): 1 delivered\n")
        #expect(downstream.seen.value.requests == 1)
        try await downstream.stop()
    }

    @Test func theSimulatorSendsToAReceiverBehindAPrivateCA() async throws {
        let folder = try folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let downstream = try await TLSDownstream.start(folder: folder)
        let simulator = [
            "simulator", "--port", "0", "--send-notifications", downstream.url("/notifications"), "--notification-count", "1",
            "--retry-schedule", "none", "--exit-when-sent",
        ]
        func summary(_ run: CLIRunner.Run) -> String? {
            run.stdout.split(separator: "\n").first { $0.hasPrefix("notifications: ") }.map { String($0.split(separator: ",").prefix(3).joined(separator: ",")) }
        }

        let refused = try await cli.run(simulator)
        #expect(refused.status == 0, "\(refused.stderr)")
        #expect(summary(refused) == "notifications: sent 1, acknowledged 0, failed after retries 1")
        #expect(await downstream.seen.wait { $0.refused >= 1 }.requests == 0)

        let accepted = try await cli.run(simulator + ["--ca-file", downstream.caFile])
        #expect(accepted.status == 0, "\(accepted.stderr)")
        #expect(summary(accepted) == "notifications: sent 1, acknowledged 1, failed after retries 0")
        #expect(downstream.seen.value.requests == 1)

        let usage = try await cli.run(["simulator", "--port", "0", "--ca-file", downstream.caFile])
        #expect(usage.status == 64)
        #expect(usage.stderr.contains("--ca-file only works with --send-notifications URL."), "\(usage.stderr)")
        try await downstream.stop()
    }

    /// Starts `receive --forward` to the downstream, posts one genuine notification, and waits
    /// until the downstream saw what `until` asks for.
    func forward(to downstream: TLSDownstream, in folder: URL, caFile: [String], until: @escaping @Sendable ((requests: Int, refused: Int)) -> Bool)
        async throws -> (requests: Int, refused: Int)
    {
        let db = folder.appendingPathComponent("audit-\(UUID()).sqlite").path
        let process = Process()
        process.executableURL = InspectCommandTests.binary
        process.arguments = [
            "receive", "--port", "0", "--metrics-port", "none", "--db", db, "--bundle-id", "com.loki-project.loki-messenger", "--environment",
            "sandbox", "--max-age", "none", "--forward", downstream.url("/hook"), "--forward-secret-file", try secretFile(in: folder),
        ] + caFile
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer {
            if process.isRunning {
                process.terminate()
                process.waitUntilExit()
            }
        }
        var banner = ""
        while !banner.contains("/notifications") {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            banner += String(decoding: chunk, as: UTF8.self)
        }
        let url = try #require(banner.split(whereSeparator: { $0 == " " || $0 == "\n" }).first { $0.hasSuffix("/notifications") }.map(String.init))
        let token = try NotificationFixture.token("session-pro_00_DID_RENEW.jws")
        var request = URLRequest(url: try #require(URL(string: url)))
        request.httpMethod = "POST"
        request.httpBody = Data("{\"signedPayload\":\"\(token)\"}".utf8)
        let (_, response) = try await URLSession.shared.data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        return await downstream.seen.wait(until: until)
    }

    @Test func receiveForwardsToATargetBehindAPrivateCA() async throws {
        let folder = try folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let downstream = try await TLSDownstream.start(folder: folder)
        let refused = try await forward(to: downstream, in: folder, caFile: []) { $0.refused >= 1 }
        #expect(refused.requests == 0)
        let accepted = try await forward(to: downstream, in: folder, caFile: ["--ca-file", downstream.caFile]) { $0.requests >= 1 }
        #expect(accepted.requests == 1)
        try await downstream.stop()

        let usage = try await cli.run(["receive", "--bundle-id", "com.example.receiptdash", "--ca-file", downstream.caFile])
        #expect(usage.status == 64)
        #expect(usage.stderr.contains("--ca-file goes with --reconcile-every DURATION or --forward URL"), "\(usage.stderr)")
    }
}
