/// A semantic colour role. Themes map roles to colours and attributes; nothing in the UI names a
/// colour directly, so every theme (and `mono`) applies everywhere.
public enum ColorRole: String, CaseIterable, Sendable, Hashable {
    case text, muted, title, border, borderFocus = "border-focus", header, headerSort = "header-sort"
    case selection, selectionInactive = "selection-inactive", statusBar = "status-bar", footerKey = "footer-key"
    case footerText = "footer-text", ok, warning, error, info, accent, overlay, overlayBorder = "overlay-border"
    case input, match
}

/// How a cell is drawn: its role plus attributes that add emphasis whatever the theme.
public struct Style: Sendable, Hashable {
    public var role: ColorRole
    public var bold: Bool
    public var reverse: Bool
    public var underline: Bool

    public init(_ role: ColorRole = .text, bold: Bool = false, reverse: Bool = false, underline: Bool = false) {
        self.role = role
        self.bold = bold
        self.reverse = reverse
        self.underline = underline
    }

    public static let text = Style(.text)
}

/// One terminal cell. A wide character occupies its cell (`width` 2) and the next one, which
/// holds a continuation (`width` 0).
public struct Cell: Sendable, Hashable {
    public var character: Character
    public var width: UInt8
    public var style: Style

    public init(_ character: Character = " ", width: UInt8 = 1, style: Style = .text) {
        self.character = character
        self.width = width
        self.style = style
    }

    public static let blank = Cell()
}
