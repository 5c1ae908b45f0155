import Foundation
import AppStoreAPI
import ReceiptCore
import Testing
import TestSupport

@Suite struct APIProfileTests {
    static func file(_ text: String) throws -> String {
        let path = TemporaryFolder("receiptdash-api").appending("api.toml").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static let twoApps = """
        # two apps
        [photos]
        issuer_id = "57246542-96fe-1a63-e053-0824d011072a"
        key_id = "2X9R4HXF34"
        private_key_file = "~/keys/SubscriptionKey_2X9R4HXF34.p8"
        bundle_id = "com.example.photos"
        app_apple_id = 1234567890
        api_sandbox_url = "http://127.0.0.1:8080/api/sandbox"

        [notes]
        issuer_id = "11111111-2222-3333-4444-555555555555"
        key_id = "ABCDEF1234"
        private_key_file = "/etc/receiptdash/notes.p8"
        bundle_id = "com.example.notes"
        """

    @Test func readsTheNamedTable() throws {
        let path = try Self.file(Self.twoApps)
        let profile = try APIProfile.load("photos", path: path, environment: ["HOME": "/home/support"])
        #expect(profile.issuerID == "57246542-96fe-1a63-e053-0824d011072a")
        #expect(profile.keyID == "2X9R4HXF34")
        #expect(profile.privateKeyFile == "/home/support/keys/SubscriptionKey_2X9R4HXF34.p8")
        #expect(profile.bundleID == "com.example.photos")
        #expect(profile.appAppleID == "1234567890")
        #expect(profile.productionURL == nil)
        #expect(profile.sandboxURL == "http://127.0.0.1:8080/api/sandbox")
        let notes = try APIProfile.load("notes", path: path)
        #expect(notes.bundleID == "com.example.notes")
        #expect(notes.appAppleID == nil)
    }

    @Test func flagsWinOverTheProfile() throws {
        let profile = try APIProfile.load("notes", path: try Self.file(Self.twoApps))
        let filled = profile.filling(APICredentials.Flags(keyID: "FLAGKEY123"))
        #expect(filled.keyID == "FLAGKEY123")
        #expect(filled.issuerID == "11111111-2222-3333-4444-555555555555")
        #expect(filled.privateKeyFile == "/etc/receiptdash/notes.p8")
        #expect(filled.bundleID == "com.example.notes")
    }

    @Test func anUnknownNameListsTheKnownOnes() throws {
        let path = try Self.file(Self.twoApps)
        #expect(throws: APICredentialError(.unknownProfile, "")) { try APIProfile.load("maps", path: path) }
        do {
            _ = try APIProfile.load("maps", path: path)
        } catch {
            #expect(error.reason == "\(path) has no [maps] profile; it has: notes, photos")
        }
    }

    @Test func aKeyPastedIntoTheProfileIsRefused() throws {
        let words = Wording("api-profile")
        let path = try Self.file("[x]\nbundle_id = \"a\"\nprivate_key = \"-----BEGIN PRIVATE KEY-----\"\n")
        do {
            _ = try APIProfile.load("x", path: path)
            Issue.record("a pasted key was accepted")
        } catch {
            #expect(error.code == .invalidKey)
            words.said(error.reason)
        }
        words.check()
    }

    @Test func brokenTOMLSaysWhere() throws {
        let path = try Self.file("[x]\nbundle_id = \"unterminated\n")
        do {
            _ = try APIProfile.load("x", path: path)
            Issue.record("broken TOML was accepted")
        } catch {
            #expect(error.reason.hasPrefix("\(path) line 2, column "))
        }
    }

    @Test func aMissingFileSaysWhatToCreate() {
        let words = Wording("api-profile")
        do {
            _ = try APIProfile.load("photos", path: "/nonexistent/api.toml")
            Issue.record("no error")
        } catch {
            words.said(error.reason)
        }
        words.check()
    }

    /// Each way a profile file can be wrong has its own code, so `doctor` suggests its fix.
    @Test(arguments: [
        ("[x]\nbundle_id = \"unterminated\n", APICredentialError.Code.invalidProfile),
        ("[x]\nissuer_id = [1, 2]\n", .invalidProfile),
        ("[x]\nread_only = \"yes\"\n", .invalidProfile),
        ("[x]\nonline_checks = 1\n", .invalidProfile),
        ("[y]\nbundle_id = \"a\"\n", .unknownProfile),
    ])
    func eachProfileFaultHasItsCode(_ text: String, _ code: APICredentialError.Code) throws {
        let path = try Self.file(text)
        #expect(throws: APICredentialError(code, "")) { try APIProfile.load("x", path: path) }
    }

    @Test func anUnreadableProfileHasItsCode() throws {
        #expect(throws: APICredentialError(.unreadableProfile, "")) { try APIProfile.load("x", path: "/nonexistent/api.toml") }
        let path = try Self.file("")
        try Data([0x5B, 0x78, 0x5D, 0x0A, 0xFF, 0xFE]).write(to: URL(fileURLWithPath: path))
        #expect(throws: APICredentialError(.unreadableProfile, "")) { try APIProfile.load("x", path: path) }
    }

    /// `doctor` reports a profile it cannot read as a failed check with its fix, not a usage
    /// error, and exits 1.
    @Test func doctorNamesABrokenProfileAndItsFix() async throws {
        let words = Wording("api-profile")
        let folder = try NewUserCommandTests.scratch("doctor-profile")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("receiptdash"), withIntermediateDirectories: true)
        try Data("[prod]\nread_only = \"yes\"\n".utf8).write(to: folder.appendingPathComponent("receiptdash/api.toml"))
        let run = try await NewUserCommandTests.run(
            ["doctor", "--api-profile", "prod", "--format", "json", "--db", folder.appendingPathComponent("audit.sqlite").path],
            environment: ["XDG_CONFIG_HOME": folder.path])
        #expect(run.status == 1, "\(run.stderr)")
        let checks = try #require((run.json as? [String: Any])?["checks"] as? [[String: Any]], "\(run.stdout)")
        let profile = try #require(checks.first { $0["id"] as? String == "api.profile" })
        #expect(profile["status"] as? String == "failed")
        words.said(profile["detail"] as? String)
        words.said(profile["fix"] as? String)
        #expect(checks.contains { $0["id"] as? String == "api.credentials" } == false)
        words.check()
    }

    @Test func defaultPathFollowsXDG() {
        #expect(APIProfile.defaultPath(environment: ["XDG_CONFIG_HOME": "/cfg", "HOME": "/h"]) == "/cfg/receiptdash/api.toml")
        #expect(APIProfile.defaultPath(environment: ["HOME": "/h"]) == "/h/.config/receiptdash/api.toml")
    }
}
