import Foundation

/// What the UI needs from a terminal. The ncurses backend implements it; tests use a
/// recording one.
public protocol TerminalBackend: AnyObject {
    /// Columns and rows.
    var size: (width: Int, height: Int) { get }
    /// Shows the buffer (only changed cells need to be sent).
    func draw(_ buffer: ScreenBuffer)
    /// Waits for the next key, paste or resize; `nil` when input has ended. With a timeout,
    /// returns ``KeyEvent/tick`` when nothing arrived in time; without one it blocks (no CPU).
    func readEvent(timeoutMilliseconds: Int?) -> KeyEvent?
    /// Sends an escape sequence the screen library does not know (OSC 52 clipboard).
    func sendRaw(_ sequence: String)
}

/// Turns the characters that follow an ESC into an event: bracketed paste
/// (`ESC [200~ … ESC [201~`), a few common sequences, or a plain Escape.
public enum EscapeSequenceParser {
    /// - Parameter next: the next code point, waiting at most the given milliseconds, or nil.
    /// - Parameter pushBack: returns code points that were read but are not part of a sequence.
    public static func parse(
        next: (_ timeoutMilliseconds: Int) -> UInt32?, pushBack: ([UInt32]) -> Void, maximumPaste: Int = 16 * 1024 * 1024
    ) -> KeyEvent {
        var read: [UInt32] = []
        guard let first = next(40) else { return .escape }
        read.append(first)
        guard first == 0x5B else {  // not '['
            pushBack(read)
            return .escape
        }
        // Read up to the final byte of a CSI sequence (0x40–0x7E), briefly.
        while read.count < 8, let c = next(40) {
            read.append(c)
            if (0x40...0x7E).contains(c) { break }
        }
        let text = String(String.UnicodeScalarView(read.compactMap(Unicode.Scalar.init)))
        switch text {
        case "[200~": return .paste(readPaste(next: next, limit: maximumPaste))
        case "[Z": return .backTab
        case "[A": return .up
        case "[B": return .down
        case "[C": return .right
        case "[D": return .left
        case "[H": return .home
        case "[F": return .end
        case "[5~": return .pageUp
        case "[6~": return .pageDown
        case "[3~": return .delete
        default:
            pushBack(read)
            return .escape
        }
    }

    /// Reads pasted text up to `ESC [201~`. Carriage returns become newlines; text past
    /// `limit` is dropped (the paste still ends cleanly).
    static func readPaste(next: (Int) -> UInt32?, limit: Int) -> String {
        let end: [UInt32] = [0x1B, 0x5B, 0x32, 0x30, 0x31, 0x7E]
        var scalars: [UInt32] = []
        var window: [UInt32] = []
        var pending = 0  // scalars appended since the window could have started matching
        var previousWasCR = false
        while let c = next(2000) {
            window.append(c)
            if window.count > end.count { window.removeFirst() }
            if window == end {
                scalars.removeLast(min(pending, end.count - 1))
                break
            }
            pending = c == 0x1B ? 0 : pending
            if scalars.count < limit {
                if c == 0x0A && previousWasCR {
                    // CR LF: the CR already became a newline.
                } else {
                    scalars.append(c == 0x0D ? 0x0A : c)
                    pending += 1
                }
            }
            previousWasCR = c == 0x0D
        }
        var text = String.UnicodeScalarView()
        for v in scalars { if let s = Unicode.Scalar(v) { text.append(s) } }
        return String(text)
    }
}
