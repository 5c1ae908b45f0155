import Crypto
import Foundation
import ReceiptCore
import SwiftASN1
import X509
import _CryptoExtras

/// The steps for an iOS 6 transaction receipt: the `signature` blob's layout, the RSA SHA-1
/// signature over version byte ‖ purchase-info with the embedded certificate, and the chain as
/// far as it can be followed offline.
struct LegacyTrustCheck {
    let evaluator: TrustEvaluator
    let options: TrustOptions

    func run(blob: [UInt8], purchaseInfo: [UInt8], purchaseDate: Date?) -> TrustReport {
        var steps: [TrustReport.Step] = []
        let timeSource = "purchase date"
        guard let parsed = LegacySignatureBlob(blob) else {
            steps.append(
                .init(
                    .signatureBlob, failing: "signature-blob-malformed",
                    reason: "the \(blob.count)-byte signature is not version ‖ 128 or 256-byte signature ‖ length ‖ certificate"))
            return TrustReport(verdict: .invalid, steps: steps, validationTime: purchaseDate, validationTimeSource: timeSource)
        }
        steps.append(
            .init(
                .signatureBlob, outcome: .pass,
                reason: "version \(parsed.version), \(parsed.signature.count)-byte RSA signature, \(parsed.certificate.count)-byte certificate"))
        let info = CertificateInfo(der: parsed.certificate)
        let key = Self.rsaKey(certificate: parsed.certificate)
        if let key {
            let signed = [parsed.version] + purchaseInfo
            let valid = key.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: parsed.signature), for: Insecure.SHA1.hash(data: signed),
                padding: .insecurePKCS1v1_5)
            steps.append(
                valid
                    ? .init(
                        .signature, outcome: .pass,
                        reason: "RSA SHA-1 over version ‖ purchase-info verifies with the embedded certificate (\(key.keySizeInBits)-bit key)")
                    : .init(
                        .signature, failing: "signature-mismatch",
                        reason: "the RSA SHA-1 signature does not match version ‖ purchase-info: the purchase-info or the signature was changed"))
        } else {
            steps.append(.init(.signature, failing: "certificate-key-not-rsa", reason: "the embedded certificate has no readable RSA key"))
        }
        if let info {
            let validity = ValidityDates(notBefore: info.notBefore, notAfter: info.notAfter)
            let details = [
                Field(name: "subject", value: info.subject), Field(name: "issuer", value: info.issuer),
                Field(name: "serial", value: info.serial),
                Field(name: "valid", value: validity.text),
            ]
            let isApplePurchaseCert = info.commonName == "PurchaseReceiptCertificate" && info.subject.contains("O=Apple Inc.")
            steps.append(
                .init(
                    .certificate, outcome: isApplePurchaseCert ? .pass : .fail,
                    reason: isApplePurchaseCert
                        ? "the signer is Apple's iTunes Store PurchaseReceiptCertificate"
                        : "the signer \(info.commonName) is not Apple's iTunes Store PurchaseReceiptCertificate",
                    details: details, code: isApplePurchaseCert ? nil : "certificate-not-apple"))
            steps.append(chainStep(parsed.certificate, issuer: info.issuer))
            if let purchaseDate {
                let ok = validity.contains(purchaseDate)
                let day = AppleDate.calendarDay(purchaseDate)
                steps.append(
                    .init(
                        .validity, outcome: ok ? .pass : .fail,
                        reason: ok
                            ? "certificate valid on \(day) (\(timeSource))"
                            : "certificate not valid on \(day) (\(timeSource)): valid \(validity.text)",
                        code: ok ? nil : "not-valid-at-time"))
            } else {
                steps.append(.init(.validity, outcome: .skipped, reason: "the purchase-info has no purchase date"))
            }
        } else {
            steps.append(.init(.certificate, failing: "certificate-unreadable", reason: "the embedded certificate could not be read"))
        }
        let verdict: TrustReport.Verdict =
            steps.contains { $0.outcome == .fail }
            ? .invalid : steps.contains { $0.kind == .chain && $0.outcome != .pass } ? .unverifiable : .valid
        return TrustReport(verdict: verdict, steps: steps, validationTime: purchaseDate, validationTimeSource: timeSource)
    }

    /// The embedded certificate's issuer is followed to a bundled root when one matches;
    /// Apple's "iTunes Store Certification Authority" is not published with the roots, so the
    /// step says plainly when the chain cannot be completed offline.
    private func chainStep(_ der: [UInt8], issuer: String) -> TrustReport.Step {
        if let cert = try? evaluator.cache.certificate(der), let root = evaluator.bundledRoot(issuing: cert, der: der) {
            return .init(.chain, outcome: .pass, reason: "issued by \(root.0.displayName), a bundled Apple root")
        }
        return .init(
            .chain, outcome: .warning,
            reason: "chain cannot be completed offline: the issuer \(issuer) is not a bundled root, so the certificate itself cannot be proven Apple's")
    }

    /// The RSA key of a certificate, read directly from its SubjectPublicKeyInfo so 1024-bit keys
    /// (which swift-certificates refuses) work too.
    static func rsaKey(certificate der: [UInt8]) -> _RSA.Signing.PublicKey? {
        guard let parts = ASN1Reading.tbsCertificateFields(der), parts.count >= 6 else { return nil }
        return try? _RSA.Signing.PublicKey(unsafeDERRepresentation: Array(parts[5].encodedBytes))
    }
}
