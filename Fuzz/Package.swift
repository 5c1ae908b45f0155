// swift-tools-version:6.0
// libFuzzer targets for receiptdash. A package of its own so that the main `swift build`,
// `swift test` and CI never build them. See README.md: `./run.sh TARGET SECONDS`.
import PackageDescription

let core: Target.Dependency = .product(name: "ReceiptCore", package: "receiptdash")
let trust: Target.Dependency = .product(name: "ReceiptTrust", package: "receiptdash")
let terminal: Target.Dependency = .product(name: "TerminalUI", package: "receiptdash")
let rendering: Target.Dependency = .product(name: "ReceiptRendering", package: "receiptdash")
let api: Target.Dependency = .product(name: "AppStoreAPI", package: "receiptdash")
let receiver: Target.Dependency = .product(name: "NotificationReceiver", package: "receiptdash")
let audit: Target.Dependency = .product(name: "AuditTrail", package: "receiptdash")

let package = Package(
    name: "receiptdash-fuzz",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(name: "receiptdash", path: ".."),
        .package(url: "https://github.com/apple/swift-log.git", exact: "1.16.2"),
    ],
    targets: [
        // Input sniffing and every decoder, through `ReceiptDecoder().decode(_:)`, and what
        // decodes rendered as `inspect` shows it.
        .executableTarget(name: "fuzz-decode", dependencies: [core, rendering], path: "Sources/FuzzDecode"),
        // PKCS#7 container and BER structure reading (fast DER scan against swift-asn1).
        .executableTarget(name: "fuzz-pkcs7", dependencies: [core], path: "Sources/FuzzPKCS7"),
        // The OpenStep plist reader of iOS 6 transaction receipts.
        .executableTarget(name: "fuzz-plist", dependencies: [core], path: "Sources/FuzzPlist"),
        // The JSON reader.
        .executableTarget(name: "fuzz-json", dependencies: [core], path: "Sources/FuzzJSON"),
        // JWS (and any other signed input) decoded, then judged by the trust evaluator.
        .executableTarget(name: "fuzz-jws-trust", dependencies: [core, trust], path: "Sources/FuzzJWSTrust"),
        // The notification receiver's decision: body bytes → status and stored row (in memory).
        .executableTarget(
            name: "fuzz-receiver", dependencies: [core, trust, api, receiver, audit, .product(name: "Logging", package: "swift-log")],
            path: "Sources/FuzzReceiver"),
        // The retention image check: PNG signature, IHDR and chunks before the image data.
        .executableTarget(name: "fuzz-png", dependencies: [api], path: "Sources/FuzzPNG"),
        // The terminal escape-sequence / bracketed-paste parser.
        .executableTarget(name: "fuzz-keys", dependencies: [terminal], path: "Sources/FuzzKeys"),
    ],
    swiftLanguageModes: [.v6]
)
