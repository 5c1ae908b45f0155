import Crypto
import Foundation
import SwiftASN1
import X509

/// The root certificates a chain must end in.
///
/// ``apple`` holds the bundled Apple roots: Apple Inc. Root CA (app receipts, RSA),
/// Apple Root CA - G2 and Apple Root CA - G3 (StoreKit 2 JWS, ECDSA). Intermediates are never
/// pinned: any intermediate that one of these roots signed is accepted, so a certificate
/// rotation at Apple does not break verification.
public struct TrustAnchors: Sendable {
    public private(set) var roots: [Certificate]
    /// DER of each root, in the same order.
    private(set) var rootDERs: [[UInt8]]
    /// The roots as the verifier's store.
    private(set) var store: CertificateStore
    /// SHA-256 over every root's DER and whether it was added for test data: part of
    /// ``TrustCache``'s keys, so one cache shared by evaluators with different anchors never
    /// answers for the wrong roots (nor words a test root as Apple's).
    private(set) var fingerprint: Data
    /// DER of the roots added for test data (``addingTestRoots(_:)``): a chain that ends in one
    /// is judged `test`, never `valid`.
    private(set) var testRootDERs: Set<[UInt8]> = []

    public init(roots: [Certificate]) {
        self.roots = roots
        rootDERs = roots.map { root in
            var serializer = DER.Serializer()
            return (try? serializer.serialize(root)).map { serializer.serializedBytes } ?? []
        }
        store = CertificateStore(roots)
        var hasher = SHA256()
        for der in rootDERs {
            hasher.update(data: withUnsafeBytes(of: UInt32(der.count).bigEndian) { Array($0) })
            hasher.update(data: der)
        }
        fingerprint = Data(hasher.finalize())
    }

    private mutating func fingerprintTestRoots() {
        var hasher = SHA256()
        hasher.update(data: fingerprint)
        hasher.update(data: rootDERs.map { testRootDERs.contains($0) ? 1 : 0 } as [UInt8])
        fingerprint = Data(hasher.finalize())
    }

    /// Reads DER certificates.
    public init(derCertificates: [[UInt8]]) throws {
        self.init(roots: try derCertificates.map { try Certificate(derEncoded: $0) })
    }

    /// These anchors plus roots for test data (`--root-ca`: the API simulator's root, a staging
    /// PKI). Chains to them are checked exactly as Apple's are, and judged `test`.
    public func addingTestRoots(_ derCertificates: [[UInt8]]) throws -> TrustAnchors {
        let added = try derCertificates.map { try Certificate(derEncoded: $0) }
        var anchors = TrustAnchors(roots: roots + added)
        anchors.testRootDERs = testRootDERs.union(derCertificates)
        anchors.fingerprintTestRoots()
        return anchors
    }

    /// Whether `der` is a root added for test data.
    func isTestRoot(_ der: [UInt8]) -> Bool { testRootDERs.contains(der) }

    /// The bundled Apple roots (Apple Inc. Root, G2, G3), compiled in.
    public static let apple: TrustAnchors = {
        let roots = BundledResources.roots.compactMap { try? Certificate(derEncoded: BundledResources.bytes($0.base64)) }
        return TrustAnchors(roots: roots)
    }()
}

/// Apple's marker extensions.
enum AppleOID {
    /// On the receipt- and JWS-signing leaf certificates.
    static let receiptSigningLeaf: ASN1ObjectIdentifierString = "1.2.840.113635.100.6.11.1"
    /// On the Worldwide Developer Relations intermediates.
    static let wwdrIntermediate: ASN1ObjectIdentifierString = "1.2.840.113635.100.6.2.1"
    static let leafMarker: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 11, 1]
    static let intermediateMarker: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 1]
}

typealias ASN1ObjectIdentifierString = String

extension Certificate {
    /// True when the certificate carries the extension with the dotted OID.
    func hasExtension(_ dotted: String) -> Bool {
        extensions.contains { $0.oid.description == dotted }
    }

    /// True for a CA certificate (basicConstraints cA = TRUE).
    var isCertificateAuthority: Bool {
        guard let constraints = try? extensions.basicConstraints else { return false }
        if case .isCertificateAuthority = constraints { return true }
        return false
    }

    var isSelfIssued: Bool { subject == issuer }

    /// The subject's common name, or the whole subject.
    var displayName: String {
        CertificateInfo.commonName(subject) ?? subject.text
    }

    /// The serial number as colon-separated hex bytes, as openssl prints it.
    var serialText: String {
        Hex.encode(serialNumber.bytes, separator: ":")
    }

    var validityText: String { ValidityDates(self).text }
}

extension BundledResources {
    /// A compiled-in file's bytes (its base64 is written in lines).
    static func bytes(_ base64: String) -> [UInt8] {
        [UInt8](Data(base64Encoded: base64, options: .ignoreUnknownCharacters) ?? Data())
    }
}
