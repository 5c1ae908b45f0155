// swift-tools-version:6.0
import Foundation
import PackageDescription

/// Where the checkout's commit is, for `--version` (Sources/CBuildStamp embeds these files at
/// compile time with C23 `#embed`, and the compiler's dependency file rebuilds the stamp when
/// they change): the `HEAD` file, and the loose file of the branch it named when this manifest
/// was read. No git checkout (a source tarball): none, and the commit is `unknown` unless
/// `make` stamps it. Read by the build, never at run time.
func gitCommitFiles() -> [CSetting] {
    let folder = Context.packageDirectory
    let dotGit = folder + "/.git"
    var isFolder: ObjCBool = false
    guard FileManager.default.fileExists(atPath: dotGit, isDirectory: &isFolder) else { return [] }
    func read(_ path: String) -> String? {
        (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
    }
    func absolute(_ path: String, from base: String) -> String { path.hasPrefix("/") ? path : base + "/" + path }
    var gitDirectory = dotGit
    if !isFolder.boolValue {
        // A worktree: `.git` is a file naming its folder, whose `commondir` holds the refs.
        guard let line = read(dotGit), line.hasPrefix("gitdir: ") else { return [] }
        gitDirectory = absolute(String(line.dropFirst(8)), from: folder)
    }
    let common = read(gitDirectory + "/commondir").map { absolute($0, from: gitDirectory) } ?? gitDirectory
    var settings: [CSetting] = [.define("RECEIPTDASH_GIT_HEAD", to: "\"\(gitDirectory)/HEAD\"")]
    if let head = read(gitDirectory + "/HEAD"), head.hasPrefix("ref: refs/") {
        let name = String(head.dropFirst(5))
        settings.append(.define("RECEIPTDASH_GIT_REF_NAME", to: "\"\(name)\""))
        settings.append(.define("RECEIPTDASH_GIT_REF", to: "\"\(common)/\(name)\""))
    }
    // A fresh clone keeps its branches in one file, not one file each.
    settings.append(.define("RECEIPTDASH_GIT_PACKED_REFS", to: "\"\(common)/packed-refs\""))
    return settings
}

let package = Package(
    name: "receiptdash",
    platforms: [.macOS(.v15)],  // Synchronization.Mutex
    products: [
        .library(name: "ReceiptCore", targets: ["ReceiptCore"]),
        .library(name: "ReceiptTrust", targets: ["ReceiptTrust"]),
        .library(name: "TerminalUI", targets: ["TerminalUI"]),
        // For the fuzz package (Fuzz/Package.swift): the renderings fuzz-decode runs on what
        // decodes, and the receiver's decision with the interfaces fuzz-receiver's in-memory
        // sink implements.
        .library(name: "ReceiptRendering", targets: ["ReceiptRendering"]),
        .library(name: "AppStoreAPI", targets: ["AppStoreAPI"]),
        .library(name: "AuditTrail", targets: ["AuditTrail"]),
        .library(name: "NotificationReceiver", targets: ["NotificationReceiver"]),
        .executable(name: "receiptdash", targets: ["receiptdash"]),
    ],
    // Each dependency pinned to the one version the build machines hold: Package.resolved
    // cannot be committed on them (their copies' commit ids are not GitHub's), so a range
    // would let a new machine build against another version than the one tested.
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", exact: "1.8.2"),
        .package(url: "https://github.com/apple/swift-asn1.git", exact: "1.7.4"),
        .package(url: "https://github.com/apple/swift-certificates.git", exact: "1.21.1"),
        .package(url: "https://github.com/apple/swift-crypto.git", exact: "4.5.2"),
        .package(url: "https://github.com/swift-server/async-http-client.git", exact: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio.git", exact: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", exact: "2.37.6"),
        .package(url: "https://github.com/groue/GRDB.swift.git", exact: "7.10.0"),
        .package(url: "https://github.com/LebJe/TOMLKit.git", exact: "0.6.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", exact: "2.4.1"),
        // The V2 notification receiver's HTTP server (graceful shutdown through its service lifecycle) and logs.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", exact: "2.28.1"),
        .package(url: "https://github.com/apple/swift-log.git", exact: "1.16.2"),
        // The shared audit trail on PostgreSQL (pooled connections, LISTEN/NOTIFY).
        .package(url: "https://github.com/vapor/postgres-nio.git", exact: "1.33.2"),
        // The receiver's public and metrics listeners run as services of one group, with
        // graceful shutdown; its request deadline reads HTTP parts as Hummingbird decodes them.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", exact: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", exact: "1.35.2"),
    ],
    targets: [
        // The one sanitiser for untrusted text; depends on nothing.
        .target(name: "UntrustedText"),
        // Words for people that depend on nothing: counts said with their noun's plural
        // (CountNoun, the one pluraliser) and the known word a mistyped one was meant to be.
        .target(name: "PlainWords"),
        // The one retry engine (budget, backoff, jitter, Retry-After, give-up words) and the
        // injected time it waits on: clients and stores retry through it. Also when a busy part
        // last worked (ActivityMark), for background work that waits for a quiet moment.
        .target(name: "RetryEngine", dependencies: ["PlainWords"]),
        // Formats, decoding and analysis: every input read into one model, and its purchases
        // judged at an instant. No certificates, no signatures: that is ReceiptTrust's.
        .target(
            name: "ReceiptCore",
            dependencies: [
                "PlainWords",
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        // Trust: signatures, chains to Apple's roots and their policies, the bundled anchors,
        // the revocation-check protocol online checks answer, and the pipeline that judges a
        // decoded input (decode, trust, analysis).
        .target(
            name: "ReceiptTrust",
            dependencies: [
                "PlainWords",
                "ReceiptCore",
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            // Apple's roots are compiled in (BundledResources.swift, made by
            // .ci/embed-resources.py), so a copied binary needs no resource folder.
            exclude: ["Resources"]
        ),
        // This machine's files: inputs read from files, folders, standard input and pastes,
        // `--root-ca` files, and private files and directories (who may read them).
        .target(name: "LocalFiles", dependencies: ["ReceiptCore", "ReceiptTrust"]),
        // Online revocation checks (OCSP as Apple's libraries ask it) over an injected
        // transport: ReceiptTrust asks through its RevocationChecking protocol and opens no sockets.
        .target(
            name: "OnlineRevocation",
            dependencies: [
                "ReceiptCore",
                "ReceiptTrust",
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
            ]
        ),
        // The demo receipts, compiled in: what a first run shows.
        .target(name: "ReceiptDemo", dependencies: ["LocalFiles", "ReceiptCore"], exclude: ["Demo"]),
        // The App Store's APIs as values: Server API requests, responses and look-up results,
        // verifyReceipt's, and the credentials that sign their tokens. No sockets.
        .target(
            name: "AppStoreAPI",
            dependencies: [
                "PlainWords",
                "JSONWriting",
                "LocalFiles",
                "ReceiptCore",
                "ReceiptTrust",
                "UntrustedText",
                .product(name: "Crypto", package: "swift-crypto"),
                // `--api-profile`'s TOML file (APIProfile).
                .product(name: "TOMLKit", package: "TOMLKit"),
            ]
        ),
        // The JSON writer every output and store uses (JSONOutput: streamed, escaped as the
        // sanitiser decides), below rendering so stores, the receiver and clients need no
        // rendering.
        .target(name: "JSONWriting", dependencies: ["ReceiptCore", "UntrustedText"]),
        // What the commands and the dashboard write: inspect's text and JSON, look-ups,
        // notification listings, verify results.
        // What rules files share: count ranges ("3..30"), product globs, the line of a key.
        .target(name: "RuleFiles", dependencies: [.product(name: "TOMLKit", package: "TOMLKit")]),
        // Retention Messaging's rules file and the answer it picks for a realtime request
        // (pure: the receiver reads the trail and sends the answer).
        .target(
            name: "RetentionRules",
            dependencies: [
                "AppStoreAPI", "AuditTrail", "PlainWords", "ReceiptCore", "RuleFiles",
                .product(name: "TOMLKit", package: "TOMLKit"),
            ]
        ),
        // The consumption policy file and the answer it picks for a CONSUMPTION_REQUEST (pure:
        // the receiver reads the trail and sends the answer).
        .target(
            name: "ConsumptionPolicy",
            dependencies: [
                "AppStoreAPI", "PlainWords", "ReceiptCore", "RuleFiles",
                .product(name: "TOMLKit", package: "TOMLKit"),
            ]
        ),
        // Answers the trail's CONSUMPTION_REQUESTs by a policy file through the write gate
        // (intent recorded, one request id, outcome or unknown): a service of `receive`.
        .target(
            name: "ConsumptionAnswering",
            dependencies: [
                "AppStoreAPI", "AppStoreClients", "AuditTrail", "ConsumptionPolicy", "ReceiptCore", "ReceiptTrust", "RetryEngine", "UntrustedText",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(name: "ReceiptRendering", dependencies: ["PlainWords", "CMallocTuning", "JSONWriting", "LocalFiles", "AppStoreAPI", "ReceiptCore", "ReceiptTrust", "UntrustedText"]),
        // The one HTTP client every outgoing request uses (AsyncHTTPClient, one configuration,
        // a deadline per request, failures classified by code): Apple's services, OCSP, doctor,
        // forwarding and the simulator's sender.
        .target(
            name: "OutboundHTTP",
            dependencies: [
                "ReceiptCore",
                "AppStoreAPI",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // The clients of Apple's services: verifyReceipt, the App Store Server API, the batch
        // engine over them and their metrics.
        .target(
            name: "AppStoreClients",
            dependencies: [
                "JSONWriting",
                "OnlineRevocation",
                "OutboundHTTP",
                "AppStoreAPI",
                "ReceiptCore",
                "ReceiptTrust",
                "RetryEngine",
                "UntrustedText",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        // The audit trail's interface: the backend protocol, its records (receipts, actions,
        // notifications), its one error type and `--db` locations. No database driver.
        .target(
            name: "AuditTrail",
            dependencies: [
                "PlainWords",
                "JSONWriting",
                "AppStoreAPI",
                "ReceiptCore",
                "ReceiptTrust",
                "UntrustedText",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // One customer's story: every source (the API, notifications, actions, receipts,
        // verifyReceipt) merged into one timeline with its answer and issues, and told as
        // text, JSON and CSV.
        .target(
            name: "CustomerTimeline",
            dependencies: [
                "PlainWords",
                "JSONWriting",
                "AppStoreAPI",
                "AuditTrail",
                "ReceiptCore",
                "ReceiptTrust",
                "ReceiptRendering",
                "UntrustedText",
            ]
        ),
        // Finds one customer in the App Store Server API and the audit trail (`customer`, the
        // dashboard's Customer view) and hands the sources to CustomerTimeline.
        .target(
            name: "CustomerSearch",
            dependencies: [
                "JSONWriting",
                "ReceiptRendering",
                "UntrustedText",
                "AppStoreAPI",
                "AppStoreClients",
                "AuditTrail",
                "CustomerTimeline",
                "ReceiptCore",
            ]
        ),
        // The audit trail in a SQLite file (GRDB).
        .target(
            name: "AuditTrailSQLite",
            dependencies: [
                "JSONWriting",
                "LocalFiles",
                "AppStoreAPI",
                "AuditTrail",
                "ReceiptCore",
                "ReceiptTrust",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        // The audit trail on a team's PostgreSQL.
        .target(
            name: "AuditTrailPostgres",
            dependencies: [
                "PlainWords",
                "JSONWriting",
                "AppStoreAPI",
                "AuditTrail",
                "ReceiptCore",
                "ReceiptTrust",
                "RetryEngine",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                // Its ConnectionPoolError, to classify pool failures by value.
                .product(name: "_ConnectionPoolModule", package: "postgres-nio"),
            ],
            // Swift 6.3.1's CopyPropagation pass crashes the release build on this store's
            // write closures ("Found ownership error?!"): that one pass is left out here.
            swiftSettings: [.unsafeFlags(["-Xllvm", "-sil-disable-pass=copy-propagation"])]
        ),
        // The App Store Server Notifications V2 receiver: HTTP, policy, metrics; it writes
        // through AuditTrail's `NotificationSink`, with its own write queue (`NotificationStore`).
        .target(
            name: "NotificationReceiver",
            dependencies: [
                "PlainWords",
                "RetentionRules",
                "LocalFiles",
                "JSONWriting",
                "RetryEngine",
                "AppStoreAPI",
                "AuditTrail",
                "ReceiptCore",
                "ReceiptTrust",
                "UntrustedText",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // `receive --forward`: the outbox delivered to the team's services as Standard
        // Webhooks (signing, the HTTP transport, the delivery service and its metrics).
        .target(
            name: "NotificationForwarder",
            dependencies: [
                "PlainWords",
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                "JSONWriting",
                "LocalFiles",
                "UntrustedText",
                "AppStoreAPI",
                "AuditTrail",
                "OutboundHTTP",
                "ReceiptCore",
                "ReceiptRendering",
                "RetryEngine",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // `receive --reconcile-every`: Notification History asked on schedule and what the store
        // missed backfilled through the receiver, one receiver at a time on a shared store.
        .target(
            name: "ScheduledReconciliation",
            dependencies: [
                "AppStoreAPI",
                "AppStoreClients",
                "AuditTrail",
                "NotificationReceiver",
                "RetryEngine",
                "UntrustedText",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // `doctor`: a set-up's checks (API key, clock, audit trail, shared secret, receiver,
        // terminal), each with what to fix.
        .target(
            name: "Doctor",
            dependencies: [
                "PlainWords",
                "JSONWriting",
                "LocalFiles",
                "OutboundHTTP",
                "AppStoreAPI",
                "ReceiptRendering",
                "AppStoreClients",
                "AuditTrail",
                "ReceiptCore",
                "RetryEngine",
                "UntrustedText",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
            ]
        ),
        // `watch`: sources followed, ingested into the audit trail, verified with Apple.
        .target(
            name: "ReceiptWatch",
            dependencies: [
                "PlainWords",
                "CWriteSignals",
                "JSONWriting",
                "LocalFiles",
                "AppStoreAPI",
                "ReceiptRendering",
                "AppStoreClients",
                "AuditTrail",
                "ReceiptCore",
                "ReceiptTrust",
                "UntrustedText",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The benchmarks `receiptdash bench` runs.
        .target(
            name: "ReceiptBenchmarks",
            dependencies: [
                "CustomerSearch",
                "CustomerTimeline",
                "JSONWriting",
                "LocalFiles",
                "RetryEngine",
                "OnlineRevocation",
                "ReceiptDemo",
                "AppStoreAPI",
                "AppStoreClients",
                "AuditTrail",
                "AuditTrailSQLite",
                "Dashboard",
                "NotificationReceiver",
                "ReceiptCore",
                "ReceiptTrust",
                "ReceiptSimulator",
                "ReceiptWatch",
                "TerminalUI",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
            ]
        ),
        // A local verifyReceipt for tests, demos and QA: not part of the service library.
        .target(
            name: "ReceiptSimulator",
            dependencies: [
                "PlainWords",
                "LocalFiles",
                "OnlineRevocation",
                "AppStoreAPI",
                "ReceiptCore",
                "RetryEngine",
                "UntrustedText",
                // The notification sender (POSTs to a receiver as Apple does).
                "OutboundHTTP",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                // The API simulator's Apple-shaped test PKI and JWS signing.
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .target(name: "TerminalUI", dependencies: ["UntrustedText"]),
        .systemLibrary(
            name: "CNcurses",
            providers: [.apt(["libncurses-dev"]), .brew(["ncurses"])]
        ),
        .target(name: "CWindowSignal"),
        // The commit stamp `make install` writes into the linked binary (`--version`).
        .target(name: "CBuildStamp", cSettings: gitCommitFiles()),
        // Core dumps off for the whole process (RLIMIT_CORE 0, not dumpable).
        .target(name: "CProcessLimits"),
        // glibc's mallopt for bulk work (ReceiptRendering's MemoryTuning): <malloc.h> is not in
        // Swift's Glibc module.
        .target(name: "CMallocTuning"),
        // SIGINT and SIGTERM held while a write to Apple is in flight.
        .target(name: "CWriteSignals"),
        .target(name: "TerminalNcurses", dependencies: ["CNcurses", "CWindowSignal", "TerminalUI"]),
        .target(
            name: "Dashboard",
            dependencies: ["PlainWords", "JSONWriting", "AuditTrail", "CustomerTimeline", "LocalFiles", "AppStoreAPI", "ReceiptRendering", "ReceiptCore", "ReceiptTrust", "TerminalUI", "UntrustedText"]
        ),
        // The dashboard's ports served by the real clients, stores, receiver and watch loop.
        .target(
            name: "DashboardLive",
            dependencies: [
                "PlainWords",
                "TerminalNcurses",
                "TerminalUI",
                "LocalFiles",
                "ReceiptDemo", "AppStoreAPI", "AppStoreClients", "AuditTrail", "CustomerSearch", "CustomerTimeline", "Dashboard", "NotificationReceiver", "ReceiptCore", "ReceiptTrust", "ReceiptWatch",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The option groups commands share as `@OptionGroup`s (API credentials and hosts,
        // verifyReceipt, `--db`, `--root-ca`, `--ca-file`, look-up filters, forwarding,
        // reconciliation, online checks) with their validation; the commands stay in the executable.
        .target(
            name: "CommandOptions",
            dependencies: [
                "PlainWords",
                "AppStoreAPI",
                "AppStoreClients",
                "AuditTrail",
                "LocalFiles",
                "NotificationForwarder",
                "OnlineRevocation",
                "OutboundHTTP",
                "ReceiptCore",
                "ReceiptTrust",
                "RetryEngine",
                "UntrustedText",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "receiptdash",
            dependencies: [
                "CommandOptions",
                "ConsumptionAnswering",
                "ConsumptionPolicy",
                "JSONWriting",
                "CustomerSearch",
                "CustomerTimeline",
                "LocalFiles",
                "ReceiptDemo",
                "AppStoreAPI",
                "ReceiptRendering",
                "AppStoreClients",
                "CBuildStamp",
                "CProcessLimits",
                "Doctor",
                "AuditTrail",
                "AuditTrailPostgres",
                "AuditTrailSQLite",
                "NotificationForwarder",
                "NotificationReceiver",
                "PlainWords",
                "RetentionRules",
                "ScheduledReconciliation",
                "ReceiptBenchmarks",
                "ReceiptCore",
                "ReceiptTrust",
                "ReceiptSimulator",
                "ReceiptWatch",
                "RetryEngine",
                "Dashboard",
                "DashboardLive",
                "UntrustedText",
                "TerminalUI",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "ReceiptCoreTests",
            dependencies: [
                "TestSupport",
                "JSONWriting",
                "LocalFiles",
                "ReceiptDemo",
                "AppStoreAPI",
                "ReceiptRendering",
                "ReceiptCore",
                "ReceiptTrust",
                "UntrustedText",
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            exclude: ["Goldens"],
            resources: [.copy("Fixtures")]
        ),
        // What tests of any level share, on no product module above ReceiptCore and RetryEngine:
        // the one certificate builder (TestPKI), temporary folders, loopback ports and listeners,
        // a scripted HTTP server, values to wait on, still and driven clocks, golden files.
        .target(
            name: "TestSupport",
            dependencies: [
                "ReceiptCore", "RetryEngine",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            path: "Tests/TestSupport"
        ),
        // API credentials for tests: a fresh In-App Purchase key each time (never a real one),
        // for the tests of AppStoreAPI's values without the services' support below.
        .target(
            name: "APITestSupport",
            dependencies: ["AppStoreAPI", .product(name: "Crypto", package: "swift-crypto")],
            path: "Tests/APITestSupport"
        ),
        // What the service-side test targets share on top of TestSupport: the simulator's signed
        // notifications, receiver policies, SQLite trails, Notification History pages.
        .target(
            name: "ServiceTestSupport",
            dependencies: [
                "AppStoreAPI", "AppStoreClients", "AuditTrail", "AuditTrailSQLite", "RetryEngine", "NotificationReceiver", "ReceiptCore", "ReceiptTrust", "ReceiptSimulator", "TestSupport",
            ],
            path: "Tests/ServiceTestSupport",
            exclude: ["Fixtures"]
        ),
        .testTarget(
            name: "AppStoreClientsTests",
            dependencies: [
                "TestSupport",
                "APITestSupport",
                "LocalFiles",
                "AppStoreAPI", "AppStoreClients", "RetryEngine", "AuditTrail", "ReceiptCore", "ReceiptSimulator", "ServiceTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            exclude: ["Goldens"]
        ),
        .testTarget(
            name: "AuditTrailTests",
            dependencies: [
                "TestSupport",
                "AppStoreAPI", "AppStoreClients", "RetryEngine", "AuditTrail", "AuditTrailSQLite", "AuditTrailPostgres", "NotificationForwarder", "UntrustedText",
                "ConsumptionAnswering", "ConsumptionPolicy", "APITestSupport",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                "NotificationReceiver", "ReceiptCore", "ReceiptTrust", "ReceiptSimulator", "ReceiptWatch", "ServiceTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            exclude: ["Goldens"]
        ),
        .testTarget(
            name: "ConsumptionPolicyTests",
            dependencies: ["AppStoreAPI", "ConsumptionPolicy"]
        ),
        .testTarget(
            name: "RetentionRulesTests",
            dependencies: [
                "TestSupport", "AppStoreAPI", "AuditTrail", "RetentionRules", "ReceiptCore", "RuleFiles",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            exclude: ["Goldens"]
        ),
        .testTarget(
            name: "NotificationReceiverTests",
            dependencies: [
                "TestSupport",
                "APITestSupport",
                "AppStoreAPI", "AppStoreClients", "RetryEngine", "AuditTrail", "AuditTrailSQLite", "NotificationReceiver", "RetentionRules", "ReceiptCore",
                "ReceiptTrust", "ReceiptSimulator", "ServiceTestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                // The connection handlers' HTTP parts, driven on an embedded channel.
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            exclude: ["Goldens"]
        ),
        .testTarget(
            name: "OutboundHTTPTests",
            dependencies: [
                "TestSupport",
                "AppStoreAPI", "OutboundHTTP",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .testTarget(
            name: "NotificationForwarderTests",
            dependencies: [
                "TestSupport",
                "AppStoreAPI", "AuditTrail", "AuditTrailSQLite", "NotificationForwarder", "NotificationReceiver", "RetryEngine", "UntrustedText",
                "ServiceTestSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            exclude: ["Goldens"]
        ),
        .testTarget(
            name: "ReceiptSimulatorTests",
            dependencies: [
                "TestSupport",
                "APITestSupport",
                "JSONWriting",
                "AppStoreAPI", "ReceiptRendering", "AppStoreClients", "RetryEngine", "AuditTrail", "NotificationReceiver", "ReceiptCore", "ReceiptTrust", "ReceiptSimulator", "ServiceTestSupport", "UntrustedText",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            exclude: ["Goldens"]
        ),
        .testTarget(
            name: "DoctorTests",
            dependencies: [
                "TestSupport",
                "AppStoreAPI", "AuditTrail", "Doctor", "NotificationReceiver", "ReceiptCore", "ReceiptSimulator", "RetryEngine", "ServiceTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            exclude: ["Goldens"]
        ),
        .testTarget(name: "TerminalUITests", dependencies: ["TerminalUI"]),
        .testTarget(name: "RetryEngineTests", dependencies: ["RetryEngine"]),
        .testTarget(
            name: "AppStoreAPITests",
            dependencies: [
                "TestSupport",
                "APITestSupport",
                "AppStoreAPI",
                "ReceiptCore",
                "RetryEngine",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            exclude: ["Goldens"]
        ),
        .testTarget(
            name: "ReceiptDemoTests",
            dependencies: [
                "LocalFiles",
                "ReceiptCore",
                "ReceiptDemo",
            ]
        ),
        .testTarget(
            name: "LocalFilesTests",
            dependencies: [
                "TestSupport",
                "LocalFiles",
                "ReceiptCore",
            ],
            exclude: ["Goldens"]
        ),
        .testTarget(
            name: "CustomerTimelineTests",
            dependencies: [
                "TestSupport",
                "JSONWriting",
                "AppStoreAPI",
                "AuditTrail",
                "CustomerTimeline",
                "ReceiptCore",
                "ReceiptTrust",
                "ReceiptRendering",
            ],
            exclude: ["Goldens"]
        ),
        .testTarget(
            name: "ReceiptRenderingTests",
            dependencies: ["TestSupport", "JSONWriting", "AppStoreAPI", 
                "LocalFiles",
                "ReceiptCore",
                "ReceiptTrust",
                "ReceiptDemo",
                "ReceiptRendering",
                "UntrustedText",
            ],
            exclude: ["Goldens"]
        ),
        .testTarget(
            name: "OnlineRevocationTests",
            dependencies: [
                "TestSupport",
                "AppStoreClients",
                "AuditTrail",
                "NotificationReceiver",
                "OnlineRevocation",
                "ReceiptCore",
                "ReceiptTrust",
                "ReceiptRendering",
                "ReceiptSimulator",
                "RetryEngine",
                "ServiceTestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            exclude: ["Goldens"]
        ),
        // OCSP over HTTP end to end (the only tests that can meet swift-certificates' 10 s
        // wall-clock watchdog); the rest ask the responder in process.
        .testTarget(
            name: "OCSPEndToEndTests",
            dependencies: [
                "TestSupport",
                "AppStoreClients",
                "AuditTrail",
                "NotificationReceiver",
                "OnlineRevocation",
                "ReceiptCore",
                "ReceiptTrust",
                "ReceiptSimulator",
                "ServiceTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "AuditTrailSQLiteTests",
            dependencies: [
                "TestSupport",
                "AppStoreAPI", "AppStoreClients", "AuditTrail", "AuditTrailSQLite", "ReceiptCore", "ReceiptSimulator", "ReceiptWatch", "RetryEngine",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            exclude: ["Goldens"]
        ),
        .testTarget(
            name: "ReceiptWatchTests",
            dependencies: [
                "TestSupport",
                "AppStoreClients", "AuditTrail", "AuditTrailSQLite", "ReceiptCore", "ReceiptSimulator", "ReceiptWatch", "RetryEngine",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .testTarget(name: "UntrustedTextTests", dependencies: ["UntrustedText"]),
        .testTarget(name: "PlainWordsTests", dependencies: ["PlainWords", "TestSupport"], exclude: ["Goldens"]),
        .testTarget(
            name: "DashboardTests",
            dependencies: ["TestSupport", "JSONWriting", "AuditTrail", "CustomerTimeline", "LocalFiles", "ReceiptDemo", "AppStoreAPI", "ReceiptRendering", "Dashboard", "TerminalUI", "ReceiptCore", "ReceiptTrust"],
            exclude: ["Goldens", "Snapshots"]
        ),
        .testTarget(
            name: "DashboardLiveTests",
            dependencies: [
                "TestSupport",
                "APITestSupport",
                "LocalFiles",
                "ReceiptDemo", "AppStoreAPI", "AppStoreClients", "AuditTrail", "AuditTrailSQLite", "CustomerSearch", "CustomerTimeline", "Dashboard", "DashboardLive", "OnlineRevocation", "ReceiptCore", "ReceiptTrust", "RetryEngine", "ReceiptSimulator", "TerminalUI", "ReceiptWatch", "UntrustedText",
            ],
            exclude: ["Goldens"]
        ),
        .testTarget(
            name: "CommandOptionsTests",
            dependencies: [
                "AppStoreAPI",
                "CommandOptions",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(
            name: "ReceiptDashCLITests",
            dependencies: [
                "TestSupport",
                "AppStoreAPI", "CommandOptions", "receiptdash", "AppStoreClients", "AuditTrail", "AuditTrailSQLite", "NotificationReceiver", "ReceiptCore", "ReceiptSimulator", "ServiceTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            // Read from the source tree (#filePath), like the dashboard's snapshots.
            exclude: ["Goldens"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
