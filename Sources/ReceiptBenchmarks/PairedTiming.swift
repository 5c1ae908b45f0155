import Foundation

/// Two ways to the same answer timed in turns, run after run, so both see the machine's drift
/// alike (`bench --customer-db`: the whole `customer --offline` path beside a bare indexed
/// SELECT of the same rows).
public struct PairedTiming: Sendable {
    /// Milliseconds per run.
    public var measured: [Double] = []
    public var floor: [Double] = []

    /// Runs each `runs` times in turns, after `warmup` unmeasured turns.
    public static func measure(
        runs: Int, warmup: Int = 10, _ measured: () async throws -> Void, floor: () async throws -> Void
    ) async throws -> PairedTiming {
        for _ in 0..<warmup {
            try await measured()
            try await floor()
        }
        var timing = PairedTiming()
        let clock = ContinuousClock()
        for _ in 0..<runs {
            timing.measured.append(milliseconds(try await clock.measure(measured)))
            timing.floor.append(milliseconds(try await clock.measure(floor)))
        }
        return timing
    }

    static func milliseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
    }

    /// The value below which `share` (0...1) of the runs fall (nearest rank).
    public static func percentile(_ values: [Double], _ share: Double) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        let rank = Int((share * Double(sorted.count)).rounded(.up)) - 1
        return sorted[min(max(rank, 0), sorted.count - 1)]
    }

    /// "p50 … ms, p95 … ms; bare SELECT p50 … ms, p95 … ms; ratio p50 …×, p95 …×".
    public var summary: String {
        let (m50, m95) = (Self.percentile(measured, 0.5), Self.percentile(measured, 0.95))
        let (f50, f95) = (Self.percentile(floor, 0.5), Self.percentile(floor, 0.95))
        func ms(_ value: Double) -> String { String(format: "%.2f ms", value) }
        func ratio(_ a: Double, _ b: Double) -> String { b > 0 ? String(format: "%.1f×", a / b) : "?" }
        return "p50 \(ms(m50)), p95 \(ms(m95)); bare SELECT p50 \(ms(f50)), p95 \(ms(f95)); ratio p50 \(ratio(m50, f50)), p95 \(ratio(m95, f95))"
    }
}
