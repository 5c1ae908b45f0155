/// A table column.
public struct TableColumn: Sendable, Hashable {
    public var title: String
    /// Columns wide; 0 shares out what the fixed columns leave (at least `minimumWidth`).
    public var width: Int
    public var alignRight: Bool
    /// When the table is too narrow, columns with the lowest priority are hidden first.
    public var priority: Int
    public var minimumWidth: Int
    /// Cut long cells in the middle, keeping both ends (product ids differ at their ends).
    public var cutInTheMiddle: Bool

    public init(
        _ title: String, width: Int, alignRight: Bool = false, priority: Int = 0, minimumWidth: Int = 12, cutInTheMiddle: Bool = false
    ) {
        self.title = title
        self.width = width
        self.alignRight = alignRight
        self.priority = priority
        self.minimumWidth = minimumWidth
        self.cutInTheMiddle = cutInTheMiddle
    }
}

/// Scrolling state shared by lists and tables: which row is selected and which is at the top.
public struct ScrollState: Sendable, Hashable {
    public var selected = 0
    public var offset = 0

    public init(selected: Int = 0, offset: Int = 0) {
        self.selected = selected
        self.offset = offset
    }

    /// Moves the selection by `delta` within `count` rows.
    public mutating func move(_ delta: Int, count: Int) {
        guard count > 0 else {
            selected = 0
            offset = 0
            return
        }
        selected = min(max(0, selected + delta), count - 1)
    }

    /// Keeps the selection inside a window of `visible` rows.
    public mutating func reveal(visible: Int, count: Int) {
        guard visible > 0 else { return }
        selected = min(max(0, selected), max(0, count - 1))
        if selected < offset { offset = selected }
        if selected >= offset + visible { offset = selected - visible + 1 }
        offset = max(0, min(offset, max(0, count - visible)))
    }
}

public enum Widgets {
    /// Draws a table with virtual scrolling: only the visible rows are asked for, so a
    /// 100,000-row table costs the same as a 20-row one.
    ///
    /// - Parameter cell: text and an optional role for (row, column).
    public static func table(
        into buffer: inout ScreenBuffer, rect: Rect, columns: [TableColumn], rowCount: Int, scroll: ScrollState,
        sortColumn: Int?, ascending: Bool, focused: Bool, cell: (Int, Int) -> (String, ColorRole?)
    ) {
        guard rect.height >= 1, rect.width >= 4 else { return }
        let widths = layout(columns, width: rect.width)
        var x = rect.x
        for (i, column) in columns.enumerated() where widths[i] > 0 {
            var title = column.title
            if sortColumn == i { title += ascending ? " ▲" : " ▼" }
            buffer.write(
                TextWidth.pad(title, to: widths[i], alignRight: column.alignRight), x: x, y: rect.y, limit: widths[i],
                style: Style(sortColumn == i ? .headerSort : .header, bold: true, underline: true))
            x += widths[i] + 1
        }
        let visible = rect.height - 1
        for line in 0..<visible {
            let row = scroll.offset + line
            guard row < rowCount else { break }
            let y = rect.y + 1 + line
            let isSelected = row == scroll.selected
            let rowStyle: Style? = isSelected ? Style(focused ? .selection : .selectionInactive) : nil
            if let rowStyle { buffer.fill(Rect(x: rect.x, y: y, width: rect.width, height: 1), style: rowStyle) }
            var cx = rect.x
            for (i, column) in columns.enumerated() where widths[i] > 0 {
                let (text, role) = cell(row, i)
                let style = rowStyle ?? Style(role ?? .text)
                buffer.write(
                    TextWidth.pad(column.cutInTheMiddle ? TextWidth.truncateMiddle(text, to: widths[i]) : text, to: widths[i], alignRight: column.alignRight),
                    x: cx, y: y, limit: widths[i], style: style)
                cx += widths[i] + 1
            }
        }
    }

    /// Column widths for `width` columns: fixed ones as asked, flexible (0) ones share the rest.
    /// When they do not fit, the lowest-priority columns are hidden (width 0).
    public static func layout(_ columns: [TableColumn], width: Int) -> [Int] {
        var shown = Set(columns.indices)
        func need() -> Int {
            shown.reduce(0) { $0 + (columns[$1].width == 0 ? columns[$1].minimumWidth : columns[$1].width) } + max(0, shown.count - 1)
        }
        while need() > width, shown.count > 1 {
            let victim = shown.min { columns[$0].priority < columns[$1].priority || (columns[$0].priority == columns[$1].priority && $0 > $1) }!
            shown.remove(victim)
        }
        let fixed = shown.reduce(0) { $0 + columns[$1].width }
        let flexible = shown.filter { columns[$0].width == 0 }.count
        let spare = max(0, width - fixed - max(0, shown.count - 1))
        var extra = flexible > 0 ? spare - (spare / flexible) * flexible : 0
        return columns.indices.map { i in
            guard shown.contains(i) else { return 0 }
            guard columns[i].width == 0 else { return min(columns[i].width, width) }
            defer { extra = 0 }
            return spare / max(1, flexible) + extra
        }
    }

    /// Draws lines of text with a scroll offset; returns how many lines fit.
    @discardableResult
    public static func text(into buffer: inout ScreenBuffer, rect: Rect, lines: [(String, Style)], offset: Int) -> Int {
        for i in 0..<rect.height {
            let index = offset + i
            guard index >= 0, index < lines.count else { break }
            buffer.write(lines[index].0, x: rect.x, y: rect.y + i, limit: rect.width, style: lines[index].1)
        }
        return rect.height
    }

    /// A one-line progress bar: `[#####-----] label`.
    public static func progress(into buffer: inout ScreenBuffer, x: Int, y: Int, width: Int, fraction: Double, label: String) {
        let barWidth = max(4, min(30, width - TextWidth.of(label) - 3))
        let filled = Int((Double(barWidth) * min(1, max(0, fraction))).rounded())
        buffer.write("[", x: x, y: y, style: Style(.muted))
        buffer.write(String(repeating: "█", count: filled), x: x + 1, y: y, style: Style(.ok))
        buffer.write(String(repeating: "·", count: barWidth - filled), x: x + 1 + filled, y: y, style: Style(.muted))
        buffer.write("] " + label, x: x + 1 + barWidth, y: y, limit: width - barWidth - 1, style: Style(.text))
    }

    /// The footer: key hints, each key drawn in `footer-key`.
    public static func footer(into buffer: inout ScreenBuffer, y: Int, hints: [(key: String, label: String)]) {
        buffer.fill(Rect(x: 0, y: y, width: buffer.width, height: 1), style: Style(.footerText))
        var x = 0
        for hint in hints {
            let need = TextWidth.of(hint.key) + TextWidth.of(hint.label) + 3
            guard x + need <= buffer.width else { break }
            x += buffer.write(" \(hint.key) ", x: x, y: y, style: Style(.footerKey, bold: true))
            x += buffer.write(hint.label + " ", x: x, y: y, style: Style(.footerText))
        }
    }

    /// A centred bordered box; returns its inside.
    @discardableResult
    public static func overlay(into buffer: inout ScreenBuffer, width: Int, height: Int, title: String) -> Rect {
        let w = min(width, buffer.width - 2)
        let h = min(height, buffer.height - 2)
        let rect = Rect(x: (buffer.width - w) / 2, y: (buffer.height - h) / 2, width: w, height: h)
        buffer.fill(rect, style: Style(.overlay))
        buffer.box(rect, title: title, focused: true)
        return rect.inset
    }
}
