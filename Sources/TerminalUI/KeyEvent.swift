/// A key press, a paste, or a resize, as the UI sees it (backend-independent).
public enum KeyEvent: Sendable, Hashable {
    case character(Character)
    case up, down, left, right, pageUp, pageDown, home, end
    case enter, escape, tab, backTab, backspace, delete
    case function(Int)
    case control(Character)
    /// Text delivered by bracketed paste, whole.
    case paste(String)
    case resize(width: Int, height: Int)
    /// No input before the wait ran out (only when the loop asked for a timeout).
    case tick
}
