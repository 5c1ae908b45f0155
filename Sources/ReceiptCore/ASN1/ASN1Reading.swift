import SwiftASN1

/// Small helpers over swift-asn1 that turn its errors into ``ReceiptDecodingError``s with byte
/// offsets, and read the few primitive shapes receipts use.
package enum ASN1Reading {
    /// Parses BER (DER is a subset), reporting structural problems with their offset.
    ///
    /// - Parameter what: what the bytes are, e.g. "PKCS#7 container" or "receipt payload".
    static func parse(_ bytes: ArraySlice<UInt8>, what: String, code: ReceiptDecodingError.Code) throws -> ASN1Node {
        do {
            return try BER.parse(bytes)
        } catch {
            if let problem = BERStructureCheck.firstProblem(in: bytes) {
                throw ReceiptDecodingError(
                    .invalidASN1, "\(what): \(problem.message)", offset: problem.offset - bytes.startIndex)
            }
            throw ReceiptDecodingError(code, "\(what): \(describe(error))", offset: nil)
        }
    }

    static func describe(_ error: any Error) -> String {
        if let asn1 = error as? ASN1Error {
            return "\(asn1.code)"
        }
        return "\(error)"
    }

    /// The children of a constructed node, or an error naming the node's offset.
    static func children(
        _ node: ASN1Node, expecting identifier: ASN1Identifier, what: String, base: Int,
        code: ReceiptDecodingError.Code
    ) throws -> ASN1NodeCollection {
        guard node.identifier == identifier, case .constructed(let nodes) = node.content else {
            let at = node.encodedBytes.startIndex - base
            throw ReceiptDecodingError(
                code, "\(what) at byte \(at) should be \(name(identifier)) but is \(name(node.identifier))", offset: at)
        }
        return nodes
    }

    /// Reads a non-negative or negative INTEGER that fits in `Int64`.
    static func integer(_ node: ASN1Node) -> Int64? {
        guard node.identifier == .integer, case .primitive(let bytes) = node.content else { return nil }
        return integer(contentBytes: bytes)
    }

    static func integer(contentBytes bytes: ArraySlice<UInt8>) -> Int64? {
        guard !bytes.isEmpty, bytes.count <= 8 || (bytes.count == 9 && bytes.first == 0) else { return nil }
        var value: Int64 = (bytes.first! & 0x80) != 0 ? -1 : 0
        for byte in bytes {
            value = value << 8 | Int64(byte)
        }
        return value
    }

    /// The content of an OCTET STRING, flattening BER's constructed (chunked) form.
    package static func octets(_ node: ASN1Node) -> ArraySlice<UInt8>? {
        guard node.identifier == .octetString else { return nil }
        switch node.content {
        case .primitive(let bytes): return bytes
        case .constructed:
            guard let octets = try? ASN1OctetString(berEncoded: node) else { return nil }
            return octets.bytes
        }
    }

    /// The dotted OID of an OBJECT IDENTIFIER node.
    /// Written by ``PKCS7SignedData/dottedOID(_:)``, not swift-asn1's `description`: that one
    /// splits a first subidentifier of 80 or more by 40 ("281.38" for X.690's 2.11198), so the
    /// fast DER scan and this BER path printed the same OID two ways (found by fuzz-pkcs7).
    package static func oid(_ node: ASN1Node) -> String? {
        guard node.identifier == .objectIdentifier, case .primitive(let bytes) = node.content else { return nil }
        return PKCS7SignedData.dottedOID(bytes)
    }

    static func name(_ identifier: ASN1Identifier) -> String {
        switch identifier {
        case .sequence: return "a SEQUENCE"
        case .set: return "a SET"
        case .integer: return "an INTEGER"
        case .octetString: return "an OCTET STRING"
        case .objectIdentifier: return "an OBJECT IDENTIFIER"
        case .utf8String: return "a UTF8String"
        case .ia5String: return "an IA5String"
        default: return "tag \(identifier)"
        }
    }

    /// The fields of a DER certificate's TBSCertificate after the optional `[0]` version:
    /// serial, signature algorithm, issuer, validity, subject, subjectPublicKeyInfo, …
    /// For certificates swift-certificates refuses (e.g. 1024-bit RSA keys of iOS 6 receipts).
    package static func tbsCertificateFields(_ der: [UInt8]) -> [ASN1Node]? {
        guard let root = try? DER.parse(der), case .constructed(let top) = root.content,
            let tbs = top.first(where: { _ in true }), case .constructed(let fields) = tbs.content
        else { return nil }
        var parts = Array(fields)
        if let first = parts.first, first.identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific) {
            parts.removeFirst()
        }
        return parts
    }
}
