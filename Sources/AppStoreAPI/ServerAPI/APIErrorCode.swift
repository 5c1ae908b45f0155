import ReceiptCore
import Foundation

/// An `errorCode` of the App Store Server API (`{"errorCode": N, "errorMessage": "…"}`), with
/// whether asking again can help and what it means, in words for people.
///
/// Any integer is a code (Apple adds codes); ``isKnown`` says whether this version knows it.
/// Equality compares the number.
public struct APIErrorCode: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let rawValue: Int

    public init(_ rawValue: Int) {
        self.rawValue = rawValue
    }

    // 400
    /// 4000000: the request is invalid (general).
    public static let generalBadRequest = APIErrorCode(4_000_000)
    /// 4000005: the `revision` token is invalid.
    public static let invalidRevision = APIErrorCode(4_000_005)
    /// 4000006: the transaction id is invalid.
    public static let invalidTransactionID = APIErrorCode(4_000_006)
    /// 4000014: the pagination token is invalid.
    public static let invalidPaginationToken = APIErrorCode(4_000_014)
    /// 4000017: the pagination token has expired.
    public static let paginationTokenExpired = APIErrorCode(4_000_017)
    /// 4000019: more than one filter (notification type and transaction id) was supplied.
    public static let multipleFilters = APIErrorCode(4_000_019)
    /// 4000187: not an original transaction id.
    public static let notOriginalTransactionID = APIErrorCode(4_000_187)
    // 404
    /// 4040001: the account was not found.
    public static let accountNotFound = APIErrorCode(4_040_001)
    /// 4040002: the account was not found; retryable.
    public static let accountNotFoundRetryable = APIErrorCode(4_040_002)
    /// 4040003: the app was not found.
    public static let appNotFound = APIErrorCode(4_040_003)
    /// 4040004: the app was not found; retryable.
    public static let appNotFoundRetryable = APIErrorCode(4_040_004)
    /// 4040005: the original transaction id was not found.
    public static let originalTransactionIDNotFound = APIErrorCode(4_040_005)
    /// 4040006: the original transaction id was not found; retryable.
    public static let originalTransactionIDNotFoundRetryable = APIErrorCode(4_040_006)
    /// 4040008: the test notification was not found.
    public static let testNotificationNotFound = APIErrorCode(4_040_008)
    /// 4040010: the transaction id was not found (in this environment).
    public static let transactionIDNotFound = APIErrorCode(4_040_010)
    /// 4040019: the customer has no app transaction (Get App Transaction Info).
    public static let appTransactionDoesNotExist = APIErrorCode(4_040_019)
    // 429
    /// 4290000: rate limited; `Retry-After` says until when (UNIX milliseconds).
    public static let rateLimitExceeded = APIErrorCode(4_290_000)
    // 500
    /// 5000000: a general internal error (Apple's libraries do not retry it).
    public static let generalInternal = APIErrorCode(5_000_000)
    /// 5000001: an internal error worth retrying.
    public static let generalInternalRetryable = APIErrorCode(5_000_001)

    /// Every code this version knows, in numeric order.
    public static let known: [APIErrorCode] = [
        .generalBadRequest, .invalidRevision, .invalidTransactionID, .invalidPaginationToken, .paginationTokenExpired,
        .multipleFilters, .notOriginalTransactionID, .accountNotFound, .accountNotFoundRetryable, .appNotFound,
        .appNotFoundRetryable, .originalTransactionIDNotFound, .originalTransactionIDNotFoundRetryable,
        .testNotificationNotFound, .transactionIDNotFound, .appTransactionDoesNotExist, .rateLimitExceeded, .generalInternal, .generalInternalRetryable,
    ]

    public var isKnown: Bool { Self.known.contains(self) || Self.actionCodes.contains(self) || Self.retentionCodes.contains(self) }

    /// Whether the same request may succeed later: 4040002, 4040004, 4040006, 5000001 (retried
    /// with backoff) and 4290000 (retried at `Retry-After`). Every other code is permanent.
    public var isRetryable: Bool {
        switch self {
        case .accountNotFoundRetryable, .appNotFoundRetryable, .originalTransactionIDNotFoundRetryable, .generalInternalRetryable,
            .rateLimitExceeded:
            true
        default: false
        }
    }

    /// What the code means, for people (no text from the response).
    public var explanation: String {
        switch self {
        case .generalBadRequest: "the request is invalid"
        case .invalidRevision: "the revision token is invalid"
        case .invalidTransactionID: "the transaction id is invalid"
        case .invalidPaginationToken: "the pagination token is invalid"
        case .paginationTokenExpired: "the pagination token has expired"
        case .multipleFilters: "a notification type and a transaction id cannot be asked together"
        case .notOriginalTransactionID: "the transaction id is not an original transaction id"
        case .accountNotFound: "the App Store account was not found"
        case .accountNotFoundRetryable: "the App Store account was not found (temporary; retried)"
        case .appNotFound: "the app was not found"
        case .appNotFoundRetryable: "the app was not found (temporary; retried)"
        case .originalTransactionIDNotFound: "the original transaction id was not found"
        case .originalTransactionIDNotFoundRetryable: "the original transaction id was not found (temporary; retried)"
        case .testNotificationNotFound: "the test notification was not found"
        case .transactionIDNotFound: "the transaction id was not found in this environment"
        case .appTransactionDoesNotExist: "Apple has no app transaction for this customer (the app was never downloaded with this account, or not in this environment)"
        case .rateLimitExceeded: "rate limited"
        case .generalInternal: "Apple's server had an internal error"
        case .generalInternalRetryable: "Apple's server had an internal error (temporary; retried)"
        default:
            Self.actionCodes.contains(self)
                ? actionExplanation : Self.retentionCodes.contains(self) ? retentionExplanation : "error code \(rawValue), unknown to this version"
        }
    }

    /// `4040010 the transaction id was not found in this environment`.
    public var description: String { "\(rawValue) \(explanation)" }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}
