import Dashboard
import Foundation
import ReceiptCore
import ReceiptService

/// The dashboard's `--watch` sources: new files in folders and receipt-bearing lines of
/// followed log files (other lines are skipped, as `watch` skips them).
final class WatchFeed: InputFeed, @unchecked Sendable {
    private let sources: WatchedSources
    private let decoder = ReceiptDecoder()
    private let lock = NSLock()

    init(sources: [String], fromEnd: Bool) {
        self.sources = WatchedSources(sources, logsFromStart: !fromEnd)
    }

    func poll() -> [(source: String, bytes: [UInt8])] {
        lock.lock()
        defer { lock.unlock() }
        var out: [(source: String, bytes: [UInt8])] = []
        for folder in sources.folders {
            for path in folder.poll() {
                if let data = FileManager.default.contents(atPath: path) { out.append((path, [UInt8](data))) }
            }
        }
        for log in sources.logs {
            for line in log.poll() {
                if let found = Ingestor.receipt(inLine: line, decoder: decoder) { out.append((log.path, found.bytes)) }
            }
        }
        return out
    }
}
