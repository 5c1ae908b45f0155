import Foundation
import ReceiptCore
import ReceiptTrust

/// What a signature is made of, described for people: the algorithm and each certificate's
/// subject, issuer, serial and validity window. Decoding only; checking is the trust step's job.
public struct SignatureSummary: Sendable, Hashable {
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
            algorithm = oid.map(DigestName.of)
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
}
