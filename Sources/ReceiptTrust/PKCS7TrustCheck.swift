import Crypto
import Foundation
import PlainWords
import ReceiptCore
import SwiftASN1
import X509
import _CryptoExtras

/// The steps for a PKCS#7 app receipt: structure, signer, RSA signature over the payload, then
/// either Apple's chain (leaf → WWDR intermediate from the receipt → bundled root) or, for Xcode
/// StoreKit-testing receipts, the self-signed StoreKit certificate.
struct PKCS7TrustCheck {
    let evaluator: TrustEvaluator
    let options: TrustOptions

    func run(_ signed: PKCS7SignedData, receipt: AppReceipt?) async -> TrustReport {
        var steps: [TrustReport.Step] = []
        let time = receipt?.receiptCreationDate
        let timeSource = "receipt creation"

        // Structure.
        var parsed: [(Certificate, [UInt8])] = []
        var unreadable: [String] = []
        for (index, der) in signed.certificates.enumerated() {
            do {
                parsed.append((try evaluator.cache.certificate(der), der))
            } catch {
                unreadable.append("certificate \(index + 1) could not be read (\(error))")
            }
        }
        let signerCount = signed.signerInfos.count
        if signerCount == 1 && unreadable.isEmpty && !parsed.isEmpty {
            steps.append(
                .init(
                    .structure, outcome: .pass,
                    reason: "PKCS#7 SignedData with \(CountNoun.certificate.count(parsed.count)) and one signer"
                        + (signed.usesIndefiniteLengths ? " (indefinite-length BER, as Xcode writes it)" : "")))
        } else {
            var problems = unreadable
            if signerCount != 1 { problems.append("\(signerCount) signers, expected exactly one") }
            if parsed.isEmpty && unreadable.isEmpty { problems.append("no certificates") }
            steps.append(.init(.structure, failing: "structure-invalid", reason: problems.joined(separator: "; ")))
        }

        // Signer certificate.
        let signer = signed.signerInfos.first
        let signerIssuer = signer.flatMap { evaluator.cache.signerIssuer($0.issuerDER) }
        let signerCert = signer.flatMap { info in
            parsed.first { cert, _ in Array(cert.serialNumber.bytes) == info.serialNumber && signerIssuer == cert.issuer }
        }
        if let (cert, der) = signerCert {
            steps.append(
                .init(
                    .signerCertificate, outcome: .pass,
                    reason: "the signer is \(cert.displayName), serial \(cert.serialText)", details: evaluator.details(cert, der: der)))
        } else {
            steps.append(
                .init(
                    .signerCertificate, failing: "signer-certificate-missing",
                    reason: signer == nil
                        ? "there is no signer" : "no certificate in the receipt matches the signer's issuer and serial number"))
        }

        // Signature over the payload.
        let signature = signatureStep(signer, signerCert?.0, content: signed.content)
        steps.append(signature)

        // An Xcode receipt is judged against its own certificate (success: test); anything else
        // must chain to Apple (success: valid).
        var success = TrustReport.Verdict.valid
        if let (cert, der) = signerCert, isXcodeTestCertificate(cert, receipt: receipt) {
            success = .test
            await xcodeSteps(cert, der: der, steps: &steps)
            evaluator.validity([(.certificate, cert)], time: time, timeSource: timeSource, now: options.now, steps: &steps)
        } else if let leaf = signerCert {
            success = await evaluator.appleChain(
                leaf: leaf, candidates: parsed, time: time, timeSource: timeSource, options: options,
                signed: signature.outcome == .pass, steps: &steps)
        } else {
            steps.append(.init(.chain, outcome: .skipped, reason: "no signer certificate to build a chain from"))
        }
        if let device = options.deviceIdentifier {
            steps.append(DeviceHash.step(receipt: receipt, identifier: device))
        }
        return TrustReport(
            verdict: TrustEvaluator.verdict(steps, success: success), steps: steps, validationTime: time,
            validationTimeSource: timeSource)
    }

    private func signatureStep(_ signer: PKCS7SignedData.SignerInfo?, _ cert: Certificate?, content: [UInt8])
        -> TrustReport.Step
    {
        guard let signer, let cert else {
            return .init(.signature, outcome: .skipped, reason: "no signer certificate to check the signature with")
        }
        guard let key = _RSA.Signing.PublicKey(cert.publicKey) else {
            return .init(.signature, failing: "signer-key-not-rsa", reason: "the signer's key is not an RSA key")
        }
        let digestName = DigestName.of(signer.digestAlgorithmOID)
        let signature = _RSA.Signing.RSASignature(rawRepresentation: signer.signature)
        let detail = [
            Field(name: "digest", value: digestName), Field(name: "key", value: "RSA \(key.keySizeInBits) bits"),
        ]
        var signedBytes = content
        if let attributes = signer.signedAttributesDER {
            // With signed attributes the signature covers them, and they carry the content digest.
            guard let expected = Self.messageDigest(attributes), let actual = digest(digestName, content),
                expected == actual
            else {
                return .init(
                    .signature, failing: "message-digest-mismatch",
                    reason: "the signed attributes' message digest does not match the receipt payload", details: detail)
            }
            signedBytes = attributes
        }
        let valid: Bool
        switch digestName {
        case "sha1":
            valid = key.isValidSignature(signature, for: Insecure.SHA1.hash(data: signedBytes), padding: .insecurePKCS1v1_5)
        case "sha256":
            valid = key.isValidSignature(signature, for: SHA256.hash(data: signedBytes), padding: .insecurePKCS1v1_5)
        case "sha384":
            valid = key.isValidSignature(signature, for: SHA384.hash(data: signedBytes), padding: .insecurePKCS1v1_5)
        case "sha512":
            valid = key.isValidSignature(signature, for: SHA512.hash(data: signedBytes), padding: .insecurePKCS1v1_5)
        default:
            return .init(.signature, failing: "digest-unsupported", reason: "unsupported digest algorithm \(digestName)")
        }
        return valid
            ? .init(
                .signature, outcome: .pass,
                reason: "RSA PKCS#1 v1.5 with \(digestName.uppercased()) over the receipt payload verifies with the signer's key",
                details: detail)
            : .init(
                .signature, failing: "signature-mismatch",
                reason: "the RSA \(digestName.uppercased()) signature does not match the receipt payload: the payload or the signature was changed",
                details: detail)
    }

    private func digest(_ name: String, _ bytes: [UInt8]) -> [UInt8]? {
        switch name {
        case "sha1": Array(Insecure.SHA1.hash(data: bytes))
        case "sha256": Array(SHA256.hash(data: bytes))
        case "sha384": Array(SHA384.hash(data: bytes))
        case "sha512": Array(SHA512.hash(data: bytes))
        default: nil
        }
    }

    /// The `messageDigest` attribute (1.2.840.113549.1.9.4) of DER signed attributes.
    static func messageDigest(_ der: [UInt8]) -> [UInt8]? {
        guard let root = try? DER.parse(der), case .constructed(let attributes) = root.content else { return nil }
        for attribute in attributes {
            guard case .constructed(let parts) = attribute.content else { continue }
            var iterator = parts.makeIterator()
            guard let oid = iterator.next().flatMap(ASN1Reading.oid), oid == "1.2.840.113549.1.9.4",
                let values = iterator.next(), case .constructed(let set) = values.content,
                let first = set.first(where: { _ in true }), let octets = ASN1Reading.octets(first)
            else { continue }
            return Array(octets)
        }
        return nil
    }

    private func isXcodeTestCertificate(_ cert: Certificate, receipt: AppReceipt?) -> Bool {
        cert.isSelfIssued && (cert.displayName == "StoreKit" || receipt?.receiptType == "Xcode")
    }

    private func xcodeSteps(_ cert: Certificate, der: [UInt8], steps: inout [TrustReport.Step]) async {
        if let problems = await evaluator.storeKitCertificateProblems(cert, der: der) {
            steps.append(
                .init(
                    .testCertificate, failing: "xcode-certificate-invalid",
                    reason: "Xcode's self-signed \"\(cert.displayName)\" certificate " + problems.joined(separator: " and "),
                    details: evaluator.details(cert, der: der)))
        } else {
            steps.append(
                .init(
                    .testCertificate, outcome: .warning,
                    reason: "signed by Xcode's self-signed \"\(cert.displayName)\" certificate: a StoreKit-testing receipt, never from the App Store (Apple's servers answer 21002 for it)",
                    details: evaluator.details(cert, der: der)))
        }
        if let expected = options.storeKitCertificate {
            if expected == der {
                steps.append(
                    .init(
                        .storekitCertificate, outcome: .pass,
                        reason: "the receipt's certificate is the StoreKit certificate you supplied"))
            } else if let given = try? Certificate(derEncoded: expected), given.publicKey == cert.publicKey {
                steps.append(
                    .init(
                        .storekitCertificate, outcome: .pass,
                        reason: "the receipt's certificate has the same key as the StoreKit certificate you supplied"))
            } else {
                steps.append(
                    .init(
                        .storekitCertificate, failing: "storekit-certificate-mismatch",
                        reason: "the receipt was not signed with the StoreKit certificate you supplied (another Xcode project's, or edited)"))
            }
        } else {
            steps.append(
                .init(
                    .storekitCertificate, outcome: .skipped,
                    reason: "pass --storekit-cert FILE (exported from your Xcode project) to check it is yours"))
        }
    }
}

/// The SHA-1 device hash of a receipt: SHA1(device identifier ‖ opaque value (field 4) ‖
/// bundle id DER (field 2)) compared with field 5.
public enum DeviceHash {
    public static func compute(identifier: [UInt8], opaque: [UInt8], bundleIDData: [UInt8]) -> [UInt8] {
        Array(Insecure.SHA1.hash(data: identifier + opaque + bundleIDData))
    }

    static func step(receipt: AppReceipt?, identifier: DeviceIdentifier) -> TrustReport.Step {
        guard let receipt, let opaque = receipt.opaqueValue, let bundle = receipt.bundleIDData, let hash = receipt.sha1Hash
        else {
            return .init(.deviceHash, outcome: .skipped, reason: "the receipt lacks field 2, 4 or 5")
        }
        let computed = compute(identifier: identifier.bytes, opaque: opaque, bundleIDData: bundle)
        return computed == hash
            ? .init(
                .deviceHash, outcome: .pass, reason: "the receipt was issued to this device (\(identifier.kind))")
            : .init(
                .deviceHash, failing: "device-hash-mismatch",
                reason: "the receipt's device hash does not match this \(identifier.kind): issued to another device, or the wrong identifier (on macOS, the primary network interface's MAC)",
                details: [Field(name: "expected", value: Hex.encode(hash)), Field(name: "computed", value: Hex.encode(computed))])
    }
}
