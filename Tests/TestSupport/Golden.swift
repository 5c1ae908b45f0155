import Foundation
import Synchronization
import Testing

/// Wording, pinned in one file per topic (`Goldens/NAME.txt` beside the test file that checks
/// it): a change of words shows as one diff there, not as sentence checks failing across the
/// suites, which compare codes and values. `RECORD_GOLDENS=1 swift test --filter …` rewrites
/// the files, to review in the diff.
package enum Golden {
    /// The `Goldens` folder beside `filePath`, the test file that checks.
    package static func folder(_ filePath: String = #filePath) -> URL {
        URL(fileURLWithPath: filePath).deletingLastPathComponent().appendingPathComponent("Goldens")
    }

    package static var recording: Bool { ProcessInfo.processInfo.environment["RECORD_GOLDENS"] == "1" }

    /// `text` must be the golden `name` exactly; the first line that differs is named.
    package static func check(
        _ name: String, _ text: String, filePath: String = #filePath, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let folder = folder(filePath)
        let url = folder.appendingPathComponent(name + ".txt")
        if recording {
            try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try? Data(text.utf8).write(to: url)
            return
        }
        guard let expected = try? String(contentsOf: url, encoding: .utf8) else {
            Issue.record("no golden \(name).txt: record it with RECORD_GOLDENS=1 and review it", sourceLocation: sourceLocation)
            return
        }
        compare(name, expected: expected, text, sourceLocation: sourceLocation)
    }

    static func compare(_ name: String, expected: String, _ text: String, sourceLocation: SourceLocation) {
        guard expected != text else { return }
        let (want, got) = (expected.components(separatedBy: "\n"), text.components(separatedBy: "\n"))
        let line = zip(want, got).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(want.count, got.count)
        Issue.record(
            """
            \(name).txt differs at line \(line + 1):
              golden: \(line < want.count ? want[line] : "(ends)")
              now:    \(line < got.count ? got[line] : "(ends)")
            """, sourceLocation: sourceLocation)
    }
}

/// The wording one test meets, pinned in its section of a golden file shared by the tests of
/// one area (`Goldens/NAME.txt`, a `== test name` line before each test's section): the test
/// says each sentence it wants pinned (``said(_:)``), then ``check()`` compares them with its
/// section. Recording (`RECORD_GOLDENS=1`) rewrites that section only. A parameterised test
/// keys a section per argument (`case:`, shown as `== test name [label]`).
package final class Wording: Sendable {
    private let name: String
    private let filePath: String
    private let test: String
    private let lines = Mutex<[String]>([])
    /// What changes from run to run (a port, a folder), replaced by a name in angle brackets.
    private let replacements: [(String, String)]
    /// Regular expressions for what changes from run to run in this test's texts (a date of
    /// now, a request id), each with the name in angle brackets that replaces it.
    private let matching: [(String, String)]

    /// `case:` names the argument of a parameterised test, whose cases each have a section.
    package init(
        _ name: String, case label: String? = nil, replacing replacements: [(String, String)] = [],
        matching: [(String, String)] = [], filePath: String = #filePath
    ) {
        self.name = name
        self.filePath = filePath
        self.replacements = replacements
        self.matching = matching
        let test = Test.current?.name ?? "(no test)"
        self.test = label.map { "\(test) [\($0)]" } ?? test
    }

    /// Pins `text` (nil as `(none)`) on lines of its own, with what changes from run to run
    /// named instead: the replacements given, then loopback ports (`<port>`), temporary folders
    /// (`<tmp>`), measured times and jittered delays; the `matching:` patterns come first.
    package func said<S: StringProtocol>(_ text: S?) {
        let given = replacements.reduce(text.map { String($0) } ?? "(none)") { (text: String, pair: (String, String)) -> String in
            text.replacingOccurrences(of: pair.0, with: pair.1)
        }
        let shown = (matching + Self.patterns).reduce(given) { (text: String, pattern: (String, String)) -> String in
            text.replacingOccurrences(of: pattern.0, with: pattern.1, options: .regularExpression)
        }
        lines.withLock { $0.append(shown) }
    }

    /// Instants (`<instant>`), for a test whose only words that change are dates of now.
    package static let instants: [(String, String)] = [
        (#"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:?[0-9]{2})"#, "<instant>")
    ]

    /// What changes from run to run in a test that meets the present (for `matching:`): instants
    /// (`<instant>`), UUIDs such as request ids and nonces (`<uuid>`), measured milliseconds
    /// (`<ms> ms`), rates over measured spans, and throwaway PostgreSQL databases' names.
    package static let runVariables: [(String, String)] = instants + [
        (#"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"#, "<uuid>"),
        (#"\b[0-9]+ ms\b"#, "<ms> ms"),
        (#"[0-9]+\.[0-9]+/s over [0-9]+\.[0-9]+ s\b"#, "<rate>/s over <span> s"),
        (#"receiptdash_t_[0-9a-f]+"#, "receiptdash_t_<db>"),
    ]

    /// The repository's folder, wherever it is cloned (`<repo>`): paths of fixtures and of
    /// the packages' checkouts in messages.
    private static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    private static let patterns: [(String, String)] = [
        (NSRegularExpression.escapedPattern(for: repository), "<repo>"),
        (NSRegularExpression.escapedPattern(for: TemporaryFolder.base) + #"/[^/\s]+-[A-Za-z0-9]{6}"#, "<tmp>"),
        (#"(127\.0\.0\.1|localhost|\[::1\]):[0-9]+"#, "$1:<port>"),
        (#"in [0-9]+ ms"#, "in <time> ms"),
        (#"in [0-9]+\.[0-9]+ s\b"#, "in <delay> s"),
        (#"after [0-9]+\.[0-9]+ s\b"#, "after <delay> s"),
    ]

    /// Pins each of `texts`.
    package func said<S: StringProtocol>(_ texts: [S]) {
        for text in texts { said(text) }
    }

    /// Pins each of `texts`, nil as `(none)`.
    package func said<S: StringProtocol>(_ texts: [S?]) {
        for text in texts { said(text) }
    }

    /// Compares what was said with the test's section of the golden file.
    package func check(sourceLocation: SourceLocation = #_sourceLocation) {
        let body = Self.trimmed(lines.withLock { $0 }.joined(separator: "\n").components(separatedBy: "\n"))
        let url = Golden.folder(filePath).appendingPathComponent(name + ".txt")
        Self.files.withLock { _ in
            let sections = Self.sections(of: (try? String(contentsOf: url, encoding: .utf8)) ?? "")
            if Golden.recording {
                var updated = sections.filter { $0.test != test }
                updated.append((test, body))
                updated.sort { $0.test < $1.test }
                try? FileManager.default.createDirectory(at: Golden.folder(filePath), withIntermediateDirectories: true)
                let text = updated.map { "== \($0.test)\n\($0.body)\n" }.joined(separator: "\n")
                try? Data(text.utf8).write(to: url)
                return
            }
            guard let expected = sections.first(where: { $0.test == test }) else {
                Issue.record("no section \(test) in golden \(name).txt: record it with RECORD_GOLDENS=1 and review it", sourceLocation: sourceLocation)
                return
            }
            Golden.compare("\(name) (\(test))", expected: expected.body, body, sourceLocation: sourceLocation)
        }
    }

    /// One lock for every golden file: tests of one area record their sections in parallel.
    private static let files = Mutex(())

    private static func sections(of text: String) -> [(test: String, body: String)] {
        var sections: [(test: String, body: String)] = []
        var current: (test: String, lines: [String])?
        for line in text.components(separatedBy: "\n") {
            if line.hasPrefix("== ") {
                if let current { sections.append((current.test, Self.trimmed(current.lines))) }
                current = (String(line.dropFirst(3)), [])
            } else {
                current?.lines.append(line)
            }
        }
        if let current { sections.append((current.test, Self.trimmed(current.lines))) }
        return sections
    }

    /// A section's lines without the blank line that separates it from the next.
    private static func trimmed(_ lines: [String]) -> String {
        var lines = lines
        while lines.last == "" { lines.removeLast() }
        return lines.joined(separator: "\n")
    }
}
