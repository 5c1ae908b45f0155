import Foundation
import Testing
@testable import ReceiptCore

/// The DER fast paths and the swift-asn1 path must agree exactly.
@Suite struct FastPathTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("../shared/corpus/pkcs7").standardizedFileURL

    func compare(_ bytes: [UInt8], _ name: String) {
        var slow = ReceiptDecoder()
        slow.fastPaths = false
        let a = Result { try ReceiptDecoder().decode(bytes) }
        let b = Result { try slow.decode(bytes) }
        switch (a, b) {
        case (.success(let x), .success(let y)): #expect(x == y, "\(name): fast and slow paths differ")
        case (.failure, .failure): break
        default: Issue.record("\(name): one path decoded, the other did not: \(a) / \(b)")
        }
    }

    @Test(arguments: ["sandbox-2023.der", "xcode.der"])
    func fixtures(name: String) throws {
        compare(try Fixture.bytes(name), name)
    }

    @Test(.enabled(if: FileManager.default.fileExists(atPath: corpus.path)))
    func everyCorpusReceipt() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.corpus.path).filter { $0.hasSuffix(".der") }
        #expect(names.count >= 30)
        for name in names {
            compare([UInt8](try Data(contentsOf: Self.corpus.appendingPathComponent(name))), name)
        }
    }
}
