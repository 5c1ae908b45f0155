import Foundation
import Testing
@testable import ReceiptCore
@testable import ReceiptTrust

/// Trust verdicts for every signed file in the shared corpus, against what the corpus tooling
/// recorded with openssl (`sigOK`, `chain->AppleRoot(…atCreation:OK)`, `signature valid`,
/// `sigcheck=valid`) and the file-name conventions (`MOCK_`, `TEST_`, `DERIVED_`).
@Suite(.enabled(if: SharedCorpus.isAvailable, "needs ../shared/corpus beside the package (the team's corpus); core tests use the copies in Tests/")) struct TrustCorpusTests {
    let evaluator = TrustEvaluator()
    let options = TrustOptions(now: utc("2026-11-22T00:00:00Z"))

    /// The file's report; every failed step of it carries a code (tampered files included).
    func report(_ path: String, options: TrustOptions? = nil) async throws -> TrustReport {
        let report = await evaluator.evaluate(try ReceiptDecoder().decode(try SharedCorpus.bytes(path)), options: options ?? self.options)
        for step in report.steps where step.outcome == .fail {
            #expect(step.code != nil, "\(path): \(step.name) failed without a code: \(step.reason)")
        }
        return report
    }

    @Test func everyPKCS7Receipt() async throws {
        let files = SharedCorpus.files(in: "pkcs7", suffix: ".der").filter { !$0.contains("/DERIVED_") && !$0.contains("/TAMPERED_") }
        #expect(files.count >= 30)
        var counts: [TrustReport.Verdict: Int] = [:]
        for path in files {
            let notes = SharedCorpus.notes[path] ?? ""
            let r = try await report(path)
            counts[r.verdict, default: 0] += 1
            #expect(notes.contains("sigOK"), "\(path): manifest has no sigOK")
            if notes.contains("chain->StoreKitTestCert(now:OK,atCreation:OK)") {
                #expect(r.verdict == .test, "\(path): \(r.headline)")
                var withCert = options
                withCert.storeKitCertificate = try SharedCorpus.bytes("certs/StoreKitTestCertificate.der")
                let checked = try await report(path, options: withCert)
                #expect(checked.steps.first { $0.name == "storekit certificate" }?.outcome == .pass, "\(path)")
            } else {
                #expect(notes.contains("chain->AppleRoot(now:fail,atCreation:OK)"), "\(path): unexpected manifest chain")
                #expect(r.verdict == .valid, "\(path): \(r.headline)")
                #expect(r.steps.allSatisfy { $0.outcome == .pass || $0.name == "expiry warning" }, "\(path)")
            }
        }
        #expect(counts[.test, default: 0] >= 5)
    }

    /// Wherever a source test gave a device identifier that matches, the hash step passes with
    /// it and fails with the others.
    @Test func deviceHashesRecordedInTheManifest() async throws {
        var checked = 0
        for path in SharedCorpus.files(in: "pkcs7", suffix: ".der") {
            let notes = SharedCorpus.notes[path] ?? ""
            guard let range = notes.range(of: "-> MATCH ") else { continue }
            let uuid = String(notes[range.upperBound...].prefix(36))
            var options = self.options
            options.deviceIdentifier = DeviceIdentifier(parsing: uuid)
            #expect(try await report(path, options: options).steps.first { $0.name == "device hash" }?.outcome == .pass, "\(path)")
            options.deviceIdentifier = DeviceIdentifier(parsing: "0E02AA79-F31C-4C74-A12C-7B2816C494D3")
            #expect(try await report(path, options: options).steps.first { $0.name == "device hash" }?.outcome == .fail, "\(path)")
            checked += 1
        }
        #expect(checked >= 3)
    }

    @Test func everyJWS() async throws {
        let files = SharedCorpus.files(in: "jws", suffix: ".jws")
        #expect(files.count >= 20)
        for path in files {
            let notes = SharedCorpus.notes[path] ?? ""
            let r = try await report(path)
            let name = (path as NSString).lastPathComponent
            if name.hasPrefix("MOCK_") {
                // Signed by the App Store Server Library's own test PKI, not Apple.
                #expect(r.verdict == .invalid, "\(path)")
                let expectedFailure = name.contains("missingX5C") ? "x5c" : "root"
                #expect(r.firstFailure?.name == expectedFailure, "\(path): \(r.headline)")
            } else if name.contains("xcode") {
                #expect(r.verdict == .test, "\(path): \(r.headline)")
            } else {
                #expect(notes.contains("signature valid"), "\(path): manifest does not record a valid signature")
                #expect(r.verdict == .valid, "\(path): \(r.headline)")
            }
        }
    }

    @Test func everyLegacyReceipt() async throws {
        for path in SharedCorpus.files(in: "legacy", suffix: ".b64") {
            let notes = SharedCorpus.notes[path] ?? ""
            let r = try await report(path)
            if notes.contains("sigcheck=valid") {
                // Apple's signature verifies; the issuing CA is not published, so the chain
                // cannot be completed offline, and the report says so rather than passing.
                #expect(r.verdict == .unverifiable, "\(path): \(r.headline)")
                #expect(r.steps.first { $0.name == "signature" }?.outcome == .pass, "\(path)")
                #expect(r.steps.first { $0.name == "chain" }?.outcome == .warning, "\(path)")
            } else {
                #expect(path.contains("/MOCK_"), "\(path): no sigcheck=valid but not a MOCK either")
                #expect(r.verdict == .invalid, "\(path): \(r.headline)")
            }
        }
    }

    /// The trust report never depends on "now" except for the expiry warning.
    @Test func verdictsDoNotDependOnNow() async throws {
        for path in ["pkcs7/tikhop_receipt-sandbox-legacy.der", "jws/go-iap_signedRenewalInfo_sandbox_2000000335310644.jws"] {
            let early = try await report(path, options: TrustOptions(now: utc("2020-01-01T00:00:00Z")))
            let late = try await report(path, options: TrustOptions(now: utc("2040-01-01T00:00:00Z")))
            #expect(early.verdict == .valid)
            #expect(late.verdict == .valid)
        }
    }
}
