import Foundation
import Testing
import TestSupport

/// No internals in messages: every failure path a user can provoke says what failed, on what,
/// in words; no Foundation error dump, Swift type name or library dump reaches standard error.
/// The words themselves are pinned in `Goldens/error-messages.txt`.
@Suite(.timeLimit(.minutes(3))) struct PlainErrorMessagesTests {
    let cli = InspectCommandTests()

    static let internals = [
        "Error Domain=", "NSCocoaErrorDomain", "errno:", "(error set)", "Optional(", "PSQLError", "SingleConnectionFailure", "UserInfo=",
        "DecodingError", "NIOConnectionError", "IOError(", "NIOSSLError", "BoringSSLError", "HTTPClientError",
    ]

    func expectPlain(_ arguments: [String], status: Int32? = nil, in folder: URL, port: Int, into transcript: Transcript) async throws {
        let result = transcript.record(arguments, try await cli.run(arguments, currentDirectory: folder))
        let shown = arguments.joined(separator: " ")
        #expect(result.status != 0, "\(shown) succeeded")
        if let status { #expect(result.status == status, "\(shown): \(result.stderr)") }
        #expect(!result.stderr.isEmpty, "\(shown) failed without a word")
        for dump in Self.internals {
            #expect(!result.stderr.contains(dump), "\(shown): \(result.stderr)")
            #expect(!result.stdout.contains(dump), "\(shown): \(result.stdout)")
        }
    }

    @Test func everyFailurePathIsSaidInWords() async throws {
        let folder = try NewUserCommandTests.scratch("plain-errors")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("a-folder"), withIntermediateDirectories: true)
        try Data("this is not a database, just text that is long enough to be looked at by SQLite\n".utf8)
            .write(to: folder.appendingPathComponent("garbage.sqlite"))
        try FileManager.default.copyItem(atPath: cli.fixture("production.b64"), toPath: folder.appendingPathComponent("r.b64").path)
        let port = TestPorts.refusing()
        let transcript = Transcript(replacing: [(folder.path, "<folder>"), (":\(port)", ":<port>")])
        let closed = ["--production-url", "http://127.0.0.1:\(port)/p", "--sandbox-url", "http://127.0.0.1:\(port)/s"]

        // Missing files.
        try await expectPlain(["verify", "nope.b64"] + closed, status: 1, in: folder, port: port, into: transcript)
        try await expectPlain(["verify", "--ca-file", "nope.pem", "r.b64"] + closed, in: folder, port: port, into: transcript)
        try await expectPlain(["verify", "--shared-secret-file", "nope.secret", "r.b64"] + closed, in: folder, port: port, into: transcript)
        try await expectPlain(["db", "copy", "--from", "./nope.sqlite", "--to", "t.sqlite"], status: 66, in: folder, port: port, into: transcript)
        try await expectPlain(["history", "--db", "nope.sqlite"], in: folder, port: port, into: transcript)
        try await expectPlain(["notifications", "--db", "nope.sqlite"], status: 66, in: folder, port: port, into: transcript)
        try await expectPlain(
            ["lookup", "--transaction-id", "1", "--issuer-id", "x", "--key-id", "y", "--private-key-file", "nope.p8", "--bundle-id", "b"],
            status: 64, in: folder, port: port, into: transcript)

        // Database paths that cannot be used.
        try await expectPlain(["db", "migrate", "--db", "/proc/receiptdash-nowhere/x.sqlite"], status: 1, in: folder, port: port, into: transcript)
        try await expectPlain(["db", "migrate", "--db", "a-folder"], status: 1, in: folder, port: port, into: transcript)
        try await expectPlain(["watch", "--once", "--db", "garbage.sqlite", "r.b64"], status: 1, in: folder, port: port, into: transcript)
        try await expectPlain(["history", "--db", "garbage.sqlite"], status: 1, in: folder, port: port, into: transcript)
        try await expectPlain(["verify", "--db", "a-folder", "r.b64"] + closed, status: 1, in: folder, port: port, into: transcript)

        // Servers that are not there.
        try await expectPlain(
            ["db", "migrate", "--db", "postgres://team@127.0.0.1:\(port)/audit"], status: 1,
            in: folder, port: port, into: transcript)
        try await expectPlain(["history", "--db", "postgres://team@127.0.0.1:\(port)/audit"], status: 1, in: folder, port: port, into: transcript)
        // Without a terminal each retry is said only with --verbose; the result lists every attempt.
        try await expectPlain(["verify", "r.b64"] + closed, status: 1, in: folder, port: port, into: transcript)
        try await expectPlain(["verify", "--verbose", "r.b64"] + closed, status: 1, in: folder, port: port, into: transcript)

        // Bad values and flags.
        try await expectPlain(["history", "--db", "nope.sqlite", "--since", "last tuesday"], status: 64, in: folder, port: port, into: transcript)
        try await expectPlain(["notifications", "--since", "soon"], status: 64, in: folder, port: port, into: transcript)
        try await expectPlain(["watch", "--keep-days", "0", "r.b64"], status: 64, in: folder, port: port, into: transcript)
        try await expectPlain(["verify", "--concurrency", "0", "r.b64"], status: 64, in: folder, port: port, into: transcript)
        try await expectPlain(["verify", "--bogus", "r.b64"], status: 64, in: folder, port: port, into: transcript)
        try await expectPlain(["db", "migrate", "--db", "mysql://root@db/audit"], status: 64, in: folder, port: port, into: transcript)
        try await expectPlain(["verify", "--production-url", "http://example.com/v", "r.b64"], status: 64, in: folder, port: port, into: transcript)
        Golden.check("error-messages", transcript.text)
    }
}
