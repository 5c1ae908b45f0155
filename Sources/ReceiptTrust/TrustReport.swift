import Foundation
import ReceiptCore

/// The answer to "is this receipt genuine?", step by step.
///
/// Every step runs and is reported, even after one fails, so a support engineer sees all that
/// is wrong at once. The verdict and outcome names are a contract (`inspect --format json`
/// prints them): add, never rename.
public struct TrustReport: Sendable, Hashable {
    /// The overall answer.
    public enum Verdict: String, Sendable, Hashable, Codable {
        /// A genuine Apple signature whose chain to an Apple root was valid at signing time.
        case valid
        /// Signed by Xcode's StoreKit testing certificate: test data, never genuine.
        case test
        /// A signature, chain, OID or structure check failed; the steps say which and why.
        case invalid
        /// Nothing to verify (a bare verifyReceipt response), or the chain cannot be completed
        /// offline.
        case unverifiable
    }

    /// How one step ended.
    public enum Outcome: String, Sendable, Hashable, Codable {
        case pass, fail, skipped, warning
    }

    /// What a step checks. The raw values are the step names `inspect --format json` and the
    /// text output print (a contract: add, never rename); code decides on the kind, never on
    /// the printed name.
    public enum StepKind: String, Sendable, Hashable, CaseIterable {
        case structure
        case signerCertificate = "signer certificate"
        case signatureBlob = "signature blob"
        case signature
        case certificate
        case chain
        case testCertificate = "test certificate"
        case storekitCertificate = "storekit certificate"
        case deviceHash = "device hash"
        case algorithm
        case x5c
        case leafCertificate = "leaf certificate"
        case intermediate
        case root
        case validity
        case expiryWarning = "expiry warning"
        /// A look-up item's `bundleId` against the bundle asked about.
        case bundle
        /// A look-up item's environment against the one asked.
        case environment
        /// A nested token's verdict; the step's name is `nested <field>` (its `subject`).
        case nested
        /// The dashboard's look-up summary when every signed item is genuine.
        case signedItems = "signed items"
        /// One untrusted item of the dashboard's look-up summary; the step's name is the
        /// item's description (its `subject`).
        case lookedUpItem = "looked-up item"
        /// OCSP about the leaf and the intermediate (`--online-checks` only).
        case onlineCheck = "online check"
    }

    /// One check.
    public struct Step: Sendable, Hashable {
        public var kind: StepKind
        /// The particular a `nested` (the field) or `lookedUpItem` (the item) step is about.
        public var subject: String?
        public var outcome: Outcome
        /// One line in plain words.
        public var reason: String
        /// Certificate subjects, serials, validity windows, algorithms, …
        public var details: [Field]
        /// Why, as a stable code for programs: every failed step has one (`signature-mismatch`,
        /// `ocsp-revoked`, …); a step that passed or was skipped has none, except the online
        /// check's, which says what the responder answered.
        public var code: String?

        public init(
            _ kind: StepKind, subject: String? = nil, outcome: Outcome, reason: String, details: [Field] = [],
            code: String? = nil
        ) {
            self.kind = kind
            self.subject = subject
            self.outcome = outcome
            self.reason = reason
            self.details = details
            self.code = code
        }

        /// A failed check, with the code that says why (kebab-case, stable: programs and tests
        /// compare it; the reason is for people).
        public init(_ kind: StepKind, failing code: String, reason: String, details: [Field] = []) {
            self.init(kind, outcome: .fail, reason: reason, details: details, code: code)
        }

        /// The printed name, e.g. `signature`, `chain`, `nested signedTransactionInfo`: for
        /// output only, never for decisions (use `kind`).
        public var name: String {
            switch kind {
            case .nested: "nested \(subject ?? "")"
            case .lookedUpItem: subject ?? kind.rawValue
            default: kind.rawValue
            }
        }
    }

    public var verdict: Verdict
    public var steps: [Step]
    /// The instant certificate validity was judged at (receipt creation, JWS `signedDate`).
    public var validationTime: Date?
    /// What the validation time is (e.g. "receipt creation").
    public var validationTimeSource: String?
    /// With online checks: whether asking again later may give another answer (the responder
    /// could not be reached, answered late or `tryLater`); the verdict is then `unverifiable`.
    /// Nil when no online check was asked for.
    public var retryable: Bool?

    public init(verdict: Verdict, steps: [Step], validationTime: Date? = nil, validationTimeSource: String? = nil) {
        self.verdict = verdict
        self.steps = steps
        self.validationTime = validationTime
        self.validationTimeSource = validationTimeSource
    }

    /// The first failing step, if any.
    public var firstFailure: Step? { steps.first { $0.outcome == .fail } }

    /// One line for a status bar or summary: the verdict and why.
    public var headline: String {
        switch verdict {
        case .valid:
            // One string made at its size: a notification's report asks this of each nested
            // token's, and the concatenation made three or four strings.
            var line = "valid: genuine Apple signature"
            line.reserveCapacity(80)
            if let time = validationTime {
                line += ", chain valid on "
                line += AppleDate.calendarDay(time)
            }
            if let source = validationTimeSource {
                line += " ("
                line += source
                line += ")"
            }
            return line
        case .test:
            if steps.contains(where: { $0.kind == .root && $0.outcome == .warning }) {
                return "test: chains to a root given for test data (--root-ca), not to Apple's: never from the App Store"
            }
            return "test: signed by Xcode's StoreKit testing certificate, not by the App Store"
        case .invalid: return "invalid: " + (firstFailure.map { "\($0.name): \($0.reason)" } ?? "a check failed")
        case .unverifiable:
            let online = retryable == true ? steps.first(where: { $0.kind == .onlineCheck && $0.outcome == .warning }) : nil
            let step = online ?? steps.first(where: { $0.outcome == .warning || $0.outcome == .skipped })
            return "unverifiable: " + (step?.reason ?? "nothing to verify")
        }
    }
}
