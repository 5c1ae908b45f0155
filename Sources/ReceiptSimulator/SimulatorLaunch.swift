import Foundation
import AppStoreAPI
import NIOSSL
import ReceiptCore
import Synchronization
import UntrustedText

/// A problem with what `receiptdash simulator` was asked to do, said before it serves (a usage
/// error: the command exits 64), or a part that could not start. Compared by code; ``setting``
/// names the setting at fault (its flag without dashes: `fault-rate`).
public struct SimulatorLaunchError: CodedError {
    public enum Code: String, CodedErrorCode, CaseIterable {
        /// A setting outside its range.
        case outOfRange = "out-of-range"
        /// Two settings that cannot go together.
        case conflictingSettings = "conflicting-settings"
        /// A value that is none of those the setting takes.
        case unknownValue = "unknown-value"
        /// Notifications would go to a receiver over plain HTTP off loopback, or to no URL.
        case refusedReceiverURL = "refused-receiver-url"
        /// A file the simulator writes could not be written.
        case unwritableFile = "unwritable-file"
        /// The API simulator, its keys or its data could not be set up.
        case setupFailed = "setup-failed"
    }

    public let code: Code
    public let reason: String
    /// The setting at fault, as its flag without dashes; nil when it is not one setting.
    public let setting: String?

    public init(_ code: Code, setting: String? = nil, _ reason: String) {
        self.code = code
        self.setting = setting
        self.reason = reason
    }
}

/// What `receiptdash simulator` does once its arguments are read: makes the API simulator and
/// the verifyReceipt simulator on one port, prints their URLs, optionally sends notifications to
/// a receiver as Apple does, then serves until stopped.
public struct SimulatorLaunch: Sendable {
    public var host = "127.0.0.1"
    public var port = 8099
    /// Seconds added to every answer.
    public var latency: Double = 0
    public var faultRate: Double = 0
    public var apiFaultRate: Double = 0
    /// Enforce Apple's Retention Messaging rate limits (``RetentionContentStore/enforceRateLimits(_:)``).
    public var retentionRateLimits = false
    /// Seconds until a mass extension is complete.
    public var massExtensionDelay: Double = 2
    public var seed: UInt64 = 1
    /// The shared secret subscription receipts must come with.
    public var secret: SharedSecret?
    public var apiDataFile: String?
    public var apiKeyFile: String?
    /// The key id API tokens must name (`kid`); nil accepts any.
    public var apiKeyID: String?
    public var apiRootOut: String?
    public var pki: SimulatorPKIFolder?
    public var sending: Sending?
    /// An OCSP responder for the test PKI (made at start, its URL in the leaf's and the
    /// intermediate's certificates), or nil: certificates without OCSP, as before.
    public var ocsp: OCSP?
    /// Where the banner, the sender's lines and its progress are said.
    public var console: Console
    /// How Retention Messaging's performance test runs (`--perf-…`; `/control/performance-test`
    /// changes it later).
    public var performanceTest = PerformanceTestSettings()

    /// How the simulator's OCSP responder starts; `POST <url>/control` changes it later.
    public struct OCSP: Sendable {
        /// `leaf` or `intermediate`: revoked from the start.
        public var revoke: [String]
        public var behaviour: OCSPResponder.Behaviour
        /// Milliseconds every answer waits.
        public var latency: Int

        public init(revoke: [String] = [], behaviour: OCSPResponder.Behaviour = .answering, latency: Int = 0) {
            (self.revoke, self.behaviour, self.latency) = (revoke, behaviour, latency)
        }
    }

    /// `--send-notifications` and its settings.
    public struct Sending: Sendable {
        public var url: String
        public var rate: Double
        public var count: Int?
        public var concurrency: Int
        public var schedule: RetrySchedule
        public var environment: APIEnvironment
        public var timeout: Double
        public var exitWhenSent: Bool
        public var waitForReceiver: Double
        /// TLS roots trusted besides the system's for the receiver (`--ca-file`).
        public var extraTrustRoots: [NIOSSLCertificate] = []
        /// Percent (0–100) of the generated notifications that are `CONSUMPTION_REQUEST`s about
        /// new purchases (`--notification-consumption-share`).
        public var consumptionShare: Double = 0

        public init(
            url: String, rate: Double, count: Int?, concurrency: Int, schedule: RetrySchedule, environment: APIEnvironment, timeout: Double,
            exitWhenSent: Bool, waitForReceiver: Double
        ) {
            self.url = url
            self.rate = rate
            self.count = count
            self.concurrency = concurrency
            self.schedule = schedule
            self.environment = environment
            self.timeout = timeout
            self.exitWhenSent = exitWhenSent
            self.waitForReceiver = waitForReceiver
        }
    }

    public init(console: Console) {
        self.console = console
    }

    /// Whether every setting is in its range; the first that is not, in words naming its flag.
    public func check() throws(SimulatorLaunchError) {
        if !(0...1).contains(faultRate) { throw SimulatorLaunchError(.outOfRange, setting: "fault-rate", "--fault-rate must be between 0 and 1.") }
        if !(0...1).contains(apiFaultRate) { throw SimulatorLaunchError(.outOfRange, setting: "api-fault-rate", "--api-fault-rate must be between 0 and 1.") }
        if latency < 0 { throw SimulatorLaunchError(.outOfRange, setting: "latency", "--latency must not be negative.") }
        if let ocsp {
            if pki != nil {
                throw SimulatorLaunchError(
                    .conflictingSettings, setting: "ocsp",
                    "--ocsp makes a test PKI at start whose CAs sign the answers; a --pki folder keeps no CA keys. Leave out one of them.")
            }
            if let name = ocsp.revoke.first(where: { !["leaf", "intermediate"].contains($0) }) {
                throw SimulatorLaunchError(.unknownValue, setting: "ocsp-revoke", "--ocsp-revoke takes leaf or intermediate, not \(name).")
            }
            if !(0...600_000).contains(ocsp.latency) { throw SimulatorLaunchError(.outOfRange, setting: "ocsp-latency", "--ocsp-latency must be 0 to 600000 ms.") }
        }
        if let problem = performanceTest.problem { throw SimulatorLaunchError(.outOfRange, setting: problem.setting, problem.reason) }
        if !(0...86_400).contains(massExtensionDelay) { throw SimulatorLaunchError(.outOfRange, setting: "mass-extension-delay", "--mass-extension-delay must be 0 to 86400 seconds.") }
        guard let sending else { return }
        if !sending.rate.isFinite || sending.rate < 0 {
            throw SimulatorLaunchError(.outOfRange, setting: "notification-rate", "--notification-rate must be 0 (as fast as possible) or a positive number of notifications per second.")
        }
        if let count = sending.count, !(0...10_000_000).contains(count) {
            throw SimulatorLaunchError(.outOfRange, setting: "notification-count", "--notification-count must be between 0 and 10000000.")
        }
        if !(0...100).contains(sending.consumptionShare) {
            throw SimulatorLaunchError(
                .outOfRange, setting: "notification-consumption-share", "--notification-consumption-share must be between 0 and 100 (percent).")
        }
        if !(0...3600).contains(sending.waitForReceiver) { throw SimulatorLaunchError(.outOfRange, setting: "wait-for-receiver", "--wait-for-receiver must be between 0 and 3600 seconds.") }
        if !(1...4096).contains(sending.concurrency) { throw SimulatorLaunchError(.outOfRange, setting: "notification-concurrency", "--notification-concurrency must be between 1 and 4096.") }
        if !(sending.timeout > 0 && sending.timeout <= 3600) {
            throw SimulatorLaunchError(.outOfRange, setting: "notification-timeout", "--notification-timeout must be more than 0 and at most 3600 seconds.")
        }
        do {
            try NotificationSender.check(url: sending.url)
        } catch {
            throw SimulatorLaunchError(.refusedReceiverURL, setting: "send-notifications", "--send-notifications: \(error.reason).")
        }
    }

    /// `--pki DIR`: the folder opened (made on first use) into ``pki``. With `initOnly`
    /// (`--init`), what it holds is said and false returned: nothing is to be served.
    public mutating func openPKI(_ path: String?, initOnly: Bool) throws(ServerAPISimulatorError) -> Bool {
        guard let path else { return true }
        let folder = try SimulatorPKIFolder.open(path)
        pki = folder
        guard initOnly else { return true }
        console.line(
            "test PKI in \(folder.path) (\(folder.created ? "made now" : "already there")): root \(folder.rootPath) for --root-ca, API key \(folder.apiKeyPath) for --private-key-file"
        )
        return false
    }

    /// Serves until SIGINT or SIGTERM (or, with `exitWhenSent`, until every notification is
    /// acknowledged or has failed after its retries).
    public func run() async throws {
        guard let ocsp else { return try await serve(pki?.pki, ocsp: nil) }
        // The responder first: its URL goes into the PKI's certificates.
        let server = try await OCSPResponderServer.start()
        do {
            let made: AppleTestPKI
            do throws(ServerAPISimulatorError) {
                made = try AppleTestPKI(ocspURL: server.url)
            } catch {
                throw SimulatorLaunchError(.setupFailed, error.reason)
            }
            server.responder.serve(made)
            server.responder.set(ocsp.behaviour)
            server.responder.set(latency: .milliseconds(Int64(ocsp.latency)))
            for name in ocsp.revoke { server.responder.revoke(named: name, at: Date()) }
            try await serve(made, ocsp: server)
        } catch {
            try? await server.stop()
            throw error
        }
        try? await server.stop()
    }

    /// Serves with `testPKI` (nil: one made now) and its OCSP responder, if any.
    private func serve(_ testPKI: AppleTestPKI?, ocsp responder: OCSPResponderServer?) async throws {
        let api: ServerAPIService
        do throws(ServerAPISimulatorError) {
            let publicKey =
                try apiKeyFile.map { file throws(ServerAPISimulatorError) in
                    guard let data = FileManager.default.contents(atPath: file) else {
                        throw ServerAPISimulatorError(.invalidKey, "the API key file \(file) cannot be read")
                    }
                    return try ServerAPIConfiguration.publicKey(pem: String(decoding: data, as: UTF8.self))
                } ?? pki?.apiKey.publicKey
            let data = try apiDataFile.map { file throws(ServerAPISimulatorError) in try ServerAPIData.load(file: file) }
            var configuration = ServerAPIConfiguration(
                host: host, port: port, latency: latency / 1000, faultRate: apiFaultRate, seed: seed, data: data, publicKey: publicKey,
                pki: testPKI, massExtensionDelay: massExtensionDelay)
            configuration.keyID = apiKeyID
            api = try ServerAPIService(configuration)
            api.retention.enforceRateLimits(retentionRateLimits)
            api.performanceTests.settings = performanceTest
        } catch {
            throw SimulatorLaunchError(.setupFailed, error.reason)
        }
        if let apiRootOut {
            guard FileManager.default.createFile(atPath: apiRootOut, contents: Data(api.pki.rootDER)) else {
                throw SimulatorLaunchError(.unwritableFile, setting: "api-root-out", "--api-root-out: \(apiRootOut) cannot be written")
            }
        }
        let sender: NotificationSender?
        do {
            sender = try sending.map { sending throws(NotificationSenderError) in
                try NotificationSender(
                    NotificationSenderConfiguration(
                        url: sending.url, rate: sending.rate, concurrency: sending.concurrency, retrySchedule: sending.schedule,
                        timeout: sending.timeout, extraTrustRoots: sending.extraTrustRoots),
                    onAttempt: api.sendAttemptRecorder)
            }
        } catch {
            throw SimulatorLaunchError(.setupFailed, error.reason)
        }
        // Listening before serving: what the first write makes Apple send is not missed.
        let live = sender.flatMap { sender in
            sending.flatMap { sending in
                sending.exitWhenSent
                    ? nil : LiveNotificationSender(api: api, sender: sender, waitForReceiver: sending.waitForReceiver) { [console] in console.line($0) }
            }
        }
        let simulator: VerifyReceiptSimulator
        do {
            simulator = try await VerifyReceiptSimulator.start(
                SimulatorConfiguration(host: host, port: port, latency: latency / 1000, faultRate: faultRate, seed: seed, secret: secret),
                api: api)
        } catch {
            await sender?.shutdown()
            throw error
        }
        console.output(banner(simulator, api, ocsp: responder))
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                if let live { group.addTask { await live.run() } }
                if let sending, let sender {
                    try await send(sending, sender: sender, api: api)
                    if sending.exitWhenSent {
                        try await simulator.stop()
                        return
                    }
                }
                try await simulator.wait()
                group.cancelAll()
            }
        } catch {
            // The HTTP client is shut down whatever happened (it must be, before it goes away).
            await sender?.shutdown()
            throw error
        }
        await sender?.shutdown()
    }

    /// What is served where, with which checks.
    func banner(_ simulator: VerifyReceiptSimulator, _ api: ServerAPIService, ocsp: OCSPResponderServer? = nil) -> String {
        let tokens =
            apiKeyFile != nil
            ? "checked against --api-key-file" : pki.map { "checked against \($0.apiKeyPath)" } ?? "signature not checked (no --api-key-file)"
        let offers =
            api.configuration.publicKey == nil
            ? "no key: every signature is unknown_key; give --pki or --api-key-file" : "checked against the API key"
        let rootNote =
            (apiRootOut.map { ", signing root written to \($0)" } ?? "") + (pki.map { ", test PKI in \($0.path) (root \($0.rootPath))" } ?? "")
        return """
            production: \(simulator.productionURL)
            sandbox:    \(simulator.sandboxURL)
            shared secret: \(secret.map { "required (\($0.masked))" } ?? "not checked"), latency \(Int(latency)) ms, fault rate \(faultRate), seed \(seed)
            App Store Server API production: \(simulator.apiProductionURL)
            App Store Server API sandbox:    \(simulator.apiSandboxURL)
            Offer signatures: POST \(simulator.offerVerificationURL) (\(offers))
            API data: \(apiDataFile ?? "built-in demo customer"), bundle id \(api.bundleID ?? "any"), tokens \(tokens), fault rate \(apiFaultRate)\(rootNote)
            \(ocsp.map { "OCSP responder: \($0.url) (\($0.responder.summary)); change it with POST http://127.0.0.1:\($0.port)/control?mode=down|try-later|silent|answering, ?revoke=leaf|intermediate, ?latency-ms=N\n" } ?? "")

            """
    }

    /// Signs every notification, sends them with their retries, prints the summary. Progress
    /// goes to the console's standard error once a second, from a child of this call.
    private func send(_ sending: Sending, sender: NotificationSender, api: ServerAPIService) async throws {
        let notifications: [OutgoingNotification]
        do {
            notifications = try await api.outgoingNotifications(
                includingData: apiDataFile != nil, count: sending.count ?? (apiDataFile == nil ? 100 : nil), environment: sending.environment,
                seed: seed, consumptionShare: sending.consumptionShare)
        } catch {
            throw SimulatorLaunchError(.setupFailed, error.reason)
        }
        if !sending.exitWhenSent {
            console.line(
                "writes to the API (extend, mass extension, test-notification) and POST /control/consumption-request send their notifications to \(SafeText.escaped(sending.url)) as they happen"
            )
        }
        if notifications.isEmpty, !sending.exitWhenSent { return }
        if sending.waitForReceiver > 0, !(await sender.waitForListener(seconds: sending.waitForReceiver)) {
            console.error("receiptdash: nothing accepted connections at \(sending.url) within \(sending.waitForReceiver) s; sending anyway")
        }
        let rate = sending.rate > 0 ? "\(sending.rate)/s" : "as fast as possible (\(sending.concurrency) in flight)"
        console.line(
            "sending \(notifications.count) notifications to \(SafeText.escaped(sending.url)) at \(rate), retries \(sending.schedule) (production only), signed in advance"
        )
        let latest = LatestProgress()
        let report = await withTaskGroup(of: SenderReport?.self) { group in
            group.addTask {
                while true {
                    do { try await Task.sleep(for: .seconds(1)) } catch { return nil }
                    if let p = latest.value {
                        console.error(
                            "receiptdash: notifications \(p.started)/\(p.total) sent, \(p.acknowledged) acknowledged, \(p.waitingToRetry) waiting to retry, \(p.failed) failed, \(p.attempts) attempts"
                        )
                    }
                }
            }
            let report = await sender.send(notifications) { p in latest.value = p }
            group.cancelAll()
            return report
        }
        console.line(report.summary.line)
    }
}

/// The sender's latest progress, said once a second.
private final class LatestProgress: Sendable {
    private let latest = Mutex<SenderProgress?>(nil)

    var value: SenderProgress? {
        get { latest.withLock { $0 } }
        set { latest.withLock { $0 = newValue } }
    }
}
