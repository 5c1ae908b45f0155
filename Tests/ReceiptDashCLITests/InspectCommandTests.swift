import Foundation
import Testing
import TestSupport

/// Runs the built `receiptdash` binary as a user would and checks its output and exit status.
@Suite struct InspectCommandTests {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let fixtures = packageRoot.appendingPathComponent("Tests/ReceiptCoreTests/Fixtures")

    typealias Run = CLIRunner.Run

    static var binary: URL { CLIRunner.binary }

    func run(_ arguments: [String], stdin: Data? = nil, currentDirectory: URL? = nil) async throws -> Run {
        try await CLIRunner.run(arguments, stdin: stdin, currentDirectory: currentDirectory)
    }

    func fixture(_ name: String) -> String { Self.fixtures.appendingPathComponent(name).path }

    /// `inspect --summary`: a line per receipt, `--where` kept, CSV for spreadsheets; a filter
    /// that does not exist, or CSV without --summary, is a usage error.
    @Test func summaryAnswersAQuestionAboutAFolder() async throws {
        let folder = Self.packageRoot.appendingPathComponent("Sources/ReceiptDemo/Demo").path
        let csv = try await run(["inspect", "--summary", "--at", "2026-01-01", "--where", "state:expired env:production", "--format", "csv", folder])
        #expect(csv.status == 0, "\(csv.stderr)")
        let lines = csv.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 2)
        #expect(lines.first == "file,verdict,environment,bundle_id,products,active_subscriptions,expired_subscriptions,refunds,latest_expiry,why")
        #expect(lines.last?.hasPrefix(
            "\(folder)/production-subscriptions.b64,valid,Production,org.getpure.pure-iphone,org.getpure.pure.Month org.getpure.pure.Week,0,1,0,2023-10-19T23:26:23Z,Expired on 2023-10-19T23:26:23Z") == true)
        for (arguments, message) in [
            (["--summary", "--where", "state:lapsed"], "--where: state:lapsed is not a state"),
            (["--format", "csv"], "--format csv goes with --summary"),
            (["--where", "state:expired"], "--where filters --summary's lines: add --summary."),
        ] {
            let usage = try await run(["inspect"] + arguments + [folder])
            #expect(usage.status == 64)
            #expect(usage.stderr.contains(message), "\(usage.stderr)")
        }
    }

    @Test func jsonForOneReceipt() async throws {
        let result = try await run(["inspect", "--format", "json", fixture("sandbox-2023.der")])
        #expect(result.status == 0)
        #expect(result.stderr.isEmpty)
        let object = try #require(result.json as? [String: Any])
        #expect(object["format"] as? String == "pkcs7")
        #expect(object["environment"] as? String == "Sandbox")
        let receipt = try #require(object["receipt"] as? [String: Any])
        #expect(receipt["bundle_id"] as? String == "com.hannesoid.PurchasingExperiments")
        #expect(receipt["receipt_type"] as? String == "ProductionSandbox")
        #expect(receipt["application_version"] as? String == "1")
        #expect(receipt["original_application_version"] as? String == "1.0")
        #expect(receipt["receipt_creation_date"] as? String == "2023-02-22T14:30:15Z")
        let inApp = try #require(receipt["in_app"] as? [[String: Any]])
        #expect(inApp.count == 2)
        let sub = try #require(inApp.first { $0["product_id"] as? String == "com.hannesoid.PurchasingExperiments.subscription1" })
        #expect(sub["transaction_id"] as? String == "2000000284164527")
        #expect(sub["original_transaction_id"] as? String == "2000000284164527")
        #expect(sub["quantity"] as? Int == 1)
        #expect(sub["purchase_date"] as? String == "2023-02-22T14:29:39Z")
        #expect(sub["expires_date"] as? String == "2023-02-22T14:34:39Z")
        #expect(sub["web_order_line_item_id"] as? String == "2000000021470597")
        #expect(sub["cancellation_date"] == nil)
    }

    @Test func severalInputsGiveAnArrayAndOneBadInputGivesExit1() async throws {
        let bad = TemporaryFolder("bad-input").appending("bad.b64")
        let words = Wording("inspect-command", replacing: [(bad.path, "<bad input>")])
        try Data("MIIT not really base64 !!".utf8).write(to: bad)
        let result = try await run(["inspect", "--format", "json", fixture("production.b64"), bad.path, fixture("legacy-sandbox.b64")])
        #expect(result.status == 1)
        let array = try #require(result.json as? [[String: Any]])
        #expect(array.count == 3)
        #expect(array[0]["format"] as? String == "pkcs7")
        #expect(array[2]["format"] as? String == "legacy")
        let error = try #require(array[1]["error"] as? [String: Any])
        #expect(error["code"] as? String == "invalid base64")
        words.said(error["message"] as? String)
        #expect(error["offset"] as? Int == 23)
        words.said(result.stderr)
        words.check()
    }

    @Test func standardInput() async throws {
        let bytes = try Data(contentsOf: Self.fixtures.appendingPathComponent("verify-response.json"))
        let result = try await run(["inspect", "--format", "json", "-"], stdin: bytes)
        #expect(result.status == 0)
        let object = try #require(result.json as? [String: Any])
        #expect(object["source"] as? String == "-")
        #expect(object["format"] as? String == "verify-response")
        #expect(object["status"] as? Int == 0)
        #expect((object["latest_receipt_info"] as? [Any])?.count == 2)
    }

    @Test func textSummaryNamesWhatWasBought() async throws {
        // "N days ago" counts from today: named, as the instants are.
        let words = Wording("inspect-command", matching: [(#"\(-?[0-9]+ days? (ago|from now)\)"#, "(<days>)")] + Wording.runVariables)
        let result = try await run(["inspect", fixture("production.b64")])
        #expect(result.status == 0)
        #expect(result.stdout.contains("Bundle id       org.getpure.pure-iphone"))
        #expect(result.stdout.contains("In-app purchases: 4"))
        #expect(result.stdout.contains("org.getpure.pure.Month"))
        words.said(result.stdout)
        words.check()
    }

    @Test func demoRunsOnBundledReceipts() async throws {
        let result = try await run(["inspect", "--demo"])
        #expect(result.status == 0)
        for bundle in ["org.getpure.pure-iphone", "com.revenuecat.sampleapp", "net.zachariadis.cyclemaps", "com.mindmobapp.MindMob"] {
            #expect(result.stdout.contains(bundle))
        }
    }

    @Test func missingFileAndNoInput() async throws {
        let words = Wording("inspect-command")
        let missing = try await run(["inspect", "/nonexistent/receipt.der"])
        #expect(missing.status == 1)
        words.said(missing.stderr)
        let none = try await run(["inspect"])
        #expect(none.status == 64)
        #expect(none.stderr.contains("No input."))
        words.check()
    }

    @Test(arguments: [["--help"], ["inspect", "--help"], ["bench", "--help"]])
    func helpOnEveryCommand(arguments: [String]) async throws {
        let result = try await run(arguments)
        #expect(result.status == 0)
        #expect(result.stdout.contains("USAGE:"))
    }

    /// `inspect` is parsed on its own before the whole command tree (a start-up shortcut):
    /// whatever that parse does not take as it is, and any error of the run, is answered
    /// exactly as the whole parser answers it, with the same usage lines and statuses.
    @Test func inspectsShortcutAnswersAsTheWholeParser() async throws {
        let words = Wording("inspect-command")
        let help = try await run(["inspect", "--help"])
        #expect(help.status == 0)
        words.said(help.stdout)
        #expect(help.stdout.contains("USAGE: receiptdash inspect [--format <format>]"))
        let unknown = try await run(["inspect", "--bogus", "x"])
        #expect(unknown.status == 64)
        words.said(unknown.stderr)
        // Thrown by the run itself, after parsing: the root's usage, as the parser's `main` gives it.
        let unreadable = try await run(["inspect", "--storekit-cert", "/nonexistent/cert.der", fixture("production.b64")])
        #expect(unreadable.status == 64)
        words.said(unreadable.stderr)
        #expect(unreadable.stdout.isEmpty)
        let bad = try await run(["inspect", "--device-id", "zz", fixture("production.b64")])
        #expect(bad.status == 64)
        words.said(bad.stderr)
        #expect(bad.stderr.contains("Usage: receiptdash inspect [--format <format>]"))
        words.check()
    }

    /// An error message that quotes the input (here a JSON key) reaches standard error escaped:
    /// no raw ESC or BEL from the file gets to the operator's terminal.
    @Test func errorMessagesOnStandardErrorAreEscaped() async throws {
        let folder = TemporaryFolder("hostile").url
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("evil\u{1B}[2J.json")
        try Data(#"{"\u001b[31mevil\u001b]0;title\u0007":1}"#.utf8).write(to: file)
        let result = try await run(["inspect", file.path])
        #expect(result.status == 1)
        #expect(!result.stderr.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 })
        #expect(result.stderr.contains(#"evil\x1b[2J.json"#))
        #expect(result.stderr.contains(#"\x1b[31mevil\x1b]0;title\x07"#))
    }
}
