import Foundation
@testable import ReceiptService
import ReceiptSimulator
import Testing

/// The ingest rate into each backend, one writer and four at once (as four hosts would): a
/// measurement, printed, never asserted. Opt in with `RECEIPTDASH_PG_BENCH=LINES` (PostgreSQL
/// from `RECEIPTDASH_TEST_POSTGRES_URL`).
@Suite(.serialized) struct PostgresIngestBenchTests {
    static let lines = Int(ProcessInfo.processInfo.environment["RECEIPTDASH_PG_BENCH"] ?? "") ?? 0

    /// `bench --ingest-lines`' log: one line in five holds a receipt, the rest is noise.
    static func log(lines: Int, offset: Int) -> [String] {
        (0..<lines).map { n in
            let i = n + offset
            switch i % 10 {
            case 0: return "2026-11-22T06:00:00Z INFO receipt=\(SyntheticReceipt.base64(i))"
            case 5: return "{\"receipt-data\": \"\(SyntheticReceipt.base64(i, environment: "ProductionSandbox"))\", \"exclude-old-transactions\": true}"
            case 7 where i % 20 == 7:
                return #"{"status": 0, "environment": "Sandbox", "receipt": {"bundle_id": "com.example.r\#(i)", "in_app": [{"transaction_id": "\#(i)", "product_id": "p", "purchase_date_ms": "1700000000000"}]}}"#
            default: return "2026-11-22T06:00:00Z INFO GET /api/items/\(i) 200 12ms user=\(i % 977)"
            }
        }
    }

    /// Lines per second, `writers` stores ingesting their logs (half of each overlapping the
    /// next one's) at once, 1,000 lines to a transaction as `watch` does.
    static func rate(_ db: TestAuditDatabase, writers: Int, lines: Int) async throws -> Double {
        var stores: [any AuditBackend] = []
        for _ in 0..<writers { stores.append(try await db.open()) }
        let logs = (0..<writers).map { log(lines: lines, offset: $0 * lines / 2) }
        let start = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (store, log) in zip(stores, logs) {
                group.addTask {
                    let ingestor = Ingestor(store: store)
                    for chunk in stride(from: 0, to: log.count, by: 1_000) {
                        _ = try await ingestor.ingest(lines: Array(log[chunk..<min(chunk + 1_000, log.count)]), kind: .watch, source: "app.log", at: Date())
                    }
                }
            }
            try await group.waitForAll()
        }
        let elapsed = ContinuousClock.now - start
        for store in stores { await store.close() }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return Double(writers * lines) / seconds
    }

    @Test(.enabled(if: lines > 0), .serialized, arguments: BackendKind.allCases) func ingestRate(_ kind: BackendKind) async throws {
        for writers in [1, 4] {
            let perSecond = try await TestAuditDatabase.with(kind) { db in try await Self.rate(db, writers: writers, lines: Self.lines) }
            print(String(format: "ingest into %@: %d writer%@ × %d lines: %.0f lines/s", kind.rawValue, writers, writers == 1 ? "" : "s", Self.lines, perSecond))
        }
    }
}
