import Foundation
import GRDB
import ReceiptCore
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Through the binary: JSON output never carries DEL, C1, U+2028/9
/// or bidi controls raw; the audit database is created owner-only; a readable shared secret
/// file is warned about; `--send-undecodable` never sends or stores a pasted `password`.
@Suite struct ControlCharacterOutputTests {
    let cli = InspectCommandTests()
    let verify = VerifyCommandTests()

    /// What the hostile fields say, and how JSON must write them.
    static let hostile = #"\u007f\u0085\u009b\u202e\u2066\u2028\u2029"#

    /// The scalars that must never appear raw (all of `EscapedScalars` but newline, which the
    /// pretty layout writes between members).
    static func rawControls(_ text: String) -> [String] {
        text.unicodeScalars.filter { s in
            let v = s.value
            return (v < 0x20 && v != 0x0A) || (0x7F...0x9F).contains(v) || (0x2028...0x202E).contains(v) || (0x2066...0x2069).contains(v)
        }.map { "U+" + String($0.value, radix: 16) }
    }

    static func folder() throws -> URL {
        let folder = TemporaryFolder("issue18").url
        return folder
    }

    static func mode(_ path: String) -> Int? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Int(info.st_mode) & 0o777
    }

    @Test func inspectJSONEscapesControlsFromAVerifyResponse() async throws {
        let response = #"""
            {"status":0,"environment":"Sandbox","receipt":{"receipt_type":"ProductionSandbox",
             "bundle_id":"com.example\#(Self.hostile)","application_version":"1","in_app":[
             {"quantity":"1","product_id":"p\#(Self.hostile)","transaction_id":"1000","original_transaction_id":"1000",
              "purchase_date_ms":"1700000000000"}]}}
            """#
        let result = try await cli.run(["inspect", "--format", "json", "-"], stdin: Data(response.utf8))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(Self.rawControls(result.stdout).isEmpty, "\(Self.rawControls(result.stdout))")
        #expect(result.stdout.contains(#""bundle_id" : "com.example\u007f\u0085\u009b\u202e\u2066\u2028\u2029""#), "\(result.stdout)")
        #expect(result.stdout.contains(#""product_id" : "p\u007f\u0085\u009b\u202e\u2066\u2028\u2029""#))
        // Still JSON that reads back as what the receipt said.
        let object = try #require(result.json as? [String: Any])
        let receipt = try #require(object["receipt"] as? [String: Any])
        #expect(receipt["bundle_id"] as? String == "com.example\u{7F}\u{85}\u{9B}\u{202E}\u{2066}\u{2028}\u{2029}")

        // The text summary escapes the same scalars.
        let text = try await cli.run(["inspect", "-"], stdin: Data(response.utf8))
        #expect(Self.rawControls(text.stdout).isEmpty)
        #expect(text.stdout.contains(#"com.example\x7f\x85\x9b\u{202e}\u{2066}\u{2028}\u{2029}"#), "\(text.stdout)")
    }

    @Test func inspectJSONEscapesControlsFromAJWSPayload() async throws {
        let header = Base64Text.encodeURL(Array(#"{"alg":"ES256"}"#.utf8))
        let payload = Base64Text.encodeURL(Array((
            #"{"bundleId":"com.example\#(Self.hostile)","productId":"p\#(Self.hostile)","transactionId":"1","originalTransactionId":"1","#
                + #""purchaseDate":1700000000000,"type":"Consumable","environment":"Sandbox"}"#).utf8))
        let result = try await cli.run(["inspect", "--format", "json", "-"], stdin: Data("\(header).\(payload).AAAA".utf8))
        #expect(Self.rawControls(result.stdout).isEmpty, "\(Self.rawControls(result.stdout))")
        #expect(result.stdout.contains(#""bid" : "com.example\u007f\u0085\u009b\u202e\u2066\u2028\u2029""#), "\(result.stdout)")
        #expect(result.stdout.contains(#""product_id" : "p\u007f\u0085\u009b\u202e\u2066\u2028\u2029""#))
    }

    /// `watch` records the hostile response; `history --format json` writes it escaped. The
    /// database, made by the command in directories it made, is owner-only.
    @Test func historyJSONEscapesAndTheDatabaseIsOwnerOnly() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let inputs = folder.appendingPathComponent("inputs")
        try FileManager.default.createDirectory(at: inputs, withIntermediateDirectories: true)
        let response = #"{"status":0,"environment":"Sandbox","receipt":{"bundle_id":"b\#(Self.hostile)","in_app":[{"transaction_id":"7\#(Self.hostile)","product_id":"p","purchase_date_ms":"1700000000000"}]}}"#
        try Data(response.utf8).write(to: inputs.appendingPathComponent("response.json"))
        let db = folder.appendingPathComponent("new/trail/audit.sqlite").path
        let watch = try await cli.run(["watch", "--once", "--db", db, inputs.path])
        #expect(watch.status == 0, "\(watch.stderr)")
        #expect(Self.mode(db) == 0o600)
        #expect(Self.mode(folder.appendingPathComponent("new").path) == 0o700)
        #expect(Self.mode(folder.appendingPathComponent("new/trail").path) == 0o700)

        let history = try await cli.run(["history", "--db", db, "--format", "json"])
        #expect(history.status == 0, "\(history.stderr)")
        #expect(Self.rawControls(history.stdout).isEmpty, "\(Self.rawControls(history.stdout))")
        #expect(history.stdout.contains(#""b\u007f\u0085\u009b\u202e\u2066\u2028\u2029""#), "\(history.stdout)")
    }

    /// A pasted request body is sent and stored without its password (and with a warning
    /// about the 0644 secret file); one that mentions a password but is not JSON is not sent.
    @Test func sendUndecodableDropsThePassword() async throws {
        let words = Wording("control-character-output")
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let secret = folder.appendingPathComponent("secret")
        try Data("row-test-secret-value".utf8).write(to: secret)
        #expect(chmod(secret.path, 0o644) == 0)
        let pasted = folder.appendingPathComponent("pasted.json").path
        try Data(#"{"receipt-data":"QUJD!!not base64","password":"hunter2-pasted-pw","exclude-old-transactions":true}"#.utf8)
            .write(to: URL(fileURLWithPath: pasted))
        let broken = folder.appendingPathComponent("broken.json").path
        try Data(#"{"receipt-data":"x!","password":"hunter3-broken-pw""#.utf8).write(to: URL(fileURLWithPath: broken))
        let (simulator, production, sandbox) = try verify.startSimulator(secretFile: secret.path)
        defer { simulator.terminate() }
        let db = folder.appendingPathComponent("audit.sqlite").path
        let result = try await cli.run([
            "verify", "--format", "json", "--send-undecodable", "--db", db, "--shared-secret-file", secret.path, "--production-url",
            production, "--sandbox-url", sandbox, pasted, broken,
        ])
        #expect(result.status == 1)
        let rows = try #require(result.json as? [[String: Any]], "\(result.stdout) \(result.stderr)")
        #expect(rows.map { $0["source"] as? String } == [pasted, broken])
        #expect(rows[0]["status"] as? Int == 21002)
        #expect((rows[1]["error"] as? [String: Any])?["code"] as? String != nil)
        words.said(result.stderr)
        words.said(result.stderr)
        words.said(result.stderr)

        // What was sent is what is stored: one row, the body without its password.
        let stored = try await DatabaseQueue(path: db).read { db in
            try String.fetchAll(db, sql: "SELECT receipt_data FROM receipt WHERE format = 'undecodable'")
        }
        #expect(stored.count == 1)
        let sent = String(decoding: try #require(Data(base64Encoded: stored.first ?? "")), as: UTF8.self)
        #expect(sent == #"{"exclude-old-transactions":true,"receipt-data":"QUJD!!not base64"}"#)
        for output in [result.stdout, result.stderr, stored.joined()] {
            #expect(!output.contains("hunter2") && !output.contains("hunter3"))
        }
        #expect(Self.mode(db) == 0o600)
        words.check()
    }
}
