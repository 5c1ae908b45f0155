import Foundation
import SwiftASN1
import X509

/// Remembers parsed certificates and issuer-signature results, so a fleet that sees the same
/// few Apple intermediates millions of times checks each pair once.
///
/// Signature results do not depend on time, so they are safe to cache; validity windows are
/// always judged afresh. Both tables are bounded: when one grows past its limit it is cleared,
/// so hostile input cannot grow memory without bound.
public final class TrustCache: @unchecked Sendable {
    private let lock = NSLock()
    // Keyed by `Data`: its hash reads a bounded prefix, equality compares all bytes, so
    // lookups stay cheap for 1-2 KB certificates.
    private var certificates: [Data: Certificate] = [:]
    private var descriptions: [Data: [Field]] = [:]
    private var signatures: [SignaturePair: Bool] = [:]
    private let limit: Int

    struct SignaturePair: Hashable {
        var issuer: Data
        var subject: Data
    }

    public init(limit: Int = 4096) {
        self.limit = limit
    }

    func certificate(_ der: [UInt8]) throws -> Certificate {
        let key = Data(der)
        lock.lock()
        if let cached = certificates[key] {
            lock.unlock()
            return cached
        }
        lock.unlock()
        let parsed = try Certificate(derEncoded: der)
        lock.lock()
        if certificates.count >= limit { certificates.removeAll(keepingCapacity: true) }
        certificates[key] = parsed
        lock.unlock()
        return parsed
    }

    /// The subject, issuer, serial and validity of a certificate, as report details; keyed by
    /// the DER the caller already holds, so a lookup costs no re-encoding.
    func details(_ cert: Certificate, der: [UInt8]) -> [Field] {
        let key = Data(der)
        lock.lock()
        if let cached = descriptions[key] {
            lock.unlock()
            return cached
        }
        lock.unlock()
        let fields = [
            Field(name: "subject", value: cert.subject.description),
            Field(name: "issuer", value: cert.issuer.description),
            Field(name: "serial", value: cert.serialText),
            Field(name: "valid", value: cert.validityText),
        ]
        lock.lock()
        if descriptions.count >= limit { descriptions.removeAll(keepingCapacity: true) }
        descriptions[key] = fields
        lock.unlock()
        return fields
    }

    /// Whether `issuer`'s key verifies the signature on `subject`.
    func issuerSigned(_ subject: Certificate, subjectDER: [UInt8], by issuer: Certificate, issuerDER: [UInt8]) -> Bool {
        let key = SignaturePair(issuer: Data(issuerDER), subject: Data(subjectDER))
        lock.lock()
        if let cached = signatures[key] {
            lock.unlock()
            return cached
        }
        lock.unlock()
        let result = issuer.publicKey.isValidSignature(subject.signature, for: subject)
        lock.lock()
        if signatures.count >= limit { signatures.removeAll(keepingCapacity: true) }
        signatures[key] = result
        lock.unlock()
        return result
    }
}
