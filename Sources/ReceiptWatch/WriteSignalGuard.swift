import CWriteSignals

/// Holds SIGINT and SIGTERM while a write to Apple is in flight: from the moment its pending
/// row is committed until its outcome is recorded. A signal then does not kill the process
/// between the send and the record; it is said, the answer is waited for (at most `limit`),
/// recorded, and the process exits 128 + the signal afterwards. Past the limit the process
/// exits with the row still pending, which `history --actions` shows as unknown with the
/// command that repeats it safely. The handler is a plain sigaction one (CWriteSignals): a
/// signal goes to whichever thread the kernel picks, and every thread must take it.
public struct WriteSignalGuard: Sendable {
    public let seconds: Int

    public init(seconds: Int) {
        self.seconds = seconds
    }

    /// Starts holding the signals.
    public func hold() {
        _ = rd_hold_write_signals(
            Int32(seconds),
            "receiptdash: the write is in flight; waiting up to \(seconds) s for Apple's answer to record it\n",
            "receiptdash: no answer within \(seconds) s: the write stays pending (unknown) in the audit trail; `receiptdash history --actions` shows how to repeat it safely\n"
        )
    }

    /// Stops holding them; the signal that came meanwhile, if one did.
    public func release() -> Int32? {
        let signal = rd_release_write_signals()
        return signal == 0 ? nil : signal
    }
}
