import ArgumentParser
import CommandOptions
import Foundation
import AppStoreAPI
import ReceiptCore
import ReceiptSimulator
import UntrustedText

struct Simulator: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulator",
        abstract: "Serve a local App Store verifyReceipt on loopback, for offline tests, demos and QA.",
        discussion: """
            Production answers at /production/verifyReceipt and sandbox at /sandbox/verifyReceipt. \
            The posted receipt is decoded locally and answered as Apple would: 0 with receipt, \
            latest_receipt_info and pending_renewal_info; 21007 for a sandbox receipt sent to \
            production, 21008 the other way; 21002 for garbage; 21004 for a wrong secret; 21006 for \
            an expired iOS 6 subscription. --fault-rate injects 21005, 21100-21199 (is-retryable), \
            HTTP 503, dropped connections and slow answers, repeatably with --seed.

            The simulator's own shared secret (the password subscription receipts must come with) \
            is read from --secret-file or RECEIPTDASH_SHARED_SECRET, never from an argument \
            (the command line is visible to every user in ps).

            The App Store Server API is served on the same port under /api/production and \
            /api/sandbox (both base URLs are printed at start): the customers of --api-data, or a \
            built-in demo customer (bundle id com.example.receiptdash, order ID MQ5X7ABCDE). Every \
            payload is signed by a test PKI made at start, shaped like Apple's; --api-root-out \
            writes its root (DER) for --root-ca. --pki DIR keeps that PKI in a folder instead, made \
            on first use and the same on every run, with an In-App Purchase key the tokens are \
            checked against: DIR/root.der for --root-ca, DIR/api-key.p8 for --private-key-file. \
            --pki DIR --init makes the folder and exits, so a script can use the files before the \
            simulator serves. Tokens are checked as Apple does (ES256 with \
            --api-key-file, aud, bid, iss, exp at most 60 minutes after iat and not passed); \
            otherwise 401 with no body. --api-fault-rate injects 429 (Retry-After in UNIX ms), \
            5000001, HTTP 503 and dropped connections, repeatably with --seed.

            --send-notifications URL also makes the simulator send App Store Server Notifications \
            V2 to a receiver as Apple does: each a POST of {"signedPayload": "<JWS>"} signed by the \
            test PKI; a 200-206 answer is success, anything else (another status, a timeout, a \
            refused or dropped connection, a TLS failure) is a failed attempt, retried after \
            --retry-schedule (Apple waits 1h, 12h, 24h, 48h and 72h; sandbox never retries). The \
            notifications are those of --api-data, or generated (--notification-count, a mix of \
            types with nested signed transactions), all signed before the first is sent. Every \
            attempt shows in Get Notification History (sendAttempts: SUCCESS, NO_RESPONSE, \
            UNSUCCESSFUL_HTTP_RESPONSE_CODE, ...), so notifications --reconcile against this \
            simulator lists what the receiver missed. While it serves, the writes send theirs as \
            Apple does: a test notification a TEST (its status then reports the real attempts), an \
            extension RENEWAL_EXTENDED, a mass extension, once complete, RENEWAL_EXTENDED or \
            RENEWAL_EXTENSION/FAILURE per subscription and RENEWAL_EXTENSION/SUMMARY with the \
            counts (--notification-count 0 sends only these). --notification-consumption-share 10 \
            makes 10 % of the generated notifications refund requests (CONSUMPTION_REQUEST), each \
            for a new purchase the simulator keeps, so a consumption answer for it is accepted. \
            POST /control/consumption-request?count=N sends such requests on demand, and GET \
            /control/consumption lists the consumption answers received, each with Apple's verdict \
            (both on the API port, no token; see docs/consumption-simulator.md). The URL must be https (certificates are \
            checked), or plain http on a loopback address. Once every retry is over, a summary line \
            is printed (sent, acknowledged, failed after retries, rate, p50/p99 latency) and the \
            simulator keeps serving until SIGINT or SIGTERM, or exits with --exit-when-sent.

            --ocsp serves OCSP for the test PKI made at start, as Apple's CAs do: its leaf and \
            intermediate carry the responder's URL, the intermediate signs answers about the leaf \
            and the root answers about the intermediate, so inspect, lookup, receive and dash \
            with --online-checks ask it. --ocsp-revoke, --ocsp-mode and --ocsp-latency set how it \
            starts; POST <responder>/control?mode=try-later (or revoke=leaf, latency-ms=2000) \
            changes it while it serves. The banner prints both URLs.
            """
    )

    @Option(name: .long, help: "Address to listen on (loopback by default).")
    var host = "127.0.0.1"

    @Option(name: .long, help: "Port (0 picks a free one).")
    var port = 8099

    @Option(name: .long, help: ArgumentHelp("Added to every answer, in milliseconds.", valueName: "ms"))
    var latency: Double = 0

    @Option(name: .long, help: ArgumentHelp("Share of requests that get an injected fault (0 to 1).", valueName: "rate"))
    var faultRate: Double = 0

    @Option(name: .long, help: "Seed for the fault sequence.")
    var seed: UInt64 = 1

    @Option(name: .long, help: ArgumentHelp("A file holding the shared secret this simulator expects.", valueName: "file"))
    var secretFile: String?

    @Option(name: .long, help: ArgumentHelp("JSON customers for the App Store Server API (orders, transactions, renewals, notifications).", valueName: "file"))
    var apiData: String?

    @Option(
        name: .long,
        help: ArgumentHelp("PEM public key (or .p8 private key) API tokens must be signed with; without it any ES256 signature passes.", valueName: "pem"))
    var apiKeyFile: String?

    @Option(name: .long, help: ArgumentHelp("The key id API tokens must name in their kid header; without it any key id passes.", valueName: "id"))
    var apiKeyId: String?

    @Option(name: .long, help: ArgumentHelp("Write the API signing root certificate (DER) here, for --root-ca.", valueName: "file"))
    var apiRootOut: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Keep the test PKI and an API key in this folder (made on first use): root.der for --root-ca, api-key.p8 for --private-key-file.",
            valueName: "dir"))
    var pki: String?

    @Flag(name: .long, help: "Make the --pki folder when missing, print what it holds, and exit.")
    var `init` = false

    @Option(name: .long, help: ArgumentHelp("Share of API requests that get an injected fault (0 to 1).", valueName: "rate"))
    var apiFaultRate: Double = 0

    @Option(name: .long, help: ArgumentHelp("Seconds until a mass extension is complete (Apple: hours or days).", valueName: "seconds"))
    var massExtensionDelay: Double = 2

    @Flag(name: .long, help: "Enforce Apple's Retention Messaging rate limits (per endpoint, over an hour; sandbox 10 %). Off by default.")
    var retentionRateLimits = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Send V2 notifications to this receiver URL (https, or http on loopback), then keep serving.", valueName: "url"))
    var sendNotifications: String?

    @Option(name: .long, help: ArgumentHelp("Notifications per second (0: as fast as --notification-concurrency allows).", valueName: "n"))
    var notificationRate: Double = 0

    @Option(
        name: .long,
        help: ArgumentHelp(
            "How many to send: the --api-data notifications first, then generated ones (default: those of --api-data, else 100).",
            valueName: "n"))
    var notificationCount: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Percent (0 to 100) of the generated notifications that are refund requests (CONSUMPTION_REQUEST), each for a new purchase.",
            valueName: "percent"))
    var notificationConsumptionShare: Double = 0

    @Option(name: .long, help: ArgumentHelp("Requests in flight at most while sending.", valueName: "n"))
    var notificationConcurrency = 64

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Waits before the retries of a failed notification, e.g. 1s,2s,4s,8s,16s (units ms, s, m, h; none for no retries). Default: Apple's 1h,12h,24h,48h,72h.",
            valueName: "list"))
    var retrySchedule: String?

    @Option(name: .long, help: ArgumentHelp("Environment of generated notifications: production or sandbox (sandbox never retries).", valueName: "env"))
    var sendEnvironment: APIEnvironment = .production

    @Option(name: .long, help: ArgumentHelp("Seconds an attempt may take before it counts as TIMED_OUT.", valueName: "seconds"))
    var notificationTimeout: Double = 10

    @Flag(
        name: .long,
        help: "Serve OCSP for the test PKI: its leaf and intermediate name the responder, so --online-checks asks it. Not with --pki.")
    var ocsp = false

    @Option(name: .long, help: ArgumentHelp("With --ocsp: answer that this certificate is revoked (repeatable).", valueName: "leaf|intermediate"))
    var ocspRevoke: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp(
            "With --ocsp: how the responder starts: answering, down (503), try-later, silent (never answers), oversized, other-certificate or wrong-key.",
            valueName: "mode"))
    var ocspMode: String?

    @Option(name: .long, help: ArgumentHelp("With --ocsp: every OCSP answer waits this long (a slow responder).", valueName: "ms"))
    var ocspLatency: Int?

    @Flag(name: .long, help: "Exit once every notification is acknowledged or has failed after its retries.")
    var exitWhenSent = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Before sending, wait up to this many seconds for the receiver's port to accept connections (a receiver started after the simulator).",
            valueName: "seconds"))
    var waitForReceiver: Double = 0

    /// Trusted roots for the receiver --send-notifications sends to.
    @OptionGroup var tls: TLSTrustOptions

    @OptionGroup(title: "Retention Messaging performance test") var performanceTest: SimulatorPerformanceTestOptions

    func validate() throws {
        if `init`, pki == nil { throw ValidationError("--init makes the --pki folder: give --pki DIR.") }
        if sendNotifications == nil {
            let given = [
                ("--notification-count", notificationCount != nil), ("--retry-schedule", retrySchedule != nil),
                ("--notification-consumption-share", notificationConsumptionShare != 0),
                ("--exit-when-sent", exitWhenSent), ("--wait-for-receiver", waitForReceiver != 0), ("--ca-file", tls.caFile != nil),
            ].filter(\.1).map(\.0)
            if let first = given.first { throw ValidationError("\(first) only works with --send-notifications URL.") }
        }
        if ocsp, pki != nil {
            throw ValidationError(
                "--ocsp makes a test PKI at start whose CAs sign the answers; a --pki folder keeps no CA keys. Leave out one of them.")
        }
        if !ocsp {
            let given = [("--ocsp-revoke", !ocspRevoke.isEmpty), ("--ocsp-mode", ocspMode != nil), ("--ocsp-latency", ocspLatency != nil)]
            if let first = given.first(where: \.1) { throw ValidationError("\(first.0) only works with --ocsp.") }
        }
        let launch = try launch()
        do {
            try launch.check()
        } catch {
            throw ValidationError(error.reason)
        }
    }

    /// The settings as the simulator takes them; the shared secret and the PKI folder are read
    /// in `run`.
    func launch() throws -> SimulatorLaunch {
        var launch = SimulatorLaunch(console: .standard)
        (launch.host, launch.port, launch.latency, launch.seed) = (host, port, latency, seed)
        (launch.faultRate, launch.apiFaultRate, launch.massExtensionDelay) = (faultRate, apiFaultRate, massExtensionDelay)
        (launch.apiDataFile, launch.apiKeyFile, launch.apiRootOut) = (apiData, apiKeyFile, apiRootOut)
        launch.apiKeyID = apiKeyId
        launch.retentionRateLimits = retentionRateLimits
        launch.performanceTest = performanceTest.settings
        if ocsp {
            let modes = OCSPResponder.Behaviour.allCases.map(\.rawValue)
            guard let behaviour = OCSPResponder.Behaviour(rawValue: ocspMode ?? "answering") else {
                throw ValidationError("--ocsp-mode takes one of \(modes.joined(separator: ", ")), not \(ocspMode ?? "").")
            }
            launch.ocsp = SimulatorLaunch.OCSP(revoke: ocspRevoke, behaviour: behaviour, latency: ocspLatency ?? 0)
        }
        let schedule: RetrySchedule
        do {
            schedule = try retrySchedule.map { text throws(NotificationSenderError) in try RetrySchedule(parsing: text) } ?? .apple
        } catch {
            throw ValidationError("--retry-schedule: \(error.reason).")
        }
        launch.sending = sendNotifications.map { url in
            var sending = SimulatorLaunch.Sending(
                url: url, rate: notificationRate, count: notificationCount, concurrency: notificationConcurrency, schedule: schedule,
                environment: sendEnvironment, timeout: notificationTimeout, exitWhenSent: exitWhenSent, waitForReceiver: waitForReceiver)
            sending.consumptionShare = notificationConsumptionShare
            return sending
        }
        return launch
    }

    func run() async throws {
        var launch = try launch()
        do throws(ServerAPISimulatorError) {
            guard try launch.openPKI(pki, initOnly: `init`) else { return }
        } catch {
            Console.standard.error("receiptdash: \(error.reason)")
            throw ExitStatus.failed
        }
        launch.sending?.extraTrustRoots = try tls.roots()
        do {
            launch.secret = try SharedSecret.load(file: secretFile, environment: ProcessInfo.processInfo.environment, warn: Console.standard.warning)
        } catch {
            throw ValidationError("\(error)")
        }
        do {
            try await launch.run()
        } catch let error as SimulatorLaunchError {
            throw ValidationError(error.reason)
        } catch let error as PortInUseError {
            Console.standard.error("receiptdash: \(error)")
            throw ExitStatus.failed
        }
    }
}
