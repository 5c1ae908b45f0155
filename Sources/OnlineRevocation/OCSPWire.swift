import Foundation
import SwiftASN1

/// The few facts of an OCSP request and response (RFC 6960) that online checks need besides
/// swift-certificates' `OCSPVerifierPolicy`: which certificate a request asks about (the cache
/// key), the response's status, and each single response's status and `nextUpdate` (how long
/// to keep it, and which certificate was revoked, when and why).
///
/// swift-certificates 1.21.1 keeps its OCSP types (`OCSPRequest`, `OCSPResponse`,
/// `BasicOCSPResponse`, `OCSPCertID`, …) internal; only the policy and its requester protocol
/// are public. This reads the DER with swift-asn1's nodes; it decides nothing about trust (the
/// policy verifies signatures, responder, times and the certificate asked about).
public enum OCSPWire {
    /// The `CertID`s (their DER) a request asks about.
    public static func requestedCertIDs(_ request: [UInt8]) -> [[UInt8]]? {
        // OCSPRequest ::= SEQUENCE { tbsRequest TBSRequest, optionalSignature [0] EXPLICIT … }
        // TBSRequest ::= SEQUENCE { version [0] EXPLICIT DEFAULT v1, requestorName [1] EXPLICIT
        //   OPTIONAL, requestList SEQUENCE OF Request, requestExtensions [2] EXPLICIT OPTIONAL }
        // Request ::= SEQUENCE { reqCert CertID, singleRequestExtensions [0] EXPLICIT OPTIONAL }
        guard let root = try? DER.parse(request), let tbs = children(root)?.first, let fields = children(tbs),
            let list = fields.first(where: { $0.identifier == .sequence }), let requests = children(list)
        else { return nil }
        var ids: [[UInt8]] = []
        for request in requests {
            guard let certID = children(request)?.first, certID.identifier == .sequence else { return nil }
            ids.append(Array(certID.encodedBytes))
        }
        return ids
    }

    /// `CertID`'s serial number (its content octets), for a responder that looks it up.
    public static func serialNumber(ofCertID der: [UInt8]) -> [UInt8]? {
        guard let node = try? DER.parse(der), let fields = children(node), fields.count == 4,
            case .primitive(let bytes) = fields[3].content
        else { return nil }
        return Array(bytes)
    }

    /// `CertID`'s issuerKeyHash (SHA-1 of the issuer's public key bits, RFC 6960 §4.1.1).
    public static func issuerKeyHash(ofCertID der: [UInt8]) -> [UInt8]? {
        guard let node = try? DER.parse(der), let fields = children(node), fields.count == 4,
            case .primitive(let bytes) = fields[2].content
        else { return nil }
        return Array(bytes)
    }

    /// RFC 6960 `OCSPResponseStatus`.
    public enum ResponseStatus: Int, Sendable, Hashable {
        case successful = 0, malformedRequest = 1, internalError = 2, tryLater = 3, sigRequired = 5, unauthorized = 6
    }

    /// One `SingleResponse`.
    public struct Single: Sendable, Hashable {
        /// The `CertID` it answers for (its DER).
        public var certID: [UInt8]
        public var status: CertStatus
        public var thisUpdate: Date
        public var nextUpdate: Date?
    }

    public enum CertStatus: Sendable, Hashable {
        case good
        /// `reason`: the CRLReason number (RFC 5280 §5.3.1), when given.
        case revoked(at: Date, reason: Int?)
        case unknown
    }

    /// What a response says, unverified.
    public struct Response: Sendable, Hashable {
        public var status: ResponseStatus
        public var singles: [Single]
        /// The response carries a nonce extension (id-pkix-ocsp-nonce): it answers one request
        /// only, so it is not kept for others.
        public var carriesNonce = false
    }

    static let nonceOID: ASN1ObjectIdentifier = [1, 3, 6, 1, 5, 5, 7, 48, 1, 2]

    /// Reads a DER `OCSPResponse`; nil when it is not one.
    public static func response(_ bytes: [UInt8]) -> Response? {
        // OCSPResponse ::= SEQUENCE { responseStatus ENUMERATED, responseBytes [0] EXPLICIT
        //   ResponseBytes OPTIONAL }; ResponseBytes ::= SEQUENCE { responseType OID, response
        //   OCTET STRING (a BasicOCSPResponse) }
        guard let root = try? DER.parse(bytes), root.identifier == .sequence, let fields = children(root),
            let first = fields.first, first.identifier == .enumerated, case .primitive(let raw) = first.content,
            raw.count == 1, let status = ResponseStatus(rawValue: Int(raw[raw.startIndex]))
        else { return nil }
        guard status == .successful else { return Response(status: status, singles: []) }
        guard fields.count == 2, fields[1].identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific),
            let wrapped = children(fields[1])?.first, let responseBytes = children(wrapped), responseBytes.count == 2,
            case .primitive(let basicDER) = responseBytes[1].content,
            let basic = try? DER.parse(basicDER), let basicFields = children(basic), let data = basicFields.first,
            let dataFields = children(data)
        else { return nil }
        // ResponseData ::= SEQUENCE { version [0] EXPLICIT DEFAULT v1, responderID, producedAt,
        //   responses SEQUENCE OF SingleResponse, responseExtensions [1] EXPLICIT OPTIONAL }
        let afterVersion = dataFields.first?.identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)
            ? Array(dataFields.dropFirst()) : dataFields
        guard afterVersion.count >= 3, let singles = children(afterVersion[2]) else { return nil }
        var read: [Single] = []
        for single in singles {
            guard let single = self.single(single) else { return nil }
            read.append(single)
        }
        var nonce = false
        if afterVersion.count > 3, afterVersion[3].identifier == ASN1Identifier(tagWithNumber: 1, tagClass: .contextSpecific),
            let extensions = children(afterVersion[3])?.first.flatMap(children)
        {
            nonce = extensions.contains { ext in
                children(ext)?.first.flatMap { try? ASN1ObjectIdentifier(derEncoded: $0) } == nonceOID
            }
        }
        return Response(status: status, singles: read, carriesNonce: nonce)
    }

    private static func single(_ node: ASN1Node) -> Single? {
        // SingleResponse ::= SEQUENCE { certID, certStatus, thisUpdate GeneralizedTime,
        //   nextUpdate [0] EXPLICIT GeneralizedTime OPTIONAL, singleExtensions [1] EXPLICIT OPTIONAL }
        guard let fields = children(node), fields.count >= 3, fields[0].identifier == .sequence,
            let thisUpdate = date(fields[2])
        else { return nil }
        let status: CertStatus
        switch fields[1].identifier {
        case ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific): status = .good
        case ASN1Identifier(tagWithNumber: 1, tagClass: .contextSpecific):
            // RevokedInfo ::= SEQUENCE { revocationTime GeneralizedTime, revocationReason [0]
            //   EXPLICIT CRLReason OPTIONAL }
            guard let info = children(fields[1]), let at = info.first.flatMap(date) else { return nil }
            var reason: Int?
            if info.count > 1, let enumerated = children(info[1])?.first, case .primitive(let raw) = enumerated.content,
                raw.count == 1
            {
                reason = Int(raw[raw.startIndex])
            }
            status = .revoked(at: at, reason: reason)
        case ASN1Identifier(tagWithNumber: 2, tagClass: .contextSpecific): status = .unknown
        default: return nil
        }
        var nextUpdate: Date?
        if fields.count > 3, fields[3].identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific) {
            nextUpdate = children(fields[3])?.first.flatMap(date)
        }
        return Single(certID: Array(fields[0].encodedBytes), status: status, thisUpdate: thisUpdate, nextUpdate: nextUpdate)
    }

    private static func children(_ node: ASN1Node) -> [ASN1Node]? {
        guard case .constructed(let nodes) = node.content else { return nil }
        return Array(nodes)
    }

    private static func date(_ node: ASN1Node) -> Date? {
        guard let time = try? GeneralizedTime(derEncoded: node) else { return nil }
        var components = DateComponents()
        components.year = time.year
        components.month = time.month
        components.day = time.day
        components.hour = time.hours
        components.minute = time.minutes
        components.second = time.seconds
        guard let whole = utc.date(from: components) else { return nil }
        return whole.addingTimeInterval(Double(time.fractionalSeconds))
    }

    private static let utc: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar
    }()
}
