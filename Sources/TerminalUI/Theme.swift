import Foundation

/// A colour as a theme file writes it.
public enum ThemeColor: Sendable, Hashable {
    /// The terminal's own foreground or background.
    case `default`
    /// One of the 16 ANSI colours (0–7 normal, 8–15 bright).
    case ansi(Int)
    /// A 256-colour palette index.
    case indexed(Int)
    /// 24-bit colour, degraded to what the terminal supports.
    case rgb(UInt8, UInt8, UInt8)

    static let names = [
        "black", "red", "green", "yellow", "blue", "magenta", "cyan", "white",
        "bright-black", "bright-red", "bright-green", "bright-yellow", "bright-blue", "bright-magenta", "bright-cyan",
        "bright-white",
    ]

    /// Parses `default`, an ANSI name (`red`, `bright-blue`, `gray` = `bright-black`), `color123`
    /// or `123` (0–255), or `#rrggbb`.
    public init?(parsing text: String) {
        let t = text.lowercased()
        if t == "default" || t == "-" {
            self = .default
        } else if let index = Self.names.firstIndex(of: t) {
            self = .ansi(index)
        } else if t == "gray" || t == "grey" {
            self = .ansi(8)
        } else if t.hasPrefix("#"), t.count == 7, let value = UInt32(t.dropFirst(), radix: 16) {
            self = .rgb(UInt8(value >> 16), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF))
        } else if let n = Int(t.hasPrefix("color") ? String(t.dropFirst(5)) : t), (0...255).contains(n) {
            self = n < 16 ? .ansi(n) : .indexed(n)
        } else {
            return nil
        }
    }

    /// The nearest colour a terminal with `colors` colours can show (`nil` = terminal default).
    public func degraded(to colors: Int) -> Int? {
        switch self {
        case .default: return nil
        case .ansi(let n): return colors >= 16 ? n : n % 8
        case .indexed(let n): return colors >= 256 ? n : Self.nearestANSI(Self.rgb(ofIndex: n), colors: colors)
        case .rgb(let r, let g, let b):
            if colors >= 256 { return Self.cubeIndex(r, g, b) }
            return Self.nearestANSI((Int(r), Int(g), Int(b)), colors: colors)
        }
    }

    /// The 6×6×6 cube or grey ramp index of an RGB colour.
    static func cubeIndex(_ r: UInt8, _ g: UInt8, _ b: UInt8) -> Int {
        if abs(Int(r) - Int(g)) < 10 && abs(Int(g) - Int(b)) < 10 {
            let grey = (Int(r) + Int(g) + Int(b)) / 3
            if grey < 8 { return 16 }
            if grey > 238 { return 231 }
            return 232 + (grey - 8) / 10
        }
        func level(_ v: UInt8) -> Int { v < 48 ? 0 : v < 115 ? 1 : (Int(v) - 35) / 40 }
        return 16 + 36 * level(r) + 6 * level(g) + level(b)
    }

    static let ansiRGB: [(Int, Int, Int)] = [
        (0, 0, 0), (205, 0, 0), (0, 205, 0), (205, 205, 0), (0, 0, 238), (205, 0, 205), (0, 205, 205), (229, 229, 229),
        (127, 127, 127), (255, 0, 0), (0, 255, 0), (255, 255, 0), (92, 92, 255), (255, 0, 255), (0, 255, 255),
        (255, 255, 255),
    ]

    static func rgb(ofIndex n: Int) -> (Int, Int, Int) {
        if n < 16 { return ansiRGB[n] }
        if n >= 232 {
            let v = 8 + (n - 232) * 10
            return (v, v, v)
        }
        let i = n - 16
        let steps = [0, 95, 135, 175, 215, 255]
        return (steps[i / 36], steps[(i / 6) % 6], steps[i % 6])
    }

    static func nearestANSI(_ c: (Int, Int, Int), colors: Int) -> Int {
        let count = colors >= 16 ? 16 : 8
        var best = 0
        var bestDistance = Int.max
        for i in 0..<count {
            let p = ansiRGB[i]
            let d = (p.0 - c.0) * (p.0 - c.0) + (p.1 - c.1) * (p.1 - c.1) + (p.2 - c.2) * (p.2 - c.2)
            if d < bestDistance {
                bestDistance = d
                best = i
            }
        }
        return best
    }
}

/// What a role looks like.
public struct RoleStyle: Sendable, Hashable {
    public var foreground: ThemeColor
    public var background: ThemeColor
    public var bold = false
    public var dim = false
    public var reverse = false
    public var underline = false

    public init(foreground: ThemeColor = .default, background: ThemeColor = .default) {
        self.foreground = foreground
        self.background = background
    }
}

/// A theme: every ``ColorRole`` mapped to colours and attributes.
///
/// Theme files (`Themes/*.theme`) are lines of `role = foreground [background] [attributes]`,
/// with `#` comments and an optional `name = …`; colours are `default`, the 16 ANSI names,
/// `color0`–`color255` (or the bare number) and `#rrggbb`; attributes are `bold`, `dim`,
/// `reverse`, `underline`. Roles a file leaves out keep the built-in `default` theme's style.
public struct Theme: Sendable, Hashable {
    public var name: String
    public var styles: [ColorRole: RoleStyle]
    /// A mono theme uses attributes only, never colour.
    public var isMono: Bool

    public func style(_ role: ColorRole) -> RoleStyle {
        styles[role] ?? RoleStyle()
    }

    /// Errors that name the line and what is wrong with it.
    public struct ParseError: Error, CustomStringConvertible, Sendable {
        public var line: Int
        public var message: String
        public var description: String { line > 0 ? "line \(line): \(message)" : message }

        public init(line: Int, message: String) {
            self.line = line
            self.message = message
        }
    }

    /// Parses a theme file, starting from the built-in default styles.
    public static func parse(_ text: String, name fallbackName: String) throws -> Theme {
        var theme = Theme.builtinDefault
        theme.name = fallbackName
        theme.isMono = false
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = Self.stripComment(String(raw)).trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty { continue }
            let parts = trimmed.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, !parts[0].isEmpty else {
                throw ParseError(line: number + 1, message: "expected 'role = colours', got \(trimmed.debugDescription)")
            }
            if parts[0] == "name" {
                theme.name = parts[1]
                continue
            }
            if parts[0] == "mono" {
                theme.isMono = parts[1] == "true"
                continue
            }
            guard let role = ColorRole(rawValue: parts[0]) else {
                let known = ColorRole.allCases.map(\.rawValue).joined(separator: ", ")
                throw ParseError(line: number + 1, message: "unknown role \(parts[0].debugDescription) (roles: \(known))")
            }
            var style = RoleStyle()
            var colors: [ThemeColor] = []
            for word in parts[1].split(separator: " ") {
                switch word {
                case "bold": style.bold = true
                case "dim": style.dim = true
                case "reverse": style.reverse = true
                case "underline": style.underline = true
                default:
                    guard let color = ThemeColor(parsing: String(word)) else {
                        throw ParseError(line: number + 1, message: "bad colour \(String(word).debugDescription) for \(parts[0])")
                    }
                    colors.append(color)
                }
            }
            guard colors.count <= 2 else {
                throw ParseError(line: number + 1, message: "\(parts[0]) has \(colors.count) colours; give a foreground and at most a background")
            }
            style.foreground = colors.first ?? .default
            style.background = colors.count > 1 ? colors[1] : .default
            theme.styles[role] = style
        }
        return theme
    }

    /// A `#` starts a comment at the start of a line or after a space, unless it begins a
    /// `#rrggbb` colour.
    static func stripComment(_ line: String) -> String {
        let chars = Array(line)
        for (i, c) in chars.enumerated() where c == "#" {
            let atStart = chars[..<i].allSatisfy { $0 == " " || $0 == "\t" }
            let afterSpace = i > 0 && (chars[i - 1] == " " || chars[i - 1] == "\t")
            let hex = chars.count >= i + 7 && chars[(i + 1)...(i + 6)].allSatisfy(\.isHexDigit)
                && (chars.count == i + 7 || chars[i + 7] == " " || chars[i + 7] == "\t")
            if atStart || (afterSpace && !hex) { return String(chars[..<i]) }
        }
        return line
    }

    static func roleStyle(_ fg: ThemeColor, _ bg: ThemeColor = .default, bold: Bool = false, reverse: Bool = false, dim: Bool = false)
        -> RoleStyle
    {
        var s = RoleStyle(foreground: fg, background: bg)
        s.bold = bold
        s.reverse = reverse
        s.dim = dim
        return s
    }

    /// The built-in dark theme (also the base every theme file starts from).
    public static let builtinDefault = Theme(
        name: "default",
        styles: [
            .text: roleStyle(.default), .muted: roleStyle(.ansi(8)), .title: roleStyle(.ansi(14), bold: true),
            .border: roleStyle(.ansi(8)), .borderFocus: roleStyle(.ansi(14), bold: true),
            .header: roleStyle(.ansi(15), bold: true), .headerSort: roleStyle(.ansi(11), bold: true),
            .selection: roleStyle(.ansi(15), .ansi(4)), .selectionInactive: roleStyle(.default, .ansi(8)),
            .statusBar: roleStyle(.ansi(15), .ansi(4)), .footerKey: roleStyle(.ansi(0), .ansi(6)),
            .footerText: roleStyle(.default), .ok: roleStyle(.ansi(10)), .warning: roleStyle(.ansi(11)),
            .error: roleStyle(.ansi(9), bold: true), .info: roleStyle(.ansi(12)), .accent: roleStyle(.ansi(13)),
            .overlay: roleStyle(.default), .overlayBorder: roleStyle(.ansi(11), bold: true),
            .input: roleStyle(.ansi(15), .ansi(8)), .match: roleStyle(.ansi(0), .ansi(11)),
        ], isMono: false)

    /// Whether `environment` allows colour at all: not when `NO_COLOR` is set (non-empty) or
    /// `TERM` is `dumb`. The one rule the dashboard's theme and `doctor`'s marks follow.
    public static func coloursAllowed(_ environment: [String: String]) -> Bool {
        (environment["NO_COLOR"] ?? "").isEmpty && environment["TERM"] != "dumb"
    }

    /// Attributes only: for `NO_COLOR`, `TERM=dumb` and terminals without colour.
    public static let mono = Theme(
        name: "mono",
        styles: [
            .title: roleStyle(.default, bold: true), .borderFocus: roleStyle(.default, bold: true),
            .header: roleStyle(.default, bold: true), .headerSort: roleStyle(.default, bold: true, reverse: false),
            .selection: roleStyle(.default, reverse: true), .selectionInactive: roleStyle(.default, dim: true),
            .statusBar: roleStyle(.default, reverse: true), .footerKey: roleStyle(.default, reverse: true),
            .error: roleStyle(.default, bold: true), .warning: roleStyle(.default, bold: true),
            .muted: roleStyle(.default, dim: true), .overlayBorder: roleStyle(.default, bold: true),
            .input: roleStyle(.default, reverse: true), .match: roleStyle(.default, reverse: true),
        ], isMono: true)
}
