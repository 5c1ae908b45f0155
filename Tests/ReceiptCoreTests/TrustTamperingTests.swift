import Crypto
import Foundation
import SwiftASN1
import Testing
import X509
import _CryptoExtras

@testable import ReceiptCore
@testable import ReceiptTrust
import TestSupport

// Tampering tests for the trust evaluator: the tests build their own PKI (root → WWDR-like
// intermediate → receipt-signing leaf), sign real PKCS#7 receipts (RSA) and StoreKit 2 JWS
// (ES256) with it, then change one thing at a time and check the verdict and exactly which
// step fails, with every other step still reported.

// MARK: - Fixed clock

/// All dates are fixed: nothing depends on the machine's clock.
enum TamperClock {
    /// `TrustOptions.now`.
    static let now = utc("2024-06-01T00:00:00Z")
    /// The receipt creation date (PKCS#7 field 12) and the JWS `signedDate`.
    static let signed = utc("2024-03-01T12:00:00Z")
    static let signedText = "2024-03-01T12:00:00Z"

    static let rootValidity = (utc("2015-01-01T00:00:00Z"), utc("2040-01-01T00:00:00Z"))
    static let intermediateValidity = (utc("2020-01-01T00:00:00Z"), utc("2030-01-01T00:00:00Z"))
    /// Expires a year after `now`: outside the 90-day warning window.
    static let leafValidity = (utc("2023-01-01T00:00:00Z"), utc("2025-06-01T00:00:00Z"))

    static var options: TrustOptions { TrustOptions(now: now) }
}

// MARK: - Certificates

extension TestPKI {
    /// The certificate with the last byte of its signature BIT STRING flipped: it still parses,
    /// but no issuer's signature on it verifies any more.
    static func tampered(_ der: [UInt8]) throws -> [UInt8] {
        var copy = der
        copy[copy.count - 1] ^= 0x01
        let original = try Certificate(derEncoded: der)
        let changed = try Certificate(derEncoded: copy)  // still a readable certificate
        #expect(changed.tbsCertificateBytes == original.tbsCertificateBytes)
        #expect(changed.signature != original.signature)
        return copy
    }
}

/// The RSA-2048 hierarchy for PKCS#7 receipts. Exactly three RSA keys are generated, once: key
/// generation is slow in debug builds, so every variant certificate reuses them.
struct RSAHierarchy: Sendable {
    static let shared = Result { try RSAHierarchy() }

    let rootKey: _RSA.Signing.PrivateKey
    let intermediateKey: _RSA.Signing.PrivateKey
    let leafKey: _RSA.Signing.PrivateKey

    let rootName: DistinguishedName
    let intermediateName: DistinguishedName
    let leafName: DistinguishedName

    let root: Certificate
    let intermediate: Certificate
    let leaf: Certificate
    let rootDER: [UInt8]
    let intermediateDER: [UInt8]
    let leafDER: [UInt8]

    /// Serial with the high bit set: its INTEGER encoding has a leading zero byte, which the
    /// signer lookup (issuer + serial) must cope with.
    static let leafSerial = Certificate.SerialNumber(bytes: [0x9A, 0x5C, 0x31, 0x07])

    private init() throws {
        rootKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        intermediateKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        leafKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        rootName = try TestPKI.name("ReceiptDash Test Root CA", ou: "Test Certification Authority")
        intermediateName = try TestPKI.name("ReceiptDash Test WWDR Intermediate", ou: "G9")
        leafName = try TestPKI.name("ReceiptDash Test Receipt Signing")
        root = try TestPKI.selfSigned(
            serial: .init(bytes: [0x01]), key: .init(rootKey), name: rootName, validity: TamperClock.rootValidity,
            extensions: try TestPKI.rootExtensions())
        rootDER = try TestPKI.der(root)
        intermediate = try Self.makeIntermediate(
            rootKey: rootKey, rootName: rootName, key: intermediateKey, name: intermediateName)
        intermediateDER = try TestPKI.der(intermediate)
        leaf = try Self.makeLeaf(
            intermediateKey: intermediateKey, intermediateName: intermediateName, key: leafKey, name: leafName)
        leafDER = try TestPKI.der(leaf)
    }

    static func makeIntermediate(
        rootKey: _RSA.Signing.PrivateKey, rootName: DistinguishedName, key: _RSA.Signing.PrivateKey,
        name: DistinguishedName, marker: Bool = true, ca: Bool = true, keyUsage: KeyUsage? = nil,
        extra: [Certificate.Extension] = []
    ) throws -> Certificate {
        try TestPKI.certificate(
            serial: .init(bytes: [0x02, 0x11]), publicKey: .init(key.publicKey), validity: TamperClock.intermediateValidity,
            issuer: rootName, subject: name,
            extensions: try TestPKI.intermediateExtensions(marker: marker, ca: ca, keyUsage: keyUsage, extra: extra),
            issuerKey: .init(rootKey))
    }

    static func makeLeaf(
        intermediateKey: _RSA.Signing.PrivateKey, intermediateName: DistinguishedName, key: _RSA.Signing.PrivateKey,
        name: DistinguishedName, validity: (Date, Date) = TamperClock.leafValidity, marker: Bool = true,
        extra: [Certificate.Extension] = []
    ) throws -> Certificate {
        try TestPKI.certificate(
            serial: leafSerial, publicKey: .init(key.publicKey), validity: validity, issuer: intermediateName, subject: name,
            extensions: try TestPKI.leafExtensions(marker: marker, extra: extra), issuerKey: .init(intermediateKey))
    }

    /// A leaf variant: same key, name and issuer as ``leaf``.
    func leaf(
        validity: (Date, Date) = TamperClock.leafValidity, marker: Bool = true, extra: [Certificate.Extension] = []
    ) throws -> Certificate {
        try Self.makeLeaf(
            intermediateKey: intermediateKey, intermediateName: intermediateName, key: leafKey, name: leafName,
            validity: validity, marker: marker, extra: extra)
    }

    /// An intermediate variant: same key, name and issuer as ``intermediate``.
    func intermediate(
        marker: Bool = true, ca: Bool = true, keyUsage: KeyUsage? = nil, extra: [Certificate.Extension] = []
    ) throws -> Certificate {
        try Self.makeIntermediate(
            rootKey: rootKey, rootName: rootName, key: intermediateKey, name: intermediateName, marker: marker, ca: ca,
            keyUsage: keyUsage, extra: extra)
    }

    /// A self-signed certificate like Xcode's StoreKit testing certificate: CA:TRUE, key usage
    /// digitalSignature + keyCertSign, and extendedKeyUsage codeSigning marked critical.
    func storeKit(key: _RSA.Signing.PrivateKey, serial: UInt8, extra: [Certificate.Extension] = []) throws -> Certificate {
        let name = try DistinguishedName { CommonName("StoreKit") }
        var extensions = try Certificate.Extensions {
            Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
            Critical(KeyUsage(digitalSignature: true, keyCertSign: true))
        }
        try extensions.append(try TestPKI.criticalCodeSigning())
        for ext in extra { try extensions.append(ext) }
        return try TestPKI.selfSigned(
            serial: .init(bytes: [serial]), key: .init(key), name: name,
            validity: (utc("2023-01-01T00:00:00Z"), utc("2043-01-01T00:00:00Z")), extensions: extensions)
    }

    var evaluator: TrustEvaluator { TrustEvaluator(anchors: TrustAnchors(roots: [root])) }
}

/// The P-256 hierarchy for StoreKit 2 JWS.
struct ECHierarchy: Sendable {
    static let shared = Result { try ECHierarchy() }

    let rootKey = P256.Signing.PrivateKey()
    let intermediateKey = P256.Signing.PrivateKey()
    let leafKey = P256.Signing.PrivateKey()
    let rootName: DistinguishedName
    let intermediateName: DistinguishedName
    let leafName: DistinguishedName
    let root: Certificate
    let intermediate: Certificate
    let leaf: Certificate
    let rootDER: [UInt8]
    let intermediateDER: [UInt8]
    let leafDER: [UInt8]

    private init() throws {
        rootName = try TestPKI.name("ReceiptDash Test Root CA - EC", ou: "Test Certification Authority")
        intermediateName = try TestPKI.name("ReceiptDash Test WWDR Intermediate - EC", ou: "G9")
        leafName = try TestPKI.name("ReceiptDash Test StoreKit Signing")
        root = try TestPKI.selfSigned(
            serial: .init(bytes: [0x03]), key: .init(rootKey), name: rootName, validity: TamperClock.rootValidity,
            extensions: try TestPKI.rootExtensions())
        intermediate = try Self.makeIntermediate(
            rootKey: rootKey, rootName: rootName, key: intermediateKey, name: intermediateName)
        leaf = try Self.makeLeaf(
            intermediateKey: intermediateKey, intermediateName: intermediateName, key: leafKey, name: leafName)
        rootDER = try TestPKI.der(root)
        intermediateDER = try TestPKI.der(intermediate)
        leafDER = try TestPKI.der(leaf)
    }

    static func makeLeaf(
        intermediateKey: P256.Signing.PrivateKey, intermediateName: DistinguishedName, key: P256.Signing.PrivateKey,
        name: DistinguishedName, validity: (Date, Date) = TamperClock.leafValidity, marker: Bool = true,
        extra: [Certificate.Extension] = []
    ) throws -> Certificate {
        try TestPKI.certificate(
            serial: .init(bytes: [0x5E, 0x01, 0x02]), publicKey: .init(key.publicKey), validity: validity,
            issuer: intermediateName, subject: name,
            extensions: try TestPKI.leafExtensions(marker: marker, extra: extra), issuerKey: .init(intermediateKey))
    }

    func leaf(
        validity: (Date, Date) = TamperClock.leafValidity, marker: Bool = true, extra: [Certificate.Extension] = []
    ) throws -> Certificate {
        try Self.makeLeaf(
            intermediateKey: intermediateKey, intermediateName: intermediateName, key: leafKey, name: leafName,
            validity: validity, marker: marker, extra: extra)
    }

    /// An intermediate variant: same key, name and issuer as ``intermediate``.
    func intermediate(ca: Bool = true, keyUsage: KeyUsage? = nil) throws -> Certificate {
        try Self.makeIntermediate(
            rootKey: rootKey, rootName: rootName, key: intermediateKey, name: intermediateName, ca: ca, keyUsage: keyUsage)
    }

    static func makeIntermediate(
        rootKey: P256.Signing.PrivateKey, rootName: DistinguishedName, key: P256.Signing.PrivateKey,
        name: DistinguishedName, ca: Bool = true, keyUsage: KeyUsage? = nil
    ) throws -> Certificate {
        try TestPKI.certificate(
            serial: .init(bytes: [0x04, 0x22]), publicKey: .init(key.publicKey), validity: TamperClock.intermediateValidity,
            issuer: rootName, subject: name, extensions: try TestPKI.intermediateExtensions(ca: ca, keyUsage: keyUsage),
            issuerKey: .init(rootKey))
    }

    var evaluator: TrustEvaluator { TrustEvaluator(anchors: TrustAnchors(roots: [root])) }
}

// MARK: - Signed inputs

enum SignedReceipt {
    static let bundleID = "com.example.receiptdash"

    static func oid(_ oid: ASN1ObjectIdentifier) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.serialize(oid)
        return serializer.serializedBytes
    }

    /// `AlgorithmIdentifier { oid, NULL }`.
    static func algorithm(_ id: ASN1ObjectIdentifier) throws -> [UInt8] {
        TestDER.tlv(0x30, try oid(id) + [0x05, 0x00])
    }

    static let sha256: ASN1ObjectIdentifier = [2, 16, 840, 1, 101, 3, 4, 2, 1]
    static let rsaEncryption: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 1, 1]
    static let signedData: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 7, 2]
    static let data: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 7, 1]
    static let contentTypeAttribute: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 9, 3]
    static let messageDigestAttribute: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 9, 4]

    /// The receipt payload: a SET of attributes.
    static func payload(
        receiptType: String = "ProductionSandbox", bundleID: String = bundleID, created: String = TamperClock.signedText,
        opaque: [UInt8]? = nil, sha1: [UInt8]? = nil
    ) -> [UInt8] {
        let purchase = TestDER.tlv(
            0x31,
            TestDER.attribute(1701, TestDER.int(1))
                + TestDER.attribute(1702, TestDER.utf8(Array("com.example.receiptdash.pro".utf8)))
                + TestDER.attribute(1703, TestDER.utf8(Array("2000000512345678".utf8)))
                + TestDER.attribute(1704, TestDER.ia5("2024-02-28T09:30:00Z")))
        var attributes = TestDER.attribute(0, TestDER.utf8(Array(receiptType.utf8)))
        attributes += TestDER.attribute(2, TestDER.utf8(Array(bundleID.utf8)))
        attributes += TestDER.attribute(3, TestDER.utf8(Array("1.4.2".utf8)))
        if let opaque { attributes += TestDER.attribute(4, opaque) }
        if let sha1 { attributes += TestDER.attribute(5, sha1) }
        attributes += TestDER.attribute(12, TestDER.ia5(created))
        attributes += TestDER.attribute(17, purchase)
        return TestDER.tlv(0x31, attributes)
    }

    /// A PKCS#7 SignedData receipt around `payload`, signed by `key` (RSA PKCS#1 v1.5 SHA-256
    /// directly over the payload, no signed attributes, as the App Store does).
    /// With `signedAttributes`, the signer carries contentType and messageDigest attributes and
    /// the signature covers them (RFC 5652 §5.4) instead of the payload.
    static func pkcs7(
        payload: [UInt8], certificates: [[UInt8]], signer: Certificate, key: _RSA.Signing.PrivateKey,
        signedAttributes: Bool = false
    ) throws -> [UInt8] {
        let attributes = TestDER.tlv(0x30, try oid(contentTypeAttribute) + TestDER.tlv(0x31, try oid(data)))
            + TestDER.tlv(
                0x30,
                try oid(messageDigestAttribute)
                    + TestDER.tlv(0x31, TestDER.tlv(0x04, Array(SHA256.hash(data: payload)))))
        let signed = signedAttributes ? TestDER.tlv(0x31, attributes) : payload
        let signature = try key.signature(for: SHA256.hash(data: signed), padding: .insecurePKCS1v1_5)
        var issuer = DER.Serializer()
        try issuer.serialize(signer.issuer)
        let issuerAndSerial = TestDER.tlv(
            0x30, issuer.serializedBytes + TestDER.tlv(0x02, Array(signer.serialNumber.bytes)))
        let signerInfo = TestDER.tlv(
            0x30,
            TestDER.int(1) + issuerAndSerial + (try algorithm(sha256))
                + (signedAttributes ? TestDER.tlv(0xA0, attributes) : []) + (try algorithm(rsaEncryption))
                + TestDER.tlv(0x04, Array(signature.rawRepresentation)))
        let content = TestDER.tlv(0x30, try oid(data) + TestDER.tlv(0xA0, TestDER.tlv(0x04, payload)))
        let signedDataBody = TestDER.tlv(
            0x30,
            TestDER.int(1) + TestDER.tlv(0x31, try algorithm(sha256)) + content
                + TestDER.tlv(0xA0, Array(certificates.joined())) + TestDER.tlv(0x31, signerInfo))
        return TestDER.tlv(0x30, try oid(signedData) + TestDER.tlv(0xA0, signedDataBody))
    }

    /// A receipt signed by the RSA hierarchy's leaf.
    static func make(
        _ pki: RSAHierarchy, payload: [UInt8] = SignedReceipt.payload(), certificates: [[UInt8]]? = nil,
        leaf: Certificate? = nil, signedAttributes: Bool = false
    ) throws -> [UInt8] {
        let leaf = leaf ?? pki.leaf
        return try pkcs7(
            payload: payload, certificates: certificates ?? [try TestPKI.der(leaf), pki.intermediateDER],
            signer: leaf, key: pki.leafKey, signedAttributes: signedAttributes)
    }

    /// `receipt` with the bundle id's "e" of "example" changed to "E": same length, still decodes.
    static func changingBundleID(_ receipt: [UInt8]) throws -> [UInt8] {
        var copy = receipt
        let needle = Array(bundleID.utf8)
        let at = try #require(copy.indices.first { copy[$0...].starts(with: needle) })
        copy[at + 4] = UInt8(ascii: "E")  // com.example… → com.Example…
        return copy
    }
}

enum SignedJWS {

    static func transaction(signedDate: Date = TamperClock.signed, bundleID: String = SignedReceipt.bundleID) -> String {
        let ms = Int64((signedDate.timeIntervalSince1970 * 1000).rounded())
        return #"{"transactionId":"2000000512345678","originalTransactionId":"2000000500000001","#
            + #""productId":"com.example.receiptdash.pro","bundleId":"\#(bundleID)","signedDate":\#(ms),"#
            + #""environment":"Sandbox"}"#
    }

    /// A compact JWS: ES256 header with `x5c`, the payload, and a raw r ‖ s signature over
    /// `header.payload`.
    static func make(payload: String = transaction(), x5c: [[UInt8]], key: P256.Signing.PrivateKey) throws -> String {
        let chain = x5c.map { "\"\(Data($0).base64EncodedString())\"" }.joined(separator: ",")
        let header = #"{"alg":"ES256","x5c":[\#(chain)]}"#
        let signingInput = Base64Text.encodeURL(Array(header.utf8)) + "." + Base64Text.encodeURL(Array(payload.utf8))
        let signature = try key.signature(for: Array(signingInput.utf8))
        return signingInput + "." + Base64Text.encodeURL(signature.rawRepresentation)
    }

    static func make(_ pki: ECHierarchy, payload: String = transaction(), x5c: [[UInt8]]? = nil) throws -> String {
        try make(payload: payload, x5c: x5c ?? [pki.leafDER, pki.intermediateDER, pki.rootDER], key: pki.leafKey)
    }
}

// MARK: - Expectations

fileprivate let pkcs7StepNames = ["structure", "signer certificate", "signature", "leaf certificate", "intermediate", "root", "validity"]
fileprivate let jwsStepNames = ["algorithm", "x5c", "signature", "leaf certificate", "intermediate", "root", "validity"]

/// Every step of `names` with outcome pass, except those in `changed`, then `extra`.
fileprivate func expectedSteps(
    _ names: [String], _ changed: [String: TrustReport.Outcome] = [:], extra: [(String, TrustReport.Outcome)] = []
) -> [String] {
    names.map { "\($0): \((changed[$0] ?? .pass).rawValue)" } + extra.map { "\($0.0): \($0.1.rawValue)" }
}

/// Checks the verdict, each failing step with its code (`name code`), and the full list of
/// steps reported.
fileprivate func expectReport(
    _ report: TrustReport, verdict: TrustReport.Verdict, failing: [String], steps: [String],
    sourceLocation: SourceLocation = #_sourceLocation
) {
    let dump = Comment(rawValue: report.steps.map { "\($0.name) [\($0.outcome.rawValue)] \($0.reason)" }.joined(separator: "\n"))
    #expect(report.verdict == verdict, dump, sourceLocation: sourceLocation)
    #expect(report.steps.filter { $0.outcome == .fail }.map { "\($0.name) \($0.code ?? "<no code>")" } == failing, dump, sourceLocation: sourceLocation)
    #expect(report.steps.map { "\($0.name): \($0.outcome.rawValue)" } == steps, dump, sourceLocation: sourceLocation)
}

fileprivate extension TrustReport {
    func step(_ name: String) -> Step? { steps.first { $0.name == name } }
    func reason(_ name: String) -> String { step(name)?.reason ?? "<no \(name) step>" }
}

fileprivate func evaluate(
    _ bytes: [UInt8], with evaluator: TrustEvaluator, options: TrustOptions = TamperClock.options
) async throws -> TrustReport {
    await evaluator.evaluate(try ReceiptDecoder().decode(bytes), options: options)
}

fileprivate func evaluate(
    _ token: String, with evaluator: TrustEvaluator, options: TrustOptions = TamperClock.options
) async throws -> TrustReport {
    await evaluator.evaluate(try ReceiptDecoder().decode(text: token), options: options)
}

// MARK: - PKCS#7 receipts

@Suite struct TrustTamperingPKCS7Tests {
    private let pki: RSAHierarchy

    init() throws {
        pki = try RSAHierarchy.shared.get()
    }

    @Test func untouchedReceiptIsValid() async throws {
        let words = Wording("trust-tampering")
        let receipt = try SignedReceipt.make(pki)
        let decoded = try ReceiptDecoder().decode(receipt)
        #expect(decoded.receipt?.bundleID == SignedReceipt.bundleID)
        #expect(decoded.receipt?.receiptCreationDate == TamperClock.signed)
        #expect(decoded.receipt?.inApp.first?.productID == "com.example.receiptdash.pro")
        let report = await pki.evaluator.evaluate(decoded, options: TamperClock.options)
        expectReport(report, verdict: .valid, failing: [], steps: expectedSteps(pkcs7StepNames))
        #expect(report.validationTime == TamperClock.signed)
        words.said(report.reason("validity"))
        words.said(report.reason("root"))
        words.check()
    }

    @Test func changedPayloadByteBreaksTheSignature() async throws {
        let words = Wording("trust-tampering")
        let receipt = try SignedReceipt.changingBundleID(try SignedReceipt.make(pki))
        let decoded = try ReceiptDecoder().decode(receipt)
        #expect(decoded.receipt?.bundleID == "com.Example.receiptdash")
        let report = await pki.evaluator.evaluate(decoded, options: TamperClock.options)
        expectReport(
            report, verdict: .invalid, failing: ["signature signature-mismatch"], steps: expectedSteps(pkcs7StepNames, ["signature": .fail]))
        words.said(report.reason("signature"))
        words.check()
    }

    @Test func changedSignatureByteBreaksTheSignature() async throws {
        var receipt = try SignedReceipt.make(pki)
        // The signature OCTET STRING is the last thing in the container.
        receipt[receipt.count - 1] ^= 0x01
        let report = try await evaluate(receipt, with: pki.evaluator)
        expectReport(
            report, verdict: .invalid, failing: ["signature signature-mismatch"], steps: expectedSteps(pkcs7StepNames, ["signature": .fail]))
    }

    /// A byte of the leaf's own signature changed: the intermediate no longer verifies as its
    /// issuer, so the chain stops at "intermediate" (and "root" is skipped). The receipt
    /// signature itself still verifies: the leaf's key is untouched.
    @Test func changedLeafCertificateSignatureFailsAtIntermediate() async throws {
        let words = Wording("trust-tampering")
        let leaf = try TestPKI.tampered(pki.leafDER)
        let receipt = try SignedReceipt.make(pki, certificates: [leaf, pki.intermediateDER])
        let report = try await evaluate(receipt, with: pki.evaluator)
        expectReport(
            report, verdict: .invalid, failing: ["intermediate intermediate-missing"],
            steps: expectedSteps(pkcs7StepNames, ["intermediate": .fail, "root": .skipped]))
        words.said(report.reason("intermediate"))
        words.check()
    }

    /// A byte of the intermediate's signature changed: it still issued the leaf, but the root's
    /// signature on it does not verify.
    @Test func changedIntermediateCertificateSignatureFailsAtRoot() async throws {
        let words = Wording("trust-tampering")
        let intermediate = try TestPKI.tampered(pki.intermediateDER)
        let receipt = try SignedReceipt.make(pki, certificates: [pki.leafDER, intermediate])
        let report = try await evaluate(receipt, with: pki.evaluator)
        expectReport(report, verdict: .invalid, failing: ["root no-trusted-root"], steps: expectedSteps(pkcs7StepNames, ["root": .fail]))
        words.said(report.reason("root"))
        words.check()
    }

    /// One evaluator (one cache) sees the good chain first, then the tampered one: the cached
    /// result for the good intermediate must not leak to its tampered copy.
    @Test func sharedCacheDoesNotHideATamperedCertificate() async throws {
        let evaluator = pki.evaluator
        let good = try await evaluate(try SignedReceipt.make(pki), with: evaluator)
        #expect(good.verdict == .valid)
        let intermediate = try TestPKI.tampered(pki.intermediateDER)
        let tampered = try SignedReceipt.make(pki, certificates: [pki.leafDER, intermediate])
        let report = try await evaluate(tampered, with: evaluator)
        expectReport(report, verdict: .invalid, failing: ["root no-trusted-root"], steps: expectedSteps(pkcs7StepNames, ["root": .fail]))
        let again = try await evaluate(try SignedReceipt.make(pki), with: evaluator)
        #expect(again.verdict == .valid)
    }

    /// With signed attributes the signature covers them, and their messageDigest binds the payload.
    @Test func signedAttributesBindThePayload() async throws {
        let words = Wording("trust-tampering")
        let receipt = try SignedReceipt.make(pki, signedAttributes: true)
        let decoded = try ReceiptDecoder().decode(receipt)
        guard case .pkcs7(let signed) = decoded.signature else {
            Issue.record("not a PKCS#7 receipt")
            return
        }
        #expect(signed.signerInfos.first?.signedAttributesDER?.first == 0x31)
        let report = await pki.evaluator.evaluate(decoded, options: TamperClock.options)
        expectReport(report, verdict: .valid, failing: [], steps: expectedSteps(pkcs7StepNames))

        let changed = try await evaluate(try SignedReceipt.changingBundleID(receipt), with: pki.evaluator)
        expectReport(
            changed, verdict: .invalid, failing: ["signature message-digest-mismatch"], steps: expectedSteps(pkcs7StepNames, ["signature": .fail]))
        words.said(changed.reason("signature"))

        var badSignature = receipt
        badSignature[badSignature.count - 1] ^= 0x01
        let forged = try await evaluate(badSignature, with: pki.evaluator)
        expectReport(
            forged, verdict: .invalid, failing: ["signature signature-mismatch"], steps: expectedSteps(pkcs7StepNames, ["signature": .fail]))
        words.check()
    }

    /// Certificates are a SET: their order does not matter, the signer is found by issuer and
    /// serial number.
    @Test func certificateOrderDoesNotMatter() async throws {
        let words = Wording("trust-tampering")
        let receipt = try SignedReceipt.make(pki, certificates: [pki.intermediateDER, pki.leafDER])
        let decoded = try ReceiptDecoder().decode(receipt)
        guard case .pkcs7(let signed) = decoded.signature else {
            Issue.record("not a PKCS#7 receipt")
            return
        }
        #expect(signed.certificates == [pki.intermediateDER, pki.leafDER])
        let report = await pki.evaluator.evaluate(decoded, options: TamperClock.options)
        expectReport(report, verdict: .valid, failing: [], steps: expectedSteps(pkcs7StepNames))
        words.said(report.reason("signer certificate"))
        words.check()
    }

    @Test func missingIntermediateFailsAtIntermediate() async throws {
        let words = Wording("trust-tampering")
        let receipt = try SignedReceipt.make(pki, certificates: [pki.leafDER])
        let report = try await evaluate(receipt, with: pki.evaluator)
        expectReport(
            report, verdict: .invalid, failing: ["intermediate intermediate-missing"],
            steps: expectedSteps(pkcs7StepNames, ["intermediate": .fail, "root": .skipped]))
        words.said(report.reason("intermediate"))
        words.check()
    }

    /// Our root is not one of Apple's: with the bundled Apple anchors the chain stops at "root".
    @Test func untrustedRootFailsAtRoot() async throws {
        let words = Wording("trust-tampering")
        let receipt = try SignedReceipt.make(pki)
        let report = try await evaluate(receipt, with: TrustEvaluator())
        expectReport(report, verdict: .invalid, failing: ["root no-trusted-root"], steps: expectedSteps(pkcs7StepNames, ["root": .fail]))
        words.said(report.reason("root"))
        words.said(report.reason("root"))
        words.check()
    }

    /// An impostor root with exactly Apple Inc. Root's name: the name matches a bundled root, the
    /// signature does not.
    @Test func impostorRootWithApplesNameFailsAtRoot() async throws {
        let words = Wording("trust-tampering")
        let appleRoot = try #require(TrustAnchors.apple.roots.first { $0.displayName == "Apple Root CA" })
        let intermediate = try RSAHierarchy.makeIntermediate(
            rootKey: pki.rootKey, rootName: appleRoot.subject, key: pki.intermediateKey, name: pki.intermediateName)
        let receipt = try SignedReceipt.make(pki, certificates: [pki.leafDER, try TestPKI.der(intermediate)])
        let report = try await evaluate(receipt, with: TrustEvaluator())
        expectReport(report, verdict: .invalid, failing: ["root no-trusted-root"], steps: expectedSteps(pkcs7StepNames, ["root": .fail]))
        words.said(report.reason("root"))
        words.check()
    }

    @Test func leafWithoutReceiptMarkerFailsAtLeaf() async throws {
        let words = Wording("trust-tampering")
        let leaf = try pki.leaf(marker: false)
        let receipt = try SignedReceipt.make(pki, leaf: leaf)
        let report = try await evaluate(receipt, with: pki.evaluator)
        expectReport(
            report, verdict: .invalid, failing: ["leaf certificate leaf-certificate-invalid"],
            steps: expectedSteps(pkcs7StepNames, ["leaf certificate": .fail]))
        words.said(report.reason("leaf certificate"))
        words.check()
    }

    @Test func intermediateWithoutWWDRMarkerFailsAtIntermediate() async throws {
        let words = Wording("trust-tampering")
        let intermediate = try pki.intermediate(marker: false)
        let receipt = try SignedReceipt.make(pki, certificates: [pki.leafDER, try TestPKI.der(intermediate)])
        let report = try await evaluate(receipt, with: pki.evaluator)
        expectReport(
            report, verdict: .invalid, failing: ["intermediate intermediate-invalid"],
            steps: expectedSteps(pkcs7StepNames, ["intermediate": .fail]))
        words.said(report.reason("intermediate"))
        words.check()
    }

    // MARK: Certificate policies (swift-certificates' Verifier)

    /// basicConstraints CA:FALSE on the intermediate (its key usage still allows keyCertSign,
    /// so basic constraints is the only thing wrong): not an issuer, the step says why.
    @Test func intermediateThatIsNotACAFailsAtIntermediate() async throws {
        let words = Wording("trust-tampering")
        let intermediate = try pki.intermediate(ca: false, keyUsage: KeyUsage(keyCertSign: true, cRLSign: true))
        let receipt = try SignedReceipt.make(pki, certificates: [pki.leafDER, try TestPKI.der(intermediate)])
        let report = try await evaluate(receipt, with: pki.evaluator)
        expectReport(
            report, verdict: .invalid, failing: ["intermediate intermediate-invalid"],
            steps: expectedSteps(pkcs7StepNames, ["intermediate": .fail]))
        words.said(report.reason("intermediate"))
        words.check()
    }

    /// A critical extension nobody enforces on the leaf: RFC 5280 says reject the certificate.
    @Test func leafWithUnknownCriticalExtensionFailsAtLeaf() async throws {
        let words = Wording("trust-tampering")
        let leaf = try pki.leaf(extra: [TestPKI.unknownCritical])
        let receipt = try SignedReceipt.make(pki, leaf: leaf)
        let report = try await evaluate(receipt, with: pki.evaluator)
        expectReport(
            report, verdict: .invalid, failing: ["leaf certificate leaf-certificate-invalid"],
            steps: expectedSteps(pkcs7StepNames, ["leaf certificate": .fail]))
        words.said(report.reason("leaf certificate"))
        // The same extension, not critical, is ignored as RFC 5280 allows.
        var harmless = TestPKI.unknownCritical
        harmless.critical = false
        let relaxed = try await evaluate(try SignedReceipt.make(pki, leaf: try pki.leaf(extra: [harmless])), with: pki.evaluator)
        expectReport(relaxed, verdict: .valid, failing: [], steps: expectedSteps(pkcs7StepNames))
        words.check()
    }

    @Test func intermediateWithUnknownCriticalExtensionFailsAtIntermediate() async throws {
        let words = Wording("trust-tampering")
        let intermediate = try pki.intermediate(extra: [TestPKI.unknownCritical])
        let receipt = try SignedReceipt.make(pki, certificates: [pki.leafDER, try TestPKI.der(intermediate)])
        let report = try await evaluate(receipt, with: pki.evaluator)
        expectReport(
            report, verdict: .invalid, failing: ["intermediate intermediate-invalid"],
            steps: expectedSteps(pkcs7StepNames, ["intermediate": .fail]))
        words.said(report.reason("intermediate"))
        words.check()
    }

    /// A CA whose key usage does not allow certificate signing cannot issue the leaf.
    @Test func intermediateWithoutKeyCertSignFailsAtIntermediate() async throws {
        let words = Wording("trust-tampering")
        let intermediate = try pki.intermediate(keyUsage: KeyUsage(digitalSignature: true, cRLSign: true))
        let receipt = try SignedReceipt.make(pki, certificates: [pki.leafDER, try TestPKI.der(intermediate)])
        let report = try await evaluate(receipt, with: pki.evaluator)
        expectReport(
            report, verdict: .invalid, failing: ["intermediate intermediate-invalid"],
            steps: expectedSteps(pkcs7StepNames, ["intermediate": .fail]))
        words.said(report.reason("intermediate"))
        words.check()
    }

    /// The critical code-signing extendedKeyUsage is accepted on Xcode's StoreKit test root
    /// only: on an Apple-chain leaf it is an unknown critical extension.
    @Test func criticalCodeSigningIsAcceptedForTheStoreKitRootOnly() async throws {
        let words = Wording("trust-tampering")
        let leaf = try pki.leaf(extra: [try TestPKI.criticalCodeSigning()])
        let report = try await evaluate(try SignedReceipt.make(pki, leaf: leaf), with: pki.evaluator)
        expectReport(
            report, verdict: .invalid, failing: ["leaf certificate leaf-certificate-invalid"],
            steps: expectedSteps(pkcs7StepNames, ["leaf certificate": .fail]))
        words.said(report.reason("leaf certificate"))
        words.check()
    }

    /// Only certificates that could issue the leaf are offered to the verifier, self-issued ones
    /// never: a self-signed decoy named like the intermediate is ignored, the real one chains.
    @Test func selfIssuedDecoyNamedLikeTheIntermediateIsIgnored() async throws {
        let words = Wording("trust-tampering")
        let decoy = try TestPKI.selfSigned(
            serial: .init(bytes: [0x66]), key: .init(pki.rootKey), name: pki.intermediateName,
            validity: TamperClock.intermediateValidity, extensions: try TestPKI.intermediateExtensions())
        let decoyDER = try TestPKI.der(decoy)
        let receipt = try SignedReceipt.make(pki, certificates: [pki.leafDER, decoyDER, pki.intermediateDER])
        let report = try await evaluate(receipt, with: pki.evaluator)
        expectReport(report, verdict: .valid, failing: [], steps: expectedSteps(pkcs7StepNames))
        let alone = try await evaluate(
            try SignedReceipt.make(pki, certificates: [pki.leafDER, decoyDER]), with: pki.evaluator)
        expectReport(
            alone, verdict: .invalid, failing: ["intermediate intermediate-missing"],
            steps: expectedSteps(pkcs7StepNames, ["intermediate": .fail, "root": .skipped]))
        words.said(alone.reason("intermediate"))
        words.check()
    }

    /// One evaluator (one cache) judges the same chain at two signing times: the cached chain
    /// result must not carry validity from one to the other.
    @Test func cachedChainIsJudgedAtEachSigningTime() async throws {
        let words = Wording("trust-tampering")
        let evaluator = pki.evaluator
        let before = try await evaluate(try SignedReceipt.make(pki), with: evaluator)
        expectReport(before, verdict: .valid, failing: [], steps: expectedSteps(pkcs7StepNames))
        // Created 2025-07-01: the leaf had expired on 2025-06-01.
        let late = try SignedReceipt.make(pki, payload: SignedReceipt.payload(created: "2025-07-01T00:00:00Z"))
        let after = try await evaluate(late, with: evaluator)
        expectReport(
            after, verdict: .invalid, failing: ["validity not-valid-at-time"], steps: expectedSteps(pkcs7StepNames, ["validity": .fail]))
        words.said(after.reason("validity"))
        let again = try await evaluate(try SignedReceipt.make(pki), with: evaluator)
        #expect(again == before)
        words.check()
    }

    /// Created after the leaf had expired: not valid at signing time.
    @Test func receiptCreatedAfterLeafExpiryFailsValidity() async throws {
        let words = Wording("trust-tampering")
        let leaf = try pki.leaf(validity: (utc("2023-01-01T00:00:00Z"), utc("2024-02-01T00:00:00Z")))
        let receipt = try SignedReceipt.make(pki, leaf: leaf)
        let report = try await evaluate(receipt, with: pki.evaluator)
        expectReport(
            report, verdict: .invalid, failing: ["validity not-valid-at-time"], steps: expectedSteps(pkcs7StepNames, ["validity": .fail]))
        words.said(report.reason("validity"))
        words.check()
    }

    /// Expired since, but valid when the receipt was created: still valid, and the reason says so.
    @Test func leafThatExpiredAfterCreationIsStillValid() async throws {
        let words = Wording("trust-tampering")
        let leaf = try pki.leaf(validity: (utc("2023-01-01T00:00:00Z"), utc("2024-04-01T00:00:00Z")))
        let receipt = try SignedReceipt.make(pki, leaf: leaf)
        let report = try await evaluate(receipt, with: pki.evaluator)
        expectReport(report, verdict: .valid, failing: [], steps: expectedSteps(pkcs7StepNames))
        words.said(report.reason("validity"))
        words.check()
    }

    @Test func leafExpiringSoonAddsAWarning() async throws {
        let words = Wording("trust-tampering")
        let expiry = TamperClock.now.addingTimeInterval(30 * 86_400)
        let leaf = try pki.leaf(validity: (utc("2023-01-01T00:00:00Z"), expiry))
        let receipt = try SignedReceipt.make(pki, leaf: leaf)
        let report = try await evaluate(receipt, with: pki.evaluator)
        expectReport(
            report, verdict: .valid, failing: [],
            steps: expectedSteps(pkcs7StepNames, extra: [("expiry warning", .warning)]))
        words.said(report.reason("expiry warning"))
        // Outside the window: no warning.
        var options = TamperClock.options
        options.expiryWarningDays = 29
        let later = try await evaluate(receipt, with: pki.evaluator, options: options)
        expectReport(later, verdict: .valid, failing: [], steps: expectedSteps(pkcs7StepNames))
        words.check()
    }

    // MARK: Xcode StoreKit testing

    static let xcodeSteps = ["structure", "signer certificate", "signature", "test certificate", "storekit certificate", "validity"]

    @Test func selfSignedStoreKitReceiptIsTest() async throws {
        let words = Wording("trust-tampering")
        let storeKit = try pki.storeKit(key: pki.leafKey, serial: 0x41)
        let storeKitDER = try TestPKI.der(storeKit)
        let receipt = try SignedReceipt.pkcs7(
            payload: SignedReceipt.payload(receiptType: "Xcode"), certificates: [storeKitDER], signer: storeKit,
            key: pki.leafKey)
        let decoded = try ReceiptDecoder().decode(receipt)
        #expect(decoded.receipt?.receiptType == "Xcode")

        let report = await pki.evaluator.evaluate(decoded, options: TamperClock.options)
        expectReport(
            report, verdict: .test, failing: [],
            steps: expectedSteps(Self.xcodeSteps, ["test certificate": .warning, "storekit certificate": .skipped]))

        var mine = TamperClock.options
        mine.storeKitCertificate = storeKitDER
        let checked = await pki.evaluator.evaluate(decoded, options: mine)
        expectReport(
            checked, verdict: .test, failing: [], steps: expectedSteps(Self.xcodeSteps, ["test certificate": .warning]))
        words.said(checked.reason("storekit certificate"))

        // The same key in another certificate (re-exported): accepted by key.
        var sameKey = TamperClock.options
        sameKey.storeKitCertificate = try TestPKI.der(try pki.storeKit(key: pki.leafKey, serial: 0x43))
        #expect(sameKey.storeKitCertificate != storeKitDER)
        let byKey = await pki.evaluator.evaluate(decoded, options: sameKey)
        expectReport(
            byKey, verdict: .test, failing: [], steps: expectedSteps(Self.xcodeSteps, ["test certificate": .warning]))
        words.said(byKey.reason("storekit certificate"))

        // Another project's StoreKit certificate (another key).
        var other = TamperClock.options
        other.storeKitCertificate = try TestPKI.der(try pki.storeKit(key: pki.rootKey, serial: 0x42))
        let wrong = await pki.evaluator.evaluate(decoded, options: other)
        expectReport(
            wrong, verdict: .invalid, failing: ["storekit certificate storekit-certificate-mismatch"],
            steps: expectedSteps(Self.xcodeSteps, ["test certificate": .warning, "storekit certificate": .fail]))
        words.check()
    }

    /// Only the code-signing extendedKeyUsage is accepted on the StoreKit certificate: another
    /// unknown critical extension makes it invalid.
    @Test func storeKitCertificateWithUnknownCriticalExtensionIsInvalid() async throws {
        let words = Wording("trust-tampering")
        let storeKit = try pki.storeKit(key: pki.leafKey, serial: 0x44, extra: [TestPKI.unknownCritical])
        let receipt = try SignedReceipt.pkcs7(
            payload: SignedReceipt.payload(receiptType: "Xcode"), certificates: [try TestPKI.der(storeKit)],
            signer: storeKit, key: pki.leafKey)
        let report = try await evaluate(receipt, with: pki.evaluator)
        expectReport(
            report, verdict: .invalid, failing: ["test certificate xcode-certificate-invalid"],
            steps: expectedSteps(Self.xcodeSteps, ["test certificate": .fail, "storekit certificate": .skipped]))
        words.said(report.reason("test certificate"))
        words.check()
    }

    @Test func storeKitReceiptWithChangedPayloadIsInvalid() async throws {
        let storeKit = try pki.storeKit(key: pki.leafKey, serial: 0x41)
        let receipt = try SignedReceipt.changingBundleID(
            try SignedReceipt.pkcs7(
                payload: SignedReceipt.payload(receiptType: "Xcode"), certificates: [try TestPKI.der(storeKit)],
                signer: storeKit, key: pki.leafKey))
        let report = try await evaluate(receipt, with: pki.evaluator)
        expectReport(
            report, verdict: .invalid, failing: ["signature signature-mismatch"],
            steps: expectedSteps(
                Self.xcodeSteps, ["signature": .fail, "test certificate": .warning, "storekit certificate": .skipped]))
    }

    // MARK: Device hash

    static let deviceUUID = "956328D9-CC6A-47F4-BE40-6953FB0AB6C7"

    @Test func deviceHash() async throws {
        let words = Wording("trust-tampering")
        let uuid = try #require(UUID(uuidString: Self.deviceUUID)).uuid
        let uuidBytes = withUnsafeBytes(of: uuid) { Array($0) }
        #expect(uuidBytes.count == 16 && uuidBytes.first == 0x95 && uuidBytes.last == 0xC7)
        let opaque: [UInt8] = [0x3A, 0x1F, 0x07, 0x9C, 0x55, 0x00, 0xE2, 0x41, 0x8B, 0x20, 0x6D, 0x91, 0x04, 0xBE, 0x77, 0x12]
        let bundleDER = TestDER.utf8(Array(SignedReceipt.bundleID.utf8))
        let hash = Array(Insecure.SHA1.hash(data: uuidBytes + opaque + bundleDER))
        let receipt = try SignedReceipt.make(pki, payload: SignedReceipt.payload(opaque: opaque, sha1: hash))
        let decoded = try ReceiptDecoder().decode(receipt)
        #expect(decoded.receipt?.opaqueValue == opaque)
        #expect(decoded.receipt?.sha1Hash == hash)

        var options = TamperClock.options
        options.deviceIdentifier = DeviceIdentifier(parsing: Self.deviceUUID)
        #expect(options.deviceIdentifier?.bytes == uuidBytes)
        let report = await pki.evaluator.evaluate(decoded, options: options)
        expectReport(
            report, verdict: .valid, failing: [], steps: expectedSteps(pkcs7StepNames, extra: [("device hash", .pass)]))
        words.said(report.reason("device hash"))

        options.deviceIdentifier = DeviceIdentifier(parsing: "00000000-1111-2222-3333-444444444444")
        let other = await pki.evaluator.evaluate(decoded, options: options)
        expectReport(
            other, verdict: .invalid, failing: ["device hash device-hash-mismatch"],
            steps: expectedSteps(pkcs7StepNames, extra: [("device hash", .fail)]))
        #expect(other.step("device hash")?.details.first { $0.name == "expected" }?.value == Hex.encode(hash))
        words.check()
    }

    @Test func deviceHashWithoutTheFieldsIsSkipped() async throws {
        let receipt = try SignedReceipt.make(pki)
        var options = TamperClock.options
        options.deviceIdentifier = DeviceIdentifier(parsing: Self.deviceUUID)
        let report = try await evaluate(receipt, with: pki.evaluator, options: options)
        expectReport(
            report, verdict: .valid, failing: [],
            steps: expectedSteps(pkcs7StepNames, extra: [("device hash", .skipped)]))
    }
}

// MARK: - StoreKit 2 JWS

@Suite struct TrustTamperingJWSTests {
    private let pki: ECHierarchy

    init() throws {
        pki = try ECHierarchy.shared.get()
    }

    static func parts(_ token: String) -> [String] {
        token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    }

    @Test func untouchedTokenIsValid() async throws {
        let words = Wording("trust-tampering-jws")
        let token = try SignedJWS.make(pki)
        let decoded = try ReceiptDecoder().decode(text: token)
        #expect(decoded.format == .jwsTransaction)
        #expect(decoded.transactions.first?.productID == "com.example.receiptdash.pro")
        let report = await pki.evaluator.evaluate(decoded, options: TamperClock.options)
        expectReport(report, verdict: .valid, failing: [], steps: expectedSteps(jwsStepNames))
        #expect(report.validationTime == TamperClock.signed)
        words.said(report.reason("validity"))
        words.check()
    }

    @Test func changedPayloadBreaksTheSignature() async throws {
        let token = try SignedJWS.make(pki)
        var parts = Self.parts(token)
        parts[1] = Base64Text.encodeURL(Array(SignedJWS.transaction(bundleID: "com.Example.receiptdash").utf8))
        let tampered = parts.joined(separator: ".")
        let decoded = try ReceiptDecoder().decode(text: tampered)
        #expect(decoded.transactions.first?.bundleID == "com.Example.receiptdash")
        let report = await pki.evaluator.evaluate(decoded, options: TamperClock.options)
        expectReport(
            report, verdict: .invalid, failing: ["signature signature-mismatch"], steps: expectedSteps(jwsStepNames, ["signature": .fail]))
    }

    @Test func changedSignatureByteBreaksTheSignature() async throws {
        let token = try SignedJWS.make(pki)
        var parts = Self.parts(token)
        var signature = try Base64Text.decode(Array(parts[2].utf8))
        #expect(signature.count == 64)
        signature[63] ^= 0x01
        parts[2] = Base64Text.encodeURL(signature)
        let report = try await evaluate(parts.joined(separator: "."), with: pki.evaluator)
        expectReport(
            report, verdict: .invalid, failing: ["signature signature-mismatch"], steps: expectedSteps(jwsStepNames, ["signature": .fail]))
    }

    @Test func changedLeafCertificateSignatureFailsAtIntermediate() async throws {
        let token = try SignedJWS.make(pki, x5c: [try TestPKI.tampered(pki.leafDER), pki.intermediateDER, pki.rootDER])
        let report = try await evaluate(token, with: pki.evaluator)
        expectReport(
            report, verdict: .invalid, failing: ["intermediate intermediate-missing"],
            steps: expectedSteps(jwsStepNames, ["intermediate": .fail, "root": .skipped]))
    }

    @Test func changedIntermediateCertificateSignatureFailsAtRoot() async throws {
        let token = try SignedJWS.make(pki, x5c: [pki.leafDER, try TestPKI.tampered(pki.intermediateDER), pki.rootDER])
        let report = try await evaluate(token, with: pki.evaluator)
        expectReport(report, verdict: .invalid, failing: ["root no-trusted-root"], steps: expectedSteps(jwsStepNames, ["root": .fail]))
    }

    /// x5c is ordered, leaf first: with x5c[0] and x5c[1] swapped the "leaf" is the
    /// intermediate, whose key did not sign the token, which lacks the leaf marker, and whose
    /// issuer (the root) is not x5c[1].
    @Test func swappedX5CIsInvalid() async throws {
        let token = try SignedJWS.make(pki, x5c: [pki.intermediateDER, pki.leafDER, pki.rootDER])
        let report = try await evaluate(token, with: pki.evaluator)
        expectReport(
            report, verdict: .invalid, failing: ["signature signature-mismatch", "leaf certificate leaf-certificate-invalid", "intermediate intermediate-missing"],
            steps: expectedSteps(
                jwsStepNames,
                ["signature": .fail, "leaf certificate": .fail, "intermediate": .fail, "root": .skipped]))
    }

    @Test func missingIntermediateFailsAtIntermediate() async throws {
        for x5c in [[pki.leafDER, pki.rootDER], [pki.leafDER]] {
            let token = try SignedJWS.make(pki, x5c: x5c)
            let report = try await evaluate(token, with: pki.evaluator)
            expectReport(
                report, verdict: .invalid, failing: ["intermediate intermediate-missing"],
                steps: expectedSteps(jwsStepNames, ["intermediate": .fail, "root": .skipped]))
        }
    }

    @Test func untrustedRootFailsAtRoot() async throws {
        let token = try SignedJWS.make(pki)
        let report = try await evaluate(token, with: TrustEvaluator())
        expectReport(report, verdict: .invalid, failing: ["root no-trusted-root"], steps: expectedSteps(jwsStepNames, ["root": .fail]))
    }

    /// `--root-ca`: the same chain, with its root added as a test anchor to Apple's, is `test`
    /// (the root step a warning saying so), never `valid`; everything else is checked as for
    /// Apple's roots.
    @Test func chainToAnAddedTestRootIsTest() async throws {
        let words = Wording("trust-tampering-jws")
        let anchors = try TrustAnchors.apple.addingTestRoots([pki.rootDER])
        let evaluator = TrustEvaluator(anchors: anchors)
        let report = try await evaluate(try SignedJWS.make(pki), with: evaluator)
        expectReport(report, verdict: .test, failing: [], steps: expectedSteps(jwsStepNames, ["root": .warning]))
        words.said(report.reason("root"))

        var parts = Self.parts(try SignedJWS.make(pki))
        parts[1] = Base64Text.encodeURL(Array(SignedJWS.transaction(bundleID: "com.Example.receiptdash").utf8))
        let tampered = try await evaluate(parts.joined(separator: "."), with: evaluator)
        #expect(tampered.verdict == .invalid)
        #expect(tampered.steps.first { $0.name == "signature" }?.outcome == .fail)
        words.check()
    }

    @Test func leafWithoutMarkerFailsAtLeaf() async throws {
        let leaf = try pki.leaf(marker: false)
        let token = try SignedJWS.make(pki, x5c: [try TestPKI.der(leaf), pki.intermediateDER, pki.rootDER])
        let report = try await evaluate(token, with: pki.evaluator)
        expectReport(
            report, verdict: .invalid, failing: ["leaf certificate leaf-certificate-invalid"],
            steps: expectedSteps(jwsStepNames, ["leaf certificate": .fail]))
    }

    @Test func leafWithUnknownCriticalExtensionFailsAtLeaf() async throws {
        let words = Wording("trust-tampering-jws")
        let leaf = try pki.leaf(extra: [TestPKI.unknownCritical])
        let token = try SignedJWS.make(pki, x5c: [try TestPKI.der(leaf), pki.intermediateDER, pki.rootDER])
        let report = try await evaluate(token, with: pki.evaluator)
        expectReport(
            report, verdict: .invalid, failing: ["leaf certificate leaf-certificate-invalid"],
            steps: expectedSteps(jwsStepNames, ["leaf certificate": .fail]))
        words.said(report.reason("leaf certificate"))
        words.check()
    }

    @Test func intermediateThatIsNotACAFailsAtIntermediate() async throws {
        let words = Wording("trust-tampering-jws")
        let intermediate = try pki.intermediate(ca: false, keyUsage: KeyUsage(keyCertSign: true, cRLSign: true))
        let token = try SignedJWS.make(pki, x5c: [pki.leafDER, try TestPKI.der(intermediate), pki.rootDER])
        let report = try await evaluate(token, with: pki.evaluator)
        expectReport(
            report, verdict: .invalid, failing: ["intermediate intermediate-invalid"],
            steps: expectedSteps(jwsStepNames, ["intermediate": .fail]))
        words.said(report.reason("intermediate"))
        words.check()
    }

    @Test func signedAfterLeafExpiryFailsValidity() async throws {
        let words = Wording("trust-tampering-jws")
        let leaf = try pki.leaf(validity: (utc("2023-01-01T00:00:00Z"), utc("2024-02-01T00:00:00Z")))
        let token = try SignedJWS.make(pki, x5c: [try TestPKI.der(leaf), pki.intermediateDER, pki.rootDER])
        let report = try await evaluate(token, with: pki.evaluator)
        expectReport(
            report, verdict: .invalid, failing: ["validity not-valid-at-time"], steps: expectedSteps(jwsStepNames, ["validity": .fail]))
        words.said(report.reason("validity"))
        words.check()
    }

    static func notification(signedTransactionInfo: String) -> String {
        let ms = Int64((TamperClock.signed.timeIntervalSince1970 * 1000).rounded())
        return #"{"notificationType":"DID_RENEW","notificationUUID":"3f1b4d52-8f0e-4c1e-9a53-6a2d1f0c7b11","#
            + #""version":"2.0","signedDate":\#(ms),"data":{"bundleId":"\#(SignedReceipt.bundleID)","#
            + #""environment":"Sandbox","signedTransactionInfo":"\#(signedTransactionInfo)"}}"#
    }

    /// A genuine notification carrying a nested transaction token: the nested token is checked
    /// on its own, and a forged one makes the whole notification invalid.
    @Test func nestedTransactionIsCheckedToo() async throws {
        let inner = try SignedJWS.make(pki)
        let outer = try SignedJWS.make(pki, payload: Self.notification(signedTransactionInfo: inner))
        let decoded = try ReceiptDecoder().decode(text: outer)
        #expect(decoded.format == .jwsNotification)
        #expect(decoded.nested.count == 1)
        let report = await pki.evaluator.evaluate(decoded, options: TamperClock.options)
        expectReport(
            report, verdict: .valid, failing: [],
            steps: expectedSteps(jwsStepNames, extra: [("nested data.signedTransactionInfo", .pass)]))

        // The inner token's payload changed before the (genuine) outer token was signed.
        var parts = Self.parts(inner)
        parts[1] = Base64Text.encodeURL(Array(SignedJWS.transaction(bundleID: "com.Example.receiptdash").utf8))
        let forgedOuter = try SignedJWS.make(
            pki, payload: Self.notification(signedTransactionInfo: parts.joined(separator: ".")))
        let forged = try await evaluate(forgedOuter, with: pki.evaluator)
        expectReport(
            forged, verdict: .invalid, failing: ["nested data.signedTransactionInfo nested-signature-mismatch"],
            steps: expectedSteps(jwsStepNames, extra: [("nested data.signedTransactionInfo", .fail)]))
        let details = forged.step("nested data.signedTransactionInfo")?.details ?? []
        #expect(details.map(\.name) == ["signature"])
    }
}

/// Every failed trust step says why with a code; the header and signature faults of a JWS, and
/// an unsigned transaction receipt, each have their own.
@Suite struct TrustFailureCodesTests {
    private let pki: ECHierarchy

    init() throws {
        pki = try ECHierarchy.shared.get()
    }

    /// The token with its header's JSON changed by `edit`, the payload and signature kept.
    func token(editingHeader edit: (inout [String: JSONValue]) -> Void) throws -> String {
        var parts = TrustTamperingJWSTests.parts(try SignedJWS.make(pki))
        var header = try #require(try JSONValue.parse(Base64Text.decode(Array(parts[0].utf8))).object)
        edit(&header)
        parts[0] = Base64Text.encodeURL(Array(JSONValue.object(header).compactJSON.utf8))
        return parts.joined(separator: ".")
    }

    func failureCodes(_ token: String) async throws -> [String] {
        let report = await pki.evaluator.evaluate(try ReceiptDecoder().decode(text: token), options: TamperClock.options)
        return report.steps.filter { $0.outcome == .fail }.map { "\($0.name) \($0.code ?? "<no code>")" }
    }

    @Test func anotherAlgorithmIsNamedByItsCode() async throws {
        let codes = try await failureCodes(try token { $0["alg"] = .string("HS256") })
        // The header is signed too: changing it breaks the signature as well.
        #expect(codes == ["algorithm algorithm-not-es256", "signature signature-mismatch"])
    }

    @Test func aMissingOrUnreadableChainIsNamedByItsCode() async throws {
        let missing = try await failureCodes(try token { $0["x5c"] = nil })
        #expect(missing.first == "x5c x5c-missing")
        let unreadable = try await failureCodes(try token { header in
            var chain = header["x5c"]?.array ?? []
            chain[0] = .string("bm90IGEgY2VydGlmaWNhdGU=")
            header["x5c"] = .array(chain)
        })
        #expect(unreadable.first == "x5c x5c-unreadable")
    }

    @Test func aSignatureOfTheWrongLengthIsNamedByItsCode() async throws {
        var parts = TrustTamperingJWSTests.parts(try SignedJWS.make(pki))
        parts[2] = Base64Text.encodeURL([UInt8](repeating: 7, count: 10))
        #expect(try await failureCodes(parts.joined(separator: ".")) == ["signature signature-wrong-length"])
    }

    @Test func anUnsignedTransactionReceiptIsNamedByItsCode() async throws {
        let legacy = #"{"purchase-info" = "ewoJInByb2R1Y3QtaWQiID0gImNvbS5leGFtcGxlIjsKfQ=="; "environment" = "Sandbox"; "pod" = "100"; "signing-status" = "0";}"#
        let decoded = try ReceiptDecoder().decode(text: legacy)
        let report = await pki.evaluator.evaluate(decoded, options: TamperClock.options)
        #expect(report.verdict == .invalid)
        #expect(report.steps.map { "\($0.name) \($0.code ?? "<no code>")" } == ["signature unsigned"])
    }
}
