import UntrustedText

/// A rectangle of cells.
public struct Rect: Sendable, Hashable {
    public var x: Int
    public var y: Int
    public var width: Int
    public var height: Int

    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = max(0, width)
        self.height = max(0, height)
    }

    /// The inside of a one-cell border.
    public var inset: Rect { Rect(x: x + 1, y: y + 1, width: width - 2, height: height - 2) }
    public var maxY: Int { y + height }
    public var maxX: Int { x + width }

    /// Splits into a top part of `height` rows and the rest.
    public func splitTop(_ rows: Int) -> (Rect, Rect) {
        let h = min(max(0, rows), height)
        return (Rect(x: x, y: y, width: width, height: h), Rect(x: x, y: y + h, width: width, height: height - h))
    }

    /// Splits into a left part of `width` columns and the rest.
    public func splitLeft(_ columns: Int) -> (Rect, Rect) {
        let w = min(max(0, columns), width)
        return (Rect(x: x, y: y, width: w, height: height), Rect(x: x + w, y: y, width: width - w, height: height))
    }
}

/// The whole screen as a grid of cells: what the UI renders into, what tests read back, and
/// what the terminal backend diffs and flushes. Writing past an edge is clipped, never a crash.
public struct ScreenBuffer: Sendable, Hashable {
    public let width: Int
    public let height: Int
    public private(set) var cells: [Cell]

    public init(width: Int, height: Int) {
        self.width = max(0, width)
        self.height = max(0, height)
        cells = Array(repeating: .blank, count: self.width * self.height)
    }

    public subscript(x: Int, y: Int) -> Cell {
        guard x >= 0, y >= 0, x < width, y < height else { return .blank }
        return cells[y * width + x]
    }

    /// Writes `text` at (x, y), at most `limit` columns, sanitised for the terminal; a wide
    /// character that would straddle the limit is replaced by a space. Returns the columns used.
    @discardableResult
    public mutating func write(_ text: String, x: Int, y: Int, limit: Int? = nil, style: Style = .text) -> Int {
        guard y >= 0, y < height else { return 0 }
        let end = min(width, x + (limit ?? width))
        var column = x
        for character in SafeText.escaped(text) {
            let w = TextWidth.of(character)
            if w == 0 { continue }
            if column + w > end {
                if column < end, column >= 0 { cells[y * width + column] = Cell(" ", style: style) }
                break
            }
            if column >= 0 {
                cells[y * width + column] = Cell(character, width: UInt8(w), style: style)
                if w == 2, column + 1 < width { cells[y * width + column + 1] = Cell(" ", width: 0, style: style) }
            }
            column += w
        }
        return max(0, column - x)
    }

    /// Fills a rectangle with spaces in `style`.
    public mutating func fill(_ rect: Rect, style: Style = .text) {
        for yy in max(0, rect.y)..<min(height, rect.maxY) {
            for xx in max(0, rect.x)..<min(width, rect.maxX) {
                cells[yy * width + xx] = Cell(" ", style: style)
            }
        }
    }

    /// Draws a border with a title (focused borders use `border-focus` and bold).
    public mutating func box(_ rect: Rect, title: String? = nil, focused: Bool = false) {
        guard rect.width >= 2, rect.height >= 2 else { return }
        let style = Style(focused ? .borderFocus : .border, bold: focused)
        let horizontal = String(repeating: "─", count: rect.width - 2)
        write("┌" + horizontal + "┐", x: rect.x, y: rect.y, style: style)
        write("└" + horizontal + "┘", x: rect.x, y: rect.maxY - 1, style: style)
        for yy in (rect.y + 1)..<(rect.maxY - 1) {
            write("│", x: rect.x, y: yy, style: style)
            write("│", x: rect.maxX - 1, y: yy, style: style)
        }
        if let title, rect.width > 6 {
            write(" \(title) ", x: rect.x + 2, y: rect.y, limit: rect.width - 4, style: Style(focused ? .borderFocus : .title, bold: true))
        }
    }

    /// The characters row by row, trailing spaces trimmed: the text snapshot tests compare.
    public var text: String {
        (0..<height).map { row(at: $0) }.joined(separator: "\n")
    }

    /// One row's characters, trailing spaces trimmed.
    public func row(at y: Int) -> String {
        var line = ""
        for x in 0..<width {
            let cell = cells[y * width + x]
            if cell.width == 0 { continue }
            line.append(cell.character)
        }
        while line.last == " " { line.removeLast() }
        return line
    }
}
