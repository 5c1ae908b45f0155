import Foundation
import ReceiptCore
import ReceiptSimulator
@testable import receiptdash
import Testing

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
        let file = NSTemporaryDirectory() + "online-\(UUID().uuidString).jws"
        try token.write(toFile: file, atomically: true, encoding: .utf8)

        let plain = try InspectCommandTests().run(["inspect", "--format", "json", file])
        let plainTrust = try #require((plain.json as? [String: Any])?["trust"] as? [String: Any])
        #expect(plainTrust["retryable"] == nil)
        #expect(plain.stdout.contains("online check") == false)

        // inspect trusts Apple's roots only: the simulator's chain fails offline, so OCSP is
        // not asked even with the flag, and the report says so.
        let online = try InspectCommandTests().run(["inspect", "--format", "json", "--online-checks", file])
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
