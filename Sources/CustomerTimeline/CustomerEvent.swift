import Foundation

/// What happened, in one word: the `kind` of a timeline event. The raw values are a contract
/// (`customer --format json` and `csv`): add, never rename.
public enum CustomerEventKind: String, Sendable, Hashable, CaseIterable {
    case purchase, renewal, upgrade, downgrade, crossgrade, refund
    case proratedRefund = "prorated-refund"
    case revoke
    case `extension`
    case offerRedeemed = "offer-redeemed"
    case billingRetry = "billing-retry"
    case gracePeriod = "grace-period"
    case expired
    case priceIncrease = "price-increase"
    case consumptionRequest = "consumption-request"
    case consumptionAnswered = "consumption-answered"
    case tokenSet = "token-set"
    case finished, test
    /// A notification type or action this version has no kind for: its summary names it as sent.
    case unknown
    /// Beyond the issue's list: the customer turned auto-renew off or on.
    case autoRenewOff = "auto-renew-off"
    case autoRenewOn = "auto-renew-on"
    /// Apple declined a refund request, or reversed a refund.
    case refundDeclined = "refund-declined"
    case refundReversed = "refund-reversed"
    /// A mass extension could not extend this subscription (`RENEWAL_EXTENSION`/`FAILURE`).
    case extensionFailed = "extension-failed"
    /// The customer tapped Cancel and our realtime responder offered a message, another
    /// product or a promotional offer (`receive --retention-path`).
    case retentionOffered = "retention-offered"
}

/// Where an event was seen. The raw values are a contract.
public enum CustomerSource: String, Sendable, Hashable, CaseIterable, Comparable {
    /// The App Store Server API (a look-up now, or one the trail recorded).
    case api
    /// A notification the receiver stored.
    case notification
    /// A write we sent to Apple (`history --actions`).
    case action
    /// A receipt or signed transaction that was inspected or verified.
    case receipt
    /// verifyReceipt's answer about a receipt.
    case verify
    /// A Retention Messaging realtime request our responder answered.
    case retention

    public static func < (a: CustomerSource, b: CustomerSource) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }
}

/// One thing that happened to the customer, from one or several sources.
public struct CustomerEvent: Sendable, Hashable {
    public var at: Date
    /// Sorted, without repeats.
    public var sources: [CustomerSource]
    public var kind: CustomerEventKind
    public var transactionID: String?
    public var originalTransactionID: String?
    public var productID: String?
    /// One line in words (not escaped: whoever prints it escapes it).
    public var summary: String
    /// The verdict of the signed source (`valid`, `test`, `unverifiable`, `invalid`), or for a
    /// write its outcome's trust word (`unsigned`), for a receipt verifyReceipt's word.
    public var trust: String?
    /// Notification UUIDs (`notification:`), action request ids (`action:`), receipt hashes
    /// (`receipt:`), API transaction ids (`api:`).
    public var refs: [String]
    /// Each source's payload and trust steps, in words, for the detail view.
    public var details: [Detail]
    /// A write's outcome: `success`, `refused`, `failed` or `unknown` (it may have been
    /// applied); nil for what Apple reported.
    public var outcome: String?

    public struct Detail: Sendable, Hashable {
        public var source: CustomerSource
        public var lines: [String]
        /// What the source sent, as it sent it: a notification's `signedPayload`, a write's
        /// request body.
        public var payload: String?
        /// The row it came from: a notification's UUID, a write's request id.
        public var ref: String?

        public init(source: CustomerSource, lines: [String], payload: String? = nil, ref: String? = nil) {
            self.source = source
            self.lines = lines
            self.payload = payload
            self.ref = ref
        }
    }

    public init(
        at: Date, sources: [CustomerSource], kind: CustomerEventKind, transactionID: String? = nil, originalTransactionID: String? = nil,
        productID: String? = nil, summary: String, trust: String? = nil, refs: [String] = [], details: [Detail] = [], outcome: String? = nil
    ) {
        self.outcome = outcome
        self.at = at
        self.sources = Array(Set(sources)).sorted()
        self.kind = kind
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.summary = summary
        self.trust = trust
        self.refs = refs
        self.details = details
    }
}

/// A contradiction or a gap between the sources. The codes are a contract.
public struct CustomerIssue: Sendable, Hashable {
    public enum Code: String, Sendable, Hashable, CaseIterable {
        /// A refund in Apple's history with no `REFUND` notification stored.
        case refundNotNotified = "refund-not-notified"
        /// A notification Apple says it sent that the store lacks.
        case notificationMissing = "notification-missing"
        /// A status Apple reports that no event in the timeline explains.
        case statusUnexplained = "status-unexplained"
        /// A `CONSUMPTION_REQUEST` with no consumption answer sent.
        case consumptionUnanswered = "consumption-unanswered"
        /// A write whose outcome is unknown: it may have been applied.
        case actionUnknown = "action-unknown"
    }

    public var code: Code
    public var transactionID: String?
    public var originalTransactionID: String?
    /// One line in words (not escaped).
    public var summary: String
    /// A consumption request's deadline (12 hours after Apple signed it).
    public var deadline: Date?
    public var refs: [String]

    public init(code: Code, transactionID: String? = nil, originalTransactionID: String? = nil, summary: String, deadline: Date? = nil, refs: [String] = []) {
        self.code = code
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.summary = summary
        self.deadline = deadline
        self.refs = refs
    }
}

/// How one source was asked.
public struct CustomerSourceReport: Sendable, Hashable {
    public var source: CustomerSource
    public var asked: Bool
    /// Requests made (the API) or reads (the trail).
    public var pages: Int
    /// Rows it gave.
    public var rows: Int
    /// What went wrong, in words.
    public var errors: [String]

    public init(source: CustomerSource, asked: Bool, pages: Int = 0, rows: Int = 0, errors: [String] = []) {
        self.source = source
        self.asked = asked
        self.pages = pages
        self.rows = rows
        self.errors = errors
    }
}
