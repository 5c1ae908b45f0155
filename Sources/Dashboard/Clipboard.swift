import Foundation
import TerminalUI

/// Where `y` and `Y` put what they copy, and what became of it.
///
/// Outside tmux the dashboard writes OSC 52 to the terminal itself (``DashboardApp/osc52(_:inTmux:)``):
/// nothing answers, so the message says it was sent and how to allow it. Inside tmux an escape
/// sequence only gets through with `allow-passthrough on` (off by default since tmux 3.3), so the
/// live clipboard (``TmuxClipboard`` in DashboardLive) hands the text to tmux itself.
public protocol Clipboard: Sendable {
    func copy(_ text: String) async -> CopyOutcome
}

/// What became of a copy: the message the dashboard shows says where it went.
public enum CopyOutcome: Sendable, Equatable {
    /// In tmux's paste buffer; `toTerminal`: tmux passes it on to the outer terminal's clipboard
    /// too (its `set-clipboard` option is `on` or `external`).
    case tmuxBuffer(toTerminal: Bool)
    /// Written to the terminal as OSC 52; the terminal may drop it and nothing says so.
    /// `truncatedTo`: the bytes sent when the text was longer than terminals take.
    case sentToTerminal(truncatedTo: Int?)
    /// It could not arrive: why, and how to allow it.
    case failed(reason: String, fix: String)

    /// The status line for a copy of `what` (as the update words it: "340001196262039",
    /// "the row as JSON (412 bytes)").
    public func message(copying what: String) -> (text: String, role: ColorRole) {
        switch self {
        case .tmuxBuffer(toTerminal: true):
            ("copied \(what) to tmux's buffer and the terminal's clipboard", .ok)
        case .tmuxBuffer(toTerminal: false):
            ("copied \(what) to tmux's buffer only (prefix ] pastes): `tmux set -g set-clipboard on` sends copies on to the terminal", .ok)
        case .sentToTerminal(truncatedTo: nil):
            ("sent \(what) to the terminal's clipboard (OSC 52); if it does not paste, allow OSC 52 clipboard writes in the terminal's settings", .ok)
        case .sentToTerminal(truncatedTo: let bytes?):
            ("sent the first \(bytes) bytes of \(what) to the terminal's clipboard (OSC 52 takes no more); e exports the whole", .warning)
        case .failed(let reason, let fix):
            ("could not copy \(what): \(reason); \(fix)", .error)
        }
    }
}

/// The bytes of text OSC 52 carries at most (k9s's cap: terminals drop longer sequences).
public let osc52Limit = 74_994
