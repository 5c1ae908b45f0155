import AppStoreAPI
import ArgumentParser
import CommandOptions
import Foundation
import Testing

/// The shared option groups parse as the commands take them, and refuse what they refuse
/// before anything is sent: a usage error (exit 64).
@Suite struct CommandOptionsTests {
    /// Whether parsing `arguments` is refused as a usage error.
    func refuses<Options: ParsableArguments>(_ type: Options.Type, _ arguments: [String]) -> Bool {
        do {
            _ = try type.parse(arguments)
            return false
        } catch {
            return type.exitCode(for: error) == .validationFailure
        }
    }

    @Test func forwardOptions() throws {
        let defaults = try ForwardOptions.parse([])
        #expect(defaults.forward.isEmpty)
        #expect(defaults.forwardMaxPending > 0)
        #expect(refuses(ForwardOptions.self, ["--forward-max-pending", "0"]))
        #expect(refuses(ForwardOptions.self, ["--forward-timeout", "0.05"]))
        #expect(refuses(ForwardOptions.self, ["--forward-timeout", "301"]))
        // The secret, headers and types go with --forward.
        #expect(refuses(ForwardOptions.self, ["--forward-secret-file", "forward.secret"]))
        #expect(refuses(ForwardOptions.self, ["--forward-type", "DID_RENEW"]))
        let secret = ["--forward-secret-file", "forward.secret"]
        #expect(refuses(ForwardOptions.self, ["--forward", "http://example.com/hook"] + secret))
        #expect(refuses(ForwardOptions.self, ["--forward", "https://example.com/hook", "--forward-type", "did-renew"] + secret))
        let options = try ForwardOptions.parse(["--forward", "https://example.com/hook", "--forward-type", "DID_RENEW", "--forward-timeout", "2"] + secret)
        #expect(try options.targets().count == 1)
        #expect(options.forwardType == ["DID_RENEW"])
        #expect(options.forwardTimeout == 2)
    }

    @Test func lookupFilters() throws {
        #expect(try LookupFilterOptions.parse([]).filters() == LookupFilters())
        #expect(refuses(LookupFilterOptions.self, ["--start", "2024-03-01", "--end", "2024-02-01"]))
        #expect(refuses(LookupFilterOptions.self, ["--start", "yesterday"]))
        #expect(refuses(LookupFilterOptions.self, ["--revoked", "--not-revoked"]))
        #expect(refuses(LookupFilterOptions.self, ["--product-type", "subscription"]))
        #expect(refuses(LookupFilterOptions.self, ["--product-id", " "]))
        #expect(refuses(LookupFilterOptions.self, ["--status", "paused"]))
        let filters = try LookupFilterOptions.parse([
            "--start", "2024-03-01", "--product-type", "consumable", "--sort", "DESCENDING", "--ownership", "family-shared", "--not-revoked",
            "--status", "grace",
        ]).filters()
        #expect(filters.history.startDate == Date(timeIntervalSince1970: 1_709_251_200))
        #expect(filters.history.productTypes == [.consumable])
        #expect(filters.history.sort == .descending)
        #expect(filters.history.ownership == .familyShared)
        #expect(filters.history.revoked == false)
        #expect(filters.statuses == [.gracePeriod])
    }

    @Test func reconcileOptions() throws {
        #expect(refuses(ReconcileOptions.self, ["--reconcile-window", "30d"]))
        // The API settings alone are the receiver's to judge (they also serve --consumption-policy).
        #expect(try ReconcileOptions.parse(["--key-id", "2X9R4HXF34"]).givesAPISettings)
        #expect(refuses(ReconcileOptions.self, ["--reconcile-every", "30s"]))
        #expect(refuses(ReconcileOptions.self, ["--reconcile-every", "often"]))
        #expect(refuses(ReconcileOptions.self, ["--reconcile-every", "1h", "--reconcile-window", "181d"]))
        let durations = try ReconcileOptions.parse(["--reconcile-every", "1h"]).durations()
        #expect(durations.every == 3600)
        #expect(durations.window == 7 * 86_400)
    }

    @Test func onlineAndAPIHosts() throws {
        #expect(refuses(OnlineOptions.self, ["--concurrency", "0"]))
        #expect(refuses(OnlineOptions.self, ["--concurrency", "1025"]))
        #expect(refuses(OnlineOptions.self, ["--production-url", "http://example.com/verifyReceipt"]))
        #expect(try OnlineOptions.parse(["--sandbox-url", "http://127.0.0.1:8080/verifyReceipt"]).concurrency == 8)
        #expect(try APIOptions.parse([]).hosts() == APIHosts.apple)
        #expect(refuses(APIOptions.self, ["--api-sandbox-url", "http://example.com"]))
        let api = try APIOptions.parse(["--api-production-url", "http://127.0.0.1:8080/p", "--root-ca", "a.der", "--root-ca", "b.pem"])
        #expect(try api.hosts() == APIHosts(production: "http://127.0.0.1:8080/p", sandbox: APIHosts.appleSandboxURL))
        #expect(api.rootCa == ["a.der", "b.pem"])
    }

    @Test func databaseAndTimes() throws {
        #expect(try DatabaseOption.parse(["--db", "/tmp/audit.sqlite"]).path == "/tmp/audit.sqlite")
        #expect(refuses(DatabaseOption.self, ["--db", "mysql://localhost/audit"]))
        #expect(refuses(RecordingDatabaseOption.self, ["--db", "mysql://localhost/audit"]))
        #expect(try RecordingDatabaseOption.parse([]).db == nil)
        #expect(TimeArgument.parse("2024-03-01") == Date(timeIntervalSince1970: 1_709_251_200))
        #expect(throws: ValidationError.self) { try TimeArgument.check("--since", "soon") }
        try TimeArgument.check("--since", nil)
        try TimeArgument.check("--since", "2024-03-01T12:00:00Z")
    }
}
