import Foundation
import ReceiptCore
import SwiftASN1
import Synchronization
import X509

/// One certificate's subject, issuer, serial and validity window, as read from its DER: what
/// reports and the iOS 6 trust check show of it. Decoding only; checking is the trust step's job.
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
            commonName: Self.commonName(subject) ?? subject.text)
    }

    /// The summary of `der`, parsed once per process: every receipt of an app carries the
    /// same few certificates, and parsing them was a sixth of `inspect --format json`'s time.
    /// The key is the whole DER, so a tampered certificate is never mistaken for a known one.
    package static func cached(der: [UInt8]) -> CertificateInfo? {
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

    /// The first common name of `name`, escaped.
    public static func commonName(_ name: DistinguishedName) -> String? {
        for rdn in name {
            for attribute in rdn where attribute.type == .RDNAttributeType.commonName {
                return attribute.value.escapedText
            }
        }
        return nil
    }
}
