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
    /// Codes read ahead (while looking for an escape sequence) and not used yet; `true` marks
    /// a key code (e.g. KEY_RESIZE), which must not be lost.
    private var pushedBack: [(UInt32, Bool)] = []
    private var active = false

    private struct PairKey: Hashable {
        var fg: Int
        var bg: Int
    }

    /// Starts curses mode. Call ``shutdown()`` before exiting (also on errors).
    public init(theme: Theme) {
        self.theme = theme
        if setlocale(LC_ALL, "") == nil || !String(cString: setlocale(LC_CTYPE, nil)).lowercased().contains("utf") {
            setlocale(LC_ALL, "C.UTF-8")
        }
        if isatty(STDIN_FILENO) == 0, let tty = fopen("/dev/tty", "r+") {
            // Standard input was a pipe (receipts read from `-`): take keys from the terminal.
            _ = set_term(newterm(nil, fdopen(STDOUT_FILENO, "w"), tty))
        } else {
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
        // Bracketed paste: the terminal wraps pasted text in ESC [200~ … ESC [201~.
        sendRaw("\u{1B}[?2004h")
    }

    /// Restores the terminal.
    public func shutdown() {
        guard active else { return }
        sendRaw("\u{1B}[?2004l")
        _ = endwin()
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
        var wide: [wchar_t] = cell.character.unicodeScalars.prefix(4).map { wchar_t(bitPattern: $0.value) }
        wide.append(0)
        _ = wide.withUnsafeBufferPointer { pointer in
            rd_put_cell(Int32(y), Int32(x), pointer.baseAddress, attributes, pair)
        }
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

    public func sendRaw(_ sequence: String) {
        FileHandle.standardOutput.write(Data(sequence.utf8))
    }

    public func readEvent(timeoutMilliseconds: Int?) -> KeyEvent? {
        while true {
            guard let (code, isKey) = nextCode(timeout: timeoutMilliseconds ?? -1) else {
                return timeoutMilliseconds == nil ? nil : .tick
            }
            if isKey {
                if let event = mapKey(code) { return event }
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

    /// The next code point or key code; `timeout` in ms, -1 blocks (no polling while idle).
    private func nextCode(timeout milliseconds: Int) -> (UInt32, Bool)? {
        if !pushedBack.isEmpty { return pushedBack.removeFirst() }
        CNcurses.timeout(Int32(milliseconds))
        var wide: wint_t = 0
        let result = wget_wch(rd_stdscr(), &wide)
        if result == ERR { return nil }
        return (UInt32(wide), result == KEY_CODE_YES)
    }

    private func mapKey(_ code: UInt32) -> KeyEvent? {
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
            let (w, h) = size
            return .resize(width: w, height: h)
        default:
            for n in 1...12 where c == rd_key_f(Int32(n)) { return .function(n) }
            return nil
        }
    }
}
