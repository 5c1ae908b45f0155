import Foundation
import Testing
import TestSupport

/// `--ca-file` is one option group (`TLSTrustOptions`) on every command that talks TLS: to Apple
/// (`notifications --reconcile` and `receive --reconcile-every` take it as `lookup` does), to a
/// forwarding target (`receive --forward`, `notifications --replay --to`) or to a receiver (the
/// simulator's sender, `CAFileDoorsTests`); a file that is not there is refused, naming it.
@Suite struct TLSTrustOptionsTests {
    @Test(arguments: ["notifications", "receive", "lookup", "customer", "doctor", "verify", "watch", "consumption", "simulator"])
    func helpListsTheCAFile(command: String) async throws {
        let words = Wording("tls-trust-options", case: "\(command)")
        let help = try await CLIRunner.run([command, "--help"])
        #expect(help.status == 0, "\(help.stderr)")
        // The help wraps at the terminal's width: compared word by word.
        let flat = help.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        let option = try #require(flat.range(of: "--ca-file <file>"), "\(command) --help")
        // The option's own words: up to the next option.
        let rest = flat[option.upperBound...]
        words.said(flat[option.lowerBound..<(rest.range(of: " --")?.lowerBound ?? rest.endIndex)])
        words.check()
    }

    /// The credentials of a workspace's key, for a client made and never used.
    func credentials(_ workspace: LookupCommandTests.Workspace) -> [String] {
        let port = TestPorts.refusing()
        return [
            "--issuer-id", "57246542-96fe-1a63-e053-0824d011072a", "--key-id", "2X9R4HXF34", "--private-key-file", workspace.keyFile,
            "--bundle-id", "com.example.receiptdash", "--api-production-url", "http://127.0.0.1:\(port)/p",
            "--api-sandbox-url", "http://127.0.0.1:\(port)/s",
        ]
    }

    /// A `--ca-file` that is not there: `lookup`, `notifications --reconcile` and `receive
    /// --reconcile-every` each say so in one line naming it, exit 64 (a setting that cannot be
    /// used, as a key file that cannot be read), and send nothing.
    @Test func aMissingCAFileIsRefusedInWords() async throws {
        let words = Wording("tls-trust-options")
        let workspace = try LookupCommandTests.Workspace()
        let missing = workspace.folder.appendingPathComponent("nope.pem").path
        let refusal = "--ca-file \(missing): no such file"

        let lookup = try await CLIRunner.run(["lookup", "--ca-file", missing, "--transaction-id", "2000000900000001"] + credentials(workspace))
        #expect(lookup.status == 64, "\(lookup.stderr)")
        #expect(lookup.stderr.contains(refusal), "\(lookup.stderr)")

        let db = try await NotificationsCommandTests().database()
        let start = ISO8601DateFormatter().string(from: Date().addingTimeInterval(-86_400))
        let notifications = try await CLIRunner.run(
            ["notifications", "--db", db, "--reconcile", "--start", start, "--ca-file", missing] + credentials(workspace))
        #expect(notifications.status == lookup.status, "\(notifications.stderr)")
        #expect(notifications.stderr == "receiptdash: \(refusal)\n")
        #expect(notifications.stdout == "")

        let receive = try await CLIRunner.run(
            ["receive", "--port", "0", "--metrics-port", "none", "--db", workspace.folder.appendingPathComponent("trail.sqlite").path,
             "--reconcile-every", "1h", "--ca-file", missing] + credentials(workspace))
        #expect(receive.status == lookup.status, "\(receive.stderr)")
        #expect(receive.stderr.contains("receiptdash: --reconcile-every: \(refusal)\n"), "\(receive.stderr)")

        // Where nothing is asked of Apple, --ca-file would do nothing: a usage error, not silence.
        let listing = try await CLIRunner.run(["notifications", "--db", db, "--ca-file", missing])
        #expect(listing.status == 64)
        words.said(listing.stderr)
        let serving = try await CLIRunner.run(["receive", "--bundle-id", "com.example.receiptdash", "--ca-file", missing])
        #expect(serving.status == 64)
        words.said(serving.stderr)
        words.check()
    }
}
