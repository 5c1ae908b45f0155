import Foundation
import ReceiptCore

/// What a trust evaluation may use besides the input itself.
public struct TrustOptions: Sendable {
    /// "Now", for the early warning about certificates that expire soon. Validity itself is
    /// judged at the receipt's signing time, never at "now".
    public var now: Date
    /// Certificates expiring within this many days of ``now`` are listed as a warning.
    public var expiryWarningDays: Int
    /// The user's own Xcode-exported StoreKit certificate (DER), to check Xcode test receipts.
    public var storeKitCertificate: [UInt8]?
    /// The device identifier, to check a receipt's SHA-1 device hash (field 5).
    public var deviceIdentifier: DeviceIdentifier?
    /// Online checks (`--online-checks`): a JWS chain is then judged at ``now`` and OCSP asks
    /// about its leaf and intermediate (`OnlineRevocation`'s `OnlineChecks`). Nil: nothing goes
    /// to the network.
    public var onlineChecks: (any RevocationChecking)?

    public init(
        now: Date = Date(), expiryWarningDays: Int = 90, storeKitCertificate: [UInt8]? = nil,
        deviceIdentifier: DeviceIdentifier? = nil, onlineChecks: (any RevocationChecking)? = nil
    ) {
        self.now = now
        self.expiryWarningDays = expiryWarningDays
        self.storeKitCertificate = storeKitCertificate
        self.deviceIdentifier = deviceIdentifier
        self.onlineChecks = onlineChecks
    }
}

/// The identifier a device hash is computed with: the iOS `identifierForVendor` UUID (16
/// bytes), the macOS primary network interface's MAC address (6 bytes), or raw bytes.
public struct DeviceIdentifier: Sendable, Hashable {
    public var bytes: [UInt8]
    /// How the identifier was given, for reports ("UUID", "MAC address", "raw bytes").
    public var kind: String

    public init(bytes: [UInt8], kind: String = "raw bytes") {
        self.bytes = bytes
        self.kind = kind
    }

    /// Parses `956328D9-CC6A-47F4-BE40-6953FB0AB6C7` (UUID), `6c:40:08:b5:94:5e` or
    /// `6c-40-08-b5-94-5e` (MAC address), `hex:…` or `base64:…` (raw bytes).
    public init?(parsing text: String) {
        let t = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if let uuid = UUID(uuidString: t) {
            let u = uuid.uuid
            self.init(
                bytes: [
                    u.0, u.1, u.2, u.3, u.4, u.5, u.6, u.7, u.8, u.9, u.10, u.11, u.12, u.13, u.14, u.15,
                ], kind: "UUID")
            return
        }
        let macParts = t.split(whereSeparator: { $0 == ":" || $0 == "-" })
        if macParts.count == 6, macParts.allSatisfy({ $0.count == 2 }) {
            let bytes = macParts.compactMap { UInt8($0, radix: 16) }
            guard bytes.count == 6 else { return nil }
            self.init(bytes: bytes, kind: "MAC address")
            return
        }
        if t.hasPrefix("hex:") {
            let hex = Array(t.dropFirst(4).utf8)
            guard hex.count % 2 == 0, !hex.isEmpty else { return nil }
            var bytes: [UInt8] = []
            for i in stride(from: 0, to: hex.count, by: 2) {
                guard let b = UInt8(String(decoding: hex[i..<i + 2], as: UTF8.self), radix: 16) else { return nil }
                bytes.append(b)
            }
            self.init(bytes: bytes)
            return
        }
        if t.hasPrefix("base64:"), let bytes = try? Base64Text.decode(Array(t.dropFirst(7).utf8)) {
            self.init(bytes: bytes)
            return
        }
        return nil
    }
}
