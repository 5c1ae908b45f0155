import Foundation
import SwiftASN1
import Synchronization
import X509

/// What a signature is made of, described for people: the algorithm and each certificate's
/// subject, issuer, serial and validity window. Decoding only; checking is the trust step's job.
public struct SignatureSummary: Sendable, Hashable {
    public struct CertificateInfo: Sendable, Hashable {
        public var subject: String
        public var issuer: String
        public var serial: String
        public var notBefore: Date
        public var notAfter: Date
        /// The subject's common name, or the whole subject when it has none.
        public var commonName: String

        /// Reads a DER certificate. Uses swift-certificates, and falls back to reading just the
        /// names and validity for certificates it refuses (e.g. the 1024-bit RSA keys of iOS 6
        /// receipts).
        public init?(der: [UInt8]) {
            if let cert = try? Certificate(derEncoded: der) {
                self.init(
                    subject: cert.subject.text, issuer: cert.issuer.text,
                    serial: cert.serialText, notBefore: cert.notValidBefore, notAfter: cert.notValidAfter,
                    commonName: cert.displayName)
                return
            }
            guard let parts = ASN1Reading.tbsCertificateFields(der), parts.count >= 5,
                case .primitive(let serialBytes) = parts[0].content,
                let issuer = try? DistinguishedName(derEncoded: parts[2]),
                case .constructed(let validity) = parts[3].content,
                let subject = try? DistinguishedName(derEncoded: parts[4])
            else { return nil }
            let times = Array(validity).compactMap(Self.time)
            guard times.count == 2 else { return nil }
            self.init(
                subject: subject.text, issuer: issuer.text,
                serial: Hex.encode(serialBytes, separator: ":"),
                notBefore: times[0], notAfter: times[1],
                commonName: SignatureSummary.commonName(subject) ?? subject.text)
        }

        /// The summary of `der`, parsed once per process: every receipt of an app carries the
        /// same few certificates, and parsing them was a sixth of `inspect --format json`'s time.
        /// The key is the whole DER, so a tampered certificate is never mistaken for a known one.
        static func cached(der: [UInt8]) -> CertificateInfo? {
            let key = DERKey(der: der)
            if let known = summaries.withLock({ $0[key] }) { return known }
            guard let info = CertificateInfo(der: der) else { return nil }
            summaries.withLock { table in
                if table.count >= 256 { table.removeAll() }  // hostile input cannot grow it without bound
                table[key] = info
            }
            return info
        }

        private static let summaries = Mutex<[DERKey: CertificateInfo]>([:])

        /// DER bytes as a dictionary key: equal when every byte is (compared in bulk), hashed
        /// by the length and the last 64 bytes, which hold the issuer's signature. Hashing all
        /// 1-1.5 KB of each of a receipt's three certificates was 1.3% of inspecting a folder;
        /// certificates crafted alike at their end share a bucket, and the table's 256 entries
        /// bound how many a lookup compares.
        struct DERKey: Hashable, Sendable {
            let der: [UInt8]

            func hash(into hasher: inout Hasher) { hashSample(der[...], head: 0, tail: 64, into: &hasher) }

            static func == (a: DERKey, b: DERKey) -> Bool { sameBytes(a.der[...], b.der[...]) }
        }

        init(subject: String, issuer: String, serial: String, notBefore: Date, notAfter: Date, commonName: String) {
            self.subject = subject
            self.issuer = issuer
            self.serial = serial
            self.notBefore = notBefore
            self.notAfter = notAfter
            self.commonName = commonName
        }

        private static func time(_ node: ASN1Node) -> Date? {
            func date(_ y: Int, _ mo: Int, _ d: Int, _ h: Int, _ mi: Int, _ s: Int) -> Date {
                let days = AppleDate.daysFromCivil(year: y, month: mo, day: d)
                return Date(timeIntervalSince1970: Double(days * 86_400 + h * 3600 + mi * 60 + s))
            }
            if let t = try? UTCTime(derEncoded: node) {
                return date(t.year, t.month, t.day, t.hours, t.minutes, t.seconds)
            }
            if let t = try? GeneralizedTime(derEncoded: node) {
                return date(t.year, t.month, t.day, t.hours, t.minutes, t.seconds)
            }
            return nil
        }
    }

    /// `pkcs7`, `legacy` or `jws`.
    public var kind: String
    /// Digest (PKCS#7), `alg` (JWS), or the signature version (iOS 6).
    public var algorithm: String?
    public var certificates: [CertificateInfo]
    /// Certificates that could not be read, in words.
    public var problems: [String]

    public init(_ material: SignatureMaterial) {
        problems = []
        certificates = []
        var ders: [[UInt8]] = []
        switch material {
        case .pkcs7(let signed):
            kind = "pkcs7"
            let oid = signed.signerInfos.first?.digestAlgorithmOID ?? signed.digestAlgorithmOIDs.first
            algorithm = oid.map(Self.digestName)
            ders = signed.certificates
        case .legacy(let blob, _):
            kind = "legacy"
            if let parsed = LegacySignatureBlob(blob) {
                algorithm = "version \(parsed.version), \(parsed.signature.count * 8)-bit RSA"
                ders = [parsed.certificate]
            } else {
                problems.append("signature blob of \(blob.count) bytes does not have the iOS 6 layout")
            }
        case .jws(let token):
            kind = "jws"
            algorithm = token.algorithm
            ders = token.certificateChain
        }
        for (index, der) in ders.enumerated() {
            if let info = CertificateInfo.cached(der: der) {
                certificates.append(info)
            } else {
                problems.append("certificate \(index + 1) of \(ders.count) could not be read")
            }
        }
    }

    static func commonName(_ name: DistinguishedName) -> String? {
        for rdn in name {
            for attribute in rdn where attribute.type == .RDNAttributeType.commonName {
                return attribute.value.escapedText
            }
        }
        return nil
    }

    static func digestName(_ oid: String) -> String {
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
