import Crypto
import Foundation
import SwiftASN1
import X509

/// The tests' one certificate builder: roots, Apple-shaped intermediates and leaves (Apple's
/// marker extensions, its key usages) for the trust tests' own hierarchies, and a throwaway CA
/// with a certificate for 127.0.0.1 for the tests that serve TLS on loopback. Every certificate
/// is signed with its issuer key's default algorithm (SHA-256 with RSA, ECDSA with SHA-256).
package enum TestPKI {
    package static let leafMarker: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 11, 1]
    package static let wwdrMarker: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 1]

    /// Apple's marker extensions carry a DER NULL.
    package static func marker(_ oid: ASN1ObjectIdentifier) -> Certificate.Extension {
        Certificate.Extension(oid: oid, critical: false, value: [0x05, 0x00])
    }

    package static func name(_ commonName: String, ou: String? = nil, organization: String = "ReceiptDash Tests") throws
        -> DistinguishedName
    {
        try DistinguishedName {
            CountryName("US")
            OrganizationName(organization)
            if let ou { OrganizationalUnitName(ou) }
            CommonName(commonName)
        }
    }

    package static func der(_ certificate: Certificate) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return serializer.serializedBytes
    }

    /// One v3 certificate for `publicKey`, signed by `issuerKey`.
    package static func certificate(
        serial: Certificate.SerialNumber, publicKey: Certificate.PublicKey, validity: (Date, Date),
        issuer: DistinguishedName, subject: DistinguishedName, extensions: Certificate.Extensions,
        issuerKey: Certificate.PrivateKey
    ) throws -> Certificate {
        try Certificate(
            version: .v3, serialNumber: serial, publicKey: publicKey, notValidBefore: validity.0, notValidAfter: validity.1,
            issuer: issuer, subject: subject, extensions: extensions, issuerPrivateKey: issuerKey)
    }

    /// A self-signed certificate for `key` (a root, or a decoy that claims to be one).
    package static func selfSigned(
        serial: Certificate.SerialNumber, key: Certificate.PrivateKey, name: DistinguishedName, validity: (Date, Date),
        extensions: Certificate.Extensions
    ) throws -> Certificate {
        try certificate(
            serial: serial, publicKey: key.publicKey, validity: validity, issuer: name, subject: name,
            extensions: extensions, issuerKey: key)
    }

    /// A root's: a CA without a path length bound, for certificates and CRLs.
    package static func rootExtensions() throws -> Certificate.Extensions {
        try Certificate.Extensions {
            Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
            Critical(KeyUsage(keyCertSign: true, cRLSign: true))
        }
    }

    /// A WWDR-like intermediate's: a CA of path length 0 with Apple's intermediate marker (or,
    /// with `ca` false, a certificate that may not issue).
    package static func intermediateExtensions(
        marker: Bool = true, ca: Bool = true, keyUsage: KeyUsage? = nil, extra: [Certificate.Extension] = []
    ) throws -> Certificate.Extensions {
        var extensions = try Certificate.Extensions {
            if ca {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
            } else {
                Critical(BasicConstraints.notCertificateAuthority)
            }
            Critical(keyUsage ?? (ca ? KeyUsage(keyCertSign: true, cRLSign: true) : KeyUsage(digitalSignature: true)))
            if marker { TestPKI.marker(wwdrMarker) }
        }
        for ext in extra { try extensions.append(ext) }
        return extensions
    }

    /// A signing leaf's: not a CA, digital signatures only, Apple's leaf marker.
    package static func leafExtensions(marker: Bool = true, extra: [Certificate.Extension] = []) throws -> Certificate.Extensions {
        var extensions = try Certificate.Extensions {
            Critical(BasicConstraints.notCertificateAuthority)
            Critical(KeyUsage(digitalSignature: true))
            if marker { TestPKI.marker(leafMarker) }
        }
        for ext in extra { try extensions.append(ext) }
        return extensions
    }

    /// A private-arc extension no policy knows, marked critical.
    package static let unknownCritical = Certificate.Extension(oid: [1, 2, 3, 4], critical: true, value: [0x05, 0x00])

    /// extendedKeyUsage codeSigning, marked critical, as on Xcode's StoreKit certificate.
    package static func criticalCodeSigning() throws -> Certificate.Extension {
        try Certificate.Extension(ExtendedKeyUsage([.codeSigning]), critical: true)
    }

    /// A throwaway CA and a certificate for 127.0.0.1 it signed, valid for an hour either side
    /// of now: for the tests that serve TLS on loopback.
    package static func tls(caName: String = "receiptdash test CA") throws
        -> (ca: Certificate, leaf: Certificate, leafKey: P256.Signing.PrivateKey)
    {
        let caKey = Certificate.PrivateKey(P256.Signing.PrivateKey())
        let leafKey = P256.Signing.PrivateKey()
        let issuer = try DistinguishedName { CommonName(caName) }
        let now = Date()
        let validity = (now - 3600, now + 3600)
        let ca = try selfSigned(
            serial: .init(), key: caKey, name: issuer, validity: validity,
            extensions: try .init { Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil)) })
        let leaf = try certificate(
            serial: .init(), publicKey: .init(leafKey.publicKey), validity: validity, issuer: issuer,
            subject: try DistinguishedName { CommonName("127.0.0.1") },
            extensions: try .init { SubjectAlternativeNames([.ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1]))]) },
            issuerKey: caKey)
        return (ca, leaf, leafKey)
    }
}
