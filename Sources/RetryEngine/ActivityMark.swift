import Foundation
import Synchronization

/// When a busy part of the process last worked (the receiver's store, at each notification or
/// refusal it takes), for background work that waits for a quiet moment (the consumption
/// answerer): the part marks, the background work reads.
public final class ActivityMark: Sendable {
    private let last = Mutex<Date?>(nil)

    public init() {}

    /// Work happened at `date`.
    public func mark(_ date: Date) {
        last.withLock { last in
            if last.map({ $0 < date }) ?? true { last = date }
        }
    }

    /// The last work marked; nil when none was.
    public var lastActive: Date? { last.withLock { $0 } }

    /// Whether nothing was marked in the `seconds` before `now`.
    public func isQuiet(for seconds: TimeInterval, at now: Date) -> Bool {
        guard let last = lastActive else { return true }
        return now.timeIntervalSince(last) >= seconds
    }
}
