import Foundation
import Testing

/// CLI wording, pinned in one file per topic (`Goldens/NAME.txt`): a change of words shows as
/// one diff there, not as sentence checks failing across the suites, which compare codes and
/// values. `RECORD_GOLDENS=1 swift test --filter …` rewrites the files, to review in the diff.
enum Golden {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Goldens")

    /// `text` must be the golden `name` exactly; the first line that differs is named.
    static func check(_ name: String, _ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let url = folder.appendingPathComponent(name + ".txt")
        if ProcessInfo.processInfo.environment["RECORD_GOLDENS"] == "1" {
            try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try? Data(text.utf8).write(to: url)
            return
        }
        guard let expected = try? String(contentsOf: url, encoding: .utf8) else {
            Issue.record("no golden \(name).txt: record it with RECORD_GOLDENS=1 and review it", sourceLocation: sourceLocation)
            return
        }
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

/// Commands and what they said, for a golden: `$ receiptdash ARGS`, the exit status, then
/// standard output and standard error, each with what changes from run to run replaced (a
/// scratch folder, a port) by a name in angle brackets.
final class Transcript {
    private(set) var text = ""
    private let replacements: [(String, String)]

    init(replacing replacements: [(String, String)] = []) {
        self.replacements = replacements
    }

    func normalised(_ said: String) -> String {
        // A retry's delay is jittered, and an attempt's time is measured.
        replacements.reduce(said) { $0.replacingOccurrences(of: $1.0, with: $1.1) }
            .replacingOccurrences(of: #"in [0-9]+\.[0-9]+ s:"#, with: "in <delay> s:", options: .regularExpression)
            .replacingOccurrences(of: #"after [0-9]+\.[0-9]+ s"#, with: "after <delay> s", options: .regularExpression)
            .replacingOccurrences(of: #"in [0-9]+ ms"#, with: "in <time> ms", options: .regularExpression)
    }

    /// Records one command and returns what it said, for the checks of codes and values.
    @discardableResult
    func record(_ arguments: [String], _ run: CLIRunner.Run) -> CLIRunner.Run {
        text += "$ receiptdash \(normalised(arguments.joined(separator: " ")))\nexit \(run.status)\n"
        if !run.stdout.isEmpty { text += "stdout:\n" + normalised(run.stdout) + (run.stdout.hasSuffix("\n") ? "" : "\n") }
        if !run.stderr.isEmpty { text += "stderr:\n" + normalised(run.stderr) + (run.stderr.hasSuffix("\n") ? "" : "\n") }
        text += "\n"
        return run
    }
}
