import Foundation

/// Unsigned PKCS#7 receipts made up on the spot, each with its own bundle id: enough for the
/// simulator to decode and answer, for load tests and benchmarks that need many distinct
/// receipts without keeping them all in memory. Never genuine: they carry no certificates.
public enum SyntheticReceipt {
    /// Base64 of a receipt with bundle id `com.example.app<n>` in `environment`
    /// (`Production` or `ProductionSandbox`).
    public static func base64(_ n: Int, environment: String = "Production") -> String {
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
