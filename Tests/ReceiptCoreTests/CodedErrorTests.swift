import Testing
import TestSupport
@testable import AppStoreAPI
@testable import ReceiptCore
@testable import ReceiptTrust

/// The codes of ``CodedError`` errors print the names they printed before they were enums
/// (JSON output, the audit store's code columns and messages carry them), and errors compare by
/// code alone.
@Suite struct CodedErrorTests {
    @Test func codeDescriptionsAreTheStableNames() {
        let words = Wording("coded-error")
        #expect(ReceiptDecodingError.Code.invalidPKCS7.description == "invalid PKCS#7")
        words.said(ReceiptDecodingError.Code.invalidLegacyReceipt.description)
        #expect("\(ReceiptDecodingError.Code.emptyInput)" == "empty input")
        #expect(VerificationError.Code.insecureEndpoint.description == "insecure endpoint")
        #expect(APICredentialError.Code.invalidAppAppleID.description == "invalid-app-apple-id")
        #expect(APIFailure.Code.retryBudgetExhausted.description == "retry-budget-exhausted")
        #expect(APIFailure.Code.unauthorized.description == "unauthorized")
        #expect(VerificationFailure.Code.notVerified.description == "not-verified")
        #expect("\(TransportFailure.Code.invalidResponse)" == "invalid-response")
        words.check()
    }

    /// What the audit store wrote with the old codes reads back as the same code.
    @Test func storedNamesRoundTrip() {
        for code in APIFailure.Code.allCases { #expect(APIFailure.Code(storedName: code.description) == code) }
        for code in VerificationFailure.Code.allCases { #expect(VerificationFailure.Code(storedName: code.description) == code) }
        for code in TransportFailure.Code.allCases { #expect(TransportFailure.Code(storedName: code.description) == code) }
        #expect(TransportFailure.Code(storedName: "no-such-code") == nil)
    }

    @Test func equalityAndHashingUseTheCodeOnly() {
        let a = ReceiptDecodingError(.invalidJSON, "one wording", offset: 3)
        let b = ReceiptDecodingError(.invalidJSON, "another wording")
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(a != ReceiptDecodingError(.invalidJWS, "one wording", offset: 3))
        #expect(APIFailure(.http, "HTTP 404") == APIFailure(.http, "HTTP 403"))
        #expect(Set([VerificationError(.invalidEndpoint, "x"), VerificationError(.invalidEndpoint, "y")]).count == 1)
    }

    @Test func descriptionsAreUnchanged() {
        let words = Wording("coded-error")
        // The reason, except where a type composes its own (the decoding error names its code).
        words.said(APICredentialError(.missing, "no key id").description)
        #expect(ReceiptDecodingError(.invalidBase64, "base64 is empty").description == "invalid base64: base64 is empty")
        #expect(TransportFailure(.refused).description == "connection refused")
        #expect(TransportFailure(.refused).reason == "connection refused")
        #expect(TransportFailure(.timeout, detail: "read").description == "timed out (read)")
        words.check()
    }
}

/// Trust steps are decided on by kind; their printed names (the kinds' raw values) are a
/// contract of `inspect --format json` and the text output.
@Suite struct TrustStepKindTests {
    @Test func kindsPrintTheNamesTheyAlwaysHad() {
        let expected: [TrustReport.StepKind: String] = [
            .structure: "structure", .signerCertificate: "signer certificate", .signatureBlob: "signature blob",
            .signature: "signature", .certificate: "certificate", .chain: "chain", .testCertificate: "test certificate",
            .storekitCertificate: "storekit certificate", .deviceHash: "device hash", .algorithm: "algorithm", .x5c: "x5c",
            .leafCertificate: "leaf certificate", .intermediate: "intermediate", .root: "root", .validity: "validity",
            .expiryWarning: "expiry warning", .bundle: "bundle", .environment: "environment", .signedItems: "signed items",
        ]
        for (kind, name) in expected {
            #expect(TrustReport.Step(kind, outcome: .pass, reason: "").name == name)
            #expect(TrustReport.StepKind(rawValue: name) == kind)
        }
    }

    @Test func namesWithASubject() {
        #expect(TrustReport.Step(.nested, subject: "signedTransactionInfo", outcome: .pass, reason: "").name == "nested signedTransactionInfo")
        #expect(TrustReport.Step(.lookedUpItem, subject: "transaction 2000 (pro)", outcome: .fail, reason: "").name == "transaction 2000 (pro)")
    }

    /// The headline's test-root wording is chosen by the root step's kind and outcome.
    @Test func headlineDecidesOnTheRootKind() {
        let words = Wording("coded-error")
        let testRoot = TrustReport(verdict: .test, steps: [.init(.root, outcome: .warning, reason: "a --root-ca root")])
        words.said(testRoot.headline)
        let storeKit = TrustReport(verdict: .test, steps: [.init(.testCertificate, outcome: .warning, reason: "StoreKit")])
        words.said(storeKit.headline)
        words.check()
    }
}
