import AppStoreAPI
import Crypto
import Foundation
import ReceiptCore
import ReceiptSimulator
import Testing
import TestSupport

/// `receiptdash offer-signature` as a process, with a fresh P-256 `.p8`: exact JSON keys,
/// signatures that verify with the key's public half and that the simulator's verifier accepts,
/// values and keys that cannot be used as usage errors (exit 64) in words, and the key in no
/// output.
@Suite struct OfferSignatureCommandTests {
    typealias Workspace = LookupCommandTests.Workspace

    static let nonce = "3F2B9C4E-8A1D-4E6F-9B0A-1C2D3E4F5A6B"

    /// The environment of every run: no RECEIPTDASH_* variables of this machine, no profile.
    static func environment(_ workspace: Workspace) -> [String: String] {
        ["PATH": "/usr/bin:/bin", "HOME": workspace.folder.path, "XDG_CONFIG_HOME": workspace.folder.path]
    }

    func run(_ workspace: Workspace, _ arguments: [String], key: [String]? = nil) async throws -> CLIRunner.Run {
        let credentials =
            key ?? [
                "--issuer-id", "57246542-96fe-1a63-e053-0824d011072a", "--key-id", "2X9R4HXF34", "--private-key-file", workspace.keyFile,
                "--bundle-id", ServerAPIData.demoBundleID,
            ]
        let run = try await CLIRunner.run(["offer-signature"] + arguments + credentials, environment: Self.environment(workspace))
        for secret in [workspace.keySecret, "PRIVATE KEY"] {
            #expect(!run.stdout.contains(secret))
            #expect(!run.stderr.contains(secret))
        }
        return run
    }

    func object(_ run: CLIRunner.Run) throws -> [String: Any] {
        #expect(run.status == 0, "\(run.stderr)")
        return try #require(run.json as? [String: Any], "\(run.stdout)")
    }

    @Test func promotionalJSONVerifiesWithTheKey() async throws {
        let workspace = try Workspace()
        let json = try object(
            try await run(
                workspace,
                [
                    "promotional", "--product-id", "pro.monthly", "--offer-id", "WINBACK1", "--application-username", "User-1", "--nonce",
                    Self.nonce, "--format", "json",
                ]))
        #expect(
            json.keys.sorted() == [
                "application_username", "bundle_id", "key_id", "nonce", "offer_id", "product_id", "signature", "timestamp", "type",
                "valid_until",
            ])
        #expect(json["type"] as? String == "promotional")
        #expect(json["key_id"] as? String == "2X9R4HXF34")
        #expect(json["nonce"] as? String == Self.nonce.lowercased())
        #expect(json["application_username"] as? String == "user-1")
        let timestamp = Int64(try #require(json["timestamp"] as? Int))
        #expect(abs(Double(timestamp) / 1000 - Date().timeIntervalSince1970) < 600, "signed now")
        let signed = [
            "com.example.receiptdash", "2X9R4HXF34", "pro.monthly", "WINBACK1", "user-1", Self.nonce.lowercased(), String(timestamp),
        ].joined(separator: "\u{2063}")
        let base64 = try #require(json["signature"] as? String)
        let der = try #require(Data(base64Encoded: base64))
        let signature = try P256.Signing.ECDSASignature(derRepresentation: der)
        #expect(workspace.key.publicKey.isValidSignature(signature, for: Data(signed.utf8)))
        let validUntil = Date(timeIntervalSince1970: Double(timestamp) / 1000 + 86_400)
        #expect(json["valid_until"] as? String == AppleDate.iso8601(validUntil))

        // The JSON is the body the simulator's /offers/verify takes.
        let verifier = OfferVerifier(publicKey: workspace.key.publicKey, keyID: "2X9R4HXF34", bundleIDs: [ServerAPIData.demoBundleID])
        let stdout = try await run(
            workspace, ["promotional", "--product-id", "pro.monthly", "--offer-id", "WINBACK1", "--application-username", "", "--format", "json"]
        ).stdout
        let verdict = try verifier.verify(Array(stdout.utf8), now: Date()).get()
        #expect(verdict["valid"] == .bool(true))
        #expect(verdict["application_username"] == .string(""))
        // A fresh nonce each run: a UUID, lowercase.
        let nonce = try #require(verdict["nonce"]?.text)
        #expect(UUID(uuidString: nonce) != nil && nonce == nonce.lowercased())
    }

    @Test func promotionalTextIsOneFactALineAndSaysTwentyFourHours() async throws {
        let words = Wording("offer-signature-command", matching: Wording.runVariables)
        let workspace = try Workspace()
        let result = try await run(
            workspace, ["promotional", "--product-id", "pro.monthly", "--offer-id", "WINBACK1", "--application-username", "", "--nonce", Self.nonce])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.map { $0.prefix { $0 != ":" } } == [
            "kind", "bundle id", "key id", "product id", "offer id", "application username", "nonce", "timestamp", "signature", "valid until", "",
        ])
        #expect(lines[1] == "bundle id: com.example.receiptdash")
        #expect(lines[2] == "key id: 2X9R4HXF34")
        #expect(lines[6] == "nonce: 3f2b9c4e-8a1d-4e6f-9b0a-1c2d3e4f5a6b")
        words.said(lines[9])
        #expect(result.stderr.isEmpty)
        words.check()
    }

    @Test func promotionalJWSAndEligibilityVerifyWithTheKey() async throws {
        let words = Wording("offer-signature-command", matching: [(#"issued at: [0-9]+ "#, "issued at: <seconds> ")] + Wording.runVariables)
        let workspace = try Workspace()
        let promotional = try object(
            try await run(
                workspace,
                ["promotional-jws", "--product-id", "pro.monthly", "--offer-id", "WINBACK1", "--transaction-id", "2000000900000001", "--format", "json"]))
        #expect(promotional.keys.sorted() == ["issued_at", "jws", "key_id", "nonce", "offer_id", "product_id", "transaction_id", "type"])
        #expect(promotional["type"] as? String == "promotional-jws")
        let jwt = try DecodedJWT(try #require(promotional["jws"] as? String))
        #expect(jwt.headerJSON == #"{"alg":"ES256","kid":"2X9R4HXF34","typ":"JWT"}"#)
        #expect(jwt.verifies(with: workspace.key.publicKey))
        #expect(jwt.claims["iss"] == .string("57246542-96fe-1a63-e053-0824d011072a"))
        #expect(jwt.claims["bid"] == .string("com.example.receiptdash"))
        #expect(jwt.claims["aud"] == .string("promotional-offer"))
        #expect(jwt.claims["productId"] == .string("pro.monthly"))
        #expect(jwt.claims["offerIdentifier"] == .string("WINBACK1"))
        #expect(jwt.claims["transactionId"] == .string("2000000900000001"))
        #expect(jwt.claims["iat"]?.int64 == (promotional["issued_at"] as? Int).map(Int64.init))
        let nonce = try #require(jwt.claims["nonce"]?.text)
        #expect(UUID(uuidString: nonce) != nil && nonce == nonce.lowercased() && promotional["nonce"] as? String == nonce)

        let withoutTransaction = try object(
            try await run(workspace, ["promotional-jws", "--product-id", "pro.monthly", "--offer-id", "WINBACK1", "--format", "json"]))
        #expect(withoutTransaction["transaction_id"] == nil)
        #expect(try DecodedJWT(try #require(withoutTransaction["jws"] as? String)).claims["transactionId"] == nil)

        for (flag, allow) in [("--deny", false), ("--allow", true)] {
            let eligibility = try object(
                try await run(
                    workspace,
                    ["introductory-eligibility", "--product-id", "pro.monthly", "--transaction-id", "2000000900000001", flag, "--format", "json"]))
            #expect(
                eligibility.keys.sorted() == ["allow_introductory_offer", "issued_at", "jws", "key_id", "nonce", "product_id", "transaction_id", "type"])
            #expect(eligibility["type"] as? String == "introductory-eligibility")
            #expect(eligibility["allow_introductory_offer"] as? Bool == allow)
            let token = try DecodedJWT(try #require(eligibility["jws"] as? String))
            #expect(token.verifies(with: workspace.key.publicKey))
            #expect(token.claims["aud"] == .string("introductory-offer-eligibility"))
            #expect(token.claims["allowIntroductoryOffer"] == .bool(allow))
            #expect(token.claims["transactionId"] == .string("2000000900000001"))
        }

        let text = try await run(workspace, ["introductory-eligibility", "--product-id", "pro.monthly", "--transaction-id", "2000000900000001", "--deny"])
        #expect(text.status == 0, "\(text.stderr)")
        // Every fact but the token, which changes with its time and nonce.
        words.said(text.stdout.split(separator: "\n").filter { !$0.hasPrefix("jws: ") })
        #expect(text.stdout.split(separator: "\n").last?.hasPrefix("jws: eyJ") == true)
        words.check()
    }

    @Test func valuesThatCannotBeSignedAreUsageErrors() async throws {
        let workspace = try Workspace()
        let cases: [([String], String)] = [
            (
                ["promotional", "--product-id", "pro.monthly", "--offer-id", "WINBACK1", "--application-username", "", "--nonce", "not-a-uuid"],
                "The nonce must be a UUID such as"
            ),
            (["promotional", "--product-id", "", "--offer-id", "WINBACK1", "--application-username", ""], "The product id is empty."),
            (
                ["promotional", "--product-id", "pro\u{1B}[2Jmonthly", "--offer-id", "WINBACK1", "--application-username", ""],
                "The product id holds a control or invisible character (U+1B)"
            ),
            (["promotional-jws", "--product-id", "pro.monthly", "--offer-id", " "], "The offer id is empty."),
            (
                ["promotional-jws", "--product-id", "pro.monthly", "--offer-id", "WINBACK1", "--transaction-id", "12ab"],
                "The transaction id takes digits only"
            ),
            (["introductory-eligibility", "--product-id", "pro.monthly", "--transaction-id", "1", "--allow", "--deny"], "--allow"),
            (["introductory-eligibility", "--product-id", "pro.monthly", "--transaction-id", "1"], "--allow"),
        ]
        for (arguments, said) in cases {
            let result = try await run(workspace, arguments)
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains(said), "\(arguments): \(result.stderr)")
            #expect(result.stdout.isEmpty)
            #expect(!result.stderr.contains("\u{1B}[2J"), "the value is escaped")
        }
    }

    @Test func aKeyThatCannotBeUsedIsSaidInWords() async throws {
        let words = Wording("offer-signature-command")
        let workspace = try Workspace()
        let values = ["promotional", "--product-id", "pro.monthly", "--offer-id", "WINBACK1", "--application-username", ""]
        func credentials(_ file: String) -> [String] {
            ["--issuer-id", "57246542-96fe-1a63-e053-0824d011072a", "--key-id", "2X9R4HXF34", "--private-key-file", file, "--bundle-id", "b"]
        }
        // No key file there.
        let absent = workspace.folder.appendingPathComponent("absent.p8").path
        let missing = try await run(workspace, values, key: credentials(absent))
        #expect(missing.status == 64)
        words.said(missing.stderr)
        // No settings at all: each is named, with its variable.
        let none = try await run(workspace, values, key: [])
        #expect(none.status == 64)
        words.said(none.stderr)
        // A P-384 key is not an In-App Purchase key.
        let p384 = workspace.folder.appendingPathComponent("p384.p8").path
        try Data(P384.Signing.PrivateKey().pemRepresentation.utf8).write(to: URL(fileURLWithPath: p384))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: p384)
        let wrongCurve = try await run(workspace, values, key: credentials(p384))
        #expect(wrongCurve.status == 64)
        words.said(wrongCurve.stderr)
        #expect(wrongCurve.stdout.isEmpty)
        words.check()
    }

    @Test func everySubcommandHasHelp() async throws {
        let workspace = try Workspace()
        let top = try await CLIRunner.run(["offer-signature", "--help"], environment: Self.environment(workspace))
        #expect(top.status == 0)
        let listed = top.stdout.split(separator: "\n").compactMap { $0.split(separator: " ").first.map(String.init) }
        for name in ["promotional", "promotional-jws", "introductory-eligibility"] { #expect(listed.contains(name), "\(name)") }
        let expected: [String: [String]] = [
            "promotional": ["--product-id <id>", "--offer-id <id>", "--application-username <text>", "--nonce <uuid>", "24 hours", "--api-profile"],
            "promotional-jws": ["--product-id <id>", "--offer-id <id>", "--transaction-id <id>", "promotional-offer", "--format <format>"],
            "introductory-eligibility": ["--transaction-id <id>", "--allow", "--deny", "introductory-offer-eligibility", "--private-key-file"],
        ]
        for (name, words) in expected {
            let help = try await CLIRunner.run(["offer-signature", name, "--help"], environment: Self.environment(workspace))
            #expect(help.status == 0, "\(name)")
            for word in words { #expect(help.stdout.contains(word), "\(name) --help lacks \(word)") }
        }
    }
}
