import Foundation

/// Where one `CONSUMPTION_REQUEST` stands. Every stored request starts `open`; one receiver
/// claims it, decides by its policy file, and leaves it in one of the final states.
public enum ConsumptionState: String, Sendable, Hashable, CaseIterable {
    /// Waiting for a receiver with a policy file.
    case open
    /// The intent is recorded (the write's `pending` row and its request id): it is being
    /// sent, or was when its receiver stopped (a restarted one sends it again, with the same
    /// request id and body).
    case sending
    /// Apple took the consumption information.
    case answered
    /// No policy matched: nothing was sent.
    case noMatch = "no-match"
    /// A policy matched, but the policy file does not say the app collects consent.
    case noConsent = "no-consent"
    /// The policy that matched says `respond = false`.
    case noResponse = "no-response"
    /// `--consumption-policy-mode dry-run`: the plan is recorded, nothing was sent.
    case dryRun = "dry-run"
    /// Nothing was taken: the policy could not answer, or Apple refused, or the request never
    /// reached Apple.
    case failed
    /// It may have reached Apple, and whether Apple took it is not known.
    case unknown
    /// Its deadline passed before it was answered: it is reported, never sent.
    case late

    /// Whether nothing more will be done with it.
    public var isFinal: Bool { self != .open && self != .sending }
}

/// One stored `CONSUMPTION_REQUEST` and what became of it.
public struct ConsumptionRequestRecord: Sendable, Hashable {
    public var id: Int64
    public var notificationUUID: String
    public var transactionID: String
    public var originalTransactionID: String?
    public var productID: String?
    public var environment: String?
    /// When Apple signed the request.
    public var requestedAt: Date
    /// Twelve hours after ``requestedAt``: Apple's deadline.
    public var deadline: Date
    public var state: ConsumptionState
    /// The policy that matched, by name.
    public var policy: String?
    /// The body sent (or, in a dry run, that would have been), as JSON.
    public var body: String?
    /// The write's request id (its `api_action` row has the same).
    public var requestID: String?
    /// The write's `api_action` row.
    public var actionID: Int64?
    /// Apple's answer: HTTP status and error code.
    public var httpStatus: Int?
    public var apiError: Int?
    /// Why, in words (a failure's reason, a late request's deadline).
    public var detail: String?
    /// When it reached its final state.
    public var decidedAt: Date?
    /// The notification's `signedPayload` and trust verdict (filled by a claim only: what the
    /// policy is matched against).
    public var signedPayload: String?
    public var verdict: String?

    public init(
        id: Int64, notificationUUID: String, transactionID: String, originalTransactionID: String?, productID: String?, environment: String?,
        requestedAt: Date, deadline: Date, state: ConsumptionState, policy: String? = nil, body: String? = nil, requestID: String? = nil,
        actionID: Int64? = nil, httpStatus: Int? = nil, apiError: Int? = nil, detail: String? = nil, decidedAt: Date? = nil
    ) {
        self.id = id
        self.notificationUUID = notificationUUID
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.environment = environment
        self.requestedAt = requestedAt
        self.deadline = deadline
        self.state = state
        self.policy = policy
        self.body = body
        self.requestID = requestID
        self.actionID = actionID
        self.httpStatus = httpStatus
        self.apiError = apiError
        self.detail = detail
        self.decidedAt = decidedAt
    }
}

/// What a claim took: the requests this receiver now holds, and those it found past their
/// deadline (now `late`, or `unknown` when their intent was recorded) to report.
public struct ConsumptionClaim: Sendable, Hashable {
    public var claimed: [ConsumptionRequestRecord]
    public var expired: [ConsumptionRequestRecord]

    public init(claimed: [ConsumptionRequestRecord], expired: [ConsumptionRequestRecord]) {
        self.claimed = claimed
        self.expired = expired
    }
}

/// A decision that sends nothing, to record.
public struct ConsumptionSettlement: Sendable, Hashable {
    public var id: Int64
    public var state: ConsumptionState
    public var policy: String?
    /// The body a dry run would have sent.
    public var body: String?
    public var detail: String?

    public init(id: Int64, state: ConsumptionState, policy: String?, body: String?, detail: String?) {
        self.id = id
        self.state = state
        self.policy = policy
        self.body = body
        self.detail = detail
    }
}

/// An answer about to be sent: its request, policy and body, and the write's row.
public struct ConsumptionIntent: Sendable, Hashable {
    public var id: Int64
    public var policy: String
    public var body: String
    /// The write as recorded before sending (its request id is the request's).
    public var action: AuditAction

    public init(id: Int64, policy: String, body: String, action: AuditAction) {
        self.id = id
        self.policy = policy
        self.body = body
        self.action = action
    }
}

/// How a sent answer ended: the write's row completed, the request's final state.
public struct ConsumptionOutcome: Sendable, Hashable {
    public var id: Int64
    public var actionID: Int64
    public var outcome: AuditAction
    public var state: ConsumptionState
    public var detail: String?

    public init(id: Int64, actionID: Int64, outcome: AuditAction, state: ConsumptionState, detail: String?) {
        self.id = id
        self.actionID = actionID
        self.outcome = outcome
        self.state = state
        self.detail = detail
    }
}

extension ConsumptionQueue {
    /// One decision that sends nothing; false when `owner` no longer holds the request.
    public func settleConsumptionRequest(
        _ id: Int64, owner: String, state: ConsumptionState, policy: String?, body: String?, detail: String?, at: Date
    ) async throws -> Bool {
        try await settleConsumptionRequests(
            [ConsumptionSettlement(id: id, state: state, policy: policy, body: body, detail: detail)], owner: owner, at: at
        ).contains(id)
    }

    /// One intent; the write's row id, or nil when `owner` no longer holds the request open.
    public func beginConsumptionAnswer(_ id: Int64, owner: String, policy: String, body: String, action: AuditAction, at: Date) async throws
        -> Int64?
    {
        try await beginConsumptionAnswers([ConsumptionIntent(id: id, policy: policy, body: body, action: action)], owner: owner, at: at)[id]
    }
}

/// The requests still to answer: how many, the nearest deadline and the oldest request.
public struct ConsumptionOpenSummary: Sendable, Hashable {
    public var open: Int
    public var nearestDeadline: Date?
    public var oldestRequestedAt: Date?

    public init(open: Int, nearestDeadline: Date?, oldestRequestedAt: Date?) {
        self.open = open
        self.nearestDeadline = nearestDeadline
        self.oldestRequestedAt = oldestRequestedAt
    }
}

/// The queue of `CONSUMPTION_REQUEST`s every process that stores notifications fills (a POST,
/// a backfill: the row is made with the notification's, in its transaction), and the receivers
/// with a policy file answer: each request by one receiver, once.
public protocol ConsumptionQueue: Sendable {
    /// Leases at most `limit` requests to `owner` until `leaseUntil`, nearest deadline first:
    /// open ones, and ones `sending` whose lease ended (their receiver stopped). Requests whose
    /// deadline is at or before `now` are not leased: open ones become `late`, sending ones
    /// `unknown`, and are returned in ``ConsumptionClaim/expired`` (each by one claim only).
    func claimConsumptionRequests(owner: String, now: Date, leaseUntil: Date, limit: Int) async throws -> ConsumptionClaim
    /// Whether a claim at `now` would take or report anything (a read: an idle trail is polled
    /// without a write).
    func hasDueConsumptionRequests(now: Date) async throws -> Bool
    /// Records decisions that send nothing (`no-match`, `no-consent`, `no-response`,
    /// `dry-run`, `failed`) in one transaction (one lost to a power cut is decided again).
    /// Returns the ids recorded: one `owner` no longer holds is left alone.
    func settleConsumptionRequests(_ settlements: [ConsumptionSettlement], owner: String, at: Date) async throws -> Set<Int64>
    /// Records intents before the first byte of any leaves, in one durable transaction: each
    /// write's `pending` row and its request's state `sending` with its policy, body and
    /// request id. Returns each request's write row id (one `owner` no longer holds open is
    /// left out).
    func beginConsumptionAnswers(_ intents: [ConsumptionIntent], owner: String, at: Date) async throws -> [Int64: Int64]
    /// Completes each write's row with its outcome and its request with its state
    /// (`answered`, `failed`, `unknown`) and Apple's status, in one transaction (one lost to a
    /// power cut is sent again with the same request id and body).
    func completeConsumptionAnswers(_ outcomes: [ConsumptionOutcome], at: Date) async throws
    /// The requests, newest first (by when Apple signed them); one transaction's when given.
    func consumptionRequests(transactionID: String?, limit: Int) async throws -> [ConsumptionRequestRecord]
    /// How many requests are open or sending, and their nearest deadline.
    func openConsumptionRequests() async throws -> ConsumptionOpenSummary
}

extension AuditSchema {
    /// v15: the consumption requests to answer by policy, and the policy each write was sent
    /// by. Requests stored before v15 are queued too (past their deadline, they are reported
    /// `late` by the first claim).
    package static func v15(id: String, real: String, integer: String) -> [String] {
        [
            """
            CREATE TABLE consumption_request (
                id \(id),
                notification_uuid TEXT NOT NULL UNIQUE,
                transaction_id TEXT NOT NULL,
                original_transaction_id TEXT,
                product_id TEXT,
                environment TEXT,
                requested_at \(real) NOT NULL,
                deadline \(real) NOT NULL,
                state TEXT NOT NULL,
                policy TEXT,
                body TEXT,
                request_id TEXT,
                action_id \(integer),
                http_status \(integer),
                api_error \(integer),
                detail TEXT,
                claimed_by TEXT,
                lease_until \(real),
                decided_at \(real)
            )
            """,
            "CREATE INDEX consumption_request_due ON consumption_request(deadline) WHERE state IN ('open', 'sending')",
            "CREATE INDEX consumption_request_transaction ON consumption_request(transaction_id)",
            "CREATE INDEX consumption_request_requested ON consumption_request(requested_at)",
            "ALTER TABLE api_action ADD COLUMN policy TEXT",
            """
            INSERT INTO consumption_request (notification_uuid, transaction_id, original_transaction_id, product_id, environment,
                requested_at, deadline, state)
            SELECT notification_uuid, transaction_id, original_transaction_id, product_id, environment, signed_date,
                signed_date + \(Int(consumptionWindow)), 'open'
            FROM notification
            WHERE notification_type = '\(consumptionRequestType)' AND transaction_id IS NOT NULL AND signed_date IS NOT NULL
                AND version = '2'
            """,
        ]
    }

    /// The notification type that queues a request.
    package static let consumptionRequestType = "CONSUMPTION_REQUEST"
    /// How long Apple gives to answer: twelve hours from its signature.
    public static let consumptionWindow: TimeInterval = 12 * 3600

    /// Whether `record` queues a consumption request, and its deadline.
    package static func consumptionDeadline(_ record: NotificationRecord) -> Date? {
        guard record.notificationType == consumptionRequestType, record.version == .v2, record.transactionID != nil,
            let signed = record.signedDate
        else { return nil }
        return signed.addingTimeInterval(consumptionWindow)
    }
}
