import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The terminal the dashboard would draw on: colours, UTF-8 and size.
enum TerminalCheck {
    /// The smallest window the dashboard lays out in full.
    static let minimumColumns = 80
    static let minimumRows = 24

    /// What the terminal looks like; `size` is nil when standard output is not a terminal.
    struct Facts: Sendable {
        var environment: [String: String]
        var size: (columns: Int, rows: Int)?

        static func current(environment: [String: String]) -> Facts {
            var window = winsize()
            let isTerminal = isatty(STDOUT_FILENO) == 1 && ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &window) == 0
            return Facts(environment: environment, size: isTerminal ? (Int(window.ws_col), Int(window.ws_row)) : nil)
        }
    }

    static func run(_ facts: Facts) -> [DoctorCheck] {
        let env = facts.environment
        guard let size = facts.size else {
            return [DoctorCheck("terminal", .skipped, "standard output is not a terminal: run doctor in the terminal the dashboard will use")]
        }
        var problems: [String] = []
        var fixes: [String] = []
        let term = env["TERM"] ?? ""
        let colours: String
        if let noColor = env["NO_COLOR"], !noColor.isEmpty {
            colours = "no colour (NO_COLOR is set: the mono theme)"
        } else if term.isEmpty || term == "dumb" {
            colours = "no colour (TERM=\(term.isEmpty ? "unset" : term))"
            problems.append("TERM is \(term.isEmpty ? "not set" : "dumb"): no colours and no cursor keys")
            fixes.append("export TERM=xterm-256color")
        } else if ["truecolor", "24bit"].contains(env["COLORTERM"]?.lowercased() ?? "") {
            colours = "24-bit colour (\(term))"
        } else if term.contains("256color") {
            colours = "256 colours (\(term))"
        } else {
            colours = "8 colours (\(term))"
        }
        let locale = env["LC_ALL"].flatMap { $0.isEmpty ? nil : $0 } ?? env["LC_CTYPE"].flatMap { $0.isEmpty ? nil : $0 } ?? env["LANG"] ?? ""
        let utf8 = locale.lowercased().replacingOccurrences(of: "-", with: "").contains("utf8")
        if !utf8 {
            problems.append("the locale (\(locale.isEmpty ? "unset" : locale)) is not UTF-8: borders and ✓/✗ show as ?")
            fixes.append("export LANG=C.UTF-8")
        }
        if size.columns < minimumColumns || size.rows < minimumRows {
            problems.append("\(size.columns)×\(size.rows) is smaller than the dashboard's \(minimumColumns)×\(minimumRows)")
            fixes.append("enlarge the window")
        }
        let summary = "\(colours), \(utf8 ? "UTF-8" : "not UTF-8"), \(size.columns)×\(size.rows)"
        if problems.isEmpty { return [DoctorCheck("terminal", .ok, summary)] }
        return [DoctorCheck("terminal", .failed, summary + ": " + problems.joined(separator: "; "), fix: fixes.joined(separator: "; "))]
    }
}
