import Foundation

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
