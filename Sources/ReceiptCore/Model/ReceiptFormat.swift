/// The kind of input that was recognised.
///
/// The raw values are part of the command-line contract (`inspect --format json` prints them as
/// `"format"`); add cases, never rename them.
public enum ReceiptFormat: String, Sendable, Hashable, CaseIterable, Codable {
    /// A PKCS#7 app receipt (iOS 7+, macOS, watchOS, Xcode StoreKit testing).
    case pkcs7
    /// An iOS 6-style transaction receipt (an OpenStep plist with `purchase-info`).
    case legacy
    /// A saved `verifyReceipt` response body.
    case verifyResponse = "verify-response"
    /// An App Store Server Notification, version 1 (plain JSON).
    case notificationV1 = "notification-v1"
    /// A StoreKit 2 signed transaction (`JWSTransaction`).
    case jwsTransaction = "jws-transaction"
    /// A StoreKit 2 signed renewal info (`JWSRenewalInfo`).
    case jwsRenewal = "jws-renewal"
    /// A StoreKit 2 signed `AppTransaction`.
    case jwsAppTransaction = "jws-app-transaction"
    /// An App Store Server Notification, version 2 (`signedPayload`).
    case jwsNotification = "jws-notification"
    /// A customer looked up through the App Store Server API (the dashboard's `l` / `L`): the
    /// transactions and renewal infos Apple returned, each judged on its own.
    case api = "api"
    /// A Retention Messaging API realtime request: Apple asks the app's server which message
    /// to show a customer (`requestIdentifier`, `userLocale`, …).
    case realtimeRequest = "realtime-request"
    /// A signed payload of no kind Apple defines that receiptdash knows: its fields are kept as
    /// sent, never read as the nearest kind.
    case unknown

    /// A short human name for the format, for summaries and panes.
    public var displayName: String {
        switch self {
        case .pkcs7: "App receipt (PKCS#7)"
        case .legacy: "iOS 6 transaction receipt"
        case .verifyResponse: "verifyReceipt response"
        case .notificationV1: "Server notification V1"
        case .jwsTransaction: "StoreKit 2 transaction (JWS)"
        case .jwsRenewal: "StoreKit 2 renewal info (JWS)"
        case .jwsAppTransaction: "StoreKit 2 AppTransaction (JWS)"
        case .jwsNotification: "Server notification V2 (JWS)"
        case .api: "App Store Server API look-up"
        case .realtimeRequest: "Retention Messaging realtime request (JWS)"
        case .unknown: "Signed payload of an unknown kind (JWS)"
        }
    }
}

/// The App Store environment a receipt or transaction belongs to.
public enum StoreEnvironment: String, Sendable, Hashable, Codable, CaseIterable {
    case production = "Production"
    case sandbox = "Sandbox"
    /// Xcode StoreKit testing: never genuine, never sent to Apple.
    case xcode = "Xcode"
    /// StoreKit local testing (`LocalTesting` in JWS).
    case localTesting = "LocalTesting"

    /// What the environment is, in words.
    public var meaning: String {
        switch self {
        case .production: "the App Store"
        case .sandbox: "test purchases"
        case .xcode: "StoreKit testing in Xcode"
        case .localTesting: "local testing"
        }
    }

    /// Interprets the environment strings Apple uses across formats: `Production`,
    /// `ProductionVPP`, `ProductionSandbox`, `ProductionVPPSandbox`, `Sandbox`, `Xcode`,
    /// `LocalTesting`, and the V1 notification spellings `PROD` and `Sandbox`.
    public init?(appleValue: String) {
        switch appleValue.lowercased() {
        case "production", "productionvpp", "prod": self = .production
        case "sandbox", "productionsandbox", "productionvppsandbox": self = .sandbox
        case "xcode": self = .xcode
        case "localtesting": self = .localTesting
        default: return nil
        }
    }
}

/// What a product is, from receipt field 1707 or the JWS `type`.
public enum ProductType: String, Sendable, Hashable, Codable {
    case autoRenewable = "Auto-Renewable Subscription"
    case nonRenewing = "Non-Renewing Subscription"
    case consumable = "Consumable"
    case nonConsumable = "Non-Consumable"
    case unknown = "Unknown"

    /// Maps receipt field 1707 (−1 unknown, 0 non-consumable, 1 consumable, 2 non-renewing,
    /// 3 auto-renewable).
    public init(receiptField value: Int) {
        switch value {
        case 0: self = .nonConsumable
        case 1: self = .consumable
        case 2: self = .nonRenewing
        case 3: self = .autoRenewable
        default: self = .unknown
        }
    }
}

/// How a value Apple does not define is said: as sent, and that it is not Apple's.
public enum AppleValue {
    /// What follows a value Apple does not define, in every output.
    public static let notDefined = "not defined by Apple"

    /// `7 (not defined by Apple)`, `"FOO" (not defined by Apple)`.
    public static func undefined(_ value: JSONValue) -> String {
        let shown: String
        switch value {
        case .string(let text): shown = "\"\(text)\""
        default: shown = value.compactJSON
        }
        return "\(shown) (\(notDefined))"
    }
}
