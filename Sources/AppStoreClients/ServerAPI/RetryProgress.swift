import Synchronization
import UntrustedText

/// How a command says the App Store Server API's retries while it waits: verbose, a line per
/// wait (`--verbose`); on a terminal, one line that each wait rewrites in place (a carriage
/// return) and ``finish()`` clears; elsewhere nothing per attempt (the outcome says how many
/// attempts were made). One path for `lookup`, `customer`, the writes and reconciliation.
public final class RetryProgress: Sendable {
    private let console: Console
    private let verbose: Bool
    /// The width of the line shown in place, to clear it.
    private let shown = Mutex(0)

    public init(console: Console, verbose: Bool) {
        self.console = console
        self.verbose = verbose
    }

    /// Says `event` when it is a wait.
    public func event(_ event: APIClientEvent) {
        guard let waiting = event.waitingLine else { return }
        let line = "receiptdash: \(waiting)"
        if verbose {
            console.error(line)
        } else if console.errorIsTerminal {
            let text = SafeText.escaped(line)
            shown.withLock { width in
                let pad = String(repeating: " ", count: max(0, width - text.count))
                console.errorRaw("\r" + text + pad)
                width = text.count
            }
        }
    }

    /// Clears the line shown in place, if any, so what follows starts on a line of its own.
    public func finish() {
        shown.withLock { width in
            guard width > 0 else { return }
            console.errorRaw("\r" + String(repeating: " ", count: width) + "\r")
            width = 0
        }
    }
}
