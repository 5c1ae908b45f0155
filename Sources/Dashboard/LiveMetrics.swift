import Foundation
import AppStoreAPI
import ReceiptCore

/// Live validation metrics for the on-call view: throughput per second over the last minutes,
/// latency percentiles, the status mix, retries, the environment split, and an outage signal
/// when temporary failures pass a threshold over a sliding window.
public struct LiveMetrics: Sendable {
    /// Seconds of throughput history kept (one bucket a second).
    public static let window = 180
    /// The outage window and threshold: at least this share of answers in the last
    /// `outageWindow` seconds were temporary failures (and at least `outageMinimum` answers).
    public static let outageWindow: Double = 60
    public static let outageShare = 0.3
    public static let outageMinimum = 5

    private(set) var buckets: [Int: Int] = [:]  // epoch second → answers
    private var latencies: [Double] = []  // most recent, bounded
    private var recent: [(time: Double, temporary: Bool)] = []
    public private(set) var statusCounts: [Int: Int] = [:]
    public private(set) var environments: [String: Int] = [:]
    public private(set) var retries = 0
    public private(set) var failures = 0
    public private(set) var answered = 0
    /// When the current outage began, if one is going on.
    public private(set) var outageSince: Date?

    public init() {}

    // What counts as a temporary failure (an outage sign) is the core's retryability table:
    // `AttemptResult.isTemporaryFailure` and `VerificationFailure.isTemporaryFailure`. A TLS
    // failure or a cancellation is not Apple's outage.

    public mutating func record(_ event: OnlineEvent, at time: Date) {
        let t = time.timeIntervalSince1970
        switch event {
        case .retrying(_, _, let reason):
            retries += 1
            note(t, temporary: reason.result.isTemporaryFailure)
        case .done(_, let status, let environment, let attempts, _):
            answered += 1
            buckets[Int(t), default: 0] += 1
            statusCounts[status, default: 0] += 1
            if let environment { environments[environment, default: 0] += 1 }
            for a in attempts { latencies.append(a.latencyMilliseconds) }
            if latencies.count > 8_000 { latencies.removeFirst(latencies.count - 4_000) }
            note(t, temporary: AttemptResult.apple(status: status, isRetryable: attempts.last?.isRetryable).isTemporaryFailure)
        case .failed(_, let failure, _):
            failures += 1
            buckets[Int(t), default: 0] += 1
            note(t, temporary: failure.isTemporaryFailure)
        default:
            break
        }
        let oldest = Int(t) - Self.window
        if buckets.count > Self.window * 2 { buckets = buckets.filter { $0.key > oldest } }
    }

    private mutating func note(_ t: Double, temporary: Bool) {
        recent.append((t, temporary))
        let start = t - Self.outageWindow
        if let first = recent.firstIndex(where: { $0.time >= start }), first > 0 { recent.removeFirst(first) }
        let temporaryCount = recent.filter(\.temporary).count
        let outage = recent.count >= Self.outageMinimum && Double(temporaryCount) / Double(recent.count) >= Self.outageShare
        if outage, outageSince == nil {
            outageSince = Date(timeIntervalSince1970: recent.first { $0.temporary }?.time ?? t)
        } else if !outage {
            outageSince = nil
        }
    }

    /// Retries seen by another process (a follower counts them from the recorded attempts:
    /// every attempt after the first that was not a 21007/21008 hop).
    public mutating func recordRetries(in attempts: [OnlineAttempt]) {
        let hops = attempts.filter(\.isEnvironmentHop).count
        retries += max(0, attempts.count - 1 - hops)
    }

    /// Temporary failures and answers in the outage window.
    public var outageWindowCounts: (temporary: Int, total: Int) {
        (recent.filter(\.temporary).count, recent.count)
    }

    /// Answers per second for the last `seconds` seconds before `now`, oldest first.
    public func throughput(endingAt now: Date, seconds: Int) -> [Int] {
        let end = Int(now.timeIntervalSince1970)
        return (0..<seconds).map { buckets[end - seconds + 1 + $0] ?? 0 }
    }

    /// The p-th latency percentile in milliseconds (nearest rank), or nil with no data.
    public func latencyPercentile(_ p: Double) -> Double? {
        latencyPercentiles([p])?[0]
    }

    /// Several latency percentiles from one sort of the samples, or nil with no data.
    public func latencyPercentiles(_ ps: [Double]) -> [Double]? {
        guard !latencies.isEmpty else { return nil }
        let sorted = latencies.sorted()
        return ps.map { p in
            let rank = Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1
            return sorted[min(max(rank, 0), sorted.count - 1)]
        }
    }

    /// Eight-level bars for a series.
    public static func sparkline(_ values: [Int]) -> String {
        let levels = Array("▁▂▃▄▅▆▇█")
        let top = max(1, values.max() ?? 1)
        return String(values.map { $0 == 0 ? " " : levels[min(7, ($0 * 8 - 1) / top)] })
    }
}
