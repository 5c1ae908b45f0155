import TerminalUI

/// The `?` page: every key of the view it was opened from, scrolled and searched like a pager
/// (k9s and lazygit page their help), so nothing is out of reach at 80×24.
public struct HelpPage: Sendable, Hashable {
    /// The first line on screen.
    public var offset = 0
    /// The search entered (`/`, Enter), and the line of its current match.
    public var query = ""
    public var match: Int?
    /// The search being typed (nil: not typing).
    public var typing: String?
    /// Opened from the Customer view: where it was, to go back there.
    public var customer: CustomerPlace?

    public struct CustomerPlace: Sendable, Hashable {
        public var selected: Int
        public var scroll: Int
    }

    public init(customer: CustomerPlace? = nil) {
        self.customer = customer
    }

    /// The box's inside for a terminal of `width` × `height` and `lineCount` lines: its width,
    /// and the rows the lines get (the last row of the box says where and which keys move).
    static func frame(width: Int, height: Int, lineCount: Int) -> (width: Int, rows: Int) {
        let inner = min(110, width - 4) - 2
        return (inner, max(1, min(lineCount, height - 2 - 3)))
    }

    /// The greatest offset.
    static func lastOffset(lineCount: Int, rows: Int) -> Int { max(0, lineCount - rows) }
}

/// One line of the page.
struct HelpLine {
    var text: String
    var style: Style
}

extension DashboardState {
    /// The page's lines at inner width `width`: "This view" (the focused pane's keys, or the
    /// Customer view's), then "Everywhere"; each key with what it does, wrapped. A key that
    /// cannot work in this session says why; writes to Apple are left out when unavailable,
    /// as the footer leaves them out, and one line says why.
    func helpLines(_ page: HelpPage, width: Int) -> [HelpLine] {
        var lines: [HelpLine] = []
        let room = max(10, width - 9)
        func wrap(_ text: String, first: String, style: Style) {
            for (index, line) in WordWrap.lines(text, width: room).enumerated() {
                lines.append(HelpLine(text: (index == 0 ? first : String(repeating: " ", count: 9)) + line, style: style))
            }
        }
        var hiddenWrites: [String] = []
        func list(_ bindings: [KeyBinding]) {
            for binding in bindings {
                let why = unavailableReason(binding.action)
                if binding.action.writes, why != nil {
                    hiddenWrites.append(binding.label)
                    continue
                }
                wrap(binding.description, first: TextWidth.pad(binding.label, to: 8) + " ", style: Style(why == nil ? .overlay : .muted))
                if let why { wrap("unavailable: " + why, first: String(repeating: " ", count: 9), style: Style(.muted)) }
            }
        }
        if page.customer != nil {
            lines.append(HelpLine(text: "This view: Customer", style: Style(.title, bold: true)))
            list(KeyMap.customerBindings)
        } else {
            let (here, everywhere) = KeyMap.helpBindings(for: focus)
            lines.append(HelpLine(text: "This view: \(focus.title)", style: Style(.title, bold: true)))
            list(here)
            if here.isEmpty || here.allSatisfy({ $0.action.writes && unavailableReason($0.action) != nil }) {
                lines.append(HelpLine(text: "         no keys of its own: those below work here", style: Style(.muted)))
            }
            lines.append(HelpLine(text: "", style: Style(.overlay)))
            lines.append(HelpLine(text: "Everywhere", style: Style(.title, bold: true)))
            list(everywhere)
        }
        lines.append(HelpLine(text: "", style: Style(.overlay)))
        if !hiddenWrites.isEmpty, let why = unavailableReason(.extend) {
            wrap("\(hiddenWrites.joined(separator: ", ")) (writes to Apple) are hidden: \(why)", first: "", style: Style(.muted))
        }
        if page.customer == nil {
            wrap("Other panes have keys of their own: Tab to one, then ?.", first: "", style: Style(.overlay))
        }
        wrap("Themes: --theme NAME|PATH; NO_COLOR or TERM=dumb give mono.", first: "", style: Style(.overlay))
        return lines
    }

    /// The page's lines and rows at the terminal's size.
    func helpGeometry(_ page: HelpPage) -> (lines: [HelpLine], rows: Int) {
        let inner = HelpPage.frame(width: width, height: height, lineCount: 0).width
        let lines = helpLines(page, width: inner)
        return (lines, HelpPage.frame(width: width, height: height, lineCount: lines.count).rows)
    }

    /// The lines that hold `query` (case does not matter).
    static func helpMatches(_ lines: [HelpLine], _ query: String) -> [Int] {
        guard !query.isEmpty else { return [] }
        return lines.indices.filter { lines[$0].text.range(of: query, options: .caseInsensitive) != nil }
    }

    /// `?` opens the page; ↑/↓ j/k PgUp/PgDn g/G scroll it, `/` searches (Enter; n/N the next
    /// and previous match), Esc, q or ? closes it; other keys do nothing.
    mutating func handleHelp(_ event: KeyEvent, page: HelpPage) -> [Effect] {
        var page = page
        let (lines, rows) = helpGeometry(page)
        let last = HelpPage.lastOffset(lineCount: lines.count, rows: rows)
        func show(_ line: Int) {
            page.match = line
            page.offset = min(max(0, line - 1), last)
        }
        if let typed = page.typing {
            switch event {
            case .escape: page.typing = nil
            case .enter:
                page.typing = nil
                page.query = typed
                page.match = nil
                let matches = Self.helpMatches(lines, typed)
                if let line = matches.first(where: { $0 >= page.offset }) ?? matches.first { show(line) }
            case .backspace: page.typing = String(typed.dropLast())
            case .character(let c): page.typing = typed + String(c)
            case .paste(let text): page.typing = typed + text.replacingOccurrences(of: "\n", with: " ")
            case .control("u"): page.typing = ""
            case .control("c"): return [.quit]
            default: break
            }
            mode = .help(page)
            return []
        }
        switch event {
        case .escape, .character("q"), .character("?"), .function(1):
            if let back = page.customer {
                mode = .customer(selected: back.selected, scroll: back.scroll)
            } else {
                mode = .normal
            }
            return []
        case .control("c"): return [.quit]
        case .down, .character("j"): page.offset += 1
        case .up, .character("k"): page.offset -= 1
        case .pageDown, .control("f"), .character(" "): page.offset += max(1, rows - 1)
        case .pageUp, .control("b"): page.offset -= max(1, rows - 1)
        case .character("g"), .home: page.offset = 0
        case .character("G"), .end: page.offset = last
        case .character("/"): page.typing = ""
        case .character("n"), .character("N"):
            let matches = Self.helpMatches(lines, page.query)
            guard !matches.isEmpty else { break }
            let from = page.match ?? page.offset
            if event == .character("n") {
                show(matches.first { $0 > from } ?? matches[0])
            } else {
                show(matches.last { $0 < from } ?? matches[matches.count - 1])
            }
        default: break
        }
        page.offset = min(max(0, page.offset), last)
        mode = .help(page)
        return []
    }
}

extension DashboardView {
    /// The `?` page: the lines, then where they are and the keys that move.
    static func help(_ page: HelpPage, _ s: DashboardState, _ b: inout ScreenBuffer) {
        let inner = HelpPage.frame(width: b.width, height: b.height, lineCount: 0).width
        let lines = s.helpLines(page, width: inner)
        let rows = HelpPage.frame(width: b.width, height: b.height, lineCount: lines.count).rows
        let title = page.customer != nil ? "Keys: Customer" : "Keys: \(s.focus.title)"
        let box = Widgets.overlay(into: &b, width: inner + 2, height: rows + 3, title: title)
        let offset = min(max(0, page.offset), HelpPage.lastOffset(lineCount: lines.count, rows: rows))
        let matches = Set(DashboardState.helpMatches(lines, page.query))
        let shown = lines.enumerated().dropFirst(offset).prefix(rows).map { index, line -> (String, Style) in
            guard matches.contains(index) else { return (line.text, line.style) }
            return (line.text, Style(.match, bold: index == page.match, reverse: index == page.match))
        }
        Widgets.text(into: &b, rect: Rect(x: box.x, y: box.y, width: box.width, height: rows), lines: shown, offset: 0)
        // The last line: the search being typed, or where the page is and how to move.
        let y = box.y + box.height - 1
        if let typed = page.typing {
            b.fill(Rect(x: box.x, y: y, width: box.width, height: 1), style: Style(.input))
            b.write("/" + typed + "▏  Enter finds · Esc cancels", x: box.x, y: y, limit: box.width, style: Style(.input))
            return
        }
        var where_ = "\(lines.isEmpty ? 0 : offset + 1)–\(min(lines.count, offset + rows)) of \(lines.count)"
        if !page.query.isEmpty, matches.isEmpty { where_ += " · no key matches \"\(page.query)\"" }
        let keys = "↑↓ jk PgUp PgDn g G · / search · n N · Esc q ? close"
        b.write(where_ + " · " + keys, x: box.x, y: y, limit: box.width, style: Style(.accent))
    }
}
