import Foundation
import ReceiptCore
import ReceiptService
import ReceiptSimulator

extension Bench {
    /// A log of `lines` lines, one in five holding a receipt (raw base64, a receipt-data body,
    /// or a verifyReceipt response), the rest noise; followed and ingested into a new database.
    func benchIngest(lines: Int) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("receiptdash-ingest-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let log = folder.appendingPathComponent("app.log")
        var text = ""
        text.reserveCapacity(lines * 120)
        for i in 0..<lines {
            switch i % 10 {
            case 0: text += "2026-11-22T06:00:00Z INFO receipt=\(SyntheticReceipt.base64(i))\n"
            case 5: text += "{\"receipt-data\": \"\(SyntheticReceipt.base64(i, environment: "ProductionSandbox"))\", \"exclude-old-transactions\": true}\n"
            case 7 where i % 20 == 7:
                text += #"{"status": 0, "environment": "Sandbox", "receipt": {"bundle_id": "com.example.r\#(i)", "in_app": [{"transaction_id": "\#(i)", "product_id": "p", "purchase_date_ms": "1700000000000"}]}}"# + "\n"
            default: text += "2026-11-22T06:00:00Z INFO GET /api/items/\(i) 200 12ms user=\(i % 977)\n"
            }
        }
        try Data(text.utf8).write(to: log)
        let store = try AuditStore(path: folder.appendingPathComponent("audit.sqlite").path)
        let ingestor = Ingestor(store: store)
        let follower = LogFollower(path: log.path)
        let start = DispatchTime.now().uptimeNanoseconds
        var total = 0
        repeat {
            let batch = follower.poll()
            if batch.isEmpty { break }
            total += batch.count
            _ = try await ingestor.ingest(lines: batch, kind: .watch, source: log.path, at: Date())
        } while true
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        let c = ingestor.counts
        print(String(
            format: "ingest: %d lines in %.2f s: %.0f lines/s (%d new receipts, %d seen again, %d skipped), one thread",
            total, seconds, Double(total) / seconds, c.newReceipts, c.seenAgain, c.skipped))
    }
}
