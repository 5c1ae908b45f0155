import CNcurses
import CWindowSignal
import Foundation
import TerminalUI

/// The one ncurses backend: sets the terminal up and restores it, flushes only changed cells,
/// reads keys (with bracketed paste and resize), and maps theme roles to colour pairs.
///
/// ncurses is not thread-safe: one UI loop owns this object.
public final class NcursesTerminal: TerminalBackend {
    private var previous: ScreenBuffer?
    private var theme: Theme
    private var colors = 0
    private var pairs: [PairKey: Int16] = [:]
    private var active = false
    private let input = NcursesInput()
    private let reader: TerminalKeyReader

    /// The signal (SIGINT, SIGTERM, SIGHUP) that ended the session, if one did: ``readEvent(timeoutMilliseconds:)``
    /// then returns nil, the loop ends, and after ``shutdown()`` the caller exits with 128 + its number.
    public var interruption: Int32? { reader.interruption }

    private struct PairKey: Hashable {
        var fg: Int
        var bg: Int
    }

    /// Starts curses mode. Call ``shutdown()`` before exiting (also on errors).
    public init(theme: Theme) {
        self.theme = theme
        reader = TerminalKeyReader(input: input)
        if setlocale(LC_ALL, "") == nil || !String(cString: setlocale(LC_CTYPE, nil)).lowercased().contains("utf") {
            setlocale(LC_ALL, "C.UTF-8")
        }
        if isatty(STDIN_FILENO) == 0, let tty = fopen("/dev/tty", "r+") {
            // Standard input was a pipe (receipts read from `-`): take keys from the terminal.
            input.inputDescriptor = fileno(tty)
            rd_interrupt_prepare(input.inputDescriptor)
            _ = set_term(newterm(nil, fdopen(STDOUT_FILENO, "w"), tty))
        } else {
            rd_interrupt_prepare(STDIN_FILENO)
            _ = initscr()
        }
        active = true
        _ = cbreak()
        _ = noecho()
        _ = nonl()
        _ = keypad(rd_stdscr(), true)
        rd_set_escdelay(25)
        _ = curs_set(0)
        if !theme.isMono, has_colors() {
            _ = start_color()
            _ = use_default_colors()
            colors = Int(rd_colors())
        }
        // Resize signals must wake this thread, the one blocked reading keys (CWindowSignal).
        rd_forward_window_signal_to_this_thread()
        // Read from a background process group: stop (SIGTTIN) rather than fail at once, again and again.
        rd_allow_background_stop_on_this_thread()
        // Ctrl-C (cbreak keeps it a signal), SIGTERM and SIGHUP wake the key wait below, so the
        // terminal is restored here, on this thread, before the process exits.
        input.wakeDescriptor = rd_interrupt_install(STDOUT_FILENO, Self.restoreSequence())
        // Bracketed paste: the terminal wraps pasted text in ESC [200~ … ESC [201~.
        sendRaw("\u{1B}[?2004h")
    }

    /// What puts the terminal back if the UI thread cannot: bracketed paste off, attributes
    /// reset, keypad mode off, the alternate screen left, the cursor shown.
    private static func restoreSequence() -> String {
        let capabilities: [String] = ["sgr0", "rmkx", "rmcup", "cnorm"]
        return "\u{1B}[?2004l" + capabilities.map { (name: String) in String(cString: rd_capability(name)) }.joined()
    }

    /// Restores the terminal: bracketed paste off, then `endwin` (alternate screen left, cursor
    /// shown, terminal modes back). Safe to call more than once.
    public func shutdown() {
        guard active else { return }
        sendRaw("\u{1B}[?2004l")
        _ = endwin()
        rd_interrupt_uninstall()
        active = false
    }

    deinit { shutdown() }

    public var size: (width: Int, height: Int) { (Int(rd_cols()), Int(rd_lines())) }

    public func draw(_ buffer: ScreenBuffer) {
        let full = previous.map { $0.width != buffer.width || $0.height != buffer.height } ?? true
        if full { _ = clearok(rd_stdscr(), true) }
        for y in 0..<buffer.height {
            for x in 0..<buffer.width {
                let cell = buffer[x, y]
                if cell.width == 0 { continue }
                if !full, let previous, previous[x, y] == cell { continue }
                put(cell, x: x, y: y)
            }
        }
        previous = buffer
        _ = refresh()
    }

    private func put(_ cell: Cell, x: Int, y: Int) {
        let (attributes, pair) = attributes(for: cell.style)
        var wide = Self.drawnScalars(cell.character)
        wide.append(0)
        _ = wide.withUnsafeBufferPointer { pointer in
            rd_put_cell(Int32(y), Int32(x), pointer.baseAddress, attributes, pair)
        }
    }

    /// The scalars of a cell as ncurses will keep them: the base, then up to three non-spacing
    /// marks (setcchar drops everything from the next spacing character on, and refuses a
    /// cell whose non-printable base has marks). U+FE0F is left out: ncurses and our layout give
    /// e.g. ❤️ the base's one column, and without the selector no terminal draws it two wide.
    static func drawnScalars(_ character: Character) -> [wchar_t] {
        var wide: [wchar_t] = []
        for scalar in character.unicodeScalars {
            let c = wchar_t(bitPattern: scalar.value)
            if wide.isEmpty {
                wide.append(c)
                if rd_wcwidth(c) < 0 { break }
                continue
            }
            if wide.count == 4 || rd_wcwidth(c) != 0 { break }
            if scalar.value != 0xFE0F { wide.append(c) }
        }
        return wide
    }

    private func attributes(for style: Style) -> (attr_t, Int16) {
        let role = theme.style(style.role)
        var attrs = rd_a_normal()
        if role.bold || style.bold { attrs |= rd_a_bold() }
        if role.dim { attrs |= rd_a_dim() }
        if role.reverse || style.reverse { attrs |= rd_a_reverse() }
        if role.underline || style.underline { attrs |= rd_a_underline() }
        guard colors > 0 else { return (attrs, 0) }
        let fg = role.foreground.degraded(to: colors) ?? -1
        let bg = role.background.degraded(to: colors) ?? -1
        if fg == -1 && bg == -1 { return (attrs, 0) }
        let key = PairKey(fg: fg, bg: bg)
        if let pair = pairs[key] { return (attrs, pair) }
        let next = Int16(pairs.count + 1)
        guard Int(next) < Int(rd_color_pairs()) else { return (attrs, 0) }
        _ = init_pair(next, Int16(fg), Int16(bg))
        pairs[key] = next
        return (attrs, next)
    }

    /// Written with `write(2)`, whose failure is ignored: a terminal that hung up (EIO) must
    /// not crash the restore on the way out (FileHandle's `write(_:)` traps on any error).
    public func sendRaw(_ sequence: String) {
        let bytes = Array(sequence.utf8)
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress! + done, $0.count - done) }
            if n > 0 {
                done += n
            } else if n < 0, errno == EINTR {
                continue
            } else {
                return
            }
        }
    }

    /// Also returns nil once a signal (see ``interruption``) arrived or the terminal is gone,
    /// so the loop ends and the caller can restore the terminal.
    public func readEvent(timeoutMilliseconds: Int?) -> KeyEvent? {
        reader.readEvent(timeoutMilliseconds: timeoutMilliseconds)
    }
}

/// The terminal's raw input through ncurses: `wget_wch` without waiting, and `poll` on the
/// terminal and the signal pipe together, so a signal that arrives at any moment (not only
/// during a read) ends the wait; ncurses then reads what is there.
final class NcursesInput: RawTerminalInput {
    /// The terminal's input descriptor (standard input, or /dev/tty when that was a pipe).
    var inputDescriptor: Int32 = STDIN_FILENO
    /// Readable once SIGINT, SIGTERM or SIGHUP arrived (CWindowSignal); -1 when not handled.
    var wakeDescriptor: Int32 = -1

    func readAvailable() -> (code: UInt32, isKey: Bool)? {
        CNcurses.timeout(0)
        var wide: wint_t = 0
        let result = wget_wch(rd_stdscr(), &wide)
        return result == ERR ? nil : (UInt32(wide), result == KEY_CODE_YES)
    }

    func wait(milliseconds: Int) -> InputWait {
        var fds = [
            pollfd(fd: inputDescriptor, events: Int16(POLLIN), revents: 0),
            pollfd(fd: wakeDescriptor, events: Int16(POLLIN), revents: 0),
        ]
        let ready = poll(&fds, wakeDescriptor >= 0 ? 2 : 1, Int32(clamping: milliseconds))
        if ready == 0 { return .timedOut }
        if ready < 0 { return .interrupted }  // EINTR: a resize or a signal; look again
        if fds[1].revents != 0 { rd_interrupt_drain() }
        // A pty whose other side closed says POLLIN and POLLHUP together: it is gone all the same.
        if fds[0].revents & Int16(POLLHUP | POLLERR | POLLNVAL) != 0 { return .hungUp }
        return fds[0].revents & Int16(POLLIN) != 0 ? .readable : .interrupted
    }

    func pendingSignal() -> Int32? {
        let signal = rd_interrupt_signal()
        return signal == 0 ? nil : signal
    }

    func monotonicMilliseconds() -> Int {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return now.tv_sec * 1000 + now.tv_nsec / 1_000_000
    }

    func isInBackground() -> Bool {
        let foreground = tcgetpgrp(inputDescriptor)
        return foreground > 0 && foreground != getpgrp()
    }

    func stopUntilContinued() {
        _ = kill(0, SIGTTIN)
    }

    func keyEvent(for code: UInt32) -> KeyEvent? {
        let c = Int32(code)
        switch c {
        case KEY_UP: return .up
        case KEY_DOWN: return .down
        case KEY_LEFT: return .left
        case KEY_RIGHT: return .right
        case KEY_PPAGE: return .pageUp
        case KEY_NPAGE: return .pageDown
        case KEY_HOME: return .home
        case KEY_END: return .end
        case KEY_BTAB: return .backTab
        case KEY_BACKSPACE: return .backspace
        case KEY_DC: return .delete
        case KEY_ENTER: return .enter
        case rd_key_resize():
            let (w, h) = (Int(rd_cols()), Int(rd_lines()))
            return .resize(width: w, height: h)
        default:
            for n in 1...12 where c == rd_key_f(Int32(n)) { return .function(n) }
            return nil
        }
    }
}
