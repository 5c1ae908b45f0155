import Foundation
import ReceiptCore
import ReceiptTrust



/// A typed failure of the notification store, compared by code.
public struct NotificationStoreError: CodedError {
    public enum Code: String, CaseIterable, CodedErrorCode {
        /// The store was closed (the receiver is shutting down): nothing was written.
        case closed
        /// SQLite refused the write (disk full, I/O error, locked too long).
        case database
        /// Opening or migrating the database failed.
        case open
        /// The commit queue is full (`--max-pending`): nothing was queued; retry later.
        case busy
    }

    public let code: Code
    public let reason: String

    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }
}

/// One accepted notification, as stored: its envelope, the verdict of our trust check, the
/// first transaction it carries and the raw `signedPayload` (nil for V1, whose body is not kept
/// since it carries the shared secret).
public struct NotificationRecord: Sendable, Hashable {
    /// `notificationUUID` (V2), or `v1:<sha256 of the body without its password>` (V1).
    public var notificationUUID: String
    /// V2 or V1 (stored as `2` or `1`).
    public var version: NotificationVersion
    public var notificationType: String?
    public var subtype: String?
    public var bundleID: String?
    public var appAppleID: Int64?
    public var environment: String?
    public var signedDate: Date?
    public var receivedAt: Date
    /// `valid`, `test` or (V1, unsigned) `unverifiable`, stored as the raw value.
    public var verdict: TrustReport.Verdict
    /// The trust report's headline when it is not plain `valid` (why a test or V1 one passed).
    public var reason: String?
    public var transactionID: String?
    public var originalTransactionID: String?
    public var productID: String?
    /// The client's address; ``historyPeer`` for one backfilled from Notification History.
    public var peer: String?
    public var signedPayload: String?
    /// The peer of a notification `notifications --reconcile --ingest` stored.
    public static let historyPeer = "history"
    /// The customer's app account token (lowercased) and app transaction id, from the
    /// transaction or renewal it carries: what `customer` finds it by.
    public var appAccountToken: String?
    public var appTransactionID: String?

    public init(
        notificationUUID: String, version: NotificationVersion, notificationType: String? = nil, subtype: String? = nil,
        bundleID: String? = nil, appAppleID: Int64? = nil, environment: String? = nil, signedDate: Date? = nil,
        receivedAt: Date, verdict: TrustReport.Verdict, reason: String? = nil, transactionID: String? = nil,
        originalTransactionID: String? = nil, productID: String? = nil, peer: String? = nil, signedPayload: String? = nil,
        appAccountToken: String? = nil, appTransactionID: String? = nil
    ) {
        self.appAccountToken = appAccountToken?.lowercased()
        self.appTransactionID = appTransactionID
        self.notificationUUID = notificationUUID
        self.version = version
        self.notificationType = notificationType
        self.subtype = subtype
        self.bundleID = bundleID
        self.appAppleID = appAppleID
        self.environment = environment
        self.signedDate = signedDate
        self.receivedAt = receivedAt
        self.verdict = verdict
        self.reason = reason
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.peer = peer
        self.signedPayload = signedPayload
    }
}

/// One refused request: when, from whom, why, the status answered, and at most
/// ``maximumPrefix`` bytes of its body (none when the body may carry a V1 password).
///
/// Stored as a sample: the first refusal of a class from an address in a minute is a row, and
/// the others of that class, address and minute add to its ``count``.
public struct RejectionRecord: Sendable, Hashable {
    /// `host` of a peer as the receiver writes it, `address:port` (an IPv6 address, without
    /// brackets, keeps all but its port): refusals are sampled and summed per address.
    public static func host(of peer: String) -> String {
        guard let colon = peer.lastIndex(of: ":"), peer[peer.index(after: colon)...].allSatisfy(\.isNumber),
            colon != peer.startIndex
        else { return peer }
        return String(peer[..<colon])
    }

    /// The most of a refused body ever kept.
    public static let maximumPrefix = 256

    public var at: Date
    public var peer: String?
    public var reason: String
    public var httpStatus: Int
    public var bodySize: Int?
    public var bodyPrefix: String?
    /// The class of refusal (``RefusalKind``'s name), nil in rows from before it was kept.
    public var kind: String?
    /// How many refusals of this class came from this address in this row's minute.
    public var count = 1
    /// The client's address without its port (what refusals are sampled by).
    public var peerHost: String?
    /// `kind|address|minute`: the row a later refusal of the same class, address and minute
    /// counts into (set by the store).
    public var sampleKey: String?

    /// - Parameter body: the bytes read of the refused body (may be a prefix): a bounded,
    ///   password-free prefix of them is kept.
    public init(at: Date, peer: String?, reason: String, httpStatus: Int, bodySize: Int?, body: some Collection<UInt8>) {
        self.at = at
        self.peer = peer
        self.reason = reason
        self.httpStatus = httpStatus
        self.bodySize = bodySize
        bodyPrefix = Self.safePrefix(body)
    }

    /// The first ``maximumPrefix`` bytes as text, or nil when the body mentions a password
    /// anywhere (a V1 body carries the shared secret in `password`).
    static func safePrefix(_ body: some Collection<UInt8>) -> String? {
        if body.isEmpty { return nil }
        let mentions = body.withContiguousStorageIfAvailable(mentionsPassword) ?? Array(body).withUnsafeBufferPointer(mentionsPassword)
        if mentions { return nil }
        return String(decoding: body.prefix(maximumPrefix), as: UTF8.self)
    }

    /// Whether `bytes` contain "password" in any ASCII case: one pass, no copy (a refused body
    /// may be a whole megabyte, and a flood of them each takes this scan).
    static func mentionsPassword(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        // "password"; `byte | 0x20` is a letter's lower case, and equals one of these letters
        // only for that letter in either case.
        let needle: [UInt8] = [0x70, 0x61, 0x73, 0x73, 0x77, 0x6F, 0x72, 0x64]
        guard bytes.count >= needle.count else { return false }
        var start = 0
        while start <= bytes.count - needle.count {
            if bytes[start] | 0x20 == 0x70 {
                var matched = 1
                while matched < needle.count, bytes[start + matched] | 0x20 == needle[matched] { matched += 1 }
                if matched == needle.count { return true }
            }
            start += 1
        }
        return false
    }
}

/// What storing a notification did.
public enum AppendOutcome: Sendable, Hashable {
    /// First delivery: a new row.
    case stored
    /// The same notificationUUID again: the row's `deliveries` is now this.
    case redelivery(deliveries: Int)
}

/// Where the receiver puts what it accepts and refuses. ``NotificationStore`` is the real one;
/// tests inject others to observe the order of events.
public protocol NotificationSink: Sendable {
    /// Returns only once the notification is durable.
    func append(_ record: NotificationRecord) async throws(NotificationStoreError) -> AppendOutcome
    /// Records a refused request: the first of its class, address and minute as a row
    /// (durable on return), the rest as a count on that row (returns at once).
    func reject(_ record: RejectionRecord) async throws(NotificationStoreError)
    /// Whether a write would succeed now (`GET /health`).
    func isWritable() async -> Bool
}

/// A notification row: the record plus how often it was delivered.
public struct StoredNotification: Sendable, Hashable {
    public var record: NotificationRecord
    public var deliveries: Int
    public var lastReceivedAt: Date

    public init(record: NotificationRecord, deliveries: Int, lastReceivedAt: Date) {
        self.record = record
        self.deliveries = deliveries
        self.lastReceivedAt = lastReceivedAt
    }
}
