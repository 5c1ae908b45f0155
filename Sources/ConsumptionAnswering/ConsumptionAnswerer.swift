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
import UntrustedText

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
/// body; one past its deadline is reported `late`, never sent. Beside a receiver, passes wait
/// for a second without notifications, or for a request that has waited
/// ``Configuration/maximumWait``.
public final class ConsumptionAnswerer: Service, Sendable {
    public struct Configuration: Sendable {
        public var policies: ConsumptionPolicies
        public var mode: ConsumptionPolicyMode
        /// How long a claim holds a request: longer than a pass's sends with their retries
        /// (``batch`` / ``senders`` rounds of at most 80 s each when Apple does not answer),
        /// so no other receiver takes one still being sent.
        public var lease: TimeInterval = 600
        /// How often the trail is asked for open requests when none were due (a read). Passes
        /// every 200 ms, or of 256 every 2 s, made the receiver's commits wait longer than these
        /// (docs/benchmarks.md).
        public var poll: Duration = .seconds(1)
        /// The most requests claimed in one pass.
        public var batch: Int = 64
        /// The most answers in flight to Apple at once.
        public var senders: Int = 16
        /// How long the receiver must have taken nothing before a pass runs (with an
        /// ``ActivityMark``): answers have 12 hours, Apple's POSTs have seconds, so a pass waits
        /// for a quiet moment instead of taking the store's writer between the receiver's
        /// group commits.
        public var quiet: TimeInterval = 1
        /// The longest a request waits for a quiet moment (`--consumption-max-wait`): past it,
        /// passes run under traffic too, until none has waited that long.
        public var maximumWait: TimeInterval = 600
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
    /// The receiver's store's activity (nil: passes never wait for a quiet moment).
    private let activity: ActivityMark?

    public init(
        store: any AuditBackend, sender: any ConsumptionSending, configuration: Configuration, clock: ServiceClock = .system,
        metrics: ConsumptionMetrics? = nil, logger: Logger = Logger(label: "receiptdash.consumption"), activity: ActivityMark? = nil
    ) {
        self.activity = activity
        self.store = store
        self.sender = sender
        self.configuration = configuration
        self.clock = clock
        self.metrics = metrics
        self.logger = logger
    }

    /// Answers until the group shuts down: a pass as soon as the last one was full, else after
    /// ``Configuration/poll``, each once the receiver is quiet or a request has waited too long
    /// (``mayRunPass()``); the open requests' gauge every few seconds.
    public func run() async throws {
        var lastGauge = -Double.infinity
        var lastFailure = -Double.infinity
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            var full = false
            do {
                if try await mayRunPass() {
                    let pass = try await answerDue()
                    full = pass.handled >= configuration.batch
                }
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

    /// Whether a pass may run now: the receiver has taken nothing for ``Configuration/quiet``
    /// seconds, or an open request was signed ``Configuration/maximumWait`` seconds ago or more
    /// (a read, never a write).
    public func mayRunPass() async throws -> Bool {
        let now = clock.now()
        guard let activity, !activity.isQuiet(for: configuration.quiet, at: now) else { return true }
        guard let oldest = try await store.openConsumptionRequests().oldestRequestedAt else { return false }
        return now.timeIntervalSince(oldest) >= configuration.maximumWait
    }

    /// Sets `receiptdash_consumption_oldest_open_seconds` from the trail.
    public func updateGauge() async {
        guard let metrics, let open = try? await store.openConsumptionRequests() else { return }
        metrics.open(count: open.open, oldestAge: open.oldestRequestedAt.map { max(0, clock.now().timeIntervalSince($0)) } ?? 0)
    }

    /// What one claimed request comes to before anything is written: a decision that sends
    /// nothing, an answer to send (its intent not yet recorded), or one to send again.
    enum Step: Sendable {
        case settle(ConsumptionSettlement)
        case send(ConsumptionIntent, plan: ActionPlan)
        case resend(ConsumptionRequestRecord, actionID: Int64, intent: AuditAction, plan: ActionPlan)
        case unresolved(String)
    }

    /// One pass: claims what is due, decides each, then records the decisions that send nothing
    /// in one transaction and the intents in another, sends (at most ``Configuration/senders``
    /// at once), and records the outcomes in a third: a few durable commits per pass, not per
    /// request, so the receiver's own commits barely wait. Reports what passed its deadline.
    @discardableResult
    public func answerDue() async throws -> Pass {
        let now = clock.now()
        // A read first: an idle trail costs no write transaction per poll.
        guard try await store.hasDueConsumptionRequests(now: now) else { return Pass() }
        let claim = try await store.claimConsumptionRequests(
            owner: configuration.owner, now: now, leaseUntil: now.addingTimeInterval(configuration.lease), limit: configuration.batch)
        var pass = Pass()
        for request in claim.expired {
            let result: ConsumptionResult = request.state == .unknown ? .unknown : .late
            logger.warning(
                "consumption request for transaction \(SafeText.escaped(request.transactionID)) \(result == .late ? "was not answered before its deadline" : "may not have reached Apple before its deadline") (\(AppleDate.iso8601(request.deadline)))")
            count(result, &pass)
        }
        guard !claim.claimed.isEmpty else { return pass }
        let transactions = Dictionary(claim.claimed.map { ($0.id, $0.transactionID) }, uniquingKeysWith: { first, _ in first })
        var settlements: [ConsumptionSettlement] = []
        var intents: [(ConsumptionIntent, ActionPlan, ConsumptionRequestRecord)] = []
        var resends: [(ConsumptionRequestRecord, Int64, AuditAction, ActionPlan)] = []
        for request in claim.claimed {
            switch await step(request, now: now) {
            case .settle(let settlement): settlements.append(settlement)
            case .send(let intent, let plan): intents.append((intent, plan, request))
            case .resend(let request, let actionID, let intent, let plan): resends.append((request, actionID, intent, plan))
            case .unresolved(let why):
                logger.warning("the consumption answer for transaction \(SafeText.escaped(request.transactionID)) cannot be sent again: \(why); its outcome stays unknown")
                count(.unknown, &pass)
            }
            // The receiver's requests wait for these threads: let them in between decisions.
            await Task.yield()
        }
        if !settlements.isEmpty {
            do {
                let settled = try await store.settleConsumptionRequests(settlements, owner: configuration.owner, at: now)
                for settlement in settlements {
                    guard settled.contains(settlement.id) else {
                        count(.lost, &pass)
                        continue
                    }
                    logger.info(
                        "consumption request for transaction \(SafeText.escaped(transactions[settlement.id] ?? "?")): \(settlement.state.rawValue)\(settlement.policy.map { " (policy \(SafeText.escaped($0)))" } ?? "")")
                    count(ConsumptionResult(rawValue: settlement.state.rawValue) ?? .failed, &pass)
                }
            } catch {
                // Not recorded: the claims end with their lease and they are decided again.
                logger.warning("consumption decisions could not be recorded: \(store.words(for: error)); they are decided again later")
                for _ in settlements { count(.failed, &pass) }
            }
        }
        var sends = resends
        if !intents.isEmpty {
            do {
                let begun = try await store.beginConsumptionAnswers(intents.map(\.0), owner: configuration.owner, at: now)
                for (intent, plan, request) in intents {
                    guard let actionID = begun[intent.id] else {
                        count(.lost, &pass)
                        continue
                    }
                    sends.append((request, actionID, intent.action, plan))
                }
            } catch {
                // Not recorded, so not sent: the claims end with their lease and are tried again.
                logger.warning("consumption answers could not be recorded, so none was sent: \(store.words(for: error))")
                for _ in intents { count(.failed, &pass) }
            }
        }
        guard !sends.isEmpty else { return pass }
        let outcomes = await sendAll(sends)
        do {
            try await store.completeConsumptionAnswers(outcomes.map(\.0), at: clock.now())
        } catch {
            logger.error(
                "\(sends.count) consumption answers were sent but their outcomes could not be recorded: \(store.words(for: error)); they stay pending and are sent again with the same request ids")
        }
        for (outcome, result) in outcomes {
            let words = result == .answered ? "answered by policy \(SafeText.escaped(outcome.outcome.policy ?? "?"))" : "\(result.rawValue) (policy \(SafeText.escaped(outcome.outcome.policy ?? "?"))): \(SafeText.escaped(outcome.detail ?? ""))"
            logger.info(
                "consumption request for transaction \(SafeText.escaped(transactions[outcome.id] ?? "?")) \(words) (HTTP \(outcome.outcome.httpStatus.map(String.init) ?? "none"))")
            count(result, &pass)
        }
        return pass
    }

    private func count(_ result: ConsumptionResult, _ pass: inout Pass) {
        pass.results[result, default: 0] += 1
        metrics?.handled(result)
    }

    /// Sends each recorded intent, at most ``Configuration/senders`` at once; each outcome as
    /// its write row and request are to be completed.
    private func sendAll(_ sends: [(ConsumptionRequestRecord, Int64, AuditAction, ActionPlan)]) async -> [(ConsumptionOutcome, ConsumptionResult)] {
        await withTaskGroup(of: (ConsumptionOutcome, ConsumptionResult).self) { group in
            var next = 0
            var outcomes: [(ConsumptionOutcome, ConsumptionResult)] = []
            func start() {
                guard next < sends.count else { return }
                let (request, actionID, intent, plan) = sends[next]
                next += 1
                group.addTask { await self.send(request, actionID: actionID, intent: intent, plan: plan) }
            }
            for _ in 0..<max(1, configuration.senders) { start() }
            for await outcome in group {
                outcomes.append(outcome)
                start()
            }
            return outcomes
        }
    }

    /// Decides one claimed request: nothing written yet.
    func step(_ request: ConsumptionRequestRecord, now: Date) async -> Step {
        func settle(_ state: ConsumptionState, _ policy: String?, _ body: String?, _ detail: String?) -> Step {
            .settle(ConsumptionSettlement(id: request.id, state: state, policy: policy, body: body, detail: detail))
        }
        if request.state == .sending {
            // Its receiver stopped after recording the intent: the same request id and body
            // again (Apple's consumption endpoint takes the same body twice as once).
            guard let actionID = request.actionID, let text = request.body, let requestID = request.requestID, let policy = request.policy,
                let environment = request.environment.flatMap(APIEnvironment.init(rawValue:)),
                let body = try? JSONDecoder().decode(ConsumptionBody.self, from: Data(text.utf8)),
                let apiRequest = try? APIRequest.consumption(request.transactionID, body)
            else { return .unresolved("it was recorded without what resending it needs") }
            logger.info("sending the consumption answer for transaction \(SafeText.escaped(request.transactionID)) again with its request id \(requestID): its receiver stopped while sending it")
            let facts = ConsumptionFacts(request: request, signedPayload: request.signedPayload, refunds: nil, decoder: decoder)
            let plan = Self.plan(request, facts: facts, policy: policy, environment: environment, requestID: requestID, apiRequest: apiRequest)
            return .resend(request, actionID: actionID, intent: intent(request, facts, policy, environment, requestID, text, plan, now), plan: plan)
        }
        guard request.verdict == TrustReport.Verdict.valid.rawValue || request.verdict == TrustReport.Verdict.test.rawValue else {
            return settle(.failed, nil, nil, "the stored request is not a verified one (\(request.verdict ?? "no verdict")): nothing is sent")
        }
        let (facts, decision) = await configuration.policies.decide(request, trail: store, now: now, decoder: decoder)
        switch decision.outcome {
        case .noMatch: return settle(.noMatch, nil, nil, "no policy matched")
        case .noConsent:
            return settle(.noConsent, decision.policy, nil, "the policy file does not say customer_consented = true: nothing is sent without consent")
        case .noResponse: return settle(.noResponse, decision.policy, nil, "the policy says respond = false")
        case .failed: return settle(.failed, decision.policy, nil, decision.reason)
        case .send: break
        }
        guard let body = decision.body, let policy = decision.policy else { return settle(.failed, nil, nil, "no body was made") }
        guard let environment = request.environment.flatMap(APIEnvironment.init(rawValue:)) else {
            return settle(.failed, policy, nil, "the request's environment (\(request.environment ?? "none")) is not one the App Store Server API answers")
        }
        let apiRequest: APIRequest
        do {
            apiRequest = try .consumption(request.transactionID, body)
        } catch {
            return settle(.failed, policy, nil, "the request cannot be made: \(error.reason)")
        }
        let text = apiRequest.bodyText ?? "{}"
        if configuration.mode == .dryRun {
            return settle(.dryRun, policy, text, "dry run: nothing was sent")
        }
        let requestID = UUID().uuidString.lowercased()
        let plan = Self.plan(request, facts: facts, policy: policy, environment: environment, requestID: requestID, apiRequest: apiRequest)
        let action = intent(request, facts, policy, environment, requestID, text, plan, now)
        return .send(ConsumptionIntent(id: request.id, policy: policy, body: text, action: action), plan: plan)
    }

    /// The write's row as recorded before sending.
    private func intent(
        _ request: ConsumptionRequestRecord, _ facts: ConsumptionFacts, _ policy: String, _ environment: APIEnvironment, _ requestID: String,
        _ body: String, _ plan: ActionPlan, _ now: Date
    ) -> AuditAction {
        var action = AuditAction(
            at: now, user: configuration.user, action: APIAction.consumption.rawValue, environment: environment.rawValue, requestID: requestID,
            originalTransactionID: facts.originalTransactionID, transactionID: request.transactionID, productID: facts.productID, requestBody: body,
            httpStatus: nil, apiError: nil, result: AuditAction.pending, plan: plan.text)
        action.policy = policy
        return action
    }

    /// Sends one recorded intent through the one retry engine: Apple's answer, or unknown.
    private func send(_ request: ConsumptionRequestRecord, actionID: Int64, intent: AuditAction, plan: ActionPlan) async -> (ConsumptionOutcome, ConsumptionResult) {
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
        outcome.completedAt = clock.now()
        return (ConsumptionOutcome(id: request.id, actionID: actionID, outcome: outcome, state: state, detail: report.failureText), result)
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
                "transaction \(SafeText.escaped(request.transactionID)) (original \(facts.originalTransactionID ?? "?"))", "product: \(facts.productID ?? "?")",
                "deadline: \(AppleDate.iso8601(request.deadline))",
            ])
        plan.trust = request.verdict.flatMap(TrustReport.Verdict.init(rawValue:))
        return plan
    }
}
