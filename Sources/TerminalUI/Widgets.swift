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
    /// Cut long cells at their start, keeping the end (file names differ at their ends).
    public var keepTail: Bool
    /// Stays on screen when the table scrolls sideways (the row's name: product, file, time).
    public var frozen: Bool

    public init(
        _ title: String, width: Int, alignRight: Bool = false, priority: Int = 0, minimumWidth: Int = 12, cutInTheMiddle: Bool = false,
        keepTail: Bool = false, frozen: Bool = false
    ) {
        self.title = title
        self.width = width
        self.alignRight = alignRight
        self.priority = priority
        self.minimumWidth = minimumWidth
        self.cutInTheMiddle = cutInTheMiddle
        self.keepTail = keepTail
        self.frozen = frozen
    }

    /// The columns it needs at least.
    var need: Int { width == 0 ? minimumWidth : width }

    /// `text` cut to `columns` the way this column cuts.
    public func cut(_ text: String, to columns: Int) -> String {
        if keepTail { return TextWidth.truncateHead(text, to: columns) }
        return cutInTheMiddle ? TextWidth.truncateMiddle(text, to: columns) : text
    }
}

/// Which columns of a table are on screen, in what order and how wide, when it may scroll
/// sideways (``Widgets/window(_:width:offset:reveal:)``).
public struct ColumnWindow: Sendable, Hashable {
    /// Width of each column by its index in the table (0: not on screen).
    public var widths: [Int]
    /// The columns on screen, left to right.
    public var order: [Int]
    /// The sideways position (clamped), and the greatest one.
    public var offset: Int
    public var maxOffset: Int
    /// Columns off screen to the left and to the right.
    public var hiddenLeft: Int
    public var hiddenRight: Int

    /// Whether the table is wider than its room (←/→ then scroll it).
    public var scrolls: Bool { maxOffset > 0 }

    /// Where column `index` starts, from the table's left edge (nil: not on screen).
    public func x(of index: Int) -> Int? {
        guard let at = order.firstIndex(of: index) else { return nil }
        return order[..<at].reduce(0) { $0 + widths[$1] + 1 }
    }

    /// The header's mark for columns off screen: `◀2 3▶`, `4▶`, `◀1` (empty when none).
    public var indicator: String {
        [hiddenLeft > 0 ? "◀\(hiddenLeft)" : nil, hiddenRight > 0 ? "\(hiddenRight)▶" : nil].compactMap { $0 }.joined(separator: " ")
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
    /// - Parameters:
    ///   - sideways: where the table is scrolled sideways (``window(_:width:offset:reveal:)``).
    ///   - reveal: a column kept on screen whatever `sideways` says (a column cursor).
    /// - Returns: the columns drawn.
    @discardableResult
    public static func table(
        into buffer: inout ScreenBuffer, rect: Rect, columns: [TableColumn], rowCount: Int, scroll: ScrollState,
        sortColumn: Int?, ascending: Bool, focused: Bool, sideways: Int = 0, reveal: Int? = nil, cell: (Int, Int) -> (String, ColorRole?)
    ) -> ColumnWindow {
        let window = Self.window(columns, width: rect.width, offset: sideways, reveal: reveal)
        guard rect.height >= 1, rect.width >= 4 else { return window }
        let widths = window.widths
        var x = rect.x
        for i in window.order {
            let column = columns[i]
            var title = column.title
            if sortColumn == i { title += ascending ? " ▲" : " ▼" }
            buffer.write(
                TextWidth.pad(title, to: widths[i], alignRight: column.alignRight), x: x, y: rect.y, limit: widths[i],
                style: Style(sortColumn == i ? .headerSort : .header, bold: true, underline: true))
            x += widths[i] + 1
        }
        header(indicator: window, columns: columns, into: &buffer, rect: rect)
        let visible = rect.height - 1
        for line in 0..<visible {
            let row = scroll.offset + line
            guard row < rowCount else { break }
            let y = rect.y + 1 + line
            let isSelected = row == scroll.selected
            let rowStyle: Style? = isSelected ? Style(focused ? .selection : .selectionInactive) : nil
            if let rowStyle { buffer.fill(Rect(x: rect.x, y: y, width: rect.width, height: 1), style: rowStyle) }
            var cx = rect.x
            for i in window.order {
                let column = columns[i]
                let (text, role) = cell(row, i)
                let style = rowStyle ?? Style(role ?? .text)
                buffer.write(
                    TextWidth.pad(column.cut(text, to: widths[i]), to: widths[i], alignRight: column.alignRight),
                    x: cx, y: y, limit: widths[i], style: style)
                cx += widths[i] + 1
            }
        }
        return window
    }

    /// Writes `window`'s mark for hidden columns on a header row: at the right of the frozen
    /// column's title when it has room there, else at the row's right end.
    public static func header(indicator window: ColumnWindow, columns: [TableColumn], into buffer: inout ScreenBuffer, rect: Rect) {
        let mark = window.indicator
        let need = TextWidth.of(mark)
        guard !mark.isEmpty, rect.width > need + 1 else { return }
        var x = rect.x + rect.width - need
        if let first = window.order.first, columns[first].frozen, TextWidth.of(columns[first].title) + 1 + need <= window.widths[first] {
            x = rect.x + window.widths[first] - need
        }
        buffer.write(mark, x: x, y: rect.y, limit: need, style: Style(.accent, bold: true))
    }

    /// The columns on screen for `width` columns when the table may scroll sideways.
    ///
    /// When every column fits, all of them (``layout(_:width:)``), and nothing scrolls. When
    /// not, the frozen columns stay on the left; the others form a strip: first those the
    /// priorities keep at this width (in table order), then the ones they hide. At `offset` 0
    /// the table shows what the priorities keep (the facts), and each step right shows the
    /// next hidden column. `reveal` moves the strip so that column is on screen.
    public static func window(_ columns: [TableColumn], width: Int, offset: Int, reveal: Int? = nil) -> ColumnWindow {
        let all = columns.reduce(0) { $0 + $1.need } + max(0, columns.count - 1)
        if all <= width {
            let widths = layout(columns, width: width)
            return ColumnWindow(widths: widths, order: columns.indices.filter { widths[$0] > 0 }, offset: 0, maxOffset: 0, hiddenLeft: 0, hiddenRight: 0)
        }
        let kept = layout(columns, width: width)
        let frozen = columns.indices.filter { columns[$0].frozen }
        let movable = columns.indices.filter { !columns[$0].frozen }
        let strip = movable.filter { kept[$0] > 0 } + movable.filter { kept[$0] == 0 }
        let frozenNeed = frozen.reduce(0) { $0 + columns[$1].need + 1 }
        // The strip columns from `start` that fit beside the frozen ones (at least one).
        func fitting(from start: Int) -> Int {
            var used = frozenNeed
            var count = 0
            for i in strip[start...] {
                guard used + columns[i].need <= width || count == 0 else { break }
                used += columns[i].need + 1
                count += 1
            }
            return count
        }
        var maxOffset = 0
        while maxOffset < strip.count - 1, maxOffset + fitting(from: maxOffset) < strip.count { maxOffset += 1 }
        var offset = min(max(0, offset), maxOffset)
        if let reveal, let at = strip.firstIndex(of: reveal) {
            if at < offset { offset = at }
            while offset < at, offset + fitting(from: offset) <= at { offset += 1 }
        }
        let shown = strip.isEmpty ? [] : Array(strip[offset..<(offset + fitting(from: offset))])
        let onScreen = Set(frozen + shown)
        // Fixed columns as asked; flexible ones (and the last when nothing is flexible) share the rest.
        let fixed = onScreen.filter { columns[$0].width > 0 }.reduce(0) { $0 + columns[$1].width }
        let flexible = columns.indices.filter { onScreen.contains($0) && columns[$0].width == 0 }
        var spare = max(0, width - fixed - max(0, onScreen.count - 1))
        var widths = [Int](repeating: 0, count: columns.count)
        for i in onScreen where columns[i].width > 0 { widths[i] = min(columns[i].width, width) }
        for (n, i) in flexible.enumerated() {
            let share = n == flexible.count - 1 ? spare : spare / (flexible.count - n)
            widths[i] = share
            spare -= share
        }
        // A column cut by the edge: what is left of the room.
        let order = frozen + shown
        var used = 0
        for i in order {
            widths[i] = max(0, min(widths[i], width - used))
            used += widths[i] + 1
        }
        return ColumnWindow(
            widths: widths, order: order.filter { widths[$0] > 0 }, offset: offset, maxOffset: maxOffset, hiddenLeft: offset,
            hiddenRight: strip.count - offset - shown.count)
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
