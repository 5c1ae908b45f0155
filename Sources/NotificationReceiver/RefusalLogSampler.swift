import Foundation
import Synchronization

/// Which refusals get a log line, sampled as refusal rows are: the first refusal of a class
/// from an address in a minute is logged in full; the others of that class, address and minute
/// are only counted, and said in one summary line (`suppressed=N`) once a request of a later
/// minute comes. A flood of junk from one address is then two log lines a minute per class,
/// not one per request (every refusal is still counted on `/metrics`).
///
/// At most ``maximumKeysPerMinute`` class-and-address pairs are kept a minute; past it,
/// refusals count under the address `*` (as the store's rows do).
final class RefusalLogSampler: Sendable {
    /// Refusals of a class from an address in a minute that had no line of their own.
    struct Summary: Sendable, Hashable {
        var kind: String
        var host: String
        /// Minutes since 1970 (UTC).
        var minute: Int
        var suppressed: Int
    }

    /// The most class-and-address pairs a minute; past it refusals count under address `*`.
    static let maximumKeysPerMinute = 1_000

    private struct Key: Hashable {
        var kind: String
        var host: String
    }

    private struct State {
        /// The minute being sampled.
        var minute = Int.min
        /// Its pairs, each with the refusals not logged, in the order first seen.
        var suppressed: [Key: Int] = [:]
        var order: [Key] = []
    }

    private let state = Mutex(State())

    /// Whether a refusal of `kind` from `host` at `at` gets a line of its own, and the
    /// summaries of earlier minutes now due (to be logged first).
    func admit(kind: String, host: String, at: Date) -> (log: Bool, due: [Summary]) {
        let minute = Self.minute(of: at)
        return state.withLock { s in
            let due = Self.roll(&s, to: minute)
            var key = Key(kind: kind, host: host)
            if s.suppressed[key] == nil && s.suppressed.count >= Self.maximumKeysPerMinute { key.host = "*" }
            if let count = s.suppressed[key] {
                s.suppressed[key] = count + 1
                return (false, due)
            }
            s.suppressed[key] = 0
            s.order.append(key)
            return (true, due)
        }
    }

    /// The summaries of minutes before `at`'s now due (any request of a later minute closes them).
    func due(at: Date) -> [Summary] {
        let minute = Self.minute(of: at)
        return state.withLock { s in s.minute >= minute ? [] : Self.roll(&s, to: minute) }
    }

    /// Starts `minute` when it is a later one, returning the summaries of the one it ends.
    private static func roll(_ s: inout State, to minute: Int) -> [Summary] {
        guard minute > s.minute else { return [] }
        let ended = s.minute
        let summaries = s.order.compactMap { key -> Summary? in
            guard let count = s.suppressed[key], count > 0 else { return nil }
            return Summary(kind: key.kind, host: key.host, minute: ended, suppressed: count)
        }
        s = State(minute: minute)
        return summaries
    }

    static func minute(of date: Date) -> Int {
        Int((date.timeIntervalSince1970 / 60).rounded(.down))
    }
}
