import Foundation

/// What one wait for terminal input saw.
public enum InputWait: Sendable, Hashable {
    /// The time ran out.
    case timedOut
    /// A signal interrupted the wait (a resize, or the signal pipe woke it): look again.
    case interrupted
    /// The terminal says it has input.
    case readable
    /// The terminal hung up or its descriptor failed (POLLHUP, POLLERR, POLLNVAL).
    case hungUp
}

/// A terminal's raw input as the screen library gives it: reads that never wait, a wait on
/// the terminal and the signal pipe together, and the signals that end the session.
public protocol RawTerminalInput: AnyObject {
    /// A code point (or, with `isKey`, a key code such as a resize) that the library holds or
    /// reads without waiting; nil when nothing was read: no input, end of input, or a failed
    /// read (the library does not say which).
    func readAvailable() -> (code: UInt32, isKey: Bool)?
    /// Waits up to `milliseconds` (-1: without limit) for input or a signal.
    func wait(milliseconds: Int) -> InputWait
    /// SIGINT, SIGTERM or SIGHUP, once one arrived.
    func pendingSignal() -> Int32?
    /// The event of a key code (arrows, function keys, resize); nil for codes the UI ignores.
    func keyEvent(for code: UInt32) -> KeyEvent?
    /// A monotonic clock, in milliseconds.
    func monotonicMilliseconds() -> Int
    /// Whether the process group is in the background of its terminal (another group owns it):
    /// reading would stop the process (SIGTTIN) or fail (EIO) instead of getting keys.
    func isInBackground() -> Bool
    /// Stops the process group as a read from the background does (SIGTTIN), returning once it
    /// is continued (`fg`, `bg`, a SIGCONT); at once when the group is orphaned (nothing may
    /// continue it, so the system does not stop it).
    func stopUntilContinued()
}

/// Turns a terminal's raw input into key events (escape sequences, bracketed paste) and
/// decides when the session is over: a signal, or a terminal that is gone.
///
/// Owned by one UI loop (not thread-safe, like the screen library under it).
public final class TerminalKeyReader {
    /// Reads in a row that find nothing although the terminal said it had input: the terminal
    /// is gone (end of input, or a read that fails each time).
    public static let emptyReadLimit = 16

    /// The signal (SIGINT, SIGTERM, SIGHUP) that ended the session, if one did:
    /// ``readEvent(timeoutMilliseconds:)`` then returns nil and the caller exits with 128 + it.
    public private(set) var interruption: Int32?
    /// Set once input can no longer arrive (the terminal hung up, or reads keep finding nothing);
    /// ``interruption`` is then SIGHUP, as if the terminal had sent it (exit status 129).
    public private(set) var inputEnded = false

    private unowned let input: any RawTerminalInput
    /// Codes read ahead (while looking for an escape sequence) and not used yet; `true` marks
    /// a key code (e.g. a resize), which must not be lost.
    private var pushedBack: [(UInt32, Bool)] = []
    /// Reads in a row that found nothing after the wait said there was input.
    private var emptyReads = 0

    /// - Parameter input: kept unowned: its owner (the backend) keeps both.
    public init(input: any RawTerminalInput) {
        self.input = input
    }

    /// The next key, paste or resize; ``KeyEvent/tick`` when a timeout ran out; nil once a
    /// signal arrived (``interruption``) or the terminal is gone.
    public func readEvent(timeoutMilliseconds: Int?) -> KeyEvent? {
        while true {
            guard let (code, isKey) = nextCode(timeout: timeoutMilliseconds ?? -1) else {
                if interruption != nil || inputEnded { return nil }
                return timeoutMilliseconds == nil ? nil : .tick
            }
            if isKey {
                if let event = input.keyEvent(for: code) { return event }
                continue
            }
            switch code {
            case 0x1B:
                return EscapeSequenceParser.parse(
                    next: { [unowned self] ms in
                        guard let (c, key) = self.nextCode(timeout: ms) else { return nil }
                        if key {
                            self.pushedBack.append((c, true))
                            return nil
                        }
                        return c
                    },
                    pushBack: { [unowned self] codes in self.pushedBack.insert(contentsOf: codes.map { ($0, false) }, at: 0) })
            case 0x0D, 0x0A: return .enter
            case 0x09: return .tab
            case 0x7F, 0x08: return .backspace
            case 0x01...0x1A: return .control(Character(Unicode.Scalar(code + 0x60)!))
            default:
                guard let scalar = Unicode.Scalar(code) else { continue }
                return .character(Character(scalar))
            }
        }
    }

    /// The next code point or key code; `milliseconds` -1 blocks (no CPU while idle). Nil when
    /// the time ran out, a signal arrived (``interruption``) or input ended.
    ///
    /// The terminal is gone when the wait says it hung up (Linux reports POLLHUP together with
    /// POLLIN for a pty whose master closed), or when ``emptyReadLimit`` reads in a row find
    /// nothing although the wait said there was input: end of input (read gives 0 bytes) or a
    /// read that fails each time (EIO in an orphaned background process group). Either ends the
    /// session as SIGHUP does; polling a dead terminal would spin at 100% CPU.
    func nextCode(timeout milliseconds: Int) -> (UInt32, Bool)? {
        if !pushedBack.isEmpty { return pushedBack.removeFirst() }
        if interruption != nil { return nil }
        let start = milliseconds >= 0 ? input.monotonicMilliseconds() : 0
        /// What is left of `milliseconds` (-1: no limit).
        func remaining() -> Int { milliseconds < 0 ? -1 : max(0, milliseconds - (input.monotonicMilliseconds() - start)) }
        var saidReadable = false
        var stoppedInBackground = false
        while true {
            if let signal = input.pendingSignal() {
                interruption = signal
                return nil
            }
            if input.isInBackground() {
                // Keys typed here are not ours: never read them (the kernel would fail the read
                // with EIO, or stop the process again after every SIGCONT, signals unhandled).
                // Wait; when a key comes, stop as a background read does, and read once in the
                // foreground. Continued still in the background (`bg`, a signal's SIGCONT, an
                // orphaned group), the dashboard can never have its terminal: end.
                if stoppedInBackground || inputEnded {
                    inputEnded = true
                    interruption = input.pendingSignal() ?? SIGHUP
                    return nil
                }
                switch input.wait(milliseconds: remaining()) {
                case .timedOut: return nil
                case .interrupted: continue
                case .hungUp: inputEnded = true
                case .readable:
                    stoppedInBackground = true
                    input.stopUntilContinued()
                }
                continue
            }
            stoppedInBackground = false
            // Whatever the library holds (read ahead, or a resize it was told of) comes first.
            if let read = input.readAvailable() {
                emptyReads = 0
                return (read.code, read.isKey)
            }
            if saidReadable {
                // Once can be half of a multi-byte character; again and again is a dead terminal.
                emptyReads += 1
                if emptyReads >= Self.emptyReadLimit { inputEnded = true }
            }
            if inputEnded {
                interruption = SIGHUP
                return nil
            }
            saidReadable = false
            switch input.wait(milliseconds: remaining()) {
            case .timedOut: return nil
            case .interrupted: continue
            case .readable: saidReadable = true
            case .hungUp: inputEnded = true  // one last look at what the library holds
            }
        }
    }
}
