import AppStoreClients
import CustomerTimeline
import Foundation
import JSONWriting
import ReceiptRendering
import UntrustedText

/// What `receiptdash customer` writes: the stories a ``CustomerFinder`` found as text, JSON or
/// CSV (the events), or why there is none, as a JSON error object with `--format json`.
public struct CustomerReport: Sendable {
    public var format: TableFormat
    /// List each timeline newest first.
    public var newestFirst: Bool
    public var console: Console
    /// `--verbose`: a line per retry's wait (``RetryProgress``).
    public var verbose = false

    public init(format: TableFormat, newestFirst: Bool, console: Console) {
        self.format = format
        self.newestFirst = newestFirst
        self.console = console
    }

    /// Finds the customer and writes the stories; false when none was found or a source failed
    /// (what the others gave is still written).
    public func find(
        _ query: CustomerQuery, with finder: CustomerFinder, at instant: Date, pointInTime: Bool, afterSearch: () async -> Void = {}
    ) async -> Bool {
        let progress = RetryProgress(console: console, verbose: verbose)
        let result = await finder.find(query, at: instant, pointInTime: pointInTime) { progress.event($0) }
        progress.finish()
        await afterSearch()
        if let notFound = result.notFound {
            fail(notFound, code: "not-found")
            return false
        }
        let stories = newestFirst ? result.stories.map(\.newestFirst) : result.stories
        switch format {
        case .json:
            var out = JSONOutput(flushingTo: console)
            CustomerJSON.render(stories, into: &out)
            out.flush()
        case .csv:
            console.output(CustomerCSV.render(stories))
        case .text:
            if stories.count > 1 {
                console.output("\(stories.count) customers have this app account token:\n\n")
            }
            console.output(stories.map(CustomerText.render).joined(separator: "\n"))
        }
        return !result.failed
    }

    /// Says `message` (status 1 follows): a JSON error object with `--format json`.
    public func fail(_ message: String, code: String = "failed") {
        if format == .json {
            LookupOutput.writeError(code: code, message: message, format: .json, to: console)
        } else {
            console.error("receiptdash: \(SafeText.escaped(message))")
        }
    }
}
