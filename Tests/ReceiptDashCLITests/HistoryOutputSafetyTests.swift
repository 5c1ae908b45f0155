import Foundation
import Testing
import TestSupport

/// `history --format text` and `--format csv` print what receipts said: a hostile
/// verifyReceipt response recorded by `watch` must not reach the terminal as escape sequences.
@Suite struct HistoryOutputSafetyTests {
    let cli = InspectCommandTests()

    /// A verifyReceipt response whose `transaction_id` clears the screen (`ESC [2J`), whose
    /// `bundle_id` retitles the terminal (`ESC ]0;…BEL`), and whose product id starts a formula.
    static let hostileResponse = #"""
        {
          "status": 0,
          "environment": "Sandbox",
          "receipt": {
            "receipt_type": "ProductionSandbox",
            "bundle_id": "com.example\u001b]0;owned\u0007",
            "application_version": "1",
            "in_app": [
              {
                "quantity": "1",
                "product_id": "=HYPERLINK(\"x\")",
                "transaction_id": "1000\u001b[2J",
                "original_transaction_id": "1000\u009b31m",
                "purchase_date_ms": "1700000000000"
              }
            ]
          }
        }
        """#

    @Test func textAndCSVCarryNoControlBytesFromReceipts() async throws {
        let folder = TemporaryFolder("history-safety").url
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data(Self.hostileResponse.utf8).write(to: folder.appendingPathComponent("response.json"))
        let db = folder.appendingPathComponent("audit.sqlite").path
        let watch = try await cli.run(["watch", "--once", "--db", db, folder.path])
        #expect(watch.status == 0, "\(watch.stderr)")

        // The store holds the text as it came: the JSON history shows it, escaped as JSON.
        let json = try await cli.run(["history", "--db", db, "--format", "json"])
        let rows = try #require(json.json as? [[String: Any]])
        #expect(rows.count == 1)
        #expect(rows.first?["bundle_id"] as? String == "com.example\u{1B}]0;owned\u{07}")

        let text = try await cli.run(["history", "--db", db, "--format", "text"])
        #expect(text.status == 0, "\(text.stderr)")
        let csv = try await cli.run(["history", "--db", db, "--format", "csv"])
        #expect(csv.status == 0, "\(csv.stderr)")
        for (name, output) in [("text", text.stdout), ("csv", csv.stdout)] {
            let controls = output.unicodeScalars.filter { $0.value == 0x1B || $0.value == 0x07 || $0.value == 0x9B }
            #expect(controls.isEmpty, "history --format \(name) printed control characters: \(output.debugDescription)")
            #expect(output.contains(#"com.example\x1b]0;owned\x07"#), "\(name): \(output)")
            #expect(output.contains(#"1000\x1b[2J"#), "\(name): \(output)")
            #expect(output.contains(#"1000\x9b31m"#), "\(name): \(output)")
        }
        // CSV: escaped, quoted where it holds a quote, and never a formula.
        let lines = csv.stdout.split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines.last?.contains(#","'=HYPERLINK(""x"")","#) == true, "\(csv.stdout)")
    }
}
