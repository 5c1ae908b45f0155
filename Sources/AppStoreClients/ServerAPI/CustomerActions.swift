import Foundation
import AppStoreAPI
import ReceiptCore
import ReceiptTrust
import UntrustedText

/// The ids a write is about, as the plan, the JSON and the audit trail name them.
public struct ActionIDs: Sendable, Hashable {
    public var originalTransactionID: String?
    public var transactionID: String?
    public var productID: String?
    /// The customer's app transaction id, filled from the plan's look-up where Apple gave it:
    /// the trail finds the write by it (`customer --app-transaction-id`).
    public var appTransactionID: String?

    public init(originalTransactionID: String? = nil, transactionID: String? = nil, productID: String? = nil, appTransactionID: String? = nil) {
        self.originalTransactionID = originalTransactionID
        self.transactionID = transactionID
        self.productID = productID
        self.appTransactionID = appTransactionID
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
    /// The verdict of the customer's signed data the plan was read from; nil when the write
    /// was planned from no data (a mass extension, a test notification).
    public var trust: TrustReport.Verdict?
    /// The data was judged `invalid` and the write goes ahead all the same (`--force-untrusted`).
    public var forcedUntrusted = false

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

    /// The plan as a person reads it before saying yes (and as a dry run prints it): the
    /// action and environment, what changes, the trust of the data it was read from, the
    /// request id.
    public var text: String {
        var out = "\(action.rawValue) in \(environment.rawValue):\n"
        for line in lines { out += "  \(SafeText.escaped(line))\n" }
        out += "  \(trustLine)\n"
        if let requestID {
            // Only the extensions carry the id to Apple, which applies an id once.
            let safely = action == .extend || action == .massExtend ? " (repeat with --request-id \(SafeText.escaped(requestID)) to retry safely)" : ""
            out += "  request id: \(SafeText.escaped(requestID))\(safely)\n"
        }
        return out
    }

    /// `data: valid (…)`: what the plan was read from and how far it can be trusted.
    public var trustLine: String { ActionDataGate.dataLine(trust, forced: forcedUntrusted) }

    /// `{"method", "path", "body"}` as it would be sent.
    public var requestJSON: JSONValue {
        var object: [String: JSONValue] = ["method": .string(request.method.rawValue), "path": .string(request.pathAndQuery)]
        if request.contentType == APIRequest.jsonContentType {
            object["body"] = request.body.flatMap { try? JSONValue.parse($0) } ?? .null
        } else {
            // An image: its size and type, not its bytes.
            object["body"] = request.bodyText.map(JSONValue.string) ?? .null
        }
        return .object(object)
    }

    /// What a dry run prints: the plan as a real run shows it, then the method, path and
    /// body that would be sent.
    public var dryRunText: String {
        text + "dry run: nothing sent\n\(request.method.rawValue) \(request.pathAndQuery)\n" + (request.bodyText.map { $0 + "\n" } ?? "")
    }
}

/// How a write ended, judged from every attempt it made (``CustomerActions/outcome(of:)``).
public enum ActionOutcome: String, Sendable, Hashable {
    /// Apple applied it: an attempt was answered 2xx (its body kept when it did not decode).
    case success
    /// Apple refused it: the last answer was an error code of Apple's (4xx), and no attempt
    /// may have been applied.
    case refused
    /// It never reached Apple (refused connection, TLS, a token that could not be made).
    case failed
    /// An attempt may have reached Apple (no answer, a timeout or reset after sending, a 5xx)
    /// and no later attempt proved what happened: it may have been applied.
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
    /// A 2xx body that did not decode: the write was applied, and this is what Apple said.
    public var responseBody: String?

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
            let id = plan.requestID.map { " Request id \($0)." } ?? ""
            let check: String
            switch plan.action {
            case .massExtend:
                check = plan.requestID.map { " Ask `receiptdash extend --status --product-id \(plan.ids.productID ?? "P") --request-id \($0) --environment \(plan.environment.selectionName)` whether Apple took it; repeating it with --request-id \($0) is not applied twice." } ?? ""
            case .extend:
                check = " Look the customer up (`receiptdash lookup --transaction-id \(plan.ids.originalTransactionID ?? "ID") --environment \(plan.environment.selectionName)`) to see the expiry; repeating it with --request-id \(plan.requestID ?? "ID") is not applied twice."
            default:
                let id = plan.ids.transactionID ?? plan.ids.originalTransactionID
                check = id.map { " Look the customer up (`receiptdash lookup --transaction-id \($0) --environment \(plan.environment.selectionName)`) before repeating it." } ?? ""
            }
            return "the outcome is unknown: an attempt may have reached Apple and no later answer proved what happened (\(failure.reason)): Apple may have applied it.\(id)\(check)"
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
        if let responseBody { object["response_body"] = .string(responseBody) }
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
        case .success? where responseBody != nil:
            return "done: \(plan.action.rawValue) in \(plan.environment.rawValue): Apple answered HTTP \(httpStatus ?? 200) (applied), but its body did not decode; it is kept in the audit trail\n"
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
        extraLines: [String] = [], extendDays: Int? = nil, forceUntrusted: Bool = false, howToForce: String = ActionDataGate.commandForce,
        onEvent: (@Sendable (APIClientEvent) -> Void)? = nil
    ) async -> Result<ActionPlan, APIFailure> {
        guard let id = ids.originalTransactionID ?? ids.transactionID else {
            let environment: APIEnvironment
            switch selection {
            case .production: environment = .production
            case .sandbox: environment = .sandbox
            case .auto:
                // No customer to look up: a status is found where Apple knows the request id;
                // a write to no customer cannot be placed, so it is asked for, never guessed.
                guard action == .massExtendStatus else { return .failure(Self.environmentUnknown(action)) }
                switch await findStatus(request, onEvent: onEvent) {
                case .success(let found): environment = found
                case .failure(let failure): return .failure(failure)
                }
            }
            return .success(ActionPlan(action: action, request: request, requestID: requestID, environment: environment, ids: ids, lines: extraLines))
        }
        let lookup = await CustomerLookupService(client: client, pipeline: pipeline).lookUp(.transactionID(id), environment: selection, onEvent: onEvent)
        if let failure = lookup.failure { return .failure(failure) }
        guard let environment = lookup.environment else {
            return .failure(APIFailure(.environmentUnknown, "the look-up named no environment: say --environment production or sandbox"))
        }
        let trust = lookup.verdict
        if let refused = ActionDataGate.refusal(trust, forced: forceUntrusted, howToForce: howToForce) { return .failure(refused) }
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
        if let original = ids.originalTransactionID {
            let customer = purchases.filter { $0.originalTransactionID == original }
            ids.appTransactionID = ids.appTransactionID ?? customer.lazy.compactMap(\.appTransactionID).first
                ?? lookup.appTransaction?.appTransaction?.appTransactionID
        }
        var plan = ActionPlan(
            action: action, request: request, requestID: requestID, environment: environment, ids: ids, lines: lines + extraLines,
            lookupRecords: lookup.records)
        plan.trust = trust
        plan.forcedUntrusted = trust == .invalid && forceUntrusted
        return .success(plan)
    }

    /// Why `auto` cannot place a write to no customer.
    static func environmentUnknown(_ action: APIAction) -> APIFailure {
        APIFailure(
            .environmentUnknown,
            "\(action.rawValue) names no customer to look up, so auto cannot tell production from sandbox: say --environment production or --environment sandbox")
    }

    /// Where a mass extension's status is known: production, then sandbox when production
    /// does not know the request (4040009). A read: asking both changes nothing.
    private func findStatus(_ request: APIRequest, onEvent: (@Sendable (APIClientEvent) -> Void)?) async -> Result<APIEnvironment, APIFailure> {
        var failure: APIFailure?
        for environment in [APIEnvironment.production, .sandbox] {
            let answer = await client.send(request, in: environment, as: MassExtendStatusResponse.self, onEvent: onEvent)
            switch answer.result {
            case .success: return .success(environment)
            case .failure(let refused) where refused.apiError == .statusRequestNotFound: failure = refused
            case .failure(let other): return .failure(other)
            }
        }
        return .failure(failure ?? Self.environmentUnknown(.massExtendStatus))
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
        case .consumption, .appAccountToken, .finish, .uploadImage, .deleteImage, .uploadMessage, .deleteMessage, .configureDefaultMessage,
            .deleteDefaultMessage, .configureRealtimeURL, .deleteRealtimeURL:
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
            let attempts = answer.records.filter { $0.endpoint == plan.request.endpoint }
            let outcome = Self.outcome(of: attempts)
            guard outcome == .success else {
                return ActionReport(plan: plan, dryRun: false, outcome: outcome, result: nil, records: answer.records, failure: failure)
            }
            // A 2xx whose body did not decode: applied, and its body kept.
            var report = ActionReport(plan: plan, dryRun: false, outcome: .success, result: nil, records: answer.records, failure: nil)
            report.responseBody = attempts.last { $0.undecodedBody != nil }?.undecodedBody
            return report
        }
    }

    /// What one attempt says of whether the write was applied.
    enum Evidence: Equatable {
        /// Answered 2xx: applied.
        case applied
        /// Refused by Apple with an error code: not applied by this attempt.
        case refused
        /// Never taken in: a refused connection, TLS, 401, 429.
        case notTaken
        /// May have reached Apple: no answer, a timeout or reset after sending, a 5xx.
        case mayHaveReached
    }

    static func evidence(_ record: APIRequestRecord) -> Evidence {
        if record.undecodedBody != nil { return .applied }
        switch record.result {
        case .success: return .applied
        case .apiError(let status, let code):
            if (500...599).contains(status) { return .mayHaveReached }
            if status == 429 || code == .rateLimitExceeded || status == 401 { return .notTaken }
            return .refused
        case .http(let status):
            return (500...599).contains(status) ? .mayHaveReached : .notTaken
        case .transport(let failure):
            switch failure.code {
            case .refused, .tls, .notSent: return .notTaken
            case .timeout, .dropped, .cancelled, .invalidResponse, .other: return .mayHaveReached
            }
        }
    }

    /// The outcome of a write from every attempt it made, in order, never from the last
    /// alone: applied if any attempt was answered 2xx; refused if the last was Apple's refusal
    /// with a code; else unknown if any attempt may have reached Apple (a lost answer followed
    /// by a 500 is unknown, not refused); else refused when Apple answered (401, 429) and
    /// failed when it never did.
    public static func outcome(of attempts: [APIRequestRecord]) -> ActionOutcome {
        let evidence = attempts.map(Self.evidence)
        if evidence.contains(.applied) { return .success }
        if evidence.last == .refused { return .refused }
        if evidence.contains(.mayHaveReached) { return .unknown }
        return attempts.last?.httpStatus != nil ? .refused : .failed
    }
}

extension APIEnvironment {
    /// The `--environment` value that names it.
    public var selectionName: String { self == .production ? "production" : "sandbox" }
}
