import AppStoreClients
import ArgumentParser
import AuditStore
import AuditTrail
import Foundation
import ReceiptCore
import UntrustedText

/// What every write to Apple takes besides the API options.
struct ActionOptions: ParsableArguments {
    @Option(name: .long, help: "auto (find the transaction in production, then sandbox), production or sandbox.")
    var environment: APIEnvironmentSelection = .auto

    @Option(name: .long, help: "Output format: text or json.")
    var format: OutputFormat = .text

    @Option(
        name: .long,
        help: ArgumentHelp("Record the write in this audit database (default: the audit store's default path).", valueName: "path|url"))
    var db: String?

    @Flag(name: .long, help: "Send without asking (needed without a terminal).")
    var yes = false

    @Flag(name: .long, help: "Print the method, path and body that would be sent, and send nothing.")
    var dryRun = false

    @Flag(name: .long, help: "Refuse every write (as RECEIPTDASH_READ_ONLY=1 or a profile's read_only = true do).")
    var readOnly = false

    @Option(
        name: .long,
        help: ArgumentHelp("The request identifier (default: a new UUID); the same id again is not applied twice.", valueName: "id"))
    var requestId: String?

    @Option(name: .long, help: ArgumentHelp("Extra trusted TLS root certificates (PEM or DER).", valueName: "file"))
    var caFile: String?

    func validate() throws {
        if let db { _ = try AuditOpening.parse(db) }
        if yes && dryRun { throw ValidationError("--yes sends and --dry-run sends nothing: give one of them.") }
    }

    /// Why writes are refused, if they are: the flag, the variable or the profile.
    func readOnlyReason(_ api: APIOptions) throws -> String? {
        if readOnly { return "--read-only" }
        if ProcessInfo.processInfo.environment["RECEIPTDASH_READ_ONLY"].map({ !$0.isEmpty && $0 != "0" }) == true {
            return "RECEIPTDASH_READ_ONLY is set"
        }
        if try api.profile()?.readOnly == true { return "the profile \(api.apiProfile ?? "") says read_only = true" }
        return nil
    }
}

/// The one flow of every write: read-only, credentials, the plan (a look-up of the customer),
/// dry run or confirmation, the send, the audit row, the answer.
struct ActionFlow {
    var action: APIAction
    var ids: ActionIDs
    var options: ActionOptions
    var api: APIOptions
    var extendDays: Int?
    var extraLines: [String] = []
    /// `test-notification --wait`: ask for its send attempts before answering.
    var wait = false
    /// Built once the request id is known (a body carries it).
    var makeRequest: (_ requestID: String) throws -> APIRequest

    func run() async throws {
        if action.writes, let reason = try options.readOnlyReason(api) {
            Standard.error("receiptdash: read-only (\(reason)): \(action.rawValue) writes to Apple and is refused; reads are unaffected")
            throw ExitCode.validationFailure
        }
        let requestID = options.requestId ?? UUID().uuidString.lowercased()
        let request: APIRequest
        let credentials: APICredentials
        let client: AppStoreServerAPIClient
        let pipeline: ReceiptPipeline
        do {
            request = try makeRequest(requestID)
            pipeline = ReceiptPipeline(at: Date(), evaluator: TrustEvaluator(anchors: try api.trustAnchors()))
            credentials = try api.credentials()
            client = try api.makeClient(credentials, caFile: options.caFile)
        } catch let error as APIFailure {
            throw ValidationError(error.reason)
        } catch let error as ActionRuleError {
            throw ValidationError(error.description)
        } catch let error as APIOptionsError {
            LookupOutput.writeError(code: "configuration", message: error.description, format: options.format)
            throw ExitCode.failure
        }
        let events: @Sendable (APIClientEvent) -> Void = { event in
            if let waiting = event.waitingLine { Standard.error("receiptdash: \(waiting)") }
        }
        let actions = CustomerActions(client: client, pipeline: pipeline)
        let planned = await actions.plan(
            action, request, ids: ids, selection: options.environment, requestID: action.writes ? requestID : options.requestId,
            extraLines: extraLines, extendDays: extendDays, onEvent: events)
        let plan: ActionPlan
        switch planned {
        case .success(let made): plan = made
        case .failure(let failure):
            try? await client.shutdown()
            let words = failure.apiError.map { "\($0.rawValue) \($0.actionExplanation)" } ?? failure.reason
            LookupOutput.writeError(code: failure.code.rawValue, message: "the customer could not be read, nothing was sent: \(words)", format: options.format)
            throw ExitCode.failure
        }
        if options.dryRun {
            try? await client.shutdown()
            write(ActionReport(plan: plan, dryRun: true, outcome: nil, result: nil, records: [], failure: nil))
            return
        }
        if action.writes {
            // The plan, then the question: on standard output for text, on standard error
            // beside the prompt for JSON (standard output keeps one JSON object).
            if options.format == .text { Standard.output(plan.text) } else if !options.yes { Standard.errorRaw(plan.text) }
            if !options.yes {
                guard isatty(STDIN_FILENO) != 0 else {
                    try? await client.shutdown()
                    Standard.error("receiptdash: not sent: add --yes to send, or --dry-run to see the request")
                    throw ExitCode.validationFailure
                }
                Standard.errorRaw("send it? [y/N] ")
                let answer = readLine(strippingNewline: true)?.trimmingCharacters(in: .whitespaces).lowercased()
                guard answer == "y" || answer == "yes" else {
                    try? await client.shutdown()
                    Standard.error("receiptdash: not sent")
                    throw ExitCode.failure
                }
            }
        }
        var report = await actions.send(plan, onEvent: events)
        if report.outcome == .success, action == .testNotification, wait, case .object(var fields)? = report.result,
            let token = fields["test_notification_token"]?.text
        {
            fields["send_attempts"] = .array(await waitForAttempts(actions, token: token, environment: plan.environment))
            report.result = .object(fields)
        }
        try? await client.shutdown()
        let recorded = action.writes ? await record(report) : true
        write(report)
        if report.outcome != .success || !recorded { throw ExitCode.failure }
    }

    /// A test notification's send attempts, asked once a second for up to 30 seconds.
    private func waitForAttempts(_ actions: CustomerActions, token: String, environment: APIEnvironment) async -> [JSONValue] {
        for _ in 0..<30 {
            if let attempts = await actions.testNotificationAttempts(token, environment: environment), !attempts.isEmpty { return attempts }
            try? await Task.sleep(for: .seconds(1))
        }
        return []
    }

    /// Records a write that was sent (refused and unknown ones too); false when it could not be.
    private func record(_ report: ActionReport) async -> Bool {
        guard report.outcome != .failed || report.records.contains(where: { $0.endpoint == report.plan.request.endpoint }) else { return true }
        let path = options.db ?? AuditStore.defaultPath(environment: ProcessInfo.processInfo.environment)
        let row = AuditAction(
            at: Date(), user: ProcessInfo.processInfo.userName, action: action.rawValue, environment: report.plan.environment.rawValue,
            requestID: report.plan.requestID, originalTransactionID: report.plan.ids.originalTransactionID,
            transactionID: report.plan.ids.transactionID, productID: report.plan.ids.productID, requestBody: report.plan.request.bodyText,
            httpStatus: report.httpStatus, apiError: report.apiError?.rawValue, result: report.outcome?.rawValue ?? "failed")
        do {
            let store = try await AuditStores.open(path)
            return try await AuditStoreService.closing(store) {
                try await store.recordAction(row)
                return true
            }
        } catch {
            Standard.error("receiptdash: the \(action.rawValue) was sent (\(row.result)) but could not be recorded in \(path): \(AuditStores.words(error))")
            return false
        }
    }

    private func write(_ report: ActionReport) {
        switch options.format {
        case .json:
            Standard.line(InspectJSON.encode(report.json))
        case .text:
            Standard.output(report.text)
            if let failure = report.failureText { Standard.error("receiptdash: \(failure)") }
        }
    }
}
