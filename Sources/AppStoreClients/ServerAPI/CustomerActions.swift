import Foundation
import ReceiptCore
import UntrustedText

/// The ids a write is about, as the plan, the JSON and the audit trail name them.
public struct ActionIDs: Sendable, Hashable {
    public var originalTransactionID: String?
    public var transactionID: String?
    public var productID: String?

    public init(originalTransactionID: String? = nil, transactionID: String? = nil, productID: String? = nil) {
        self.originalTransactionID = originalTransactionID
        self.transactionID = transactionID
        self.productID = productID
    }
}

/// A write, ready to send: the request (its body holds the request identifier, so a retry
/// sends the same bytes), the environment it goes to, and what it will change in words.
public struct ActionPlan: Sendable {
    public var action: APIAction
    public var request: APIRequest
    public var requestID: String?
    public var environment: APIEnvironment
    public var ids: ActionIDs
    /// What the write changes, a line each (customer, product, "expires … → …", request id).
    public var lines: [String]
    /// The look-up the plan was read from (its requests are reported with the write's).
    public var lookupRecords: [APIRequestRecord] = []

    public init(
        action: APIAction, request: APIRequest, requestID: String?, environment: APIEnvironment, ids: ActionIDs, lines: [String],
        lookupRecords: [APIRequestRecord] = []
    ) {
        self.action = action
        self.request = request
        self.requestID = requestID
        self.environment = environment
        self.ids = ids
        self.lines = lines
        self.lookupRecords = lookupRecords
    }

    /// The plan as a person reads it before saying yes.
    public var text: String {
        var out = "\(action.rawValue) in \(environment.rawValue):\n"
        for line in lines { out += "  \(SafeText.escaped(line))\n" }
        if let requestID {
            // Only the extensions carry the id to Apple, which applies an id once.
            let safely = action == .extend || action == .massExtend ? " (repeat with --request-id \(SafeText.escaped(requestID)) to retry safely)" : ""
            out += "  request id: \(SafeText.escaped(requestID))\(safely)\n"
        }
        return out
    }

    /// `{"method", "path", "body"}` as it would be sent.
    public var requestJSON: JSONValue {
        var object: [String: JSONValue] = ["method": .string(request.method.rawValue), "path": .string(request.pathAndQuery)]
        object["body"] = request.body.flatMap { try? JSONValue.parse($0) } ?? .null
        return .object(object)
    }

    /// What a dry run prints: the method, path and body that would be sent.
    public var dryRunText: String {
        "dry run: nothing sent\n\(request.method.rawValue) \(request.pathAndQuery)\n" + (request.bodyText.map { $0 + "\n" } ?? "")
    }
}

/// How a write ended.
public enum ActionOutcome: String, Sendable, Hashable {
    /// Apple took it.
    case success
    /// Apple refused it (an error code, or an HTTP error).
    case refused
    /// It could not be sent, or its answer was unusable.
    case failed
    /// Sent, and no answer came (a timeout or a dropped connection): it may have been applied.
    case unknown
}

/// What a write did: the outcome, Apple's answer as the JSON's `result`, every request made.
public struct ActionReport: Sendable {
    public var plan: ActionPlan
    public var dryRun: Bool
    public var outcome: ActionOutcome?
    public var result: JSONValue?
    public var records: [APIRequestRecord]
    public var failure: APIFailure?

    public init(plan: ActionPlan, dryRun: Bool, outcome: ActionOutcome?, result: JSONValue?, records: [APIRequestRecord], failure: APIFailure?) {
        self.plan = plan
        self.dryRun = dryRun
        self.outcome = outcome
        self.result = result
        self.records = records
        self.failure = failure
    }

    /// The last answer's HTTP status and error code.
    public var httpStatus: Int? { records.last(where: { $0.endpoint == plan.request.endpoint })?.httpStatus }
    public var apiError: APIErrorCode? { failure?.apiError }

    /// Why it failed, in words with what to do next.
    public var failureText: String? {
        guard let failure else { return nil }
        if outcome == .unknown {
            let again = plan.requestID.map { " Repeat it with --request-id \($0): the same request id is not applied twice." } ?? ""
            return "sent, but no answer came (\(failure.reason)): Apple may have applied it.\(again)"
        }
        if let code = failure.apiError { return "\(plan.environment.rawValue): \(code.actionDescription)" }
        return failure.reason
    }

    /// The JSON object (keys sorted): `action`, `dry_run`, `environment`, `request`,
    /// `request_id`, `requests`, `result`, and `error` on failure.
    public var json: JSONValue {
        var object: [String: JSONValue] = [
            "action": .string(plan.action.rawValue), "environment": .string(plan.environment.rawValue), "dry_run": .bool(dryRun),
            "request": plan.requestJSON, "request_id": plan.requestID.map(JSONValue.string) ?? .null,
            "requests": .array((plan.lookupRecords + records).map(\.json)), "result": result ?? .null,
        ]
        if let failure {
            object["error"] = .object([
                "code": .string(outcome == .unknown ? "unknown-outcome" : failure.code.rawValue), "message": .string(failureText ?? failure.reason),
                "api_error": failure.apiError.map { .integer(Int64($0.rawValue)) } ?? .null,
            ])
        }
        return .object(object)
    }

    /// The text a person reads after the write.
    public var text: String {
        if dryRun { return plan.dryRunText }
        switch outcome {
        // The result line carries Apple's words (a token, attempt results): escaped.
        case .success?: return "done: \(plan.action.rawValue) in \(plan.environment.rawValue)" + (resultLine.map { ": " + SafeText.escaped($0) } ?? "") + "\n"
        default: return ""
        }
    }

    /// The answer's essentials in a line.
    var resultLine: String? {
        guard case .object(let fields)? = result else { return nil }
        switch plan.action {
        case .extend:
            return fields["effective_date"]?.text.map { "expires \($0)" }
        case .massExtend:
            return fields["request_identifier"]?.text.map { "request \($0) accepted; ask `extend --status` for its progress" }
        case .massExtendStatus:
            guard fields["complete"]?.bool == true else { return "not complete yet" }
            return "complete: \(fields["succeeded_count"]?.int64 ?? 0) extended, \(fields["failed_count"]?.int64 ?? 0) failed"
        case .testNotification:
            let attempts = fields["send_attempts"]?.array?.compactMap { $0.object?["send_attempt_result"]?.text } ?? []
            return "token \(fields["test_notification_token"]?.text ?? "?")" + (attempts.isEmpty ? "" : "; attempts: " + attempts.joined(separator: ", "))
        default:
            return nil
        }
    }
}

/// Plans and sends the App Store Server API's writes: the plan is read from a look-up of the
/// customer (which also finds the environment under `auto`, as `lookup` does), the write goes
/// to that environment with the plan's request (retries send the same body, so the same
/// request identifier), and the outcome says whether Apple took it, refused it, or may have.
public struct CustomerActions: Sendable {
    public let client: AppStoreServerAPIClient
    public let pipeline: ReceiptPipeline

    public init(client: AppStoreServerAPIClient, pipeline: ReceiptPipeline) {
        self.client = client
        self.pipeline = pipeline
    }

    /// Looks the customer up and says what `request` will change. A look-up that fails (the
    /// id not found in either environment) fails the plan: nothing is sent.
    public func plan(
        _ action: APIAction, _ request: APIRequest, ids: ActionIDs, selection: APIEnvironmentSelection, requestID: String?,
        extraLines: [String] = [], extendDays: Int? = nil, onEvent: (@Sendable (APIClientEvent) -> Void)? = nil
    ) async -> Result<ActionPlan, APIFailure> {
        guard let id = ids.originalTransactionID ?? ids.transactionID else {
            let environment: APIEnvironment = selection == .sandbox ? .sandbox : .production
            return .success(ActionPlan(action: action, request: request, requestID: requestID, environment: environment, ids: ids, lines: extraLines))
        }
        let lookup = await CustomerLookupService(client: client, pipeline: pipeline).lookUp(.transactionID(id), environment: selection, onEvent: onEvent)
        if let failure = lookup.failure { return .failure(failure) }
        guard let environment = lookup.environment else { return .failure(APIFailure(.invalidResponse, "the look-up named no environment")) }
        var ids = ids
        var lines: [String] = []
        let purchases = lookup.transactions.compactMap(\.transaction)
        if let original = ids.originalTransactionID {
            let periods = purchases.filter { $0.originalTransactionID == original }
            let current = periods.max { ($0.expiresDate ?? $0.purchaseDate ?? .distantPast) < ($1.expiresDate ?? $1.purchaseDate ?? .distantPast) }
            ids.productID = ids.productID ?? current?.productID
            lines.append("customer: original transaction \(original)")
            let status = lookup.apiStatuses[original].map { " (\($0))" } ?? ""
            lines.append("product: \(current?.productID ?? "?")\(status)")
            if let days = extendDays, let expires = current?.expiresDate { lines.append(ExtendRenewalDateBody.planLine(expires: expires, days: days)) }
            if action == .appAccountToken { lines.append("app account token now: \(current?.appAccountToken ?? "none")") }
        } else if let transactionID = ids.transactionID {
            let transaction = purchases.first { $0.transactionID == transactionID }
            ids.productID = ids.productID ?? transaction?.productID
            ids.originalTransactionID = transaction?.originalTransactionID
            lines.append("transaction \(transactionID) (original \(transaction?.originalTransactionID ?? "?"))")
            lines.append("product: \(transaction?.productID ?? "?")")
        }
        return .success(
            ActionPlan(
                action: action, request: request, requestID: requestID, environment: environment, ids: ids, lines: lines + extraLines,
                lookupRecords: lookup.records))
    }

    /// Sends the plan's request (retried by `lookup`'s table, with the same body).
    public func send(_ plan: ActionPlan, onEvent: (@Sendable (APIClientEvent) -> Void)? = nil) async -> ActionReport {
        switch plan.action {
        case .extend:
            return report(plan, await client.send(plan.request, in: plan.environment, as: ExtendRenewalDateResponse.self, onEvent: onEvent)) {
                .object([
                    "original_transaction_id": $0.originalTransactionId.map(JSONValue.string) ?? .null,
                    "web_order_line_item_id": $0.webOrderLineItemId.map(JSONValue.string) ?? .null, "success": $0.success.map(JSONValue.bool) ?? .null,
                    "effective_date": $0.effectiveDate.map { .string(AppleDate.iso8601(Date(timeIntervalSince1970: Double($0) / 1000))) } ?? .null,
                ])
            }
        case .massExtend:
            return report(plan, await client.send(plan.request, in: plan.environment, as: MassExtendResponse.self, onEvent: onEvent)) {
                .object(["request_identifier": $0.requestIdentifier.map(JSONValue.string) ?? .null])
            }
        case .massExtendStatus:
            return report(plan, await client.send(plan.request, in: plan.environment, as: MassExtendStatusResponse.self, onEvent: onEvent)) {
                .object([
                    "complete": .bool($0.complete ?? false),
                    "complete_date": $0.completeDate.map { .string(AppleDate.iso8601(Date(timeIntervalSince1970: Double($0) / 1000))) } ?? .null,
                    "succeeded_count": $0.succeededCount.map(JSONValue.integer) ?? .null, "failed_count": $0.failedCount.map(JSONValue.integer) ?? .null,
                ])
            }
        case .testNotification:
            return report(plan, await client.send(plan.request, in: plan.environment, as: TestNotificationResponse.self, onEvent: onEvent)) {
                .object(["test_notification_token": .string($0.testNotificationToken), "send_attempts": .array([])])
            }
        case .consumption, .appAccountToken, .finish:
            return report(plan, await client.send(plan.request, in: plan.environment, as: APINoContent.self, onEvent: onEvent)) { _ in
                .object([:])
            }
        }
    }

    /// The send attempts of a test notification (`test-notification --wait`): nil while Apple
    /// has none to report yet (4040008).
    public func testNotificationAttempts(_ token: String, environment: APIEnvironment) async -> [JSONValue]? {
        let answer = await client.testNotificationStatus(token, environment: environment)
        guard let status = answer.value else { return nil }
        return status.sendAttempts.map { attempt in
            .object([
                "attempt_date": attempt.attemptDate.map { .string(AppleDate.iso8601(Date(timeIntervalSince1970: Double($0) / 1000))) } ?? .null,
                "send_attempt_result": attempt.sendAttemptResult.map(JSONValue.string) ?? .null,
            ])
        }
    }

    private func report<Value>(_ plan: ActionPlan, _ answer: APIAnswer<Value>, _ result: (Value) -> JSONValue) -> ActionReport {
        switch answer.result {
        case .success(let value):
            return ActionReport(plan: plan, dryRun: false, outcome: .success, result: result(value), records: answer.records, failure: nil)
        case .failure(let failure):
            return ActionReport(
                plan: plan, dryRun: false, outcome: Self.outcome(of: failure), result: nil, records: answer.records, failure: failure)
        }
    }

    /// Refused when Apple answered; unknown when the request went out and no answer came back.
    static func outcome(of failure: APIFailure) -> ActionOutcome {
        switch failure.last {
        case .apiError?, .http?: return .refused
        case .transport(let transport)? where transport.code == .timeout || transport.code == .dropped: return .unknown
        default: return .failed
        }
    }
}
