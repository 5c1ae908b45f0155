import AppStoreAPI
import Foundation
import Synchronization

/// What the simulated Apple holds for Retention Messaging, per environment: images, messages,
/// default messages and the realtime URL, with their review states. Identifiers are compared
/// case-insensitively (Apple's libraries differ in the case they send) and kept as first sent.
///
/// Sandbox approves an upload at once; production keeps it `PENDING` until
/// ``approve(_:in:)`` (the simulator's `POST /control?approve=UUID`). Whether Apple keeps
/// content apart per environment is unconfirmed; sandbox's own approval suggests it does, and
/// so does this store.
public final class RetentionContentStore: Sendable {
    struct Image {
        let id: String
        let size: RetentionImageSize
        var state: RetentionContentState
    }

    struct Message {
        let id: String
        var state: RetentionContentState
        /// Keys of the images it uses (its image and its bullets').
        let imageKeys: [String]
    }

    struct Content {
        var images: [String: Image] = [:]
        var imageOrder: [String] = []
        var messages: [String: Message] = [:]
        var messageOrder: [String] = []
        /// `productId` + "\n" + `locale` → message key.
        var defaults: [String: String] = [:]
        var realtimeURL: String?
    }

    struct State {
        var content: [APIEnvironment: Content] = [.production: Content(), .sandbox: Content()]
        var performanceTestPassed = false
        var rateLimitsEnforced = false
        /// Endpoint and environment → the times (ms) of the requests taken in the last hour.
        var windows: [String: [Int64]] = [:]
    }

    let state = Mutex(State())

    public init() {}

    /// The comparison key of an identifier: the UUID in upper case, nil when it is not a UUID.
    static func key(_ id: String) -> String? { UUID(uuidString: id)?.uuidString }

    // MARK: For other parts of the simulator and for tests

    /// A sandbox performance test passed: production now takes a realtime URL (until then,
    /// 403 4030026).
    public func markPerformanceTestPassed() { state.withLock { $0.performanceTestPassed = true } }

    public var performanceTestPassed: Bool { state.withLock { $0.performanceTestPassed } }

    /// The realtime URL set in `environment`, if any (where the performance test and the
    /// realtime requests go).
    public func realtimeURL(in environment: APIEnvironment) -> String? { state.withLock { $0.content[environment]?.realtimeURL } }

    /// Enforce Apple's rate limits (off by default: tests stay fast).
    public func enforceRateLimits(_ on: Bool) { state.withLock { $0.rateLimitsEnforced = on } }

    /// The state of a message, nil when there is none with this id.
    public func messageState(_ id: String, in environment: APIEnvironment) -> RetentionContentState? {
        guard let key = Self.key(id) else { return nil }
        return state.withLock { $0.content[environment]?.messages[key]?.state }
    }

    /// The state of an image, nil when there is none with this id.
    public func imageState(_ id: String, in environment: APIEnvironment) -> RetentionContentState? {
        guard let key = Self.key(id) else { return nil }
        return state.withLock { $0.content[environment]?.images[key]?.state }
    }

    /// Whether a message can be shown: it is approved, and so are the images it uses.
    public func isDisplayable(_ messageID: String, in environment: APIEnvironment) -> Bool {
        guard let key = Self.key(messageID) else { return false }
        return state.withLock { s in
            guard let content = s.content[environment], let message = content.messages[key], message.state == .approved else { return false }
            return message.imageKeys.allSatisfy { content.images[$0]?.state == .approved }
        }
    }

    /// Apple's review of an image or message: `PENDING` → `APPROVED` (or `REJECTED`). Returns
    /// what was changed (`image` or `message`), nil when nothing has this id.
    @discardableResult
    public func review(_ id: String, to newState: RetentionContentState, in environment: APIEnvironment = .production) -> String? {
        guard let key = Self.key(id) else { return nil }
        return state.withLock { s -> String? in
            if s.content[environment]?.images[key] != nil {
                s.content[environment]?.images[key]?.state = newState
                return "image"
            }
            if s.content[environment]?.messages[key] != nil {
                s.content[environment]?.messages[key]?.state = newState
                return "message"
            }
            return nil
        }
    }

    /// Approves an image or message in `environment` (production's review).
    @discardableResult
    public func approve(_ id: String, in environment: APIEnvironment = .production) -> String? { review(id, to: .approved, in: environment) }

    // MARK: Rate limits

    /// Apple's rates per second in production, enforced over an hour; sandbox allows 10 % of
    /// them (identifying-rate-limits). Configure Default Message: 10; every other endpoint: 1.
    static func perSecond(_ endpoint: APIEndpointKind) -> Int64 { endpoint == .configureDefaultMessage ? 10 : 1 }

    /// Takes one request of `endpoint` at `nowMS` when rate limits are enforced: nil when it
    /// is allowed, else the UNIX ms at which one more will be (`Retry-After`).
    func takeRate(_ endpoint: APIEndpointKind, _ environment: APIEnvironment, nowMS: Int64) -> Int64? {
        state.withLock { s -> Int64? in
            guard s.rateLimitsEnforced else { return nil }
            let hour: Int64 = 3_600_000
            let budget = environment == .production ? Self.perSecond(endpoint) * 3600 : Self.perSecond(endpoint) * 360
            let key = "\(environment.rawValue)|\(endpoint.rawValue)"
            var window = s.windows[key, default: []]
            if let stale = window.firstIndex(where: { $0 > nowMS - hour }) { window.removeFirst(stale) } else { window.removeAll() }
            defer { s.windows[key] = window }
            guard window.count < budget else { return window[0] + hour }
            window.append(nowMS)
            return nil
        }
    }
}

/// The performance test reads the realtime URLs set through the API, and a passed test opens
/// the production realtime URL (403 4030026 until then).
extension RetentionContentStore: RealtimeURLSource {
    public func realtimeURL(_ environment: APIEnvironment) -> String? { realtimeURL(in: environment) }
    public func performanceTestPassed(target: String) { markPerformanceTestPassed() }
}
