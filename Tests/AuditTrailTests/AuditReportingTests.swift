import AuditTrail
import AuditTrailSQLite
import Foundation
import ReceiptCore
import Testing
import TestSupport

/// What the commands print from a store: `db migrate`'s report, `history`'s text, the filter of
/// `notifications`.
@Suite struct AuditReportingTests {
    private func scratchPath() throws -> String {
        let folder = TemporaryFolder("audit-reporting").url
        return folder.appendingPathComponent("audit.sqlite").path
    }

    @Test func openingSaysCreatedThenCurrent() async throws {
        let words = Wording("audit-reporting")
        let path = try scratchPath()
        let created: any AuditBackend = try AuditStore(path: path)
        let current = try #require(created.schemaVersions.last)
        #expect(created.openingReport == "created \(path) at schema \(current)")
        await created.close()
        let again: any AuditBackend = try AuditStore(path: path)
        words.said(again.openingReport)
        await again.close()
        words.check()
    }

    @Test func historyTextEscapesWhatTheReceiptSays() async throws {
        let words = Wording("audit-reporting")
        let store: any AuditBackend = try AuditStore(path: try scratchPath())
        words.said(HistoryRendering.text([]))
        let bytes = Array(
            #"{"status":0,"environment":"Production","receipt":{"bundle_id":"com.example\u001b[2J","in_app":[{"product_id":"pro\u001b]0;x\u0007","transaction_id":"1000000000000001","original_transaction_id":"1000000000000001","purchase_date_ms":"1700000000000"}]}}"#
                .utf8)
        let decoded = try ReceiptDecoder().decode(bytes)
        _ = try await store.record([AuditIngest(decoded: decoded, bytes: bytes, kind: .file, source: "r.json", seenAt: Date(timeIntervalSince1970: 1_700_000_100))])
        let text = HistoryRendering.text(try await store.history(HistoryQuery()))
        #expect(!text.contains("\u{1B}"))
        #expect(!text.contains("\u{07}"))
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.count == 2)
        #expect(lines[0].hasPrefix("#1 \(decoded.format.rawValue) com.example\\x1b[2J "))
        #expect(lines[1] == "    pro\\x1b]0;x\\x07  1000000000000001  1000000000000001  2023-11-14T22:13:20Z")
        await store.close()
        words.check()
    }
}
