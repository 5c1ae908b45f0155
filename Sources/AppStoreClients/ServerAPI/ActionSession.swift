import Foundation
import AppStoreAPI
import JSONWriting
import ReceiptCore
import ReceiptTrust
import UntrustedText

/// One write to Apple as a command runs it, once its request is built and its client made:
/// the plan (a look-up of the customer), then a dry run, or the plan shown and confirmed, the
/// send, the audit row and the answer. Everything is said on standard output and error.
public struct ActionSession: Sendable {
    /// How the command ends.
    public enum Exit: Int32, Sendable {
        case done = 0
        case failed = 1
        /// Not sent for want of `--yes` without a terminal.
        case usage = 64
    }

    public var action: APIAction
    public var ids: ActionIDs
    public var selection: APIEnvironmentSelection
    public var format: OutputFormat
    /// The id printed and sent (extensions carry it in their body).
    public var requestID: String?
    public var extendDays: Int?
    public var extraLines: [String] = []
    public var dryRun = false
    /// `--yes`: send without asking.
    public var yes = false
    /// `--wait`: a test notification's send attempts, or a mass extension's completion, asked
    /// for before answering.
    public var wait = false
    /// `--force-untrusted`: act on customer data judged `invalid` (named in the plan).
    public var forceUntrusted = false
    /// `--verbose`: a line per retry's wait (``RetryProgress``).
    public var verbose = false
    /// Where the plan, the progress and the answer are said, and the person is asked (y/N).
    public var console: Console
    /// Records a write before it is sent and completes the record after: a write that cannot
    /// be recorded is not sent. Nil for a read (a mass extension's status).
    public var recording: ActionRecording?

    public init(
        action: APIAction, ids: ActionIDs, selection: APIEnvironmentSelection, format: OutputFormat, requestID: String?,
        console: Console
    ) {
        self.console = console
        self.action = action
        self.ids = ids
        self.selection = selection
        self.format = format
        self.requestID = requestID
    }

    /// Runs the write with `client` (shut down before returning, whatever happens).
    public func run(_ request: APIRequest, client: AppStoreServerAPIClient, pipeline: ReceiptPipeline) async -> Exit {
        let exit = await runOpen(request, CustomerActions(client: client, pipeline: pipeline))
        try? await client.shutdown()
        return exit
    }

    private func runOpen(_ request: APIRequest, _ actions: CustomerActions) async -> Exit {
        let progress = RetryProgress(console: console, verbose: verbose)
        let events: @Sendable (APIClientEvent) -> Void = { progress.event($0) }
        let plan: ActionPlan
        let planned = await actions.plan(
            action, request, ids: ids, selection: selection, requestID: requestID, extraLines: extraLines, extendDays: extendDays,
            forceUntrusted: forceUntrusted, onEvent: events)
        progress.finish()
        switch planned {
        case .success(let made): plan = made
        case .failure(let failure):
            let words = failure.apiError?.actionDescription ?? failure.reason
            // The refusal of untrusted data says itself that nothing was sent.
            let message =
                switch failure.code {
                case .untrustedData: words
                case .environmentUnknown: "nothing was sent: \(words)"
                default: "the customer could not be read, nothing was sent: \(words)"
                }
            ErrorOutput.write(code: failure.code.rawValue, message: message, format: format, to: console)
            return .failed
        }
        if dryRun {
            write(ActionReport(plan: plan, dryRun: true, outcome: nil, result: nil, records: [], failure: nil))
            return .done
        }

        if action.writes {
            // The plan, then the question: on standard output for text, on standard error
            // beside the prompt for JSON (standard output keeps one JSON object).
            if format == .text { console.output(plan.text) } else if !yes { console.errorRaw(plan.text) }
            if !yes {
                switch console.confirm("send it? [y/N] ") {
                case nil:
                    console.error("receiptdash: not sent: add --yes to send, or --dry-run to see the request")
                    return .usage
                case false?:
                    console.error("receiptdash: not sent")
                    return .failed
                case true?:
                    break
                }
            }
        }
        // Recorded as pending before the first byte leaves; not sent when that fails.
        var pending: ActionRecording.Pending?
        if let recording, action.writes {
            switch await recording.begin(plan) {
            case .success(let row): pending = row
            case .failure(let failure):
                ErrorOutput.write(code: failure.code, message: "\(failure.words); nothing was sent", format: format, to: console)
                return .failed
            }
            // The id to repeat it with, said before sending (standard error keeps JSON's
            // standard output one object): a kill from here on leaves it on screen and in the
            // trail.
            if let id = plan.requestID {
                console.errorRaw("receiptdash: sending \(action.rawValue) to \(plan.environment.rawValue), request id \(SafeText.escaped(id)) (recorded as pending in \(SafeText.escaped(recording.location)))\n")
            }
        }
        var report = await actions.send(plan, onEvent: events)
        progress.finish()
        // Recorded before anything else: standard output may be gone.
        var recorded = true
        if let pending, let recording {
            if let failure = await recording.complete(pending, report) {
                recorded = false
                console.error("receiptdash: the \(action.rawValue) was sent (\(report.outcome?.rawValue ?? "failed")) but its outcome could not be recorded: \(failure.words); the trail keeps it as pending (unknown)")
            }
        }
        while wait, action == .massExtendStatus, report.outcome == .success, report.result?.object?["complete"]?.bool == false {
            console.error("receiptdash: not complete yet; asking again in 2 s")
            try? await Task.sleep(for: .seconds(2))
            if Task.isCancelled { break }
            report = await actions.send(plan, onEvent: events)
            progress.finish()
        }
        if report.outcome == .success, wait, case .object(var fields)? = report.result, let token = fields["test_notification_token"]?.text {
            fields["send_attempts"] = .array(await attempts(actions, token: token, environment: plan.environment))
            report.result = .object(fields)
        }
        write(report)
        return report.outcome == .success && recorded ? .done : .failed
    }

    /// A test notification's send attempts, asked once a second for up to 30 seconds.
    private func attempts(_ actions: CustomerActions, token: String, environment: APIEnvironment) async -> [JSONValue] {
        for _ in 0..<30 {
            if let attempts = await actions.testNotificationAttempts(token, environment: environment), !attempts.isEmpty { return attempts }
            try? await Task.sleep(for: .seconds(1))
        }
        return []
    }

    private func write(_ report: ActionReport) {
        switch format {
        case .json:
            console.line(JSONOutput.text(of: report.json))
        case .text:
            console.output(report.text)
            if let failure = report.failureText { console.error("receiptdash: \(failure)") }
        }
    }
}

/// Where a write is recorded: before it is sent (`pending`), then completed with the outcome.
/// The executable and the dashboard supply it over their audit trail.
public struct ActionRecording: Sendable {
    /// A pending record, to complete.
    public struct Pending: Sendable, Hashable {
        public var id: Int64
        public init(id: Int64) { self.id = id }
    }

    /// Why a record could not be written: a code for machines, words for people.
    public struct Failure: Error, Sendable, Hashable {
        public var code: String
        public var words: String
        public init(code: String, words: String) {
            self.code = code
            self.words = words
        }
    }

    /// Where the trail is, as it may be shown.
    public var location: String
    /// Records the plan as pending, durably; a failure means nothing may be sent.
    public var begin: @Sendable (ActionPlan) async -> Result<Pending, Failure>
    /// Completes the pending record with the report; nil when recorded.
    public var complete: @Sendable (Pending, ActionReport) async -> Failure?

    public init(
        location: String, begin: @escaping @Sendable (ActionPlan) async -> Result<Pending, Failure>,
        complete: @escaping @Sendable (Pending, ActionReport) async -> Failure?
    ) {
        self.location = location
        self.begin = begin
        self.complete = complete
    }
}
