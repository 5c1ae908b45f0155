import ReceiptCore
import Foundation

// The API's JSON answers, decoded with Foundation's JSONDecoder. Signed items stay JWS strings:
// each is checked on its own by the JWS trust before anything in it is believed.

/// A subscription's status in Get All Subscription Statuses.
public struct SubscriptionAPIStatus: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The number as Apple sent it: 1 to 5, or another that Apple does not define (kept).
    public let rawValue: Int

    public init(rawValue: Int) { self.rawValue = rawValue }

    public static let active = Self(rawValue: 1)
    public static let expired = Self(rawValue: 2)
    public static let billingRetry = Self(rawValue: 3)
    public static let gracePeriod = Self(rawValue: 4)
    public static let revoked = Self(rawValue: 5)
    /// The five Apple defines.
    public static let allCases: [Self] = [.active, .expired, .billingRetry, .gracePeriod, .revoked]

    /// Whether Apple defines this number.
    public var isDefined: Bool { (1...5).contains(rawValue) }

    public var description: String {
        switch rawValue {
        case 1: "active"
        case 2: "expired"
        case 3: "billing retry"
        case 4: "grace period"
        case 5: "revoked"
        default: AppleValue.notDefined
        }
    }
}

/// `{"errorCode": N, "errorMessage": "…"}`.
public struct APIErrorBody: Decodable, Sendable, Hashable {
    public var errorCode: Int?
    public var errorMessage: String?
}

/// Look Up Order ID: `status` 0 valid, 1 invalid.
public struct OrderLookupResponse: Decodable, Sendable, Hashable {
    public var status: Int
    public var signedTransactions: [String]

    public init(status: Int, signedTransactions: [String]) {
        self.status = status
        self.signedTransactions = signedTransactions
    }

    enum CodingKeys: String, CodingKey { case status, signedTransactions }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        status = try c.decode(Int.self, forKey: .status)
        signedTransactions = try c.decodeIfPresent([String].self, forKey: .signedTransactions) ?? []
    }

    /// Whether Apple knows the order id.
    public var isValid: Bool { status == 0 }
}

/// Get Transaction Info.
public struct TransactionInfoResponse: Decodable, Sendable, Hashable {
    public var signedTransactionInfo: String
}

/// Get App Transaction Info: the customer's signed AppTransaction.
public struct AppTransactionInfoResponse: Decodable, Sendable, Hashable {
    public var signedAppTransactionInfo: String
}

/// One page of Get Transaction History v2 or Get Refund History v2.
public struct TransactionPage: Decodable, Sendable, Hashable {
    public var revision: String?
    public var hasMore: Bool
    public var bundleId: String?
    public var appAppleId: Int64?
    public var environment: String?
    public var signedTransactions: [String]

    public init(
        revision: String?, hasMore: Bool, bundleId: String? = nil, appAppleId: Int64? = nil, environment: String? = nil,
        signedTransactions: [String]
    ) {
        self.revision = revision
        self.hasMore = hasMore
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environment = environment
        self.signedTransactions = signedTransactions
    }

    enum CodingKeys: String, CodingKey { case revision, hasMore, bundleId, appAppleId, environment, signedTransactions }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        revision = try c.decodeIfPresent(String.self, forKey: .revision)
        hasMore = try c.decodeIfPresent(Bool.self, forKey: .hasMore) ?? false
        bundleId = try c.decodeIfPresent(String.self, forKey: .bundleId)
        appAppleId = try c.decodeIfPresent(Int64.self, forKey: .appAppleId)
        environment = try c.decodeIfPresent(String.self, forKey: .environment)
        signedTransactions = try c.decodeIfPresent([String].self, forKey: .signedTransactions) ?? []
    }
}

/// Get All Subscription Statuses.
public struct StatusResponse: Decodable, Sendable, Hashable {
    public struct Group: Decodable, Sendable, Hashable {
        public var subscriptionGroupIdentifier: String?
        public var lastTransactions: [LastTransaction]
    }

    public struct LastTransaction: Decodable, Sendable, Hashable {
        /// Apple's status number (1–5; others kept as sent).
        public var status: Int?
        public var originalTransactionId: String?
        public var signedTransactionInfo: String?
        public var signedRenewalInfo: String?

        /// The status as sent, whatever its number (an undefined one is kept, not dropped).
        public var subscriptionStatus: SubscriptionAPIStatus? { status.map(SubscriptionAPIStatus.init(rawValue:)) }
    }

    public var environment: String?
    public var bundleId: String?
    public var appAppleId: Int64?
    public var data: [Group]
}

/// One page of Get Notification History.
public struct NotificationHistoryPage: Decodable, Sendable, Hashable {
    public struct Item: Decodable, Sendable, Hashable {
        public var signedPayload: String
        public var sendAttempts: [SendAttempt]

        enum CodingKeys: String, CodingKey { case signedPayload, sendAttempts }

        public init(signedPayload: String, sendAttempts: [SendAttempt]) {
            self.signedPayload = signedPayload
            self.sendAttempts = sendAttempts
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            signedPayload = try c.decode(String.self, forKey: .signedPayload)
            sendAttempts = try c.decodeIfPresent([SendAttempt].self, forKey: .sendAttempts) ?? []
        }
    }

    public var paginationToken: String?
    public var hasMore: Bool
    public var notificationHistory: [Item]

    enum CodingKeys: String, CodingKey { case paginationToken, hasMore, notificationHistory }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        paginationToken = try c.decodeIfPresent(String.self, forKey: .paginationToken)
        hasMore = try c.decodeIfPresent(Bool.self, forKey: .hasMore) ?? false
        notificationHistory = try c.decodeIfPresent([Item].self, forKey: .notificationHistory) ?? []
    }
}

/// One delivery attempt of a notification: when (UNIX ms) and Apple's result
/// (`SUCCESS`, `TIMED_OUT`, `TLS_ISSUE`, …; kept as sent).
public struct SendAttempt: Decodable, Sendable, Hashable {
    public var attemptDate: Int64?
    public var sendAttemptResult: String?

    public init(attemptDate: Int64?, sendAttemptResult: String?) {
        self.attemptDate = attemptDate
        self.sendAttemptResult = sendAttemptResult
    }

    public var date: Date? { attemptDate.map { Date(timeIntervalSince1970: Double($0) / 1000) } }
}

/// Request a Test Notification.
public struct TestNotificationResponse: Decodable, Sendable, Hashable {
    public var testNotificationToken: String
}

/// Get Test Notification Status.
public struct TestNotificationStatusResponse: Decodable, Sendable, Hashable {
    public var signedPayload: String?
    public var sendAttempts: [SendAttempt]

    enum CodingKeys: String, CodingKey { case signedPayload, sendAttempts }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        signedPayload = try c.decodeIfPresent(String.self, forKey: .signedPayload)
        sendAttempts = try c.decodeIfPresent([SendAttempt].self, forKey: .sendAttempts) ?? []
    }
}
