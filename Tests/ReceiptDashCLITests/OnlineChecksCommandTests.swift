import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import AppStoreAPI
import CommandOptions
import ReceiptCore
import ReceiptSimulator
@testable import receiptdash
import Testing
import TestSupport

/// `--online-checks` on the command line and `online_checks` in an API profile.
@Suite struct OnlineChecksCommandTests {
    @Test func theProfileTurnsOnlineChecksOn() throws {
        let path = try APIProfileTests.file("[ops]\nbundle_id = \"com.example.ops\"\nonline_checks = true\n[plain]\nbundle_id = \"com.example.plain\"\n")
        #expect(try APIProfile.load("ops", path: path).onlineChecks == true)
        #expect(try APIProfile.load("plain", path: path).onlineChecks == false)
        let wrong = try APIProfileTests.file("[ops]\nonline_checks = \"yes\"\n")
        #expect(throws: (any Error).self) { try APIProfile.load("ops", path: wrong) }
        // The flag or the profile make the checks; neither, none.
        #expect(try OnlineChecksOption.parse([]).make() == nil)
        #expect(try OnlineChecksOption.parse([]).make(profile: APIProfile.load("ops", path: path)) != nil)
        #expect(try OnlineChecksOption.parse(["--online-checks"]).make() != nil)
    }

    @Test func inspectAsksOnlyWithTheFlag() async throws {
        let server = try await OCSPResponderServer.start()
        let pki = try AppleTestPKI(ocspURL: server.url)
        server.responder.serve(pki)
        let token = try pki.signJWS(payload: ["transactionId": "1", "bundleId": "com.example.cli", "signedDate": 1_790_000_000_000])
        let scratch = TemporaryFolder("online")
        defer { scratch.remove() }
        let file = scratch.appending("online.jws").path
        try token.write(toFile: file, atomically: true, encoding: .utf8)

        let plain = try await InspectCommandTests().run(["inspect", "--format", "json", file])
        let plainTrust = try #require((plain.json as? [String: Any])?["trust"] as? [String: Any])
        #expect(plainTrust["retryable"] == nil)
        #expect(plain.stdout.contains("online check") == false)

        // inspect trusts Apple's roots only: the simulator's chain fails offline, so OCSP is
        // not asked even with the flag, and the report says so.
        let online = try await InspectCommandTests().run(["inspect", "--format", "json", "--online-checks", file])
        let trust = try #require((online.json as? [String: Any])?["trust"] as? [String: Any])
        #expect(trust["retryable"] as? Bool == false)
        #expect(trust["validation_time_source"] as? String == "now, online checks")
        let steps = try #require(trust["steps"] as? [[String: Any]])
        #expect(steps.last?["name"] as? String == "online check")
        #expect(steps.last?["outcome"] as? String == "skipped")
        #expect(server.responder.requestCount == 0)
        try await server.stop()
    }
}

/// `simulator --ocsp` and `lookup --online-checks` as processes, as a support engineer's demo
/// runs them: the simulator's responder revokes a certificate or answers `tryLater`, and every
/// transaction the look-up reads says so, by code.
@Suite struct SimulatorOCSPLookupTests {
    let lookups = LookupCommandTests()

    /// The online-check step of each transaction's trust: (verdict, retryable, code, certificate).
    static func onlineSteps(_ json: [String: Any]) -> [String] {
        LookupCommandTests.transactions(json).map { row in
            let trust = row["trust"] as? [String: Any] ?? [:]
            let step = (trust["steps"] as? [[String: Any]] ?? []).first { $0["name"] as? String == "online check" }
            let details = step?["details"] as? [String: Any] ?? [:]
            return [
                trust["verdict"] as? String ?? "-", "\(trust["retryable"] as? Bool ?? false)", step?["code"] as? String ?? "-",
                details["certificate"] as? String ?? "-", details["revocation_reason"] as? String ?? "-",
            ].joined(separator: " ")
        }
    }

    /// POSTs `query` to the responder's control URL printed in the banner; its answer.
    static func control(_ banner: String, _ query: String) async throws -> (Int, String) {
        let base = try #require(banner.split(separator: " ").first { $0.hasSuffix("/control?mode=down|try-later|silent|answering,") })
        let url = try #require(URL(string: String(base.prefix { $0 != "?" }) + "?" + query))
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }

    @Test func aRevokedLeafThenTryLaterThroughTheSimulatorsResponder() async throws {
        let words = Wording("online-checks-command")
        let workspace = try LookupCommandTests.Workspace()
        let (simulator, production, sandbox, banner) = try lookups.startSimulatorWithBanner([
            "--api-key-file", workspace.keyFile, "--api-root-out", workspace.rootFile, "--ocsp", "--ocsp-revoke", "leaf",
        ])
        defer { simulator.terminate() }
        #expect(banner.contains("(mode answering, latency 0 ms, revoked: leaf)"))

        let arguments = ["--transaction-id", "2000000900000001", "--format", "json", "--root-ca", workspace.rootFile]
        // Offline, the simulator's chain is test data; online, its leaf is revoked.
        let offline = try await lookups.lookup(workspace, (production, sandbox), arguments)
        #expect(Self.onlineSteps(try #require(offline.json as? [String: Any])) == Array(repeating: "test false - - -", count: 5))
        let revoked = try await lookups.lookup(workspace, (production, sandbox), arguments + ["--online-checks"])
        #expect(revoked.status == 0, "\(revoked.stderr)")
        #expect(
            Self.onlineSteps(try #require(revoked.json as? [String: Any]))
                == Array(repeating: "invalid false ocsp-revoked leaf keyCompromise", count: 5))

        // The responder goes tryLater while it serves: retryable, never valid or invalid.
        #expect(try await Self.control(banner, "mode=try-later") == (200, "mode try-later, latency 0 ms, revoked: leaf\n"))
        let later = try await lookups.lookup(workspace, (production, sandbox), arguments + ["--online-checks"])
        #expect(
            Self.onlineSteps(try #require(later.json as? [String: Any]))
                == Array(repeating: "unverifiable true ocsp-try-later leaf -", count: 5))

        // A setting it does not know changes nothing.
        let (status, answer) = try await Self.control(banner, "mode=sideways&revoke=intermediate")
        #expect(status == 400)
        words.said(answer)
        #expect(try await Self.control(banner, "") == (200, "mode try-later, latency 0 ms, revoked: leaf\n"))
        words.check()
    }

    @Test func ocspSettingsNeedOCSPAndItsOwnPKI() async throws {
        let words = Wording("online-checks-command")
        let cli = InspectCommandTests()
        let alone = try await cli.run(["simulator", "--ocsp-revoke", "leaf"])
        #expect(alone.status == 64)
        words.said(alone.stderr)
        let mode = try await cli.run(["simulator", "--ocsp", "--ocsp-mode", "sideways"])
        #expect(mode.status == 64)
        words.said(mode.stderr)
        let scratch = TemporaryFolder("ocsp-pki")
        defer { scratch.remove() }
        let folder = scratch.appending("pki").path
        let withFolder = try await cli.run(["simulator", "--ocsp", "--pki", folder])
        #expect(withFolder.status == 64)
        words.said(withFolder.stderr)
        words.check()
    }
}
