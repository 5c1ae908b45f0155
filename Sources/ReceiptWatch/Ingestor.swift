import AuditTrail
import Foundation
import ReceiptCore
import Synchronization

/// Turns lines and files into recorded receipts: each line that holds a receipt (raw base64,
/// `{"receipt-data": …}`, a verifyReceipt response, a JWS…) is decoded and stored; other lines
/// are counted as skipped, never fatal.
public final class Ingestor: Sendable {
    public struct Counts: Sendable, Hashable {
        public var lines = 0
        public var files = 0
        public var newReceipts = 0
        public var seenAgain = 0
        public var skipped = 0

        public init() {}
    }

    public let store: any AuditBackend
    private let decoder = ReceiptDecoder()
    private let countsStorage = Mutex(Counts())

    public init(store: any AuditBackend) {
        self.store = store
    }

    public var counts: Counts { countsStorage.withLock { $0 } }

    /// Ingests lines (a log, stdin), 1,000 to a transaction. Returns the receipts recorded.
    public func ingest(lines: [String], kind: AuditSourceKind, source: String?, at time: Date) async throws -> [AuditRecorded] {
        var recorded: [AuditRecorded] = []
        var skipped = 0
        for chunk in stride(from: 0, to: lines.count, by: 1000).map({ lines[$0..<min($0 + 1000, lines.count)] }) {
            var batch: [AuditIngest] = []
            for line in chunk {
                guard let found = Self.receipt(inLine: line, decoder: decoder) else {
                    skipped += 1
                    continue
                }
                batch.append(AuditIngest(decoded: found.decoded, bytes: found.bytes, kind: kind, source: source, seenAt: time))
            }
            if !batch.isEmpty { recorded += try await store.record(batch) }
        }
        update(lines: lines.count, files: 0, recorded: recorded, skipped: skipped)
        return recorded
    }

    /// The receipt a log line holds, decoded, or nil for a line that holds none (too short
    /// to be one, or not decodable): the rule `watch` and the dashboard's `--watch` share.
    public static func receipt(inLine line: String, decoder: ReceiptDecoder) -> (bytes: [UInt8], decoded: DecodedInput)? {
        let bytes = Array(line.trimmingCharacters(in: .whitespaces).utf8)
        guard bytes.count >= 20, let decoded = try? decoder.decode(bytes) else { return nil }
        return (bytes, decoded)
    }

    /// Ingests whole files (a watched folder, command-line inputs).
    public func ingest(files: [(path: String, bytes: [UInt8])], kind: AuditSourceKind, at time: Date) async throws -> [AuditRecorded] {
        var batch: [AuditIngest] = []
        var skipped = 0
        for file in files {
            guard let decoded = try? decoder.decode(file.bytes) else {
                skipped += 1
                continue
            }
            batch.append(AuditIngest(decoded: decoded, bytes: file.bytes, kind: kind, source: file.path, seenAt: time))
        }
        let recorded = batch.isEmpty ? [] : try await store.record(batch)
        update(lines: 0, files: files.count, recorded: recorded, skipped: skipped)
        return recorded
    }

    private func update(lines: Int, files: Int, recorded: [AuditRecorded], skipped: Int) {
        countsStorage.withLock { c in
            c.lines += lines
            c.files += files
            c.newReceipts += recorded.filter(\.isNew).count
            c.seenAgain += recorded.filter { !$0.isNew }.count
            c.skipped += skipped
        }
    }
}
