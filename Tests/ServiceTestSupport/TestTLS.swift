import Crypto
import Foundation
import SwiftASN1
import X509

/// A throwaway CA and a certificate for 127.0.0.1 it signed, valid for an hour either side of
/// now: for the tests that serve TLS on loopback.
package enum TestTLS {
    package static func make(caName: String = "receiptdash test CA") throws
        -> (ca: Certificate, leaf: Certificate, leafKey: P256.Signing.PrivateKey)
    {
        let caKey = P256.Signing.PrivateKey()
        let leafKey = P256.Signing.PrivateKey()
        let issuer = try DistinguishedName { CommonName(caName) }
        let now = Date()
        let ca = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(caKey.publicKey), notValidBefore: now - 3600,
            notValidAfter: now + 3600, issuer: issuer, subject: issuer, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try .init { Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil)) },
            issuerPrivateKey: .init(caKey))
        let leaf = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(leafKey.publicKey), notValidBefore: now - 3600,
            notValidAfter: now + 3600, issuer: issuer, subject: try DistinguishedName { CommonName("127.0.0.1") },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try .init { SubjectAlternativeNames([.ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1]))]) },
            issuerPrivateKey: .init(caKey))
        return (ca, leaf, leafKey)
    }

    package static func der(_ certificate: Certificate) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return serializer.serializedBytes
    }
}
