import Foundation
import ReceiptCore
import ReceiptSimulator

package enum NotificationFixture {
    package static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/notifications")

    /// The genuine Apple-signed V2 notifications copied from ../shared/corpus/jws.
    package static func names() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".jws") }.sorted()
    }

    package static func token(_ name: String) throws -> String {
        String(decoding: try Data(contentsOf: folder.appendingPathComponent(name)), as: UTF8.self).filter { !$0.isWhitespace }
    }

    /// `{"signedPayload": "<token>"}`, as Apple posts it.
    package static func body(token: String) -> [UInt8] {
        Array("{\"signedPayload\":\"\(token)\"}".utf8)
    }
}

/// Signs notifications with the simulator's Apple-shaped test PKI (a nested transaction too).
package struct TestNotifications {
    package let pki: AppleTestPKI

    /// - Parameter ocspURL: the OCSP responder its certificates name (online checks ask it); nil for none.
    package init(ocspURL: String? = nil) throws {
        pki = try AppleTestPKI(ocspURL: ocspURL)
    }

    package func body(uuid: String, type: String = "DID_RENEW", bundleID: String = "com.example.receiver", signedDate: Date = Date(timeIntervalSince1970: 1_790_000_000)) throws -> [UInt8] {
        NotificationFixture.body(token: try token(uuid: uuid, type: type, bundleID: bundleID, signedDate: signedDate))
    }

    /// The signed notification alone (Notification History's `signedPayload`).
    package func token(uuid: String, type: String = "DID_RENEW", bundleID: String = "com.example.receiver", signedDate: Date = Date(timeIntervalSince1970: 1_790_000_000)) throws -> String {
        let millis = Int64(signedDate.timeIntervalSince1970 * 1000)
        let transaction = try pki.signJWS(payload: [
            "transactionId": "7100000000000001", "originalTransactionId": "7100000000000000", "productId": "pro.monthly",
            "bundleId": bundleID, "environment": "Sandbox", "purchaseDate": millis, "signedDate": millis,
            "type": "Auto-Renewable Subscription",
        ])
        return try pki.signJWS(payload: [
            "notificationType": type, "notificationUUID": uuid, "version": "2.0", "signedDate": millis,
            "data": ["bundleId": bundleID, "environment": "Sandbox", "appAppleId": 42, "signedTransactionInfo": transaction, "status": 1] as [String: Any],
        ])
    }
}
