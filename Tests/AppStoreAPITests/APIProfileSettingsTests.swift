import AppStoreAPI
import Foundation
import Testing

/// What a profile decides beside the credentials: the bundle ids a receiver accepts (flags, else
/// RECEIPTDASH_BUNDLE_ID, else the profile's) and why writes to Apple are refused.
@Suite struct APIProfileSettingsTests {
    func profileFolder(_ toml: String) throws -> String {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("profile-\(UUID())").path
        try FileManager.default.createDirectory(atPath: folder + "/receiptdash", withIntermediateDirectories: true)
        try Data(toml.utf8).write(to: URL(fileURLWithPath: folder + "/receiptdash/api.toml"))
        return folder
    }

    @Test func bundleIDsComeFromTheFlagsThenTheEnvironmentThenTheProfile() throws {
        let config = try profileFolder("[prod]\nbundle_id = \"com.example.profile\"\nread_only = true\n")
        defer { try? FileManager.default.removeItem(atPath: config) }
        let environment = ["XDG_CONFIG_HOME": config]
        let variable = environment.merging(["RECEIPTDASH_BUNDLE_ID": "com.example.variable"]) { $1 }
        #expect(try APIProfile.bundleIDs(["com.example.a", "com.example.b"], profile: "prod", environment: variable) == ["com.example.a", "com.example.b"])
        #expect(try APIProfile.bundleIDs([], profile: "prod", environment: variable) == ["com.example.variable"])
        #expect(try APIProfile.bundleIDs([], profile: "prod", environment: environment) == ["com.example.profile"])
        #expect(try APIProfile.bundleIDs([], profile: nil, environment: environment) == [])
        #expect(throws: APICredentialError(.unknownProfile, "")) { try APIProfile.bundleIDs([], profile: "staging", environment: environment) }
    }

    @Test func writesAreRefusedByTheFlagTheVariableOrTheProfile() throws {
        let config = try profileFolder("[prod]\nread_only = true\n[dev]\nbundle_id = \"com.example.dev\"\n")
        defer { try? FileManager.default.removeItem(atPath: config) }
        let environment = ["XDG_CONFIG_HOME": config]
        func profile(_ name: String) -> () throws -> APIProfile? {
            { try APIProfile.load(name, path: APIProfile.defaultPath(environment: environment)) }
        }
        #expect(try APIProfile.readOnlyReason(flag: true, environment: environment, profile: "dev", profile("dev")) == "--read-only")
        for (value, reason) in [("1", "RECEIPTDASH_READ_ONLY is set"), ("0", nil), ("", nil)] {
            let set = environment.merging(["RECEIPTDASH_READ_ONLY": value]) { $1 }
            #expect(try APIProfile.readOnlyReason(flag: false, environment: set, profile: "dev", profile("dev")) == reason, "\(value)")
        }
        #expect(try APIProfile.readOnlyReason(flag: false, environment: environment, profile: "prod", profile("prod")) == "the profile prod says read_only = true")
        // The profile is read only when it decides: the flag wins over a profile that cannot be read.
        #expect(try APIProfile.readOnlyReason(flag: true, environment: environment, profile: "gone", profile("gone")) == "--read-only")
        #expect(throws: APICredentialError(.unknownProfile, "")) {
            try APIProfile.readOnlyReason(flag: false, environment: environment, profile: "gone", profile("gone"))
        }
    }
}
