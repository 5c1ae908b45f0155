import Foundation
import JSONWriting
import PlainWords
import ReceiptRendering
import ReceiptCore
import UntrustedText

/// One thing `receiptdash doctor` checked: what, how it stands, and what to do about it.
public struct DoctorCheck: Sendable, Hashable {
    public enum Status: String, Sendable, Hashable {
        /// ✓ as it should be.
        case ok
        /// ✗ wrong: `doctor` exits 1.
        case failed
        /// – not checked (not set up, or not asked for): no fault.
        case skipped

        var mark: String {
            switch self {
            case .ok: "✓"
            case .failed: "✗"
            case .skipped: "–"
            }
        }
    }

    /// A stable name for scripts (`api.key`, `api.production`, `clock`, `audit.store`, …).
    public var id: String
    public var status: Status
    /// What was found, in words.
    public var detail: String
    /// What to do (failures, and skipped checks that could be set up).
    public var fix: String?

    public init(_ id: String, _ status: Status, _ detail: String, fix: String? = nil) {
        self.id = id
        self.status = status
        self.detail = detail
        self.fix = fix
    }
}

/// Every check of one `doctor` run, in the order they were made.
public struct DoctorReport: Sendable, Hashable {
    public var checks: [DoctorCheck]

    public init(checks: [DoctorCheck] = []) { self.checks = checks }

    public var problems: Int { checks.filter { $0.status == .failed }.count }
    /// Exit 0 when nothing failed, else 1.
    public var healthy: Bool { problems == 0 }

    /// One line a check (`✓ api.key  …`), the fix under a failure, then the verdict. Every
    /// detail is escaped: it may quote a path, a URL or a server's words. `colour` paints the
    /// marks (green ✓, red ✗, dim –) for a terminal.
    public func text(colour: Bool = false) -> String {
        let width = checks.map(\.id.count).max() ?? 0
        var out = ""
        for check in checks {
            let padded = check.id.padding(toLength: width, withPad: " ", startingAt: 0)
            var mark = check.status.mark
            if colour {
                let code = switch check.status {
                case .ok: "32"
                case .failed: "1;31"
                case .skipped: "2"
                }
                mark = "\u{1B}[\(code)m\(mark)\u{1B}[0m"
            }
            out += "\(mark) \(padded)  \(SafeText.escaped(check.detail))\n"
            if let fix = check.fix, check.status != .ok {
                out += "  \(String(repeating: " ", count: width))  → \(SafeText.escaped(fix))\n"
            }
        }
        out += healthy
            ? "\nAll good: nothing to fix.\n"
            : "\n\(CountNoun.problem.count(problems)) to fix (✗ above).\n"
        return out
    }

    /// `{"checks": [{"detail", "fix", "id", "status"}], "ok": Bool, "problems": N}`.
    public func json() -> String {
        var out = JSONOutput()
        out.beginObject()
        out.key("checks")
        out.beginArray()
        for check in checks {
            out.beginObject()
            out.member("detail", check.detail)
            out.nullableMember("fix", check.fix)
            out.member("id", check.id)
            out.member("status", check.status.rawValue)
            out.endObject()
        }
        out.endArray()
        out.member("ok", healthy)
        out.member("problems", problems)
        out.endObject()
        out.newline()
        return String(decoding: out.bytes, as: UTF8.self)
    }
}
