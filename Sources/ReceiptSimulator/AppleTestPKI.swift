import Crypto
import Foundation
import ReceiptCore
import SwiftASN1
import X509

/// Why the simulator could not start or sign. Equality compares only the ``Code``.
public struct ServerAPISimulatorError: CodedError {
    public enum Code: String, CaseIterable, CodedErrorCode {
        /// The test PKI could not be made.
        case pki
        /// A payload could not be encoded or signed.
        case signing
        /// The `--api-data` file is not the expected JSON.
        case invalidData = "invalid-data"
        /// The `--api-key-file` is not a P-256 key in PEM.
        case invalidKey = "invalid-key"
        /// An order for notifications (`/control/consumption-request`) the simulator cannot make.
        case invalidOrder = "invalid-order"
    }

    public let code: Code
    public let reason: String

    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }
}

/// A throwaway PKI shaped like Apple's StoreKit signing PKI, made at start: a root, an
/// intermediate carrying the WWDR marker OID 1.2.840.113635.100.6.2.1 and a leaf carrying the
/// receipt-signing marker 1.2.840.113635.100.6.11.1, all P-256, valid 2000…2100 so payloads
/// with old `signedDate`s verify. It signs JWS as Apple does (ES256, `x5c` leaf →
/// intermediate → root). Its root is trusted only where a user adds it (`--root-ca`).
public struct AppleTestPKI: Sendable {
    public let root: Certificate
    public let intermediate: Certificate
    public let leaf: Certificate
    /// DER of each certificate.
    public let rootDER: [UInt8]
    public let intermediateDER: [UInt8]
    public let leafDER: [UInt8]
    let leafKey: P256.Signing.PrivateKey
    /// The root's and the intermediate's keys, which sign OCSP answers about the intermediate
    /// and the leaf (``OCSPResponder``); nil for a PKI read from a folder.
    let authorityKeys: (root: P256.Signing.PrivateKey, intermediate: P256.Signing.PrivateKey)?
    /// The OCSP responder URL the leaf and the intermediate carry (Authority Information
    /// Access), when one was given.
    public let ocspURL: String?
    /// The JWS header every token is signed with (`alg` and `x5c`), base64url, made once.
    private let headerSegment: String

    static let leafMarker: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 11, 1]
    static let intermediateMarker: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 1]
    /// The validity of every certificate: 2000-01-01 … 2100-01-01.
    public static let validity = (Date(timeIntervalSince1970: 946_684_800), Date(timeIntervalSince1970: 4_102_444_800))

    /// Fresh keys and certificates.
    /// - Parameter ocspURL: an OCSP responder's URL for the leaf's and the intermediate's
    ///   Authority Information Access extension (``OCSPResponderServer/url``), so online checks
    ///   ask it; nil: no OCSP, as before.
    public init(ocspURL: String? = nil) throws(ServerAPISimulatorError) {
        let rootKey = P256.Signing.PrivateKey()
        let intermediateKey = P256.Signing.PrivateKey()
        leafKey = P256.Signing.PrivateKey()
        authorityKeys = (rootKey, intermediateKey)
        self.ocspURL = ocspURL
        let access = ocspURL.map {
            AuthorityInformationAccess([.init(method: .ocspServer, location: .uniformResourceIdentifier($0))])
        }
        do {
            let rootName = try Self.name("ReceiptDash Simulator Root CA - G3 (NOT APPLE)", ou: "Test Certification Authority")
            let intermediateName = try Self.name("ReceiptDash Simulator WWDR Intermediate (NOT APPLE)", ou: "G6")
            let leafName = try Self.name("ReceiptDash Simulator StoreKit Signing (NOT APPLE)")
            let serial = { Certificate.SerialNumber(bytes: [0x01] + (0..<8).map { _ in UInt8.random(in: 0...255) }) }
            root = try Certificate(
                version: .v3, serialNumber: serial(), publicKey: .init(rootKey.publicKey), notValidBefore: Self.validity.0,
                notValidAfter: Self.validity.1, issuer: rootName, subject: rootName, signatureAlgorithm: .ecdsaWithSHA256,
                extensions: try Certificate.Extensions {
                    Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                    Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                }, issuerPrivateKey: .init(rootKey))
            intermediate = try Certificate(
                version: .v3, serialNumber: serial(), publicKey: .init(intermediateKey.publicKey), notValidBefore: Self.validity.0,
                notValidAfter: Self.validity.1, issuer: rootName, subject: intermediateName, signatureAlgorithm: .ecdsaWithSHA256,
                extensions: try Certificate.Extensions {
                    Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                    Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                    Certificate.Extension(oid: Self.intermediateMarker, critical: false, value: [0x05, 0x00])
                    if let access { access }
                }, issuerPrivateKey: .init(rootKey))
            leaf = try Certificate(
                version: .v3, serialNumber: serial(), publicKey: .init(leafKey.publicKey), notValidBefore: Self.validity.0,
                notValidAfter: Self.validity.1, issuer: intermediateName, subject: leafName, signatureAlgorithm: .ecdsaWithSHA256,
                extensions: try Certificate.Extensions {
                    Critical(BasicConstraints.notCertificateAuthority)
                    Critical(KeyUsage(digitalSignature: true))
                    Certificate.Extension(oid: Self.leafMarker, critical: false, value: [0x05, 0x00])
                    if let access { access }
                }, issuerPrivateKey: .init(intermediateKey))
            rootDER = try Self.der(root)
            intermediateDER = try Self.der(intermediate)
            leafDER = try Self.der(leaf)
        } catch {
            throw ServerAPISimulatorError(.pki, "the simulator's test PKI could not be made: \(error)")
        }
        headerSegment = Self.headerSegment([leafDER, intermediateDER, rootDER])
    }

    /// A PKI made earlier (``SimulatorPKIFolder``): the three certificates' DER and the leaf's key.
    init(rootDER: [UInt8], intermediateDER: [UInt8], leafDER: [UInt8], leafKey: P256.Signing.PrivateKey) throws {
        root = try Certificate(derEncoded: rootDER)
        intermediate = try Certificate(derEncoded: intermediateDER)
        leaf = try Certificate(derEncoded: leafDER)
        self.rootDER = rootDER
        self.intermediateDER = intermediateDER
        self.leafDER = leafDER
        self.leafKey = leafKey
        authorityKeys = nil
        ocspURL = nil
        headerSegment = Self.headerSegment([leafDER, intermediateDER, rootDER])
    }

    /// `{"alg":"ES256","x5c":[…]}` as base64url.
    private static func headerSegment(_ chain: [[UInt8]]) -> String {
        let x5c = "[" + chain.map { "\"\(Data($0).base64EncodedString())\"" }.joined(separator: ",") + "]"
        return Base64Text.encodeURL(Array((#"{"alg":"ES256","x5c":"# + x5c + "}").utf8))
    }

    /// The leaf's signing key as PEM (kept by ``SimulatorPKIFolder``, mode 0600).
    var leafKeyPEM: String { leafKey.pemRepresentation }

    private static func name(_ commonName: String, ou: String? = nil) throws -> DistinguishedName {
        try DistinguishedName {
            CountryName("US")
            OrganizationName("ReceiptDash Simulator")
            if let ou { OrganizationalUnitName(ou) }
            CommonName(commonName)
        }
    }

    private static func der(_ certificate: Certificate) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return serializer.serializedBytes
    }

    /// The root as PEM (`-----BEGIN CERTIFICATE-----`).
    public var rootPEM: String {
        "-----BEGIN CERTIFICATE-----\n" + Data(rootDER).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
            + "\n-----END CERTIFICATE-----\n"
    }

    /// A compact JWS over `payload` (JSON bytes, signed as given): header
    /// `{"alg":"ES256","x5c":[leaf, intermediate, root]}`, signature raw `r ‖ s`.
    public func signJWS(payload: Data) throws(ServerAPISimulatorError) -> String {
        let signingInput = headerSegment + "." + Base64Text.encodeURL(payload)
        do {
            let signature = try leafKey.signature(for: Data(signingInput.utf8))
            return signingInput + "." + Base64Text.encodeURL(signature.rawRepresentation)
        } catch {
            throw ServerAPISimulatorError(.signing, "the payload could not be signed")
        }
    }

    /// A compact JWS over `payload` encoded as compact JSON with sorted keys.
    public func signJWS(payload: JSONValue) throws(ServerAPISimulatorError) -> String {
        try signJWS(payload: Data(payload.compactJSON.utf8))
    }

    /// A compact JWS over a Foundation JSON object (`JSONSerialization`, sorted keys).
    public func signJWS(payload: [String: Any]) throws(ServerAPISimulatorError) -> String {
        guard JSONSerialization.isValidJSONObject(payload),
            let data = try? JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys, .withoutEscapingSlashes])
        else { throw ServerAPISimulatorError(.signing, "the payload is not a JSON object") }
        return try signJWS(payload: data)
    }

}
