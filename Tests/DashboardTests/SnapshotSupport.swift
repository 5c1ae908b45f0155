import Foundation
import Testing

/// Compares `actual` with `Snapshots/NAME.txt` beside this file. A missing snapshot (or
/// `RECORD_SNAPSHOTS=1`) is written and the test fails, so a new baseline is always looked at
/// before it is committed.
func assertSnapshot(_ actual: String, named name: String, sourceLocation: SourceLocation = #_sourceLocation) {
    let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Snapshots")
    let file = folder.appendingPathComponent("\(name).txt")
    let record = ProcessInfo.processInfo.environment["RECORD_SNAPSHOTS"] != nil
    if !record, let expected = try? String(contentsOf: file, encoding: .utf8) {
        if expected != actual {
            let diff = zip(expected.split(separator: "\n", omittingEmptySubsequences: false), actual.split(separator: "\n", omittingEmptySubsequences: false))
                .enumerated().first { $0.element.0 != $0.element.1 }
            Issue.record(
                "snapshot \(name) differs at line \((diff?.offset ?? 0) + 1):\nexpected: \(diff?.element.0 ?? "")\nactual:   \(diff?.element.1 ?? "")",
                sourceLocation: sourceLocation)
        }
        return
    }
    try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    try? actual.write(to: file, atomically: true, encoding: .utf8)
    Issue.record("recorded a new snapshot \(name); check it and run again", sourceLocation: sourceLocation)
}
