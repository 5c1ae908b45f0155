import AuditStore
import Foundation
import ReceiptCore
import ReceiptSimulator
import ReceiptWatch

extension Bench {
    /// A log of `lines` lines, one in ten holding a raw receipt, one in ten a receipt-data body,
    /// one in twenty a verifyReceipt response, the rest noise: receipts numbered from `first`, so
    /// logs with different `first` share none.
    static func ingestLog(lines: Int, first: Int, at url: URL) throws {
        var text = ""
        text.reserveCapacity(lines * 120)
        for i in 0..<lines {
            let n = first + i
            switch i % 10 {
            case 0: text += "2026-11-22T06:00:00Z INFO receipt=\(SyntheticReceipt.base64(n))\n"
            case 5: text += "{\"receipt-data\": \"\(SyntheticReceipt.base64(n, environment: "ProductionSandbox"))\", \"exclude-old-transactions\": true}\n"
            case 7 where i % 20 == 7:
                text += #"{"status": 0, "environment": "Sandbox", "receipt": {"bundle_id": "com.example.r\#(n)", "in_app": [{"transaction_id": "\#(n)", "product_id": "p", "purchase_date_ms": "1700000000000"}]}}"# + "\n"
            default: text += "2026-11-22T06:00:00Z INFO GET /api/items/\(i) 200 12ms user=\(i % 977)\n"
            }
        }
        try Data(text.utf8).write(to: url)
    }

    /// Follows `log` to its end into `store`, 1,000 lines to a transaction; returns the lines and
    /// what was recorded.
    static func ingest(_ log: URL, into store: any AuditBackend) async throws -> (lines: Int, counts: Ingestor.Counts) {
        let ingestor = Ingestor(store: store)
        let follower = LogFollower(path: log.path)
        var total = 0
        repeat {
            let batch = follower.poll()
            if batch.isEmpty { break }
            total += batch.count
            _ = try await ingestor.ingest(lines: batch, kind: .watch, source: log.path, at: Date())
        } while true
        return (total, ingestor.counts)
    }

    /// `--ingest-lines N`: a generated log followed and ingested into a fresh SQLite trail; with
    /// `--ingest-db URL`, into PostgreSQL too, by one writer and then by four at once (each its
    /// own log and its own connection pool, as four validators would), side by side in one run.
    func benchIngest(lines: Int, postgres: String?) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("receiptdash-ingest-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // Receipt numbers of this run: a database reused between runs sees new receipts.
        let base = Int(Date().timeIntervalSince1970) % 100_000 * 100_000_000
        let logs = try (0..<5).map { index -> URL in
            let url = folder.appendingPathComponent("app-\(index).log")
            try Self.ingestLog(lines: lines, first: base + index * 10_000_000, at: url)
            return url
        }
        func report(_ what: String, _ lines: Int, _ seconds: Double, _ counts: Ingestor.Counts) {
            print(String(
                format: "ingest %@: %d lines in %.2f s: %.0f lines/s (%d new receipts, %d seen again, %d skipped)",
                what, lines, seconds, Double(lines) / seconds, counts.newReceipts, counts.seenAgain, counts.skipped))
        }
        let sqlite = try AuditStore(path: folder.appendingPathComponent("audit.sqlite").path)
        var start = ContinuousClock.now
        let local = try await Self.ingest(logs[0], into: sqlite)
        report("SQLite, one writer", local.lines, DurationText.seconds(ContinuousClock.now - start), local.counts)
        guard let postgres else { return }

        let one = try await AuditOpening.open(postgres)
        start = ContinuousClock.now
        let single = try await Self.ingest(logs[0], into: one)
        let singleSeconds = DurationText.seconds(ContinuousClock.now - start)
        report("PostgreSQL, one writer", single.lines, singleSeconds, single.counts)
        await one.close()

        var stores: [any AuditBackend] = []
        for _ in 0..<4 { stores.append(try await AuditOpening.open(postgres)) }
        start = ContinuousClock.now
        let results = try await withThrowingTaskGroup(of: (lines: Int, counts: Ingestor.Counts).self) { group in
            for (index, store) in stores.enumerated() {
                let log = logs[index + 1]
                group.addTask { try await Self.ingest(log, into: store) }
            }
            var all: [(lines: Int, counts: Ingestor.Counts)] = []
            for try await result in group { all.append(result) }
            return all
        }
        let fourSeconds = DurationText.seconds(ContinuousClock.now - start)
        var sum = Ingestor.Counts()
        for r in results {
            sum.newReceipts += r.counts.newReceipts
            sum.seenAgain += r.counts.seenAgain
            sum.skipped += r.counts.skipped
        }
        let total = results.map(\.lines).reduce(0, +)
        report("PostgreSQL, four writers together", total, fourSeconds, sum)
        print(String(format: "four writers / one writer: %.2f×", (Double(total) / fourSeconds) / (Double(single.lines) / singleSeconds)))
        for store in stores { await store.close() }
    }
}
