import Foundation
import ServiceTestSupport
import Testing

/// Issue 24, "no internals in messages": every failure path a user can provoke says what
/// failed, on what, in words; no Foundation error dump, Swift type name or library dump
/// reaches standard error.
@Suite(.timeLimit(.minutes(3))) struct PlainErrorMessagesTests {
    let cli = InspectCommandTests()

    static let internals = [
        "Error Domain=", "NSCocoaErrorDomain", "errno:", "(error set)", "Optional(", "PSQLError", "SingleConnectionFailure", "UserInfo=",
        "DecodingError", "NIOConnectionError", "IOError(", "NIOSSLError", "BoringSSLError", "HTTPClientError",
    ]

    func expectPlain(_ arguments: [String], status: Int32? = nil, mentions: String? = nil, in folder: URL) throws {
        let result = try cli.run(arguments, currentDirectory: folder)
        let shown = arguments.joined(separator: " ")
        #expect(result.status != 0, "\(shown) succeeded")
        if let status { #expect(result.status == status, "\(shown): \(result.stderr)") }
        #expect(!result.stderr.isEmpty, "\(shown) failed without a word")
        for dump in Self.internals {
            #expect(!result.stderr.contains(dump), "\(shown): \(result.stderr)")
            #expect(!result.stdout.contains(dump), "\(shown): \(result.stdout)")
        }
        if let mentions { #expect(result.stderr.contains(mentions), "\(shown): \(result.stderr)") }
    }

    @Test func everyFailurePathIsSaidInWords() throws {
        let folder = try NewUserCommandTests.scratch("plain-errors")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("a-folder"), withIntermediateDirectories: true)
        try Data("this is not a database, just text that is long enough to be looked at by SQLite\n".utf8)
            .write(to: folder.appendingPathComponent("garbage.sqlite"))
        try FileManager.default.copyItem(atPath: cli.fixture("production.b64"), toPath: folder.appendingPathComponent("r.b64").path)
        let port = TestPorts.closed()
        let closed = ["--production-url", "http://127.0.0.1:\(port)/p", "--sandbox-url", "http://127.0.0.1:\(port)/s"]

        // Missing files.
        try expectPlain(["verify", "nope.b64"] + closed, status: 1, mentions: "nope.b64", in: folder)
        try expectPlain(["verify", "--ca-file", "nope.pem", "r.b64"] + closed, mentions: "nope.pem", in: folder)
        try expectPlain(["verify", "--shared-secret-file", "nope.secret", "r.b64"] + closed, mentions: "nope.secret", in: folder)
        try expectPlain(["db", "copy", "--from", "./nope.sqlite", "--to", "t.sqlite"], status: 66, mentions: "no such file: ./nope.sqlite", in: folder)
        try expectPlain(["history", "--db", "nope.sqlite"], mentions: "nope.sqlite", in: folder)
        try expectPlain(["notifications", "--db", "nope.sqlite"], status: 1, mentions: "nope.sqlite", in: folder)
        try expectPlain(
            ["lookup", "--transaction-id", "1", "--issuer-id", "x", "--key-id", "y", "--private-key-file", "nope.p8", "--bundle-id", "b"],
            status: 1, mentions: "nope.p8", in: folder)

        // Database paths that cannot be used.
        try expectPlain(["db", "migrate", "--db", "/proc/receiptdash-nowhere/x.sqlite"], status: 1, mentions: "/proc/receiptdash-nowhere", in: folder)
        try expectPlain(["db", "migrate", "--db", "a-folder"], status: 1, mentions: "a-folder is a folder", in: folder)
        try expectPlain(["watch", "--once", "--db", "garbage.sqlite", "r.b64"], status: 1, mentions: "garbage.sqlite", in: folder)
        try expectPlain(["history", "--db", "garbage.sqlite"], status: 1, mentions: "garbage.sqlite", in: folder)
        try expectPlain(["verify", "--db", "a-folder", "r.b64"] + closed, status: 1, mentions: "a-folder", in: folder)

        // Servers that are not there.
        try expectPlain(
            ["db", "migrate", "--db", "postgres://team@127.0.0.1:\(port)/audit"], status: 1, mentions: "connection refused (is the server running?)",
            in: folder)
        try expectPlain(["history", "--db", "postgres://team@127.0.0.1:\(port)/audit"], status: 1, mentions: "connection refused", in: folder)
        try expectPlain(["verify", "r.b64"] + closed, status: 1, mentions: "connection refused", in: folder)

        // Bad values and flags.
        try expectPlain(["history", "--db", "nope.sqlite", "--since", "last tuesday"], status: 64, mentions: "--since", in: folder)
        try expectPlain(["notifications", "--since", "soon"], status: 64, mentions: "--since", in: folder)
        try expectPlain(["watch", "--keep-days", "0", "r.b64"], status: 64, mentions: "--keep-days", in: folder)
        try expectPlain(["verify", "--concurrency", "0", "r.b64"], status: 64, mentions: "--concurrency", in: folder)
        try expectPlain(["verify", "--bogus", "r.b64"], status: 64, mentions: "--bogus", in: folder)
        try expectPlain(["db", "migrate", "--db", "mysql://root@db/audit"], status: 64, mentions: "postgres://", in: folder)
        try expectPlain(["verify", "--production-url", "http://example.com/v", "r.b64"], status: 64, mentions: "https", in: folder)
    }
}
