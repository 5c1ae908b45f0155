import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import AppStoreAPI
import ReceiptCore
import RetryEngine
import Synchronization
import UntrustedText
import AsyncHTTPClient
import OutboundHTTP

/// Why the sender could not start. Equality compares only the ``Code``.
public struct NotificationSenderError: CodedError {
    public enum Code: String, CaseIterable, CodedErrorCode {
        /// The URL is not https, nor plain http on a loopback host.
        case invalidURL = "invalid-url"
        /// A `--retry-schedule` that cannot be read.
        case invalidSchedule = "invalid-schedule"
        /// A rate, count, concurrency or timeout out of range.
        case invalidSetting = "invalid-setting"
    }

    public let code: Code
    public let reason: String

    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }
}

/// Apple's `sendAttemptResult` names, as Get Notification History reports them.
public enum SendAttemptResult: String, Sendable, Hashable, CaseIterable {
    case success = "SUCCESS"
    case timedOut = "TIMED_OUT"
    case tlsIssue = "TLS_ISSUE"
    case circularRedirect = "CIRCULAR_REDIRECT"
    case noResponse = "NO_RESPONSE"
    case socketIssue = "SOCKET_ISSUE"
    case unsupportedCharset = "UNSUPPORTED_CHARSET"
    case invalidResponse = "INVALID_RESPONSE"
    case prematureClose = "PREMATURE_CLOSE"
    case unsuccessfulHTTPResponseCode = "UNSUCCESSFUL_HTTP_RESPONSE_CODE"
    case other = "OTHER"
}

/// How long Apple waits after a failed attempt before the next one: 1, 12, 24, 48 and 72 hours
/// (five retries); compressed for tests and demos (`1s,2s,4s,8s,16s`).
public struct RetrySchedule: Sendable, Hashable, CustomStringConvertible {
    /// Seconds to wait before retry 1, 2, …; empty: never retry.
    public var delays: [Double]

    public init(delays: [Double]) {
        self.delays = delays
    }

    /// Apple's production schedule.
    public static let apple = RetrySchedule(delays: [3600, 43_200, 86_400, 172_800, 259_200])
    /// No retries (what sandbox does).
    public static let none = RetrySchedule(delays: [])

    /// Parses `1s,2s,500ms,1m,1h` (a number and a unit: ms, s, m, h; `none` or an empty
    /// list for no retries). At most 20 retries, each at most 7 days.
    public init(parsing text: String) throws(NotificationSenderError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.isEmpty || trimmed == "none" {
            delays = []
            return
        }
        var out: [Double] = []
        for part in trimmed.split(separator: ",", omittingEmptySubsequences: false) {
            let item = part.trimmingCharacters(in: .whitespaces)
            let shown = SafeText.escaped(item)
            guard let unitStart = item.firstIndex(where: { !($0.isASCII && ($0.isNumber || $0 == ".")) }), unitStart != item.startIndex
            else {
                throw NotificationSenderError(
                    .invalidSchedule, "\"\(shown)\" is not a wait such as 500ms, 1s, 2m or 1h (a number followed by ms, s, m or h)")
            }
            let multiplier: Double
            switch item[unitStart...] {
            case "ms": multiplier = 0.001
            case "s": multiplier = 1
            case "m": multiplier = 60
            case "h": multiplier = 3600
            default:
                throw NotificationSenderError(
                    .invalidSchedule, "\"\(shown)\" has an unknown unit: write ms, s, m or h after the number (500ms, 1s, 2m, 1h)")
            }
            guard let number = Double(item[..<unitStart]), number.isFinite, number >= 0 else {
                throw NotificationSenderError(.invalidSchedule, "\"\(shown)\" is not a wait such as 500ms, 1s, 2m or 1h")
            }
            let seconds = number * multiplier
            guard seconds <= 7 * 86_400 else {
                throw NotificationSenderError(.invalidSchedule, "\"\(shown)\" is longer than 7 days")
            }
            out.append(seconds)
        }
        guard out.count <= 20 else { throw NotificationSenderError(.invalidSchedule, "at most 20 retries (\(out.count) given)") }
        delays = out
    }

    /// `1s,2s,4s` (milliseconds where a wait is not whole seconds).
    public var description: String {
        guard !delays.isEmpty else { return "none" }
        return delays.map { d in
            if d >= 3600, d.truncatingRemainder(dividingBy: 3600) == 0 { return "\(Int(d / 3600))h" }
            if d >= 60, d.truncatingRemainder(dividingBy: 60) == 0 { return "\(Int(d / 60))m" }
            if d.rounded() == d { return "\(Int(d))s" }
            return "\(Int((d * 1000).rounded()))ms"
        }.joined(separator: ",")
    }
}

/// One notification ready to go: its body `{"signedPayload": "<JWS>"}` made (and signed) in
/// advance, so sending does no signing.
public struct OutgoingNotification: Sendable, Hashable {
    public var notificationUUID: String
    public var environment: APIEnvironment
    public var notificationType: String?
    public var subtype: String?
    /// `signedDate`, UNIX milliseconds (what history filters on).
    public var signedMS: Int64
    public var signedPayload: String
    /// The customer (`appTransactionId`) for history's `transactionId` filter.
    public var customer: String?
    /// The HTTP body.
    public var body: [UInt8]

    public init(
        notificationUUID: String, environment: APIEnvironment, notificationType: String?, subtype: String?, signedMS: Int64,
        signedPayload: String, customer: String? = nil
    ) {
        self.notificationUUID = notificationUUID
        self.environment = environment
        self.notificationType = notificationType
        self.subtype = subtype
        self.signedMS = signedMS
        self.signedPayload = signedPayload
        self.customer = customer
        body = Array("{\"signedPayload\":\"\(signedPayload)\"}".utf8)
    }
}

/// One delivery attempt.
public struct SendAttemptRecord: Sendable, Hashable {
    /// When the attempt started.
    public var date: Date
    public var result: SendAttemptResult
    /// The receiver's HTTP status, when it answered.
    public var httpStatus: Int?
    /// Seconds from sending to the answer (or the failure).
    public var latency: Double
    /// 1 for the first attempt, 2 for the first retry, …
    public var number: Int

    public init(date: Date, result: SendAttemptResult, httpStatus: Int?, latency: Double, number: Int) {
        self.date = date
        self.result = result
        self.httpStatus = httpStatus
        self.latency = latency
        self.number = number
    }

    /// The attempt as Get Notification History lists it.
    public var historyJSON: JSONValue {
        .object([
            "attemptDate": .integer(Int64((date.timeIntervalSince1970 * 1000).rounded(.down))),
            "sendAttemptResult": .string(result.rawValue),
        ])
    }
}

/// What became of one notification.
public struct NotificationDelivery: Sendable, Hashable {
    public var notificationUUID: String
    public var environment: APIEnvironment
    public var attempts: [SendAttemptRecord]
    /// An attempt got 200–206.
    public var acknowledged: Bool { attempts.last?.result == .success }
}

/// The outcome of a send.
public struct SenderSummary: Sendable, Hashable {
    /// Notifications sent at least once.
    public var sent: Int
    /// Notifications that got 200–206.
    public var acknowledged: Int
    /// Notifications that never did, after every retry.
    public var failed: Int
    /// Notifications sent more than once.
    public var retried: Int
    /// Every attempt.
    public var attempts: Int
    /// First attempts per second, from the start to the end of the last first attempt.
    public var rate: Double
    /// Seconds from the start to the end of the last first attempt.
    public var firstPassSeconds: Double
    /// Seconds from the start to the end of the last retry.
    public var totalSeconds: Double
    /// Latency of the attempts that got an HTTP answer, in milliseconds (nil: none did).
    public var p50Milliseconds: Double?
    public var p99Milliseconds: Double?

    /// `notifications: sent 1000, acknowledged 998, failed after retries 2, retried 5, 998.7/s, p50 3.1 ms, p99 12.4 ms`
    public var line: String {
        func ms(_ value: Double?) -> String { value.map { String(format: "%.1f ms", $0) } ?? "-" }
        return "notifications: sent \(sent), acknowledged \(acknowledged), failed after retries \(failed), retried \(retried), "
            + "attempts \(attempts), \(String(format: "%.1f", rate))/s over \(String(format: "%.2f", firstPassSeconds)) s, "
            + "p50 \(ms(p50Milliseconds)), p99 \(ms(p99Milliseconds))"
    }
}

/// What a send produced: each notification's attempts (in the order given) and the summary.
public struct SenderReport: Sendable {
    public var deliveries: [NotificationDelivery]
    public var summary: SenderSummary
}

/// Counters while a send runs (for a progress line).
public struct SenderProgress: Sendable, Hashable {
    public var total: Int
    /// Notifications whose first attempt finished.
    public var started: Int
    public var acknowledged: Int
    /// Notifications that failed for good.
    public var failed: Int
    /// Notifications waiting for a retry.
    public var waitingToRetry: Int
    public var attempts: Int
}

/// How the sender behaves.
public struct NotificationSenderConfiguration: Sendable {
    /// Where to POST: https, or plain http on a loopback host only.
    public var url: String
    /// First attempts per second; 0 sends as fast as ``concurrency`` allows.
    public var rate: Double
    /// Requests in flight at most.
    public var concurrency: Int
    /// Waits before retries (production only: sandbox never retries).
    public var retrySchedule: RetrySchedule
    /// Seconds an attempt may take (connect and answer) before it counts as `TIMED_OUT`.
    public var timeout: Double
    /// Certificates trusted besides the system's (never a way to turn checks off).
    public var extraTrustRoots: [NIOSSLCertificate]
    /// The retry waits and the pacing read and sleep on this clock.
    public var clock: ServiceClock

    public init(
        url: String, rate: Double = 0, concurrency: Int = 64, retrySchedule: RetrySchedule = .apple, timeout: Double = 10,
        extraTrustRoots: [NIOSSLCertificate] = [], clock: ServiceClock = .system
    ) {
        self.url = url
        self.rate = rate
        self.concurrency = concurrency
        self.retrySchedule = retrySchedule
        self.timeout = timeout
        self.extraTrustRoots = extraTrustRoots
        self.clock = clock
    }
}

/// POSTs pre-signed V2 notifications to a receiver as Apple does: 200–206 is success; any other
/// status, a timeout, a refused or dropped connection or a TLS failure is a failed attempt,
/// retried after ``RetrySchedule`` (production only; sandbox sends once). Every attempt is
/// reported to `onAttempt` as it ends (the API simulator's Notification History takes them) and
/// counted for the ``SenderSummary``.
///
/// TLS is always verified; plain http is accepted for loopback hosts only.
public final class NotificationSender: Sendable {
    public let configuration: NotificationSenderConfiguration
    private let http: HTTPClient
    private let onAttempt: @Sendable (OutgoingNotification, SendAttemptRecord) -> Void

    public init(
        _ configuration: NotificationSenderConfiguration,
        onAttempt: @escaping @Sendable (OutgoingNotification, SendAttemptRecord) -> Void = { _, _ in }
    ) throws(NotificationSenderError) {
        try Self.check(url: configuration.url)
        guard configuration.rate >= 0, configuration.rate.isFinite else {
            throw NotificationSenderError(.invalidSetting, "the rate must be 0 (as fast as possible) or a positive number per second")
        }
        guard (1...4096).contains(configuration.concurrency) else {
            throw NotificationSenderError(.invalidSetting, "the concurrency must be between 1 and 4096")
        }
        guard configuration.timeout > 0, configuration.timeout <= 3600 else {
            throw NotificationSenderError(.invalidSetting, "the timeout must be more than 0 and at most 3600 seconds")
        }
        self.configuration = configuration
        self.onAttempt = onAttempt
        // One connection per request in flight; one attempt is one try: a refused connection
        // fails it now (NO_RESPONSE), as Apple's does. Redirects are statuses, never followed.
        http = OutboundHTTPClient.make(
            connectTimeout: .nanoseconds(Int64(configuration.timeout * 1e9)), extraTrustRoots: configuration.extraTrustRoots,
            connectionsPerHost: configuration.concurrency)
    }

    /// Throws unless `url` is https, or plain http on a loopback host (127.0.0.0/8, ::1,
    /// localhost): TLS checks are never off, and plain http stays on this machine.
    public static func check(url: String) throws(NotificationSenderError) {
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(), let host = parsed.host, !host.isEmpty,
            scheme == "https" || scheme == "http"
        else {
            throw NotificationSenderError(.invalidURL, "\(SafeText.escaped(url)) is not an http(s) URL with a host")
        }
        guard scheme == "https" || Loopback.isLoopback(host: host) else {
            throw NotificationSenderError(
                .invalidURL,
                "\(SafeText.escaped(url)) must use https: plain http:// is allowed for loopback hosts only (127.0.0.0/8, ::1, localhost)")
        }
    }

    public func shutdown() async {
        try? await http.shutdown()
    }

    /// Waits until something accepts TCP connections at the URL's host and port (a receiver
    /// started beside the simulator), trying every 100 ms for at most `seconds`. True once one did.
    public func waitForListener(seconds: Double) async -> Bool {
        guard let url = URL(string: configuration.url), let host = url.host else { return false }
        let port = url.port ?? (url.scheme?.lowercased() == "https" ? 443 : 80)
        let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
        while ContinuousClock.now < deadline, !Task.isCancelled {
            let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connectTimeout(.seconds(1))
            if let channel = try? await bootstrap.connect(host: host, port: port).get() {
                try? await channel.close()
                return true
            }
            try? await Task.sleep(nanoseconds: 100_000_000)
        }
        return false
    }

    /// Sends every notification (paced at ``NotificationSenderConfiguration/rate``), waits for
    /// every retry, and reports. `progress` is called after each attempt.
    public func send(_ notifications: [OutgoingNotification], progress: (@Sendable (SenderProgress) -> Void)? = nil) async
        -> SenderReport
    {
        let tally = TallyBox(
            Tally(
                deliveries: notifications.map { NotificationDelivery(notificationUUID: $0.notificationUUID, environment: $0.environment, attempts: []) },
                progress: SenderProgress(total: notifications.count, started: 0, acknowledged: 0, failed: 0, waitingToRetry: 0, attempts: 0)))
        let slots = Slots(configuration.concurrency)
        let clock = configuration.clock
        let rate = configuration.rate
        let started = ContinuousClock.now
        let startDate = clock.now()
        await withTaskGroup(of: Void.self) { group in
            for (index, notification) in notifications.enumerated() {
                if Task.isCancelled { break }
                if rate > 0 {
                    let due = startDate.addingTimeInterval(Double(index) / rate)
                    let wait = due.timeIntervalSince(clock.now())
                    if wait > 0.000_5 { try? await clock.sleep(wait) }
                }
                await slots.acquire()
                group.addTask {
                    await self.deliver(notification, index: index, slots: slots, tally: tally, started: started, progress: progress)
                }
            }
        }
        let end = ContinuousClock.now
        return tally.state.withLock { t in
            let latencies = t.latencies.sorted()
            func percentile(_ p: Double) -> Double? {
                guard !latencies.isEmpty else { return nil }
                let rank = Int((p * Double(latencies.count)).rounded(.up)) - 1
                return latencies[min(max(rank, 0), latencies.count - 1)] * 1000
            }
            let firstPass = t.firstPassEnd.map { DurationText.seconds($0 - started) } ?? 0
            let sent = t.deliveries.filter { !$0.attempts.isEmpty }.count
            let summary = SenderSummary(
                sent: sent, acknowledged: t.progress.acknowledged, failed: sent - t.progress.acknowledged,
                retried: t.deliveries.filter { $0.attempts.count > 1 }.count, attempts: t.progress.attempts,
                rate: firstPass > 0 ? Double(sent) / firstPass : 0, firstPassSeconds: firstPass, totalSeconds: DurationText.seconds(end - started),
                p50Milliseconds: percentile(0.50), p99Milliseconds: percentile(0.99))
            return SenderReport(deliveries: t.deliveries, summary: summary)
        }
    }

    /// The tally, shared by every delivery of one ``send(_:progress:)``.
    final class TallyBox: Sendable {
        let state: Mutex<Tally>

        init(_ tally: Tally) {
            state = Mutex(tally)
        }
    }

    struct Tally {
        var deliveries: [NotificationDelivery]
        var progress: SenderProgress
        var latencies: [Double] = []
        var firstPassEnd: ContinuousClock.Instant?
    }

    /// Every attempt of one notification; holds a slot only while a request is in flight.
    private func deliver(
        _ notification: OutgoingNotification, index: Int, slots: Slots, tally: TallyBox, started: ContinuousClock.Instant,
        progress: (@Sendable (SenderProgress) -> Void)?
    ) async {
        let schedule = notification.environment == .sandbox ? [] : configuration.retrySchedule.delays
        var number = 1
        while true {
            let attempt = await post(notification, number: number)
            slots.release()
            onAttempt(notification, attempt)
            let retryAfter: Double? = attempt.result == .success || number > schedule.count ? nil : schedule[number - 1]
            let snapshot = tally.state.withLock { t -> SenderProgress in
                t.deliveries[index].attempts.append(attempt)
                t.progress.attempts += 1
                if attempt.httpStatus != nil { t.latencies.append(attempt.latency) }
                if number == 1 {
                    t.progress.started += 1
                    let now = ContinuousClock.now
                    if t.firstPassEnd.map({ $0 < now }) ?? true { t.firstPassEnd = now }
                } else {
                    t.progress.waitingToRetry -= 1
                }
                if attempt.result == .success {
                    t.progress.acknowledged += 1
                } else if retryAfter == nil {
                    t.progress.failed += 1
                } else {
                    t.progress.waitingToRetry += 1
                }
                return t.progress
            }
            progress?(snapshot)
            guard let retryAfter else { return }
            do {
                try await configuration.clock.sleep(retryAfter)
            } catch {
                tally.state.withLock { t in
                    t.progress.waitingToRetry -= 1
                    t.progress.failed += 1
                }
                return
            }
            await slots.acquire()
            number += 1
        }
    }

    private func post(_ notification: OutgoingNotification, number: Int) async -> SendAttemptRecord {
        let date = configuration.clock.now()
        let start = ContinuousClock.now
        var status: Int?
        let result: SendAttemptResult
        do throws(TransportFailure) {
            let answer = try await http.postBounded(
                url: configuration.url,
                headers: [("content-type", "application/json"), ("user-agent", "receiptdash-simulator/0.1 (App Store Server Notifications V2)")],
                body: notification.body, deadline: .now() + .nanoseconds(Int64(configuration.timeout * 1e9)), answerLimit: 1 << 20)
            status = answer.status
            result = (200...206).contains(answer.status) ? .success : .unsuccessfulHTTPResponseCode
        } catch {
            result = Self.classify(error)
        }
        return SendAttemptRecord(date: date, result: result, httpStatus: status, latency: DurationText.seconds(ContinuousClock.now - start), number: number)
    }

    /// Apple's name for a failed attempt, by the shared client's failure code (never its text).
    static func classify(_ failure: TransportFailure) -> SendAttemptResult {
        switch failure.code {
        case .timeout: .timedOut
        case .refused: .noResponse
        case .dropped: .prematureClose
        case .tls: .tlsIssue
        case .invalidResponse: .invalidResponse
        case .other, .notSent: .socketIssue
        case .cancelled: .other
        }
    }
}

/// At most N requests in flight; waiters are served first in, first out.
final class Slots: Sendable {
    private let state: Mutex<(free: Int, waiting: [CheckedContinuation<Void, Never>])>

    init(_ count: Int) {
        state = Mutex((count, []))
    }

    func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.free > 0 {
                    s.free -= 1
                    return true
                }
                s.waiting.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    func release() {
        let next = state.withLock { s -> CheckedContinuation<Void, Never>? in
            if s.waiting.isEmpty {
                s.free += 1
                return nil
            }
            return s.waiting.removeFirst()
        }
        next?.resume()
    }
}

// MARK: - What to send

extension ServerAPIService {
    /// The notifications to send, signed now (before any timed send):
    ///
    /// - with `includingData`, the data's notifications that have a `notificationUUID` (both
    ///   environments, by `signedDate`), as Get Notification History lists them;
    /// - then, when `count` asks for more, generated ones in `environment`: distinct
    ///   `notificationUUID`s, a realistic mix of types (SUBSCRIBED/INITIAL_BUY, DID_RENEW,
    ///   DID_FAIL_TO_RENEW/GRACE_PERIOD, REFUND, EXPIRED/VOLUNTARY, …) with nested signed
    ///   transaction and renewal info, for the data's bundle id and app, signed at the
    ///   simulator's now. The mix is repeatable with `seed`; the UUIDs are new each time.
    ///
    /// `count` nil sends the data's alone; a `count` below their number sends the first ones.
    ///
    /// `consumptionShare` percent (0–100) of the generated ones are `CONSUMPTION_REQUEST`s, each
    /// about a new purchase kept in the simulator's store (a consumption PUT for it is answered).
    public func outgoingNotifications(
        includingData: Bool, count: Int?, environment: APIEnvironment = .production, seed: UInt64 = 1, consumptionShare: Double = 0
    ) async throws(ServerAPISimulatorError) -> [OutgoingNotification] {
        var out: [OutgoingNotification] = []
        if includingData {
            var rows: [(APIEnvironment, HistoryNotification)] = []
            for env in APIEnvironment.allCases {
                for row in store.environments[env]?.notifications ?? [] where row.uuid != nil && row.deliver { rows.append((env, row)) }
            }
            rows.sort { ($0.1.signedMS, $0.1.uuid ?? "") < ($1.1.signedMS, $1.1.uuid ?? "") }
            out = rows.map { env, row in
                OutgoingNotification(
                    notificationUUID: row.uuid ?? "", environment: env, notificationType: row.type, subtype: row.subtype,
                    signedMS: row.signedMS, signedPayload: row.signedPayload, customer: row.customer)
            }
        }
        guard let count else { return out }
        guard count > out.count else { return Array(out.prefix(max(0, count))) }
        let nowMS = ServerAPIStore.milliseconds(configuration.clock.now())
        let plans = NotificationPlan.make(
            count: count - out.count, environment: environment, bundleID: store.bundleID ?? ServerAPIData.demoBundleID,
            appAppleID: store.appAppleID, nowMS: nowMS, seed: seed,
            consumptionBasisPoints: Int((min(max(consumptionShare, 0), 100) * 100).rounded()))
        for plan in plans where plan.type == "CONSUMPTION_REQUEST" { addPurchase(plan.transaction, environment: environment) }
        // Signing is the costly part: spread over the cores, in chunks, order kept.
        let pki = self.pki
        let chunk = max(64, plans.count / (ProcessInfo.processInfo.activeProcessorCount * 4) + 1)
        let signed: [[OutgoingNotification]]
        do {
            signed = try await withThrowingTaskGroup(of: (Int, [OutgoingNotification]).self) { group in
                for start in stride(from: 0, to: plans.count, by: chunk) {
                    let slice = plans[start..<min(plans.count, start + chunk)]
                    group.addTask { (start, try slice.map { try $0.sign(pki) }) }
                }
                var parts: [(Int, [OutgoingNotification])] = []
                for try await part in group { parts.append(part) }
                return parts.sorted { $0.0 < $1.0 }.map(\.1)
            }
        } catch let error as ServerAPISimulatorError {
            throw error
        } catch {
            throw ServerAPISimulatorError(.signing, "the notifications could not be signed")
        }
        return out + signed.joined()
    }

    /// A recorder for ``NotificationSender``'s `onAttempt`.
    public var sendAttemptRecorder: @Sendable (OutgoingNotification, SendAttemptRecord) -> Void {
        { [self] notification, attempt in recordSendAttempt(notification, attempt) }
    }
}

/// One generated notification before signing.
struct NotificationPlan: Sendable {
    let uuid: String
    let environment: APIEnvironment
    let type: String
    let subtype: String?
    let signedMS: Int64
    let customer: String
    let payload: [String: JSONValue]
    let transaction: [String: JSONValue]
    let renewal: [String: JSONValue]?
    /// RESCIND_CONSENT: the AppTransaction its `appData` carries (signed), and no transaction.
    var appTransaction: [String: JSONValue]? = nil

    /// Type, subtype, product kind and subscription status of each kind of event, weighted as
    /// a subscription app sees them (renewals most often).
    /// Today's payloads: a renewal under a 12-month commitment, a resubscription with a
    /// win-back offer, a prorated subscription refund, a parent rescinding consent.
    enum Variant { case plain, commitment, winBack, prorated, rescind }

    private static let kinds: [(type: String, subtype: String?, subscription: Bool, status: Int64?, weight: Int, variant: Variant)] = [
        ("SUBSCRIBED", "INITIAL_BUY", true, 1, 3, .plain),
        ("SUBSCRIBED", "RESUBSCRIBE", true, 1, 1, .winBack),
        ("DID_RENEW", nil, true, 1, 7, .plain),
        ("DID_RENEW", nil, true, 1, 1, .commitment),
        ("DID_RENEW", "BILLING_RECOVERY", true, 1, 1, .plain),
        ("DID_FAIL_TO_RENEW", "GRACE_PERIOD", true, 4, 2, .plain),
        ("DID_FAIL_TO_RENEW", nil, true, 3, 1, .plain),
        ("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", true, 1, 2, .plain),
        ("DID_CHANGE_RENEWAL_PREF", "DOWNGRADE", true, 1, 1, .plain),
        ("EXPIRED", "VOLUNTARY", true, 2, 2, .plain),
        ("REFUND", nil, false, nil, 1, .plain),
        ("REFUND", nil, true, 5, 1, .prorated),
        ("ONE_TIME_CHARGE", nil, false, nil, 2, .plain),
        ("RESCIND_CONSENT", nil, false, nil, 1, .rescind),
    ]

    /// `consumptionBasisPoints` of every 10,000 are `CONSUMPTION_REQUEST`s, each about a new
    /// purchase (a consumable, or one in four an auto-renewable), spread evenly.
    static func make(
        count: Int, environment: APIEnvironment, bundleID: String, appAppleID: Int64?, nowMS: Int64, seed: UInt64, consumptionBasisPoints: Int = 0
    ) -> [NotificationPlan] {
        var random = SplitMix64(seed: seed)
        let total = kinds.reduce(0) { $0 + $1.weight }
        let day: Int64 = 86_400_000
        var plans: [NotificationPlan] = []
        plans.reserveCapacity(count)
        for index in 0..<count {
            var pick = Int(random.next() % UInt64(total))
            var kind = kinds[0]
            for k in kinds {
                if pick < k.weight {
                    kind = k
                    break
                }
                pick -= k.weight
            }
            let serial = String(format: "%011d", index + 1)
            let transactionID = "43" + String(format: "%03d", Int(seed % 1000)) + serial
            let originalID = kind.subscription ? "42" + String(format: "%03d", Int(seed % 1000)) + serial : transactionID
            let customer = "705" + String(format: "%03d", Int(seed % 1000)) + String(format: "%012d", index + 1)
            if Self.isConsumptionRequest(index, basisPoints: consumptionBasisPoints) {
                let type: SimulatedProductType = random.next() % 4 == 0 ? .autoRenewable : .consumable
                let reason = ConsumptionRequestReason.allCases[Int(random.next() % UInt64(ConsumptionRequestReason.allCases.count))]
                let bought = Self.purchase(
                    id: transactionID, customer: customer, type: type, productID: type.defaultProductID(bundleID: bundleID), storefront: "USA",
                    purchaseMS: nowMS - Int64(random.next() % 72) * 3_600_000, environment: environment, bundleID: bundleID, nowMS: nowMS)
                var app: [String: JSONValue] = ["bundleId": .string(bundleID), "environment": .string(environment.rawValue)]
                if environment == .production, let appAppleID { app["appAppleId"] = .integer(appAppleID) }
                plans.append(
                    Self.consumptionRequest(
                        transaction: bought.transaction, renewal: bought.renewal, reason: reason, environment: environment, appFields: app, nowMS: nowMS))
                continue
            }
            let purchase = nowMS - Int64(random.next() % 20) * 3_600_000
            var transaction: [String: JSONValue] = [
                "transactionId": .string(transactionID), "originalTransactionId": .string(originalID), "bundleId": .string(bundleID),
                "purchaseDate": .integer(purchase), "originalPurchaseDate": .integer(kind.subscription ? purchase - 60 * day : purchase),
                "quantity": .integer(1), "inAppOwnershipType": .string("PURCHASED"), "environment": .string(environment.rawValue),
                "storefront": .string("USA"), "storefrontId": .string("143441"), "currency": .string("USD"),
                "appTransactionId": .string(customer), "signedDate": .integer(nowMS),
                "transactionReason": .string(kind.type == "DID_RENEW" ? "RENEWAL" : "PURCHASE"),
            ]
            var renewal: [String: JSONValue]?
            if kind.subscription {
                let product = kind.subtype == "DOWNGRADE" ? "\(bundleID).basic.monthly" : "\(bundleID).pro.monthly"
                let expires = kind.status == 1 || kind.status == 5 ? purchase + 30 * day : purchase - day
                transaction["productId"] = .string(product)
                transaction["type"] = .string("Auto-Renewable Subscription")
                transaction["subscriptionGroupIdentifier"] = .string("21000001")
                transaction["expiresDate"] = .integer(expires)
                transaction["webOrderLineItemId"] = .string("44" + String(format: "%03d", Int(seed % 1000)) + serial)
                transaction["price"] = .integer(4990)
                var r: [String: JSONValue] = [
                    "originalTransactionId": .string(originalID), "productId": .string(product),
                    "autoRenewProductId": .string(product), "environment": .string(environment.rawValue),
                    "autoRenewStatus": .integer(kind.subtype == "AUTO_RENEW_DISABLED" || kind.type == "EXPIRED" ? 0 : 1),
                    "renewalDate": .integer(expires), "recentSubscriptionStartDate": .integer(purchase - 60 * day),
                    "signedDate": .integer(nowMS), "currency": .string("USD"), "renewalPrice": .integer(4990),
                ]
                if kind.type == "EXPIRED" { r["expirationIntent"] = .integer(1) }
                if kind.type == "DID_FAIL_TO_RENEW" {
                    r["isInBillingRetryPeriod"] = .bool(true)
                    r["expirationIntent"] = .integer(2)
                    if kind.subtype == "GRACE_PERIOD" { r["gracePeriodExpiresDate"] = .integer(nowMS + 6 * day) }
                }
                switch kind.variant {
                case .commitment:
                    let period = Int64(random.next() % 11) + 2
                    transaction["productId"] = .string("\(bundleID).pro.monthly12")
                    r["productId"] = transaction["productId"]
                    r["autoRenewProductId"] = transaction["productId"]
                    transaction["billingPlanType"] = .string("MONTHLY")
                    transaction["commitmentInfo"] = .object([
                        "billingPeriodNumber": .integer(period), "totalBillingPeriods": .integer(12),
                        "commitmentExpiresDate": .integer(expires + (12 - period) * 30 * day), "commitmentPrice": .integer(47880),
                    ])
                    r["renewalBillingPlanType"] = .string("MONTHLY")
                case .winBack:
                    transaction["offerType"] = .integer(4)
                    transaction["offerDiscountType"] = .string("PAY_AS_YOU_GO")
                    transaction["offerPeriod"] = .string("P1M")
                    transaction["offerIdentifier"] = .string("winback-1")
                case .prorated:
                    transaction["revocationDate"] = .integer(nowMS - 60_000)
                    transaction["revocationReason"] = .integer(1)
                    transaction["revocationType"] = .string("REFUND_PRORATED")
                    transaction["revocationPercentage"] = .integer(Int64(random.next() % 90 + 5) * 1000)
                    r["autoRenewStatus"] = .integer(0)
                case .plain, .rescind: break
                }
                renewal = r
            } else {
                transaction["productId"] = .string("\(bundleID).coins100")
                transaction["type"] = .string("Consumable")
                transaction["price"] = .integer(990)
                if kind.type == "REFUND" {
                    transaction["revocationDate"] = .integer(nowMS - 60_000)
                    transaction["revocationReason"] = .integer(0)
                    transaction["revocationType"] = .string("REFUND_FULL")
                    transaction["revocationPercentage"] = .integer(100_000)
                }
            }
            var appTransaction: [String: JSONValue]?
            if kind.variant == .rescind {
                var app: [String: JSONValue] = [
                    "receiptType": .string(environment.rawValue), "bundleId": .string(bundleID), "applicationVersion": .string("42"),
                    "originalApplicationVersion": .string("7"), "originalPurchaseDate": .integer(purchase - 90 * day),
                    "appTransactionId": .string(customer), "originalPlatform": .string("iOS"), "signedDate": .integer(nowMS),
                ]
                if environment == .production, let appAppleID { app["appAppleId"] = .integer(appAppleID) }
                appTransaction = app
            }
            var data: [String: JSONValue] = ["bundleId": .string(bundleID), "environment": .string(environment.rawValue)]
            if environment == .production, let appAppleID { data["appAppleId"] = .integer(appAppleID) }
            if let status = kind.status { data["status"] = .integer(status) }
            var payload: [String: JSONValue] = [
                "notificationType": .string(kind.type), "notificationUUID": .string(UUID().uuidString.lowercased()),
                "version": .string("2.0"), "signedDate": .integer(nowMS), "data": .object(data),
            ]
            if let subtype = kind.subtype { payload["subtype"] = .string(subtype) }
            plans.append(
                NotificationPlan(
                    uuid: payload["notificationUUID"]?.text ?? "", environment: environment, type: kind.type, subtype: kind.subtype,
                    signedMS: nowMS, customer: customer, payload: payload, transaction: transaction, renewal: renewal,
                    appTransaction: appTransaction))
        }
        return plans
    }

    func sign(_ pki: AppleTestPKI) throws(ServerAPISimulatorError) -> OutgoingNotification {
        var payload = self.payload
        var data = payload["data"]?.object ?? [:]
        if let appTransaction {
            // RESCIND_CONSENT: `appData` with the signed AppTransaction, instead of `data`.
            data.removeValue(forKey: "status")
            data["signedAppTransactionInfo"] = .string(try pki.signJWS(payload: .object(appTransaction)))
            payload.removeValue(forKey: "data")
            payload["appData"] = .object(data)
        } else {
            data["signedTransactionInfo"] = .string(try pki.signJWS(payload: .object(transaction)))
            if let renewal { data["signedRenewalInfo"] = .string(try pki.signJWS(payload: .object(renewal))) }
            payload["data"] = .object(data)
        }
        return OutgoingNotification(
            notificationUUID: uuid, environment: environment, notificationType: type, subtype: subtype, signedMS: signedMS,
            signedPayload: try pki.signJWS(payload: .object(payload)), customer: customer)
    }
}
