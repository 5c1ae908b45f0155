import Foundation
import Testing

/// `inspect --format json` writes, byte for byte, what it wrote when each input was built into a
/// Foundation tree and encoded by `JSONEncoder` (the goldens were recorded from that version).
@Suite struct InspectJSONGoldenTests {
    let cli = InspectCommandTests()
    static let inputs = [
        "ios6-response.json", "legacy-sandbox.b64", "notification-v1.json", "notification-v2.jws", "production.b64",
        "sandbox-2023.der", "sandbox-g5.der", "verify-response.json", "xcode-app-transaction.jws", "xcode.der",
        "StoreKitTestCertificate.der", "missing.der",
    ]

    func golden(_ name: String) throws -> String {
        try String(contentsOf: InspectCommandTests.fixtures.appendingPathComponent(name), encoding: .utf8)
    }

    /// Every fixture plus two inputs that fail (error entries), and the combined analysis.
    @Test func arrayOfEveryFixtureIsUnchanged() async throws {
        let result = try await cli.run(
            ["inspect", "--format", "json", "--at", "2025-01-01T00:00:00Z", "--combine"] + Self.inputs,
            currentDirectory: InspectCommandTests.fixtures)
        #expect(result.status == 1, "two inputs cannot be decoded")
        let expected = try golden("inspect-fixtures.expected.json")
        #expect(result.stdout.utf8.count == expected.utf8.count)
        #expect(result.stdout == expected)
    }

    @Test func oneInputIsOneObjectUnchanged() async throws {
        let result = try await cli.run(
            ["inspect", "--format", "json", "--at", "2025-01-01T00:00:00Z", "production.b64"],
            currentDirectory: InspectCommandTests.fixtures)
        #expect(result.status == 0)
        #expect(result.stdout == (try golden("inspect-production.expected.json")))
    }
}
