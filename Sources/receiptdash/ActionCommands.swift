import AppStoreClients
import ArgumentParser
import AuditTrail
import AuditTrailSQLite
import CommandOptions
import Foundation
import AppStoreAPI
import JSONWriting
import ReceiptRendering
import ReceiptCore
import ReceiptTrust
import ReceiptWatch
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

    @OptionGroup var tls: TLSTrustOptions

    @Flag(name: .long, help: "Act even when the customer's data is judged invalid (not genuine); the plan says so.")
    var forceUntrusted = false

    @Flag(name: .long, help: "Say each retry's wait on a line of its own (default: one line rewritten in place on a terminal, none elsewhere).")
    var verbose = false

    func validate() throws {
        if let db { _ = try AuditOpening.parse(db) }
        if yes && dryRun { throw ValidationError("--yes sends and --dry-run sends nothing: give one of them.") }
    }
}

/// Wires a write: read-only first, then the request, the client and the audit trail for
/// ``ActionSession``, which plans, confirms, sends and answers.
struct ActionFlow {
    var action: APIAction
    var ids: ActionIDs
    var options: ActionOptions
    var api: APIOptions
    var extendDays: Int?
    var extraLines: [String] = []
    /// `--wait` (test notification attempts, mass extension status).
    var wait = false
    /// Built once the request id is known (a body carries it).
    var makeRequest: (_ requestID: String) throws -> APIRequest

    func run() async throws {
        if action.writes, let reason = try api.readOnlyReason(flag: options.readOnly) {
            Console.standard.error("receiptdash: read-only (\(reason)): \(action.rawValue) writes to Apple and is refused; reads are unaffected")
            throw ExitCode.validationFailure
        }
        let requestID = options.requestId ?? UUID().uuidString.lowercased()
        let request: APIRequest
        let pipeline: ReceiptPipeline
        let credentials: APICredentials
        do {
            request = try makeRequest(requestID)
            pipeline = ReceiptPipeline(at: Date(), evaluator: TrustEvaluator(anchors: try api.trustAnchors()))
            credentials = try api.credentials()
        } catch let error as APIFailure {
            throw ValidationError(error.reason)
        } catch let error as ActionRuleError {
            throw ValidationError(error.commandLine)
        } catch let error as APIOptionsError {
            LookupOutput.writeError(code: "configuration", message: error.description, format: options.format, to: .standard)
            throw ExitStatus.usage
        }
        var session = ActionSession(
            action: action, ids: ids, selection: options.environment, format: options.format,
            requestID: action.writes ? requestID : options.requestId, console: .standard)
        (session.extendDays, session.extraLines, session.dryRun, session.yes, session.wait, session.forceUntrusted) =
            (extendDays, extraLines, options.dryRun, options.yes, wait, options.forceUntrusted)
        session.verbose = options.verbose
        // The audit trail is opened before anything is sent: a write to Apple cannot be taken
        // back, so one that could not be recorded is not made.
        let store: (any AuditBackend)?
        if action.writes && !options.dryRun {
            let path = options.db ?? AuditStore.defaultPath(environment: ProcessInfo.processInfo.environment)
            do {
                store = try await AuditStores.open(path)
            } catch {
                Console.standard.error("receiptdash: \(error.reason); nothing was sent")
                throw ExitCode.failure
            }
        } else {
            store = nil
        }
        // SIGINT and SIGTERM are held from the pending row's commit to the outcome's record:
        // the answer is waited for (the client's request timeout and a margin) and recorded.
        let signals = WriteSignalGuard(seconds: 25)
        let exit = try await AuditStoreService.closing(store) {
            let client: AppStoreServerAPIClient
            do {
                client = try api.makeClient(credentials, caFile: options.tls.caFile)
            } catch let error as APIOptionsError {
                LookupOutput.writeError(code: "configuration", message: error.description, format: options.format, to: .standard)
                throw ExitStatus.usage
            }
            session.recording = store.map { ActionRecording.audit($0, holding: signals) }
            return await session.run(request, client: client, pipeline: pipeline)
        }
        if let signal = signals.release() { throw ExitStatus.signal(signal) }
        if exit != .done { throw ExitCode(exit.rawValue) }
    }
}

extension APIOptions {
    /// Why writes to Apple are refused, if they are: `--read-only`, RECEIPTDASH_READ_ONLY, or
    /// the profile's `read_only = true`.
    func readOnlyReason(flag: Bool) throws -> String? {
        try APIProfile.readOnlyReason(flag: flag, environment: ProcessInfo.processInfo.environment, profile: apiProfile) { try profile() }
    }
}
