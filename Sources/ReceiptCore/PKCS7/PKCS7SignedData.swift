import SwiftASN1

/// The parts of a PKCS#7 `SignedData` (RFC 2315) that a receipt check needs.
///
/// Parsed with swift-asn1's BER entry points because Apple's receipts are not DER: the
/// certificate SET is not sorted, Xcode StoreKit-testing receipts use indefinite lengths, and the
/// content may be a chunked OCTET STRING.
public struct PKCS7SignedData: Sendable, Hashable {
    /// OID of `id-signedData`.
    public static let signedDataOID = "1.2.840.113549.1.7.2"
    /// OID of `id-data`.
    public static let dataOID = "1.2.840.113549.1.7.1"

    /// One `SignerInfo`.
    public struct SignerInfo: Sendable, Hashable {
        public var version: Int64
        /// DER of the issuer `Name` of the signer's certificate.
        public var issuerDER: [UInt8]
        /// The signer certificate's serial number, as its INTEGER content bytes.
        public var serialNumber: [UInt8]
        public var digestAlgorithmOID: String
        /// DER of the signed attributes re-tagged as `SET OF` (what the signature covers when
        /// present); `nil` when the signature is over the content directly, as in App Store receipts.
        public var signedAttributesDER: [UInt8]?
        public var signatureAlgorithmOID: String
        public var signature: [UInt8]
    }

    public var version: Int64
    public var digestAlgorithmOIDs: [String]
    /// `eContentType`; `1.2.840.113549.1.7.1` for receipts.
    public var contentTypeOID: String
    /// The signed content: the receipt payload.
    public var content: [UInt8]
    /// DER of each certificate in the order the receipt lists them.
    public var certificates: [[UInt8]]
    public var signerInfos: [SignerInfo]
    /// True when the container used indefinite lengths (Xcode StoreKit testing does).
    public var usesIndefiniteLengths: Bool
}

extension PKCS7SignedData {
    /// Parses a PKCS#7 `ContentInfo` wrapping `SignedData`.
    public init(berEncoded bytes: [UInt8]) throws {
        try self.init(berEncoded: bytes, fastPath: true)
    }

    /// - Parameter fastPath: `false` forces the swift-asn1 path (tests compare the two).
    init(berEncoded bytes: [UInt8], fastPath: Bool) throws {
        if fastPath, let fast = try Self.scanDefiniteLength(bytes) {
            self = fast
            return
        }
        let root = try ASN1Reading.parse(bytes[...], what: "PKCS#7 container", code: .invalidPKCS7)
        func fail(_ message: String, _ node: ASN1Node? = nil) -> ReceiptDecodingError {
            let at = node.map { $0.encodedBytes.startIndex }
            return ReceiptDecodingError(.invalidPKCS7, at.map { "\(message) (at byte \($0))" } ?? message, offset: at)
        }
        var outer = try ASN1Reading.children(
            root, expecting: .sequence, what: "PKCS#7 ContentInfo", base: 0, code: .invalidPKCS7
        ).makeIterator()
        guard let typeNode = outer.next(), let type = ASN1Reading.oid(typeNode) else {
            throw fail("PKCS#7 ContentInfo has no content type")
        }
        guard type == Self.signedDataOID else {
            throw fail("PKCS#7 content type is \(type), not signedData (\(Self.signedDataOID))", typeNode)
        }
        guard let explicit = outer.next() else { throw fail("PKCS#7 ContentInfo has no content") }
        var explicitChildren = try ASN1Reading.children(
            explicit, expecting: ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific),
            what: "PKCS#7 [0] content", base: 0, code: .invalidPKCS7
        ).makeIterator()
        guard let signedDataNode = explicitChildren.next() else { throw fail("PKCS#7 [0] content is empty", explicit) }
        var fields = try ASN1Reading.children(
            signedDataNode, expecting: .sequence, what: "SignedData", base: 0, code: .invalidPKCS7
        ).makeIterator()

        guard let versionNode = fields.next(), let version = ASN1Reading.integer(versionNode) else {
            throw fail("SignedData has no version", signedDataNode)
        }
        self.version = version

        guard let digestSet = fields.next() else { throw fail("SignedData ends before its digest algorithms") }
        digestAlgorithmOIDs = try ASN1Reading.children(
            digestSet, expecting: .set, what: "SignedData digestAlgorithms", base: 0, code: .invalidPKCS7
        ).compactMap { algorithm -> String? in
            guard case .constructed(let parts) = algorithm.content else { return nil }
            return parts.first(where: { _ in true }).flatMap(ASN1Reading.oid)
        }

        guard let contentInfo = fields.next() else { throw fail("SignedData ends before its content") }
        var contentFields = try ASN1Reading.children(
            contentInfo, expecting: .sequence, what: "SignedData contentInfo", base: 0, code: .invalidPKCS7
        ).makeIterator()
        guard let contentTypeNode = contentFields.next(), let contentType = ASN1Reading.oid(contentTypeNode) else {
            throw fail("SignedData contentInfo has no content type", contentInfo)
        }
        contentTypeOID = contentType
        if let wrapped = contentFields.next() {
            var inner = try ASN1Reading.children(
                wrapped, expecting: ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific),
                what: "SignedData [0] eContent", base: 0, code: .invalidPKCS7
            ).makeIterator()
            guard let octetNode = inner.next(), let octets = ASN1Reading.octets(octetNode) else {
                throw fail("SignedData eContent is not an OCTET STRING", wrapped)
            }
            content = Array(octets)
        } else {
            throw fail("receipt has no signed content (a detached signature carries no receipt)", contentInfo)
        }

        certificates = []
        var signerSet: ASN1Node?
        while let node = fields.next() {
            switch node.identifier {
            case ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific):
                guard case .constructed(let certs) = node.content else { throw fail("certificates field is not constructed", node) }
                certificates = certs.map { Array($0.encodedBytes) }
            case ASN1Identifier(tagWithNumber: 1, tagClass: .contextSpecific):
                continue  // CRLs: receipts carry none, and they are not needed offline
            case .set:
                signerSet = node
            default:
                throw fail("unexpected \(ASN1Reading.name(node.identifier)) in SignedData", node)
            }
        }
        guard let signerSet else { throw fail("SignedData has no signerInfos") }
        signerInfos = try ASN1Reading.children(
            signerSet, expecting: .set, what: "signerInfos", base: 0, code: .invalidPKCS7
        ).map { try Self.signerInfo($0, fail: fail) }
        usesIndefiniteLengths = bytes.count > 1 && bytes[1] == 0x80
    }

    /// The fast path for definite-length DER containers (every App Store receipt): walks the
    /// outer structure with ``DERAttributeScanner`` and keeps certificates as byte ranges instead
    /// of parsing them into node trees. Returns `nil` for anything unusual (indefinite lengths,
    /// other content types, extra fields), which the swift-asn1 path then reads or explains.
    private static func scanDefiniteLength(_ bytes: [UInt8]) throws -> PKCS7SignedData? {
        typealias S = DERAttributeScanner
        let b = bytes[...]
        guard let contentInfo = S.tlv(b, at: 0, end: b.endIndex), contentInfo.tag == 0x30,
            contentInfo.content.upperBound == b.endIndex,
            let type = S.tlv(b, at: contentInfo.content.lowerBound, end: contentInfo.content.upperBound),
            type.tag == 0x06, b[type.content].elementsEqual(signedDataOIDBytes),
            let explicit = S.tlv(b, at: type.content.upperBound, end: contentInfo.content.upperBound), explicit.tag == 0xA0,
            explicit.content.upperBound == contentInfo.content.upperBound,
            let signedData = S.tlv(b, at: explicit.content.lowerBound, end: explicit.content.upperBound),
            signedData.tag == 0x30, signedData.content.upperBound == explicit.content.upperBound
        else { return nil }
        let end = signedData.content.upperBound
        guard let versionTLV = S.tlv(b, at: signedData.content.lowerBound, end: end), versionTLV.tag == 0x02,
            let version = S.int(b, versionTLV.content),
            let digests = S.tlv(b, at: versionTLV.content.upperBound, end: end), digests.tag == 0x31,
            let inner = S.tlv(b, at: digests.content.upperBound, end: end), inner.tag == 0x30,
            let innerType = S.tlv(b, at: inner.content.lowerBound, end: inner.content.upperBound), innerType.tag == 0x06,
            b[innerType.content].elementsEqual(dataOIDBytes),
            let wrapped = S.tlv(b, at: innerType.content.upperBound, end: inner.content.upperBound), wrapped.tag == 0xA0,
            let octets = S.tlv(b, at: wrapped.content.lowerBound, end: wrapped.content.upperBound), octets.tag == 0x04,
            octets.content.upperBound == wrapped.content.upperBound
        else { return nil }
        var digestOIDs: [String] = []
        var p = digests.content.lowerBound
        while p < digests.content.upperBound {
            guard let algorithm = S.tlv(b, at: p, end: digests.content.upperBound), algorithm.tag == 0x30,
                let oid = S.tlv(b, at: algorithm.content.lowerBound, end: algorithm.content.upperBound), oid.tag == 0x06,
                let dotted = dottedOID(b[oid.content])
            else { return nil }
            digestOIDs.append(dotted)
            p = algorithm.content.upperBound
        }
        p = inner.content.upperBound
        var certificates: [[UInt8]] = []
        var signerSet: Range<Int>?
        while p < end {
            guard let field = S.tlv(b, at: p, end: end) else { return nil }
            switch field.tag {
            case 0xA0:
                var c = field.content.lowerBound
                while c < field.content.upperBound {
                    guard let cert = S.tlv(b, at: c, end: field.content.upperBound), cert.tag == 0x30 else { return nil }
                    certificates.append(Array(b[c..<cert.content.upperBound]))
                    c = cert.content.upperBound
                }
            case 0xA1: break
            case 0x31 where signerSet == nil: signerSet = p..<field.content.upperBound
            default: return nil
            }
            p = field.content.upperBound
        }
        guard let signerSet else { return nil }
        let signerNode = try ASN1Reading.parse(b[signerSet], what: "signerInfos", code: .invalidPKCS7)
        func fail(_ message: String, _ node: ASN1Node?) -> ReceiptDecodingError {
            ReceiptDecodingError(.invalidPKCS7, message, offset: node.map { $0.encodedBytes.startIndex })
        }
        let signers = try ASN1Reading.children(
            signerNode, expecting: .set, what: "signerInfos", base: 0, code: .invalidPKCS7
        ).map { try signerInfo($0, fail: fail) }
        return PKCS7SignedData(
            version: Int64(version), digestAlgorithmOIDs: digestOIDs, contentTypeOID: dataOID,
            content: Array(b[octets.content]), certificates: certificates, signerInfos: signers,
            usesIndefiniteLengths: false)
    }

    private static let signedDataOIDBytes: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x02]
    private static let dataOIDBytes: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x01]

    /// Dotted form of OBJECT IDENTIFIER content bytes (X.690 8.19: a first subidentifier of 80
    /// or more is arc 2); `nil` for a subidentifier padded with a leading 0x80, as swift-asn1.
    static func dottedOID(_ bytes: ArraySlice<UInt8>) -> String? {
        var arcs: [UInt64] = []
        var value: UInt64 = 0
        var startOfArc = true
        for byte in bytes {
            guard value >> 57 == 0, !(startOfArc && byte == 0x80) else { return nil }
            startOfArc = byte & 0x80 == 0
            value = value << 7 | UInt64(byte & 0x7F)
            if byte & 0x80 == 0 {
                arcs.append(value)
                value = 0
            }
        }
        guard let first = arcs.first, bytes.last.map({ $0 & 0x80 == 0 }) == true else { return nil }
        let head = first < 40 ? [0, first] : first < 80 ? [1, first - 40] : [2, first - 80]
        return (head + arcs.dropFirst()).map(String.init).joined(separator: ".")
    }

    private static func signerInfo(
        _ node: ASN1Node, fail: (String, ASN1Node?) -> ReceiptDecodingError
    ) throws -> SignerInfo {
        var parts = try ASN1Reading.children(
            node, expecting: .sequence, what: "SignerInfo", base: 0, code: .invalidPKCS7
        ).makeIterator()
        guard let versionNode = parts.next(), let version = ASN1Reading.integer(versionNode) else {
            throw fail("SignerInfo has no version", node)
        }
        guard let sid = parts.next(), case .constructed(let sidParts) = sid.content else {
            throw fail("SignerInfo has no issuerAndSerialNumber", node)
        }
        var sidIterator = sidParts.makeIterator()
        guard let issuer = sidIterator.next(), let serialNode = sidIterator.next(),
            serialNode.identifier == .integer, case .primitive(let serial) = serialNode.content
        else {
            throw fail("SignerInfo issuerAndSerialNumber is malformed", sid)
        }
        guard let digestNode = parts.next(), let digest = algorithmOID(digestNode) else {
            throw fail("SignerInfo has no digest algorithm", node)
        }
        var next = parts.next()
        var signedAttributes: [UInt8]?
        if let attributes = next, attributes.identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific) {
            // The signature covers the attributes re-encoded with the universal SET tag.
            var der = Array(attributes.encodedBytes)
            if !der.isEmpty { der[0] = 0x31 }
            signedAttributes = der
            next = parts.next()
        }
        guard let signatureAlgorithmNode = next, let signatureAlgorithm = algorithmOID(signatureAlgorithmNode) else {
            throw fail("SignerInfo has no signature algorithm", node)
        }
        guard let signatureNode = parts.next(), let signature = ASN1Reading.octets(signatureNode) else {
            throw fail("SignerInfo has no signature", node)
        }
        return SignerInfo(
            version: version, issuerDER: Array(issuer.encodedBytes), serialNumber: Array(serial),
            digestAlgorithmOID: digest, signedAttributesDER: signedAttributes,
            signatureAlgorithmOID: signatureAlgorithm, signature: Array(signature))
    }

    private static func algorithmOID(_ node: ASN1Node) -> String? {
        guard node.identifier == .sequence, case .constructed(let parts) = node.content,
            let first = parts.first(where: { _ in true })
        else { return nil }
        return ASN1Reading.oid(first)
    }
}
