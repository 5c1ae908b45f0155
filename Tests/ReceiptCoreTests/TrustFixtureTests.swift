import Foundation
import Testing
import TestSupport
@testable import ReceiptCore
@testable import ReceiptTrust

/// Trust verdicts on the bundled fixtures, judged at a fixed "now" (2026-11-22), with the
/// expectations the corpus manifest records (openssl's signature and chain results).
@Suite struct TrustFixtureTests {
    let evaluator = TrustEvaluator()
    let options = TrustOptions(now: utc("2026-11-22T00:00:00Z"))

    func report(_ name: String, options: TrustOptions? = nil) async throws -> TrustReport {
        await evaluator.evaluate(try ReceiptDecoder().decode(try Fixture.bytes(name)), options: options ?? self.options)
    }

    func outcome(_ report: TrustReport, _ step: String) -> TrustReport.Outcome? {
        report.steps.first { $0.name == step }?.outcome
    }

    @Test func productionReceiptIsValidAtCreationDespiteExpiredLeaf() async throws {
        let words = Wording("trust-fixture")
        let r = try await report("production.b64")
        #expect(r.verdict == .valid)
        #expect(r.steps.map(\.name) == [
            "structure", "signer certificate", "signature", "leaf certificate", "intermediate", "root", "validity",
        ])
        #expect(r.steps.allSatisfy { $0.outcome == .pass })
        #expect(r.validationTime == utc("2024-02-23T17:27:16Z"))
        // The leaf expired 2024-10-01 (manifest: Sep 2 2022 .. Oct 1 2024): judged at creation it was valid.
        words.said(r.steps.last?.reason)
        #expect(r.steps.first { $0.name == "intermediate" }?.reason.contains("(G5)") == true)
        words.said(r.headline)
        words.check()
    }

    /// Receipts signed by one certificate share their chain: its steps are worded once and
    /// read after, in reports equal to those a fresh cache gives. A receipt whose signature does
    /// not verify reads that table but never adds to it.
    @Test func aReceiptChainIsJudgedOnceAndRememberedOnlyForASignedReceipt() async throws {
        let genuine = try Fixture.bytes("sandbox-2023.der")
        var forged = genuine
        forged[forged.count - 1] ^= 0x01  // the last byte of the signer's RSA signature
        let cache = TrustCache()
        let evaluator = TrustEvaluator(cache: cache)
        let decoder = ReceiptDecoder()
        let forgedCold = await evaluator.evaluate(try decoder.decode(forged), options: options)
        #expect(forgedCold.verdict == .invalid)
        #expect(forgedCold.firstFailure?.name == "signature")
        #expect(cache.sizes.receiptChains == 0)
        let cold = await evaluator.evaluate(try decoder.decode(genuine), options: options)
        #expect(cold.verdict == .valid)
        #expect(cache.sizes.receiptChains == 1)
        let warm = await evaluator.evaluate(try decoder.decode(genuine), options: options)
        #expect(cache.sizes.receiptChains == 1)
        #expect(warm == cold)
        #expect(await TrustEvaluator(cache: TrustCache()).evaluate(try decoder.decode(genuine), options: options) == cold)
        // The forged receipt, judged again with the chain remembered, reads as it did.
        #expect(await evaluator.evaluate(try decoder.decode(forged), options: options) == forgedCold)
        #expect(cache.sizes.receiptChains == 1)
    }

    /// Manifest: digest=sha1, sigOK, chain to Apple Root at creation OK.
    @Test func sha1SandboxReceiptIsValid() async throws {
        let r = try await report("sandbox-2023.der")
        #expect(r.verdict == .valid)
        #expect(r.steps.first { $0.name == "signature" }?.details.first { $0.name == "digest" }?.value == "sha1")
    }

    @Test func xcodeReceiptIsTestData() async throws {
        let r = try await report("xcode.der")
        #expect(r.verdict == .test)
        #expect(outcome(r, "signature") == .pass)
        #expect(outcome(r, "test certificate") == .warning)
        #expect(outcome(r, "storekit certificate") == .skipped)
        var withCert = options
        withCert.storeKitCertificate = try Fixture.bytes("StoreKitTestCertificate.der")
        let checked = try await report("xcode.der", options: withCert)
        #expect(checked.verdict == .test)
        #expect(outcome(checked, "storekit certificate") == .pass)
        var wrongCert = options
        wrongCert.storeKitCertificate = try Fixture.der("production.b64")  // not a certificate at all
        let wrong = try await report("xcode.der", options: wrongCert)
        #expect(wrong.verdict == .invalid)
        #expect(wrong.firstFailure?.name == "storekit certificate")
    }

    /// TPInAppReceipt: the G5 sandbox receipt's hash matches UUID 956328D9-…, not the zero UUID.
    @Test func deviceHash() async throws {
        var good = options
        good.deviceIdentifier = DeviceIdentifier(parsing: "956328D9-CC6A-47F4-BE40-6953FB0AB6C7")
        let matched = try await report("sandbox-g5.der", options: good)
        #expect(matched.verdict == .valid)
        #expect(outcome(matched, "device hash") == .pass)
        var bad = options
        bad.deviceIdentifier = DeviceIdentifier(parsing: "00000000-0000-0000-0000-000000000000")
        let mismatched = try await report("sandbox-g5.der", options: bad)
        #expect(mismatched.verdict == .invalid)
        #expect(mismatched.firstFailure?.name == "device hash")
    }

    @Test func legacyReceiptSignatureVerifiesButChainCannotBeCompletedOffline() async throws {
        let words = Wording("trust-fixture")
        let r = try await report("legacy-sandbox.b64")
        #expect(r.verdict == .unverifiable)
        #expect(outcome(r, "signature") == .pass)
        #expect(outcome(r, "certificate") == .pass)
        #expect(outcome(r, "chain") == .warning)
        #expect(outcome(r, "validity") == .pass)
        words.said(r.headline)
        words.check()
    }

    @Test func tamperedLegacyPurchaseInfoFailsTheSignature() async throws {
        var decoded = try ReceiptDecoder().decode(try Fixture.bytes("legacy-sandbox.b64"))
        guard case .legacy(let blob, var info) = decoded.signature else { Issue.record("no signature"); return }
        let index = try #require(info.firstIndex(of: UInt8(ascii: "7")))
        info[index] = UInt8(ascii: "8")
        decoded.signature = .legacy(signatureBlob: blob, purchaseInfo: info)
        let r = await evaluator.evaluate(decoded, options: options)
        #expect(r.verdict == .invalid)
        #expect(r.firstFailure?.name == "signature")
    }

    @Test func notificationAndItsNestedTokensAreValid() async throws {
        let words = Wording("trust-fixture")
        let r = try await report("notification-v2.jws")
        #expect(r.verdict == .valid)
        #expect(outcome(r, "nested data.signedTransactionInfo") == .pass)
        #expect(outcome(r, "nested data.signedRenewalInfo") == .pass)
        #expect(r.validationTime?.timeIntervalSince1970 == 1_759_302_518.835)
        #expect(r.steps.first { $0.name == "intermediate" }?.reason.contains("(G6)") == true)
        words.said(r.steps.first { $0.name == "root" }?.reason)
        words.check()
    }

    @Test func tamperedJWSPayloadFailsTheSignature() async throws {
        let text = try Fixture.text("notification-v2.jws").trimmingCharacters(in: .whitespacesAndNewlines)
        var parts = text.split(separator: ".").map(String.init)
        var payload = try Base64Text.decode(Array(parts[1].utf8))
        let index = try #require(payload.firstIndex(of: UInt8(ascii: "5")))
        payload[index] = UInt8(ascii: "6")
        parts[1] = Data(payload).base64EncodedString().replacingOccurrences(of: "=", with: "")
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        let r = await evaluator.evaluate(try ReceiptDecoder().decode(text: parts.joined(separator: ".")), options: options)
        #expect(r.verdict == .invalid)
        #expect(r.firstFailure?.name == "signature")
        #expect(r.steps.contains { $0.name == "root" && $0.outcome == .pass }, "later steps still run")
    }

    @Test func xcodeAppTransactionIsTestData() async throws {
        let r = try await report("xcode-app-transaction.jws")
        #expect(r.verdict == .test)
        #expect(outcome(r, "signature") == .pass)
        #expect(r.validationTimeSource == "receiptCreationDate")
    }

    @Test func unsignedInputsAreUnverifiable() async throws {
        let r = try await report("verify-response.json")
        #expect(r.verdict == .unverifiable)
        #expect(r.steps.map(\.outcome) == [.skipped])
    }

    @Test func expiryWarningWithin90Days() async throws {
        // The G5 sandbox receipt's leaf expires 2026-08-23: "now" = 2026-07-01 is within 90 days.
        let r = try await report("sandbox-g5.der", options: TrustOptions(now: utc("2026-07-01T00:00:00Z")))
        #expect(r.verdict == .valid)
        let warning = try #require(r.steps.first { $0.name == "expiry warning" })
        #expect(warning.outcome == .warning)
        #expect(warning.reason.contains("expires 2026-08-23 (in 53 days)"))
        #expect(try await report("sandbox-g5.der").steps.contains { $0.name == "expiry warning" } == false)
    }
}
