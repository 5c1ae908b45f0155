import Crypto
import Foundation
import AppStoreAPI
import ReceiptCore
import ReceiptTrust

/// What the receiver checks beyond the signature: the gates a notification must pass.
///
/// The defaults are the safe ones for an endpoint on the open internet: production only, V1
/// refused, a notification signed more than ``defaultMaximumAge`` ago or more than five minutes
/// ahead refused. The command line also insists on at least one bundle id; an empty list here
/// accepts any (tests and tools that judge Apple's own samples).
public struct ReceiverPolicy: Sendable {
    /// Accepted `bundleId`s; empty accepts any.
    public var allowedBundleIDs: [String]
    /// The app's Apple ID, checked on production notifications when given (as Apple's verifier).
    public var appAppleID: Int64?
    /// Apple's roots, plus `--root-ca` test roots (chains to those are accepted as `test`).
    public var anchors: TrustAnchors
    /// The largest body read (`--max-body`); a larger one is answered 413 without reading it all.
    public var maximumBodySize: Int
    /// The environments accepted (`--environment`): another is refused (403).
    public var environments: Set<StoreEnvironment>
    /// V1 bodies are accepted only with this secret (`--accept-v1`), whose `password` they must
    /// carry; nil refuses every V1 body (403).
    public var v1SharedSecret: AppStoreAPI.SharedSecret?
    /// The oldest `signedDate` accepted (`--max-age`), nil for any (replaying captured ones).
    public var maximumAge: Duration?
    /// How far ahead of this machine's clock a `signedDate` may be.
    public var maximumClockSkew: Duration
    /// Online checks (`--online-checks`): OCSP about each notification's chain, judged now; a
    /// responder that cannot answer makes the receiver answer 503 (``RefusalKind/retryLater``).
    public var onlineChecks: (any RevocationChecking)?

    public static let defaultMaximumBodySize = 1 << 20
    /// Ten days: above Apple's retry window (five retries over about 6.5 days).
    public static let defaultMaximumAge = Duration.seconds(10 * 86_400)
    public static let defaultClockSkew = Duration.seconds(300)

    public init(
        allowedBundleIDs: [String] = [], appAppleID: Int64? = nil, anchors: TrustAnchors = .apple,
        maximumBodySize: Int = defaultMaximumBodySize, environments: Set<StoreEnvironment> = [.production],
        v1SharedSecret: AppStoreAPI.SharedSecret? = nil, maximumAge: Duration? = defaultMaximumAge,
        maximumClockSkew: Duration = defaultClockSkew
    ) {
        self.allowedBundleIDs = allowedBundleIDs
        self.appAppleID = appAppleID
        self.anchors = anchors
        self.maximumBodySize = maximumBodySize
        self.environments = environments
        self.v1SharedSecret = v1SharedSecret
        self.maximumAge = maximumAge
        self.maximumClockSkew = maximumClockSkew
    }
}

/// Why a request was not stored, as a class: the metrics label, the `kind` of a stored
/// refusal, and the words the client is told (``publicReason``), which never carry
/// configuration, URLs or internal errors. The detail goes to the log and the refusal row.
public enum RefusalKind: String, Sendable, Hashable, CaseIterable {
    /// The body is over `--max-body` (413).
    case tooLarge = "too-large"
    /// The body could not be read off the connection (400).
    case unreadable
    /// The body is not JSON (400).
    case notJSON = "not-json"
    /// Not `{"signedPayload": "<JWS>"}` and not a V1 notification (400).
    case notNotification = "not-a-notification"
    /// `signedPayload` is not a readable V2 notification (400).
    case undecodable
    /// The token is over the receiver's bounds: header, `x5c` count or size (400).
    case limits
    /// The `notificationUUID` is not a UUID (400): Apple's always is, and the trail, the
    /// outbox and every log key rows on it.
    case badNotificationUUID = "bad-notification-uuid"
    /// A V1 body while V1 is off (403).
    case v1NotAccepted = "v1-not-accepted"
    /// A V1 body whose `password` is not the shared secret (403).
    case v1Password = "v1-password"
    /// The signature or its chain is not trusted (403).
    case signature
    /// The bundle id is not an accepted one (403).
    case bundle
    /// The app's Apple ID is not the one given (403).
    case app
    /// The environment is not an accepted one (403).
    case environment
    /// Signed longer ago than `--max-age` (403).
    case stale
    /// Signed more than five minutes ahead of this machine's clock (403).
    case future
    /// The commit queue is full (503, `Retry-After`).
    case busy
    /// The store could not make it durable (503).
    case storeFailed = "store-failed"
    /// Online checks could not get an answer about the chain for now (503, `Retry-After`):
    /// Apple sends it again later; never refused for it.
    case retryLater = "retry-later"
    /// A realtime request's `signedPayload` is a readable JWS but not a realtime request.
    case notRealtimeRequest = "not-a-realtime-request"
    /// A realtime request's `requestIdentifier` is missing or not a UUID.
    case badRequestIdentifier = "bad-request-identifier"

    public var status: Int {
        switch self {
        case .tooLarge: 413
        case .unreadable, .notJSON, .notNotification, .undecodable, .limits, .badNotificationUUID, .notRealtimeRequest, .badRequestIdentifier: 400
        case .v1NotAccepted, .v1Password, .signature, .bundle, .app, .environment, .stale, .future: 403
        case .busy, .storeFailed, .retryLater: 503
        }
    }

    /// What the client is told: the class of refusal, nothing of this receiver's set-up (no
    /// flag, path or product name: the detail, with the flag to change, is in the log).
    public var publicReason: String {
        switch self {
        case .tooLarge: "the body is too large"
        case .unreadable: "the body could not be read"
        case .notJSON: "the body is not JSON"
        case .notNotification: "the body is not {\"signedPayload\": \"<JWS>\"}"
        case .undecodable: "signedPayload is not a readable V2 notification"
        case .limits: "signedPayload is over the receiver's limits"
        case .badNotificationUUID: "notificationUUID is not a UUID"
        case .v1NotAccepted: "V1 notifications are not accepted"
        case .v1Password: "the V1 password is not the shared secret"
        case .signature: "the signature is not trusted"
        case .bundle: "bundle id not accepted"
        case .app: "app not accepted"
        case .environment: "environment not accepted"
        case .stale: "stale: signed too long ago"
        case .future: "signed in the future"
        case .busy: "busy: retry later"
        case .storeFailed: "store unavailable: retry later"
        case .retryLater: "the signature cannot be checked now: retry later"
        case .notRealtimeRequest: "signedPayload is not a Retention Messaging realtime request"
        case .badRequestIdentifier: "requestIdentifier is not a UUID"
        }
    }
}

extension AppStoreAPI.SharedSecret {
    /// Whether `candidate` is this secret, in time that does not depend on where they differ:
    /// the SHA-256 digests of both are compared, and swift-crypto compares digests in constant
    /// time.
    func matchesInConstantTime(_ candidate: String) -> Bool {
        SHA256.hash(data: Array(candidate.utf8)) == SHA256.hash(data: Array(value.utf8))
    }
}
