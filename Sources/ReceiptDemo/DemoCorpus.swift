import Foundation
import LocalFiles
import ReceiptCore

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

    /// The demo inputs, sorted by name: compiled into the binary (``BundledDemo``), so a
    /// copied binary has them wherever it runs.
    public static func items() -> [Item] {
        BundledDemo.files.map { Item(name: $0.name, bytes: [UInt8](Data(base64Encoded: $0.base64, options: .ignoreUnknownCharacters) ?? Data())) }
    }
}

extension InputFiles {
    /// The inputs of the bundled demo, named `demo/NAME`.
    public static func demo() -> [LoadedInput] {
        DemoCorpus.items().map { LoadedInput(source: "demo/\($0.name)", result: .success($0.bytes)) }
    }
}
