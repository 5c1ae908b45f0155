import Dispatch
import Foundation
import Synchronization
import UntrustedText

/// Holds SIGINT and SIGTERM while a write to Apple is in flight: from the moment its pending
/// row is committed until its outcome is recorded. A signal then does not kill the process
/// between the send and the record; it is said, the answer is waited for (at most `limit`),
/// recorded, and the process exits 128 + the signal afterwards. Past the limit the process
/// exits with the row still pending, which `history --actions` shows as unknown with the
/// command that repeats it safely.
final class WriteSignalGuard: Sendable {
    private struct State {
        var sources: [any DispatchSourceSignal] = []
        var received: Int32?
    }

    private let state = Mutex(State())
    private let limit: Duration

    init(limit: Duration) {
        self.limit = limit
    }

    /// Starts holding the signals.
    func hold() {
        state.withLock { s in
            guard s.sources.isEmpty else { return }
            for number in [SIGINT, SIGTERM] {
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
                source.setEventHandler { [self] in self.received(number) }
                source.resume()
                s.sources.append(source)
            }
        }
    }

    /// Stops holding them; the signal that came meanwhile, if one did.
    @discardableResult
    func release() -> Int32? {
        state.withLock { s in
            for source in s.sources { source.cancel() }
            if !s.sources.isEmpty {
                signal(SIGINT, SIG_DFL)
                signal(SIGTERM, SIG_DFL)
            }
            s.sources = []
            return s.received
        }
    }

    private func received(_ number: Int32) {
        let first = state.withLock { s -> Bool in
            defer { s.received = s.received ?? number }
            return s.received == nil && !s.sources.isEmpty
        }
        guard first else { return }
        let seconds = Int(limit.components.seconds)
        Standard.errorRaw(
            "receiptdash: \(number == SIGINT ? "interrupted" : "terminated"): the write is in flight; waiting up to \(seconds) s for Apple's answer to record it\n"
        )
        let limit = limit
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: Double(limit.components.seconds) + Double(limit.components.attoseconds) / 1e18)
            Standard.errorRaw(
                "receiptdash: no answer within \(seconds) s: the write stays pending (unknown) in the audit trail; `receiptdash history --actions` shows how to repeat it safely\n"
            )
            _exit(128 + number)
        }
    }
}
