import AppStoreAPI
import AppStoreClients
import AuditTrail
import ConsumptionPolicy
import Foundation
import Logging
import ReceiptCore
import ReceiptTrust
import RetryEngine
import ServiceLifecycle
import Synchronization

/// How a receiver's policy answers: it sends, or (`--consumption-policy-mode dry-run`) it
/// records what it would send and sends nothing.
public enum ConsumptionPolicyMode: String, Sendable, Hashable, CaseIterable {
    case send
    case dryRun = "dry-run"
}

/// What became of one request this receiver handled: the `result` label of
/// `receiptdash_consumption_requests_total`.
public enum ConsumptionResult: String, Sendable, Hashable, CaseIterable {
    case answered
    case noMatch = "no-match"
    case noConsent = "no-consent"
    case noResponse = "no-response"
    case dryRun = "dry-run"
    case failed
    case unknown
    case late
    /// Another receiver took it between the claim and the decision: nothing was done.
    case lost
}

/// Sends a planned write (``CustomerActions`` in the product; its retries keep the request and
/// its id).
public protocol ConsumptionSending: Sendable {
    func sendConsumption(_ plan: ActionPlan) async -> ActionReport
    /// Releases the connections (the service ends).
    func shutdown() async
}

extension CustomerActions: ConsumptionSending {
    public func sendConsumption(_ plan: ActionPlan) async -> ActionReport { await send(plan) }
    public func shutdown() async { try? await client.shutdown() }
}

/// Answers the trail's `CONSUMPTION_REQUEST`s by a policy file, off the request path: claims
/// the open ones (each by one receiver, whatever the number of receivers on the trail), decides
/// by the first policy that matches, and sends through the write gate every write takes: the
/// intent recorded (the `pending` row and its request id) before the first byte leaves, the one
/// retry engine, the outcome recorded from Apple's answer (or `unknown`). A request whose
/// receiver stopped while sending is sent again by the next claim with the same request id and
/// body; one past its deadline is reported `late`, never sent.
public final class ConsumptionAnswerer: Service, Sendable {
    public struct Configuration: Sendable {
        public var policies: ConsumptionPolicies
        public var mode: ConsumptionPolicyMode
        /// How long a claim holds a request (longer than a send with its retries).
        public var lease: TimeInterval = 120
        /// How often the trail is asked for open requests when none were due.
        public var poll: Duration = .seconds(1)
        /// The most requests claimed, and sent at once.
        public var batch: Int = 32
        /// Who claims (one per process).
        public var owner: String = "receiver-\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString.prefix(8))"
        /// Who the writes are recorded as.
        public var user: String = ProcessInfo.processInfo.userName

        public init(policies: ConsumptionPolicies, mode: ConsumptionPolicyMode) {
            self.policies = policies
            self.mode = mode
        }
    }

    /// What one pass did, by result.
    public struct Pass: Sendable, Hashable {
        public var results: [ConsumptionResult: Int] = [:]
        public var handled: Int { results.values.reduce(0, +) }
        public init() {}
    }

    public let configuration: Configuration
    private let store: any AuditBackend
    private let sender: any ConsumptionSending
    private let clock: ServiceClock
    private let metrics: ConsumptionMetrics?
    private let logger: Logger
    private let decoder = ReceiptDecoder()

    public init(
        store: any AuditBackend, sender: any ConsumptionSending, configuration: Configuration, clock: ServiceClock = .system,
        metrics: ConsumptionMetrics? = nil, logger: Logger = Logger(label: "receiptdash.consumption")
    ) {
        self.store = store
        self.sender = sender
        self.configuration = configuration
        self.clock = clock
        self.metrics = metrics
        self.logger = logger
    }

    /// Answers until the group shuts down: a pass as soon as the last one was full, else after
    /// ``Configuration/poll``; the open requests' gauge every few seconds.
    public func run() async throws {
        var lastGauge = -Double.infinity
        var lastFailure = -Double.infinity
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            var full = false
            do {
                let pass = try await answerDue()
                full = pass.handled >= configuration.batch
            } catch {
                let now = clock.now().timeIntervalSince1970
                if now - lastFailure >= 60 {
                    lastFailure = now
                    logger.warning("consumption requests could not be claimed: \(store.words(for: error))")
                }
            }
            let now = clock.now().timeIntervalSince1970
            if now - lastGauge >= 5 {
                lastGauge = now
                await updateGauge()
            }
            if !full {
                try? await cancelWhenGracefulShutdown { try await self.clock.clock.sleep(for: self.configuration.poll) }
            }
        }
        // What was in flight ended with its pass (recorded); the client is released.
        await sender.shutdown()
    }

    /// Sets `receiptdash_consumption_oldest_open_seconds` from the trail.
    public func updateGauge() async {
        guard let metrics, let open = try? await store.openConsumptionRequests() else { return }
        metrics.open(count: open.open, oldestAge: open.oldestRequestedAt.map { max(0, clock.now().timeIntervalSince($0)) } ?? 0)
    }

    /// One pass: claims what is due and answers each (at most ``Configuration/batch`` at once),
    /// reports what passed its deadline.
    @discardableResult
    public func answerDue() async throws -> Pass {
        let now = clock.now()
        let claim = try await store.claimConsumptionRequests(
            owner: configuration.owner, now: now, leaseUntil: now.addingTimeInterval(configuration.lease), limit: configuration.batch)
        var pass = Pass()
        for request in claim.expired {
            let result: ConsumptionResult = request.state == .unknown ? .unknown : .late
            logger.warning(
                "consumption request for transaction \(request.transactionID) \(result == .late ? "was not answered before its deadline" : "may not have reached Apple before its deadline") (\(AppleDate.iso8601(request.deadline)))")
            count(result, &pass)
        }
        await withTaskGroup(of: ConsumptionResult.self) { group in
            for request in claim.claimed {
                group.addTask { await self.answer(request) }
            }
            for await result in group { count(result, &pass) }
        }
        return pass
    }

    private func count(_ result: ConsumptionResult, _ pass: inout Pass) {
        pass.results[result, default: 0] += 1
        metrics?.handled(result)
    }

    /// Decides and, where the policy sends, sends: one claimed request.
    func answer(_ request: ConsumptionRequestRecord) async -> ConsumptionResult {
        if request.state == .sending {
            return await resume(request)
        }
        let now = clock.now()
        guard request.verdict == TrustReport.Verdict.valid.rawValue || request.verdict == TrustReport.Verdict.test.rawValue else {
            return await settle(request, .failed, nil, nil, "the stored request is not a verified one (\(request.verdict ?? "no verdict")): nothing is sent")
        }
        let (facts, decision) = await configuration.policies.decide(request, trail: store, now: now, decoder: decoder)
        switch decision.outcome {
        case .noMatch: return await settle(request, .noMatch, nil, nil, "no policy matched")
        case .noConsent:
            return await settle(
                request, .noConsent, decision.policy, nil, "the policy file does not say customer_consented = true: nothing is sent without consent")
        case .noResponse: return await settle(request, .noResponse, decision.policy, nil, "the policy says respond = false")
        case .failed: return await settle(request, .failed, decision.policy, nil, decision.reason)
        case .send: break
        }
        guard let body = decision.body, let policy = decision.policy else { return await settle(request, .failed, nil, nil, "no body was made") }
        guard let environment = request.environment.flatMap(APIEnvironment.init(rawValue:)) else {
            return await settle(
                request, .failed, policy, nil, "the request's environment (\(request.environment ?? "none")) is not one the App Store Server API answers")
        }
        let apiRequest: APIRequest
        do {
            apiRequest = try .consumption(request.transactionID, body)
        } catch {
            return await settle(request, .failed, policy, nil, "the request cannot be made: \(error.reason)")
        }
        let text = apiRequest.bodyText ?? "{}"
        if configuration.mode == .dryRun {
            return await settle(request, .dryRun, policy, text, "dry run: nothing was sent")
        }
        let requestID = UUID().uuidString.lowercased()
        let plan = Self.plan(request, facts: facts, policy: policy, environment: environment, requestID: requestID, apiRequest: apiRequest)
        var intent = AuditAction(
            at: now, user: configuration.user, action: APIAction.consumption.rawValue, environment: environment.rawValue, requestID: requestID,
            originalTransactionID: facts.originalTransactionID, transactionID: request.transactionID, productID: facts.productID, requestBody: text,
            httpStatus: nil, apiError: nil, result: AuditAction.pending, plan: plan.text)
        intent.policy = policy
        let actionID: Int64?
        do {
            actionID = try await store.beginConsumptionAnswer(request.id, owner: configuration.owner, policy: policy, body: text, action: intent, at: now)
        } catch {
            // Not recorded, so not sent: the claim ends with its lease and it is tried again.
            logger.warning("the consumption answer for transaction \(request.transactionID) could not be recorded, so it was not sent: \(store.words(for: error))")
            return .failed
        }
        guard let actionID else { return .lost }
        return await send(request, policy: policy, plan: plan, actionID: actionID, intent: intent)
    }

    /// A request whose intent was recorded and whose receiver stopped: sent again with the same
    /// request id and body (Apple's consumption endpoint takes the same body twice as once).
    private func resume(_ request: ConsumptionRequestRecord) async -> ConsumptionResult {
        guard let actionID = request.actionID, let text = request.body, let requestID = request.requestID, let policy = request.policy,
            let environment = request.environment.flatMap(APIEnvironment.init(rawValue:)),
            let body = try? JSONDecoder().decode(ConsumptionBody.self, from: Data(text.utf8)),
            let apiRequest = try? APIRequest.consumption(request.transactionID, body)
        else {
            logger.warning("the consumption answer for transaction \(request.transactionID) was recorded without what resending it needs; its outcome stays unknown")
            return .unknown
        }
        logger.info("sending the consumption answer for transaction \(request.transactionID) again with its request id \(requestID): its receiver stopped while sending it")
        let facts = ConsumptionFacts(request: request, signedPayload: request.signedPayload, refunds: nil, decoder: decoder)
        let plan = Self.plan(request, facts: facts, policy: policy, environment: environment, requestID: requestID, apiRequest: apiRequest)
        var intent = AuditAction(
            at: clock.now(), user: configuration.user, action: APIAction.consumption.rawValue, environment: environment.rawValue, requestID: requestID,
            originalTransactionID: facts.originalTransactionID, transactionID: request.transactionID, productID: facts.productID, requestBody: text,
            httpStatus: nil, apiError: nil, result: AuditAction.pending, plan: plan.text)
        intent.policy = policy
        return await send(request, policy: policy, plan: plan, actionID: actionID, intent: intent)
    }

    private func send(_ request: ConsumptionRequestRecord, policy: String, plan: ActionPlan, actionID: Int64, intent: AuditAction) async -> ConsumptionResult {
        let report = await sender.sendConsumption(plan)
        let (state, result): (ConsumptionState, ConsumptionResult) =
            switch report.outcome {
            case .success?: (.answered, .answered)
            case .unknown?: (.unknown, .unknown)
            case .refused?, .failed?, nil: (.failed, .failed)
            }
        var outcome = intent
        outcome.httpStatus = report.httpStatus
        outcome.apiError = report.apiError?.rawValue
        outcome.result = report.outcome?.rawValue ?? "failed"
        outcome.responseBody = report.responseBody
        let at = clock.now()
        outcome.completedAt = at
        let detail = report.failureText
        do {
            try await store.completeConsumptionAnswer(request.id, actionID: actionID, outcome: outcome, state: state, detail: detail, at: at)
        } catch {
            logger.error(
                "the consumption answer for transaction \(request.transactionID) was sent (\(outcome.result)) but its outcome could not be recorded: \(store.words(for: error)); it stays pending and is sent again with the same request id")
        }
        let words = result == .answered ? "answered by policy \(policy)" : "\(result.rawValue) (policy \(policy)): \(detail ?? "")"
        logger.info("consumption request for transaction \(request.transactionID) \(words) (HTTP \(report.httpStatus.map(String.init) ?? "none"))")
        return result
    }

    private func settle(
        _ request: ConsumptionRequestRecord, _ state: ConsumptionState, _ policy: String?, _ body: String?, _ detail: String?
    ) async -> ConsumptionResult {
        do {
            guard try await store.settleConsumptionRequest(request.id, owner: configuration.owner, state: state, policy: policy, body: body, detail: detail, at: clock.now())
            else { return .lost }
        } catch {
            logger.warning("the consumption decision for transaction \(request.transactionID) could not be recorded: \(store.words(for: error)); it is decided again later")
            return .failed
        }
        logger.info("consumption request for transaction \(request.transactionID): \(state.rawValue)\(policy.map { " (policy \($0))" } ?? "")")
        return ConsumptionResult(rawValue: state.rawValue) ?? .failed
    }

    /// The plan of a policy's answer, as a person reads a write's plan.
    static func plan(
        _ request: ConsumptionRequestRecord, facts: ConsumptionFacts, policy: String, environment: APIEnvironment, requestID: String,
        apiRequest: APIRequest
    ) -> ActionPlan {
        var ids = ActionIDs(transactionID: request.transactionID)
        ids.originalTransactionID = facts.originalTransactionID
        ids.productID = facts.productID
        var plan = ActionPlan(
            action: .consumption, request: apiRequest, requestID: requestID, environment: environment, ids: ids,
            lines: [
                "by policy \(policy) (a CONSUMPTION_REQUEST answered by the receiver)",
                "transaction \(request.transactionID) (original \(facts.originalTransactionID ?? "?"))", "product: \(facts.productID ?? "?")",
                "deadline: \(AppleDate.iso8601(request.deadline))",
            ])
        plan.trust = request.verdict.flatMap(TrustReport.Verdict.init(rawValue:))
        return plan
    }
}
