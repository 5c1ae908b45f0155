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

    /// The demo inputs, sorted by name. Empty when the resource bundle is missing.
    public static func items() -> [Item] {
        guard let folder = Bundle.module.url(forResource: "Demo", withExtension: nil),
            let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path)
        else { return [] }
        return names.sorted().compactMap { name in
            guard !name.hasPrefix("."),
                let data = FileManager.default.contents(atPath: folder.appendingPathComponent(name).path)
            else { return nil }
            return Item(name: name, bytes: [UInt8](data))
        }
    }
}
