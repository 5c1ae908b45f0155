import Dashboard
import Foundation
import LocalFiles
import ReceiptCore
import ReceiptWatch

/// The dashboard's `--watch` sources: new files in folders and receipt-bearing lines of
/// followed log files (other lines are skipped, as `watch` skips them). The watchers keep their
/// own positions behind locks, so the feed itself holds no mutable state.
public final class WatchFeed: InputFeed, Sendable {
    private let sources: WatchedSources
    private let decoder = ReceiptDecoder()

    public init(sources: [String], fromEnd: Bool) {
        self.sources = WatchedSources(sources, logsFromStart: !fromEnd)
    }

    public func poll() -> [LoadedInput] {
        var out: [LoadedInput] = []
        for folder in sources.folders {
            for path in folder.poll() {
                // Read no more than the decoder takes: a huge file dropped in is an error, not a stall.
                out.append(LoadedInput(source: path, result: InputFiles.readFile(path, limit: decoder.limits.maximumInputBytes)))
            }
        }
        for log in sources.logs {
            for line in log.poll() {
                if let found = Ingestor.receipt(inLine: line, decoder: decoder) {
                    out.append(LoadedInput(source: log.path, result: .success(found.bytes)))
                }
            }
        }
        return out
    }
}
