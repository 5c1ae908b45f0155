import Crypto
import Foundation
import Testing
import TestSupport

/// Errors that name the fix, from the built binary as a user meets them: a mistyped command, a
/// busy port, a server that is not there, a profile key nobody knows, a key file that cannot be
/// read. Exit statuses are compared as numbers, the same fault giving the same one from every
/// command (docs/payloads.md, "Exit statuses"); the words are pinned in
/// `Goldens/errors-name-the-fix.txt`.
@Suite(.timeLimit(.minutes(3))) struct ErrorsNameTheFixTests {
    static let usage: Int32 = 64
    static let failed: Int32 = 1
    static let noTerminal: Int32 = 2
    static let noInput: Int32 = 66

    func run(_ arguments: [String], in folder: URL? = nil, environment: [String: String]? = nil) async throws -> CLIRunner.Run {
        try await CLIRunner.run(arguments, environment: environment, currentDirectory: folder)
    }

    @Test func aMistypedCommandIsAUsageErrorThatNamesTheCommand() async throws {
        let words = Wording("errors-name-the-fix")
        let folder = TemporaryFolder("unknown-command").url
        let typo = try await run(["lookp"], in: folder)
        #expect(typo.status == Self.usage)
        #expect(typo.stdout.isEmpty)
        words.said(typo.stderr)
        let word = try await run(["receipts"], in: folder)
        #expect(word.status == Self.usage)
        words.said(word.stderr)
        // A path, or a word that is a file here, is the dashboard's to open: it needs a terminal.
        let missingFile = try await run(["nope.b64"], in: folder)
        #expect(missingFile.status == Self.noTerminal)
        try Data("x".utf8).write(to: folder.appendingPathComponent("lookp"))
        let existing = try await run(["lookp"], in: folder)
        #expect(existing.status == Self.noTerminal)
        words.check()
    }

    @Test func aBusyPortIsNamedWithTheFlagThatChoosesAnother() async throws {
        let words = Wording("errors-name-the-fix", replacing: [])
        let busy = try await SilentListener.start()
        let folder = TemporaryFolder("busy-port").url
        let receive = try await run([
            "receive", "--port", String(busy.port), "--metrics-port", "none", "--db", folder.appendingPathComponent("n.sqlite").path,
            "--bundle-id", "com.example.app",
        ])
        #expect(receive.status == Self.failed)
        words.said(receive.stderr.split(separator: "\n").last.map { $0.replacingOccurrences(of: String(busy.port), with: "<busy>") })
        let simulator = try await run(["simulator", "--port", String(busy.port)])
        #expect(simulator.status == Self.failed)
        words.said(simulator.stderr.split(separator: "\n").last.map { $0.replacingOccurrences(of: String(busy.port), with: "<busy>") })
        words.check()
    }

    /// Five attempts against a port that refuses: one line at the end, naming the URL; nothing
    /// per attempt without a terminal (and without --verbose).
    @Test func aRefusedConnectionNamesTheURLInOneLine() async throws {
        let words = Wording("errors-name-the-fix")
        let folder = TemporaryFolder("refused").url
        let key = folder.appendingPathComponent("key.p8")
        try P256.Signing.PrivateKey().pemRepresentation.write(to: key, atomically: true, encoding: .utf8)
        chmod(key.path, 0o600)
        let port = TestPorts.refusing()
        let lookup = try await run([
            "lookup", "--transaction-id", "1", "--issuer-id", "57246542-96fe-1a63-e053-0824d011072a", "--key-id", "2X9R4HXF34",
            "--private-key-file", key.path, "--bundle-id", "com.example.app", "--environment", "production",
            "--api-production-url", "http://127.0.0.1:\(port)/api",
        ])
        #expect(lookup.status == Self.failed)
        let lines = lookup.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(lookup.stderr)")
        #expect(lookup.stderr.contains("http://127.0.0.1:\(port)/api"))
        words.said(lines)
        words.check()
    }

    @Test func aProfileKeyNobodyKnowsIsNamedWithItsLine() async throws {
        let words = Wording("errors-name-the-fix", replacing: [(TemporaryFolder.base, "<tmp-base>")])
        let home = TemporaryFolder("profile-typo").url
        try FileManager.default.createDirectory(at: home.appendingPathComponent("receiptdash"), withIntermediateDirectories: true)
        try """
            [photos]
            issuer_id = "57246542-96fe-1a63-e053-0824d011072a"
            key_id = "2X9R4HXF34"
            private_key_flie = "~/keys/SubscriptionKey_2X9R4HXF34.p8"
            bundle_id = "com.example.photos"
            """.write(to: home.appendingPathComponent("receiptdash/api.toml"), atomically: true, encoding: .utf8)
        let environment = ["XDG_CONFIG_HOME": home.path, "HOME": home.path, "PATH": "/usr/bin:/bin"]
        let typo = try await run(["lookup", "--transaction-id", "1", "--api-profile", "photos"], environment: environment)
        #expect(typo.status == Self.usage)
        #expect(!typo.stderr.contains("Usage:"))
        words.said(typo.stderr.replacingOccurrences(of: home.path, with: "<home>"))
        let missing = try await run(["lookup", "--transaction-id", "1", "--api-profile", "photos"], environment: ["XDG_CONFIG_HOME": home.path + "/none"])
        #expect(missing.status == Self.usage)
        words.said(missing.stderr.replacingOccurrences(of: home.path, with: "<home>"))
        words.check()
    }

    /// A key file that cannot be read is a setting that cannot be used: 64 from every command
    /// that signs with it.
    @Test func aKeyFileThatCannotBeReadGivesOneStatusFromEveryCommand() async throws {
        let words = Wording("errors-name-the-fix")
        let folder = TemporaryFolder("bad-key").url
        let key = ["--issuer-id", "57246542-96fe-1a63-e053-0824d011072a", "--key-id", "2X9R4HXF34", "--private-key-file", "nope.p8", "--bundle-id", "b"]
        let lookup = try await run(["lookup", "--transaction-id", "1"] + key, in: folder)
        let offer = try await run(
            ["offer-signature", "promotional", "--product-id", "p", "--offer-id", "o", "--application-username", ""] + key, in: folder)
        let extend = try await run(
            ["extend", "--original-transaction-id", "1", "--days", "3", "--reason", "service-issue", "--environment", "sandbox", "--dry-run"]
                + key, in: folder)
        #expect([lookup.status, offer.status, extend.status] == [Self.usage, Self.usage, Self.usage])
        words.said([lookup.stderr, offer.stderr, extend.stderr])
        words.check()
    }

    @Test func aValueThatCannotBeUsedIsSaidWithWhatIsTaken() async throws {
        let words = Wording("errors-name-the-fix")
        let folder = TemporaryFolder("values").url
        let reason = try await run(["extend", "--original-transaction-id", "1", "--days", "3", "--reason", "because", "--dry-run"], in: folder)
        #expect(reason.status == Self.usage)
        words.said(reason.stderr)
        let status = try await run(["history", "--db", "nope.sqlite", "--status", "99x"], in: folder)
        #expect(status.status == Self.usage)
        words.said(status.stderr.split(separator: "\n").first)
        let actions = try await run(["history", "--db", "nope.sqlite", "--actions"], in: folder)
        #expect(actions.status == Self.noInput)
        words.said(actions.stderr)
        // A secret file that is not there: one line, not the usage of every command.
        let replay = try await run(
            ["notifications", "--db", "nope.sqlite", "--replay", "--since", "2026-01-01", "--to", "http://127.0.0.1:9/hook", "--forward-secret-file", "nope.secret"],
            in: folder)
        #expect(replay.status == Self.usage)
        #expect(!replay.stderr.contains("Usage:"))
        words.said(replay.stderr)
        words.check()
    }

    /// A build from a git checkout names its commit: 12 hex digits, never `unknown`.
    @Test func theVersionNamesTheCommitOfTheCheckout() async throws {
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        try #require(FileManager.default.fileExists(atPath: repository.appendingPathComponent(".git").path))
        let version = try await run(["--version"])
        #expect(version.status == 0)
        let commit = version.stdout.split(separator: " ").last.map { String($0.dropLast(2)) } ?? ""
        #expect(commit.count == 12 && commit.allSatisfy(\.isHexDigit), "\(version.stdout)")
    }
}
