import AppStoreClients
import ArgumentParser
import ConsumptionAnswering
import ConsumptionPolicy
import AuditTrail
import CommandOptions
import Foundation
import Logging
import NotificationForwarder
import NotificationReceiver
import PlainWords
import AppStoreAPI
import ReceiptCore
import ReceiptTrust
import RetentionRules
import RetryEngine
import ScheduledReconciliation
import UntrustedText

/// `receiptdash receive`: the App Store Server Notifications endpoint.
struct Receive: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "receive",
        abstract: "Receive App Store Server Notifications V2: verify, deduplicate, store durably, then answer.",
        discussion: """
            POST /notifications takes exactly {"signedPayload": "<JWS>"}. A notification is answered \
            200 only once it is committed to the audit database; a redelivery (same notificationUUID) \
            is counted, not stored twice. Gates, checked before any signature work: the bundle id \
            (--bundle-id, required), the environment (--environment, default production) and \
            signedDate (not over 5 minutes ahead, not older than --max-age). Not the expected shape: \
            400; signature, chain, bundle, app, environment or date refused: 403; a body over \
            --max-body: 413; the commit queue full (--max-pending): 503 with Retry-After. Refusals \
            are counted in full on /metrics, and stored and logged as one sample per class, \
            address and minute (the log then gives the others' count). V1 bodies are refused \
            unless --accept-v1 is given with a shared secret. GET /health answers 200 while the \
            store is writable (checked at most once a second). \
            A connection holds at most 16 requests read and not answered; one whose answers go \
            unread for --write-timeout is closed; --max-connections-per-address caps one address. \
            GET /metrics is served on a second listener (--metrics-host, --metrics-port). \
            --forward URL hands every stored notification on as a signed Standard Webhook (from an \
            outbox, never delaying the 200); --reconcile-every 1h backfills from Apple's \
            Notification History on schedule (docs/on-call.md). --retention-path /retention with \
            --retention-rules FILE answers Retention Messaging realtime requests by the rules file, \
            judged as notifications are (docs/retention.md). --consumption-policy FILE answers \
            Apple's refund requests (CONSUMPTION_REQUEST) by the file's first matching policy, \
            once whatever the number of receivers on the trail, before the 12-hour deadline \
            (docs/on-call.md). \
            SIGTERM or SIGINT: stop accepting, finish requests in flight, close the store.
            Plain HTTP: serve on loopback or behind a TLS reverse proxy (Apple requires TLS 1.2+).
            """)

    @Option(name: .long, help: "Address to listen on.")
    var host = "127.0.0.1"

    @Option(name: .long, help: "Port to listen on (0 picks a free one).")
    var port = 8098

    @OptionGroup var database: DatabaseOption

    @Option(
        name: .long,
        help: ArgumentHelp(
            "An accepted bundle ID (repeatable; or RECEIPTDASH_BUNDLE_ID, or --api-profile's). At least one is required.",
            valueName: "id"))
    var bundleId: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp("Take the bundle ID (and app Apple ID) from this table of $XDG_CONFIG_HOME/receiptdash/api.toml.", valueName: "name"))
    var apiProfile: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "An accepted environment: production or sandbox (repeatable; default production). Others are refused (403).",
            valueName: "env"))
    var environment: [ReceiverEnvironment] = []

    @Flag(
        name: .long,
        help: "Accept legacy V1 notifications whose password is the shared secret (--shared-secret-file or RECEIPTDASH_SHARED_SECRET). Off: V1 is refused (403).")
    var acceptV1 = false

    @Option(name: .long, help: ArgumentHelp("The shared secret's file, for --accept-v1 (or RECEIPTDASH_SHARED_SECRET).", valueName: "file"))
    var sharedSecretFile: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Refuse notifications signed longer ago than this (default 10d, above Apple's ~6.5-day retry window); none to replay captured ones.",
            valueName: "duration"))
    var maxAge = "10d"

    @Option(name: .long, help: ArgumentHelp("The most connections open at once (idle kept-alive ones count).", valueName: "n"))
    var maxConnections = ReceiverListeners.defaultMaximumConnections

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The most connections open at once from one address (idle ones count); past it a new one is closed at accept.",
            valueName: "n"))
    var maxConnectionsPerAddress = ReceiverListeners.defaultMaximumConnectionsPerAddress

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Close a connection whose client leaves its answers unread this long (its buffers full).",
            valueName: "duration"))
    var writeTimeout = "10s"

    @Option(
        name: .long, help: ArgumentHelp("The most notifications waiting to be committed; past it: 503 with Retry-After.", valueName: "n"))
    var maxPending = NotificationStore.defaultMaximumPending

    @Option(
        name: .long,
        help: ArgumentHelp("How long stored refusal rows are kept (default 30d; none keeps them). Notifications are never pruned.", valueName: "duration"))
    var keepRefusals = "30d"

    @Option(name: .long, help: ArgumentHelp("Address of the /metrics listener.", valueName: "host"))
    var metricsHost = "127.0.0.1"

    @Option(
        name: .long,
        help: ArgumentHelp("Port of the /metrics listener (default: --port + 1; 0 picks a free one; none turns it off).", valueName: "port"))
    var metricsPort: String?

    @Option(name: .long, help: ArgumentHelp("The app's Apple ID, checked when given.", valueName: "n"))
    var appAppleId: Int64?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Answer Retention Messaging realtime requests on this path (with --retention-rules and --app-apple-id).", valueName: "path"))
    var retentionPath: String?

    @Option(
        name: .long,
        help: ArgumentHelp("The retention rules file (TOML; check it with receiptdash messaging rules check).", valueName: "file"))
    var retentionRules: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Answer Apple's refund requests (CONSUMPTION_REQUEST) by this policy file (TOML; check it with receiptdash policy check), with the API key of the reconciliation options.",
            valueName: "file"))
    var consumptionPolicy: String?

    @Option(name: .long, help: "send, or dry-run: record what each policy would send and send nothing.")
    var consumptionPolicyMode: ConsumptionPolicyMode = .send

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The longest a refund request waits for a second without notifications before it is answered under traffic (default 10m; at most 10h). 0 answers at once.",
            valueName: "duration"))
    var consumptionMaxWait = "10m"

    @OptionGroup(title: "Forwarding") var forwarding: ForwardOptions

    @OptionGroup(title: "Continuous reconciliation") var reconciling: ReconcileOptions

    /// Trusted roots for the forwarding targets and Apple's Notification History.
    @OptionGroup var tls: TLSTrustOptions

    @OptionGroup var roots: RootCAOption

    @OptionGroup var online: OnlineChecksOption
    var rootCa: [String] { roots.rootCa }

    @Option(name: .long, help: ArgumentHelp("The largest body accepted, in bytes.", valueName: "bytes"))
    var maxBody = ReceiverPolicy.defaultMaximumBodySize

    @Option(name: .long, help: ArgumentHelp("Serve HTTPS (TLS 1.2+) with this certificate chain (PEM).", valueName: "file"))
    var tlsCert: String?

    @Option(name: .long, help: ArgumentHelp("The private key (PEM) of --tls-cert.", valueName: "file"))
    var tlsKey: String?

    func validate() throws {
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be 0…65535.") }
        guard maxBody > 0 else { throw ValidationError("--max-body must be positive.") }
        guard (tlsCert == nil) == (tlsKey == nil) else { throw ValidationError("--tls-cert and --tls-key go together.") }
        guard maxConnections > 0 else { throw ValidationError("--max-connections must be positive.") }
        guard maxConnectionsPerAddress > 0 else { throw ValidationError("--max-connections-per-address must be positive.") }
        _ = try writeTimeoutDuration()
        guard maxPending > 0 else { throw ValidationError("--max-pending must be positive.") }
        _ = try bundleIDs()
        _ = try Self.duration(maxAge, "--max-age")
        _ = try Self.duration(keepRefusals, "--keep-refusals")
        _ = try metricsAddress()
        if reconciling.givesAPISettings && reconciling.reconcileEvery == nil && consumptionPolicy == nil {
            throw ValidationError("the API credentials and URLs go with --reconcile-every DURATION or --consumption-policy FILE.")
        }
        if consumptionPolicyMode != .send && consumptionPolicy == nil {
            throw ValidationError("--consumption-policy-mode goes with --consumption-policy FILE.")
        }
        _ = try consumptionMaximumWait()
        if (retentionPath == nil) != (retentionRules == nil) {
            throw ValidationError("--retention-path and --retention-rules go together: the path Apple POSTs to, and the rules that answer.")
        }
        if let retentionPath {
            guard retentionPath.hasPrefix("/"), retentionPath.utf8.count <= 200, !["/notifications", "/health"].contains(retentionPath),
                retentionPath.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 0x20 && $0 != "?" && $0 != "#" })
            else {
                throw ValidationError("--retention-path takes a path such as /retention (not /notifications or /health); not \(SafeText.escaped(retentionPath)).")
            }
            guard appAppleId != nil else {
                throw ValidationError("--retention-path needs --app-apple-id: Apple says to answer only realtime requests whose appAppleId is your app's.")
            }
        }
        if tls.caFile != nil && reconciling.reconcileEvery == nil && forwarding.forward.isEmpty {
            throw ValidationError("--ca-file goes with --reconcile-every DURATION or --forward URL (the requests they send).")
        }
        // Only whether a secret is named: it is read once, in run (a file others can read is
        // warned about then).
        if acceptV1, sharedSecretFile == nil, (ProcessInfo.processInfo.environment[SharedSecret.environmentVariable] ?? "").isEmpty {
            throw Self.noSecret
        }
    }

    static let noSecret = ValidationError(
        "--accept-v1 needs the shared secret: --shared-secret-file FILE or RECEIPTDASH_SHARED_SECRET (a V1 body's password is compared with it).")

    /// Every accepted bundle id: the flags, else RECEIPTDASH_BUNDLE_ID, else the profile's.
    func bundleIDs() throws -> [String] {
        try Self.bundleIDs(bundleId, profile: apiProfile, flag: "--bundle-id is required")
    }

    /// The bundle ids a receiver accepts: `flags`, else RECEIPTDASH_BUNDLE_ID, else the
    /// profile's. None is a usage error (exit 64) starting with `flag`: without one, any app's
    /// genuine notifications would be stored. `receive` and `dash --receive` alike.
    static func bundleIDs(_ flags: [String], profile name: String?, flag: String) throws -> [String] {
        let found: [String]
        do {
            found = try APIProfile.bundleIDs(flags, profile: name, environment: ProcessInfo.processInfo.environment)
        } catch {
            throw ValidationError(error.reason)
        }
        if !found.isEmpty { return found }
        throw ValidationError(
            "\(flag): name your app's bundle ID with --bundle-id (or set RECEIPTDASH_BUNDLE_ID, or an --api-profile with bundle_id); without it any app's genuine notifications would be stored.")
    }

    /// The shared secret V1 bodies must carry; a usage error without one.
    func v1Secret() throws -> SharedSecret {
        let secret: SharedSecret?
        do {
            secret = try SharedSecret.load(file: sharedSecretFile, environment: ProcessInfo.processInfo.environment, warn: Console.standard.warning)
        } catch {
            throw ValidationError("\(error)")
        }
        guard let secret else { throw Self.noSecret }
        return secret
    }

    /// `none` → nil; else a duration (`10d`, `12h`, `90m`).
    static func duration(_ text: String, _ flag: String) throws -> Duration? {
        if text.lowercased() == "none" { return nil }
        guard let seconds = DurationText.parse(text), seconds > 0 else {
            throw ValidationError("\(flag) takes a duration such as 10d, 12h or 90m, or none; not \(SafeText.escaped(text)).")
        }
        return .seconds(seconds)
    }

    /// `--consumption-max-wait`: 0 up to 10 hours (Apple's deadline is 12, the unanswered
    /// alert fires at 10).
    func consumptionMaximumWait() throws -> TimeInterval {
        guard let seconds = DurationText.parse(consumptionMaxWait), seconds <= 36_000 else {
            throw ValidationError("--consumption-max-wait takes a duration from 0 to 10h, such as 10m; not \(SafeText.escaped(consumptionMaxWait)).")
        }
        return seconds
    }

    /// `--write-timeout`: a positive duration (`10s`, `500ms`).
    func writeTimeoutDuration() throws -> Duration {
        guard let seconds = DurationText.parse(writeTimeout), seconds > 0 else {
            throw ValidationError("--write-timeout takes a duration such as 10s or 500ms; not \(SafeText.escaped(writeTimeout)).")
        }
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }

    /// The metrics listener's address, nil for `none`.
    func metricsAddress() throws -> (host: String, port: Int)? {
        guard let metricsPort else { return (metricsHost, port == 0 || port == 65_535 ? 0 : port + 1) }
        if metricsPort.lowercased() == "none" { return nil }
        guard let number = Int(metricsPort), (0...65_535).contains(number) else {
            throw ValidationError("--metrics-port takes a port (0…65535; 0 picks a free one) or none.")
        }
        guard number == 0 || number != port else { throw ValidationError("--metrics-port must differ from --port.") }
        return (metricsHost, number)
    }

    func run() async throws {
        LogTimeZone.nameTheTimeZone()
        // Values quoted where they hold a space, `=` or `"`: a client's words can't pass for a field.
        LoggingSystem.bootstrap { QuotedLogHandler(StreamLogHandler.standardError(label: $0)) }
        let anchors: TrustAnchors
        do {
            anchors = try TrustAnchors.apple(testRootFiles: rootCa)
        } catch {
            FileHandle.standardError.write(Data("receiptdash: \(error)\n".utf8))
            throw ExitCode.failure
        }
        // SQLite commits with synchronous = FULL: an acknowledged notification survives a power
        // loss; PostgreSQL commits are flushed by the server.
        var policy = ReceiverPolicy(
            allowedBundleIDs: try bundleIDs(), appAppleID: appAppleId, anchors: anchors, maximumBodySize: maxBody,
            environments: Set((environment.isEmpty ? [.production] : environment).map(\.store)),
            v1SharedSecret: acceptV1 ? try v1Secret() : nil, maximumAge: try Self.duration(maxAge, "--max-age"))
        // A responder that cannot answer makes the receiver answer 503 with Retry-After.
        policy.onlineChecks = online.make()
        let forwardConfiguration = try forwarding.configuration(tls)
        let retention = try retentionResponder()
        let consumption = try consumptionPolicies()
        let backend = try await database.open(durable: true)
        var launch = ReceiveLaunch(
            policy: policy,
            listeners: ReceiverListeners(
                host: host, port: port, metrics: try metricsAddress(), maximumConnections: maxConnections,
                maximumConnectionsPerAddress: maxConnectionsPerAddress, writeTimeout: try writeTimeoutDuration()),
            tls: tlsCert.flatMap { cert in tlsKey.map { (certificate: cert, key: $0) } }, maximumPending: maxPending,
            keepRefusals: try Self.duration(keepRefusals, "--keep-refusals"), metrics: ReceiverMetrics(registry: ServiceMetrics.shared.registry))
        launch.retention = retention
        if let consumption {
            // The answerer waits for a moment the store has taken nothing.
            let activity = ActivityMark()
            launch.activity = activity
            launch.services.append(try consumptionAnswerer(consumption, backend: backend, activity: activity))
        }
        // The store runs (PostgreSQL: its pool) from here on: forwarding targets are registered
        // before the receiver's group starts; the group's AuditStoreService closes it last.
        let served = try await AuditStoreService.closing(backend) {
            try await launch.run(backend: backend, console: .standard) {
                guard let forwardConfiguration else { return nil }
                let start = try await Forwarder.start(
                    forwardConfiguration, types: forwarding.forwardType, outbox: backend, metrics: ForwardMetrics(registry: ServiceMetrics.shared.registry))
                start.warnings.forEach(Console.standard.warning)
                Console.standard.error(start.banner)
                return start.forwarder
            } reconciling: { store in
                try reconciling.reconcileEvery.map { _ in try reconciler(backend: backend, store: store, policy: policy, metrics: launch.metrics) }
            }
        }
        if !served { throw ExitCode.failure }
    }
}

extension Receive {
    /// `--retention-path` and `--retention-rules`, read and checked before anything starts: a
    /// fault in the rules is a usage error naming its line (exit 64), as `messaging rules check`.
    func retentionResponder() throws -> (path: String, rules: RetentionRules, signer: OfferSigner?)? {
        guard let retentionPath, let retentionRules else { return nil }
        let rules: RetentionRules
        let signer: OfferSigner?
        do {
            rules = try RetentionRules.load(path: retentionRules)
        } catch {
            throw ValidationError("--retention-rules: \(error.reason)")
        }
        do {
            let loaded = try rules.offerSigner(environment: ProcessInfo.processInfo.environment)
            loaded.warnings.forEach(Console.standard.warning)
            signer = loaded.signer
        } catch {
            throw ValidationError("--retention-rules: [offer_key]: \(error.reason)")
        }
        return (retentionPath, rules, signer)
    }

    /// `--consumption-policy`, read and checked before anything starts (a fault is a usage
    /// error naming its line, as `policy check`); read-only refuses sending.
    func consumptionPolicies() throws -> ConsumptionPolicies? {
        guard let consumptionPolicy else { return nil }
        let policies: ConsumptionPolicies
        do {
            policies = try ConsumptionPolicies.load(path: consumptionPolicy)
        } catch {
            throw ValidationError("--consumption-policy: \(error.reason)")
        }
        if consumptionPolicyMode == .send {
            let api = try consumptionAPIOptions()
            if let reason = try api.readOnlyReason(flag: false) {
                throw ValidationError(
                    "read-only (\(reason)): --consumption-policy sends consumption information to Apple; add --consumption-policy-mode dry-run to record what it would send")
            }
        }
        if !policies.customerConsented {
            Console.standard.warning("\(consumptionPolicy) does not say customer_consented = true: no consumption information is sent (each request is listed no-consent)")
        }
        return policies
    }

    private func consumptionAPIOptions() throws -> APIOptions {
        try reconciling.apiOptions(bundleID: try bundleIDs()[0], appAppleID: appAppleId, profile: apiProfile, rootCA: rootCa)
    }

    /// The service that answers the trail's consumption requests by `policies`: its own API
    /// client (one HTTP client, the one retry engine) and this receiver's metrics.
    func consumptionAnswerer(_ policies: ConsumptionPolicies, backend: any AuditBackend, activity: ActivityMark) throws -> ConsumptionAnswerer {
        let api = try consumptionAPIOptions()
        let client: AppStoreServerAPIClient
        do {
            client = try api.makeClient(try api.credentials(), caFile: tls.caFile)
        } catch let error as APIOptionsError {
            Console.standard.error("receiptdash: --consumption-policy: \(error.description)")
            throw ExitStatus.usage
        }
        let pipeline = ReceiptPipeline(at: Date(), evaluator: TrustEvaluator(anchors: try api.trustAnchors()))
        Console.standard.error(
            "receiptdash: answering CONSUMPTION_REQUESTs by \(CountNoun.policy.count(policies.policies.count)) of \(SafeText.escaped(policies.path))\(consumptionPolicyMode == .dryRun ? " (dry run: nothing is sent)" : "")")
        var configuration = ConsumptionAnswerer.Configuration(policies: policies, mode: consumptionPolicyMode)
        configuration.maximumWait = try consumptionMaximumWait()
        return ConsumptionAnswerer(
            store: backend, sender: CustomerActions(client: client, pipeline: pipeline), configuration: configuration,
            metrics: ConsumptionMetrics(registry: ServiceMetrics.shared.registry), activity: activity)
    }

    /// `--reconcile-every`'s service: Notification History for each accepted environment,
    /// backfilled through a receiver of its own with this one's policy into the same store.
    func reconciler(backend: any AuditBackend, store: NotificationStore, policy: ReceiverPolicy, metrics: ReceiverMetrics) throws
        -> ScheduledReconciliation
    {
        let (every, window) = try reconciling.durations()
        let bundles = try bundleIDs()
        let api = try reconciling.apiOptions(bundleID: bundles[0], appAppleID: appAppleId, profile: apiProfile, rootCA: rootCa)
        let client: AppStoreServerAPIClient
        do {
            client = try api.makeClient(try api.credentials(), caFile: tls.caFile)
        } catch let error as APIOptionsError {
            Console.standard.error("receiptdash: --reconcile-every: \(error.description)")
            throw ExitStatus.usage
        }
        return .receiving(
            every: (every, reconciling.reconcileEvery ?? ""), window: (window, reconciling.reconcileWindow),
            environments: (environment.isEmpty ? [.production] : environment).map { $0 == .production ? .production : .sandbox },
            client: client, backend: backend, store: store, policy: policy, metrics: metrics, console: .standard)
    }
}

/// `--environment`: the environments a receiver accepts.
enum ReceiverEnvironment: String, ExpressibleByArgument, CaseIterable {
    case production, sandbox

    var store: StoreEnvironment {
        switch self {
        case .production: .production
        case .sandbox: .sandbox
        }
    }
}
