import Foundation
import X509

/// Remembers parsed certificates and issuer-signature results, so a fleet that sees the same
/// few Apple intermediates millions of times checks each pair once.
///
/// Signature results do not depend on time, so they are safe to cache; validity windows are
/// always judged afresh. Both tables are bounded: when one grows past its limit it is cleared,
/// so hostile input cannot grow memory without bound.
public final class TrustCache: @unchecked Sendable {
    private let lock = NSLock()
    private var certificates: [[UInt8]: Certificate] = [:]
    private var signatures: [SignaturePair: Bool] = [:]
    private let limit: Int

    struct SignaturePair: Hashable {
        var issuer: [UInt8]
        var subject: [UInt8]
    }

    public init(limit: Int = 4096) {
        self.limit = limit
    }

    func certificate(_ der: [UInt8]) throws -> Certificate {
        lock.lock()
        if let cached = certificates[der] {
            lock.unlock()
            return cached
        }
        lock.unlock()
        let parsed = try Certificate(derEncoded: der)
        lock.lock()
        if certificates.count >= limit { certificates.removeAll(keepingCapacity: true) }
        certificates[der] = parsed
        lock.unlock()
        return parsed
    }

    /// Whether `issuer`'s key verifies the signature on `subject`.
    func issuerSigned(_ subject: Certificate, subjectDER: [UInt8], by issuer: Certificate, issuerDER: [UInt8]) -> Bool {
        let key = SignaturePair(issuer: issuerDER, subject: subjectDER)
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
