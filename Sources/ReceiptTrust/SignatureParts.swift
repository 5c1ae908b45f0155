import Foundation

/// The name of a PKCS#7 digest algorithm: `sha1`, `sha256`, `sha384`, `sha512`, or the OID
/// itself when it is none of those.
public enum DigestName {
    public static func of(_ oid: String) -> String {
        switch oid {
        case "1.3.14.3.2.26": "sha1"
        case "2.16.840.1.101.3.4.2.1": "sha256"
        case "2.16.840.1.101.3.4.2.2": "sha384"
        case "2.16.840.1.101.3.4.2.3": "sha512"
        default: oid
        }
    }
}

/// The `signature` blob of an iOS 6 transaction receipt: a version byte, a 128- or 256-byte
/// RSA signature, a 4-byte big-endian certificate length, and the DER certificate.
public struct LegacySignatureBlob: Sendable, Hashable {
    public var version: UInt8
    public var signature: [UInt8]
    public var certificate: [UInt8]

    public init?(_ blob: [UInt8]) {
        for signatureLength in [256, 128] {
            let lengthAt = 1 + signatureLength
            guard blob.count >= lengthAt + 4 else { continue }
            let length =
                Int(blob[lengthAt]) << 24 | Int(blob[lengthAt + 1]) << 16 | Int(blob[lengthAt + 2]) << 8
                | Int(blob[lengthAt + 3])
            let start = lengthAt + 4
            guard length > 0, start + length == blob.count, blob[start] == 0x30 else { continue }
            version = blob[0]
            signature = Array(blob[1..<lengthAt])
            certificate = Array(blob[start...])
            return
        }
        return nil
    }
}
