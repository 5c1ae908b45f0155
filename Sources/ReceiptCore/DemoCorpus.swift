import Foundation

/// The demo receipts bundled with the package, so a new user sees real data at once:
/// a production subscription receipt, a sandbox receipt with an intro offer, an Xcode
/// StoreKit-testing receipt, an iOS 6 transaction receipt, a verifyReceipt response, and a
/// V2 notification. All come from public test fixtures (see `README.md`).
public enum DemoCorpus {
    /// A bundled demo input.
    public struct Item: Sendable {
        public var name: String
        public var bytes: [UInt8]
    }

    /// The demo inputs, sorted by name: compiled into the binary (``BundledResources``), so a
    /// copied binary has them wherever it runs.
    public static func items() -> [Item] {
        BundledResources.demo.map { Item(name: $0.name, bytes: BundledResources.bytes($0.base64)) }
    }
}

extension BundledResources {
    /// A compiled-in file's bytes (its base64 is written in lines).
    static func bytes(_ base64: String) -> [UInt8] {
        [UInt8](Data(base64Encoded: base64, options: .ignoreUnknownCharacters) ?? Data())
    }
}
