import Foundation

/// What became of one Retention Messaging realtime request that passed the receiver's checks
/// (a refused one is a refusal row, as a refused notification is).
public enum RetentionResult: String, Sendable, Hashable, CaseIterable {
    /// Answered with a message, an alternate product or a promotional offer.
    case offered
    /// No rule matched: nothing usable was answered, so Apple shows the default message.
    case noMatch = "no-match"
    /// The rule that matched names a message (or image) the trail does not know as `APPROVED`.
    case notApproved = "not-approved"
    /// Something of ours failed (the offer could not be signed, the trail could not be read).
    case fault
}

/// One realtime request and its answer (or why none), as the trail keeps it.
public struct RetentionRecord: Sendable, Hashable {
    public var requestIdentifier: String
    public var receivedAt: Date
    public var environment: String?
    public var appAppleID: Int64?
    public var originalTransactionID: String?
    public var productID: String?
    public var locale: String?
    public var result: RetentionResult
    /// Why, in words (the rule's name and what it answered, or why nothing was).
    public var reason: String
    /// The rule that matched, by name.
    public var rule: String?
    /// `message`, `alternate-product` or `promotional-offer`.
    public var answerKind: String?
    public var messageIdentifier: String?
    /// The body sent to Apple, as sent (`{}` when nothing usable was).
    public var answer: String
    public var latencyMilliseconds: Double
    public var peer: String?

    public init(
        requestIdentifier: String, receivedAt: Date, environment: String?, appAppleID: Int64?, originalTransactionID: String?, productID: String?,
        locale: String?, result: RetentionResult, reason: String, rule: String? = nil, answerKind: String? = nil, messageIdentifier: String? = nil,
        answer: String, latencyMilliseconds: Double, peer: String? = nil
    ) {
        self.requestIdentifier = requestIdentifier
        self.receivedAt = receivedAt
        self.environment = environment
        self.appAppleID = appAppleID
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.locale = locale
        self.result = result
        self.reason = reason
        self.rule = rule
        self.answerKind = answerKind
        self.messageIdentifier = messageIdentifier
        self.answer = answer
        self.latencyMilliseconds = latencyMilliseconds
        self.peer = peer
    }
}

/// What the trail knows of a customer when a realtime request names them: the rules match on
/// it. Nil where the trail knows nothing (a rule that asks then does not match: never guessed).
public struct RetentionFacts: Sendable, Hashable {
    /// The earliest purchase or notification the trail holds of the original transaction.
    public var firstSeen: Date?
    /// Purchases made with an offer (`offerType`), and `OFFER_REDEEMED` notifications.
    public var offersRedeemed: Int
    /// Refunded purchases and `REFUND` notifications, by transaction.
    public var refunds: Int
    /// Whether the trail holds anything of the customer at all.
    public var known: Bool

    public init(firstSeen: Date?, offersRedeemed: Int, refunds: Int, known: Bool) {
        self.firstSeen = firstSeen
        self.offersRedeemed = offersRedeemed
        self.refunds = refunds
        self.known = known
    }

    /// Whole months (30.44 days) from ``firstSeen`` to `now`; nil when the trail has no date.
    public func monthsSubscribed(at now: Date) -> Int? {
        firstSeen.map { max(0, Int(now.timeIntervalSince($0) / (30.436875 * 86_400))) }
    }
}

/// An image or a message Apple holds, with its state as Apple last said it (`messaging status`
/// or `message list` records what it read).
public struct RetentionContentItem: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable { case image, message }
    public var kind: Kind
    /// As Apple wrote it; compared without regard to case.
    public var identifier: String
    /// `PENDING`, `APPROVED`, `REJECTED`, or a state Apple adds later, as sent.
    public var state: String
    /// The image a message shows, where the trail knows it (its upload was recorded).
    public var imageIdentifier: String?
    public var observedAt: Date

    public init(kind: Kind, identifier: String, state: String, imageIdentifier: String? = nil, observedAt: Date) {
        self.kind = kind
        self.identifier = identifier
        self.state = state
        self.imageIdentifier = imageIdentifier
        self.observedAt = observedAt
    }
}

/// Which realtime requests to list (`notifications --retention`): newest last.
public struct RetentionQuery: Sendable, Hashable {
    public var originalTransactionIDs: [String]
    public var limit: Int

    public init(originalTransactionIDs: [String] = [], limit: Int = 1_000) {
        self.originalTransactionIDs = originalTransactionIDs
        self.limit = limit
    }
}

/// The trail's part in Retention Messaging: what the responder reads before answering and
/// records after, and the content states `messaging` records.
public protocol RetentionTrail: Sendable {
    /// What the trail knows of the customer of `originalTransactionID`: three indexed reads.
    func retentionFacts(originalTransactionID: String) async throws -> RetentionFacts
    /// Records one request and its answer.
    func recordRetention(_ record: RetentionRecord) async throws
    /// The requests recorded, oldest first, at most `query.limit` (the newest ones).
    func retentionRequests(_ query: RetentionQuery) async throws -> [RetentionRecord]
    /// Replaces what the trail knows of `environment`'s images and messages (a list read whole).
    func recordRetentionContent(_ items: [RetentionContentItem], kind: RetentionContentItem.Kind, environment: String) async throws
    /// The images and messages last read of `environment`.
    func retentionContent(environment: String) async throws -> [RetentionContentItem]
}

extension AuditSchema {
    /// v14: Retention Messaging. Each realtime request answered (or not) and why; the images
    /// and messages Apple holds per environment, with the state last read.
    package static func v14(id: String, real: String, integer: String) -> [String] {
        [
            """
            CREATE TABLE retention_request (
                id \(id),
                request_identifier TEXT NOT NULL,
                received_at \(real) NOT NULL,
                environment TEXT,
                app_apple_id \(integer),
                original_transaction_id TEXT,
                product_id TEXT,
                locale TEXT,
                result TEXT NOT NULL,
                reason TEXT NOT NULL,
                rule TEXT,
                answer_kind TEXT,
                message_identifier TEXT,
                answer TEXT NOT NULL,
                latency_ms \(real) NOT NULL,
                peer TEXT
            )
            """,
            "CREATE INDEX retention_request_original ON retention_request(original_transaction_id)",
            "CREATE INDEX retention_request_received ON retention_request(received_at)",
            """
            CREATE TABLE retention_content (
                environment TEXT NOT NULL,
                kind TEXT NOT NULL,
                identifier TEXT NOT NULL,
                state TEXT NOT NULL,
                image_identifier TEXT,
                observed_at \(real) NOT NULL,
                PRIMARY KEY (environment, kind, identifier)
            )
            """,
        ]
    }

    /// The notification types that count toward ``RetentionFacts``.
    package static let offerRedeemedType = "OFFER_REDEEMED"
    package static let refundType = "REFUND"
}
