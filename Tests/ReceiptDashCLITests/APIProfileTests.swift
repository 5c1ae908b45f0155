import Foundation
import ReceiptCore
@testable import receiptdash
import Testing

@Suite struct APIProfileTests {
    static func file(_ text: String) throws -> String {
        let path = NSTemporaryDirectory() + "receiptdash-api-\(UUID().uuidString).toml"
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
        #expect(throws: APICredentialError(.missing, "")) { try APIProfile.load("maps", path: path) }
        do {
            _ = try APIProfile.load("maps", path: path)
        } catch {
            #expect(error.reason == "\(path) has no [maps] profile; it has: notes, photos")
        }
    }

    @Test func aKeyPastedIntoTheProfileIsRefused() throws {
        let path = try Self.file("[x]\nbundle_id = \"a\"\nprivate_key = \"-----BEGIN PRIVATE KEY-----\"\n")
        do {
            _ = try APIProfile.load("x", path: path)
            Issue.record("a pasted key was accepted")
        } catch {
            #expect(error.code == .invalidKey)
            #expect(!error.reason.contains("BEGIN PRIVATE KEY"))
        }
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
        do {
            _ = try APIProfile.load("photos", path: "/nonexistent/api.toml")
            Issue.record("no error")
        } catch {
            #expect(error.reason == "--api-profile photos: /nonexistent/api.toml cannot be read; create it with one [photos] table (see receiptdash lookup --help)")
        }
    }

    @Test func defaultPathFollowsXDG() {
        #expect(APIProfile.defaultPath(environment: ["XDG_CONFIG_HOME": "/cfg", "HOME": "/h"]) == "/cfg/receiptdash/api.toml")
        #expect(APIProfile.defaultPath(environment: ["HOME": "/h"]) == "/h/.config/receiptdash/api.toml")
    }
}
