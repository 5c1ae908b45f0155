import Foundation
import JSONWriting
import LocalFiles
import ReceiptCore
import ReceiptDemo
import ReceiptRendering
import ReceiptTrust
import Testing
import UntrustedText

/// `inspect --summary`: one line per receipt with exact facts, in input order, kept or left by
/// `--where`'s filter language; an input that cannot be decoded is still a line.
@Suite struct ReceiptSummaryTests {
    static let at = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01

    func run(_ format: TableFormat, _ filters: [String] = [], extra: [LoadedInput] = []) async throws -> (output: String, failures: Int) {
        let capture = ConsoleCapture()
        var run = InspectRun(
            inputs: (InputFiles.demo() + extra).map { .loaded($0) }, pipeline: ReceiptPipeline(at: Self.at), format: .text, combine: false,
            console: capture.console())
        run.summary = (format, try ReceiptFilter(filters))
        let failures = await run.run()
        return (capture.output, failures)
    }

    @Test func oneObjectPerReceiptWithExactFacts() async throws {
        let (output, failures) = try await run(.json)
        #expect(failures == 0)
        let rows = try #require(try JSONValue.parse(Array(output.utf8)).array)
        #expect(rows.count == InputFiles.demo().count)
        #expect(Set(try #require(rows.first?.object).keys) == [
            "file", "verdict", "environment", "bundle_id", "products", "active_subscriptions", "expired_subscriptions", "refunds",
            "latest_expiry", "why",
        ])
        let production = try #require(rows.first { $0.object?["file"]?.text?.hasSuffix("production-subscriptions.b64") == true }?.object)
        #expect(production["verdict"]?.text == "valid")
        #expect(production["environment"]?.text == "Production")
        #expect(production["bundle_id"]?.text == "org.getpure.pure-iphone")
        #expect(production["products"]?.array?.compactMap(\.text) == ["org.getpure.pure.Month", "org.getpure.pure.Week"])
        #expect(production["active_subscriptions"]?.int64 == 0)
        #expect(production["expired_subscriptions"]?.int64 == 1)
        #expect(production["refunds"]?.int64 == 0)
        #expect(production["latest_expiry"]?.text == "2023-10-19T23:26:23Z")
        #expect(production["why"]?.text?.hasPrefix("Expired on 2023-10-19T23:26:23Z") == true)
        let xcode = try #require(rows.first { $0.object?["file"]?.text?.hasSuffix("xcode-storekit-test.der") == true }?.object)
        #expect(xcode["verdict"]?.text == "test")
        #expect(xcode["environment"]?.text == "Xcode")
    }

    @Test func whereKeepsOnlyWhatEveryTermHolds() async throws {
        let expired = try await run(.csv, ["state:expired"]).output.split(separator: "\n").map(String.init)
        #expect(expired.first == ReceiptSummary.csvHeader)
        #expect(expired.count == 1 + 5)
        let one = try await run(.text, ["state:expired env:PRODUCTION", "bundle:org.getpure.*"]).output.split(separator: "\n")
        #expect(one.count == 1)
        #expect(one.first?.contains("org.getpure.pure-iphone  org.getpure.pure.Month,org.getpure.pure.Week  active 0 · expired 1 · refunds 0 · until 2023-10-19") == true)
        let jws = try await run(.text, ["file:*.jws", "getsession"]).output.split(separator: "\n")
        #expect(jws.count == 1)
        #expect(jws.first?.contains("notification-v2-expired.jws  valid  Sandbox  com.loki-project.loki-messenger  com.getsession.org.pro_sub  active 0 · expired 1") == true)
        #expect(try await run(.text, ["verdict:invalid"]).output.isEmpty)
    }

    @Test func anUndecodableInputIsALineAndHostileNamesAreEscaped() async throws {
        let bad = LoadedInput(source: "evil\u{1B}]0;pwned\u{07}.b64", result: .success(Array("not a receipt".utf8)))
        let (output, failures) = try await run(.text, ["verdict:undecodable"], extra: [bad])
        #expect(failures == 1)
        let lines = output.split(separator: "\n")
        #expect(lines.count == 1)
        #expect(lines.first?.hasPrefix("evil\\x1b]0;pwned\\x07.b64  undecodable  -  -  -  active 0 · expired 0 · refunds 0  ") == true)
        #expect(!output.contains("\u{1B}"))
    }

    @Test func filtersThatDoNotExistAreRefusedByName() {
        #expect(throws: FilterError("state:lapsed is not a state; states: " + ReceiptFilter.states.joined(separator: ", "))) {
            try ReceiptFilter(["state:lapsed"])
        }
        #expect(throws: FilterError("colour: is not a filter; filters: state: verdict: env: product: bundle: file:, or plain words")) {
            try ReceiptFilter(["colour:red"])
        }
        #expect(throws: FilterError("product: needs a value after the colon")) { try ReceiptFilter(["product:"]) }
        // A time or a URL is text, not a key.
        #expect((try? ReceiptFilter(["2023-10-19T23:26:23Z"]))?.terms == [.text("2023-10-19t23:26:23z")])
        // Many stars against a long name stay fast (no backtracking blow-up).
        let s = ReceiptSummary(file: String(repeating: "a", count: 20_000), error: ReceiptDecodingError(.emptyInput, "x"))
        #expect((try? ReceiptFilter(["file:" + String(repeating: "*a", count: 500) + "b"]))?.matches(s) == false)
    }
}
