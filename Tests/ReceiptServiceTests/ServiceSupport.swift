import Foundation
import ReceiptCore
@testable import ReceiptService

enum ServiceFixture {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("ReceiptCoreTests/Fixtures")

    /// Base64 receipt data of a fixture (binary ones encoded).
    static func receiptData(_ name: String) throws -> String {
        let data = try Data(contentsOf: folder.appendingPathComponent(name))
        if name.hasSuffix(".der") { return data.base64EncodedString() }
        return Data(try Base64Text.decode([UInt8](data))).base64EncodedString()
    }

    /// A minimal PKCS#7 receipt (no signature) whose bundle id makes it distinct: enough for the
    /// simulator to decode and answer, and for batches without duplicates.
    static func syntheticReceipt(_ n: Int, environment: String = "ProductionSandbox") -> String {
        func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
            let c = content.count
            if c < 0x80 { return [tag, UInt8(c)] + content }
            if c < 0x100 { return [tag, 0x81, UInt8(c)] + content }
            return [tag, 0x82, UInt8(c >> 8), UInt8(c & 0xFF)] + content
        }
        func attribute(_ type: UInt8, _ value: [UInt8]) -> [UInt8] {
            tlv(0x30, [0x02, 0x01, type, 0x02, 0x01, 0x01] + tlv(0x04, value))
        }
        let payload = tlv(
            0x31,
            attribute(0, tlv(0x0C, Array(environment.utf8))) + attribute(2, tlv(0x0C, Array("com.example.app\(n)".utf8)))
                + attribute(3, tlv(0x0C, Array("1".utf8))))
        let signedDataOID: [UInt8] = [0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x02]
        let dataOID: [UInt8] = [0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x01]
        let content = tlv(0x30, dataOID + tlv(0xA0, tlv(0x04, payload)))
        let signed = tlv(0x30, [0x02, 0x01, 0x01] + tlv(0x31, []) + content + tlv(0x31, []))
        return Data(tlv(0x30, signedDataOID + tlv(0xA0, signed))).base64EncodedString()
    }
}

/// Collects events from concurrent callbacks.
final class EventLog: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [BatchEvent] = []

    func add(_ event: BatchEvent) {
        lock.lock()
        storage.append(event)
        lock.unlock()
    }

    var events: [BatchEvent] {
        lock.lock()
        defer { lock.unlock() }
        return storage
    }
}

/// Fast retries for tests.
let quickRetry = RetryPolicy(maximumRetries: 4, baseDelay: 0.01, maximumDelay: 0.05, totalBudget: 10, jitter: 0.2)
