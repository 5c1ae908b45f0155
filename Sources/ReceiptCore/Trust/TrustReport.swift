import Foundation

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

    /// One check.
    public struct Step: Sendable, Hashable {
        /// A short stable name, e.g. `signature`, `chain`, `validity`.
        public var name: String
        public var outcome: Outcome
        /// One line in plain words.
        public var reason: String
        /// Certificate subjects, serials, validity windows, algorithms, …
        public var details: [Field]

        public init(name: String, outcome: Outcome, reason: String, details: [Field] = []) {
            self.name = name
            self.outcome = outcome
            self.reason = reason
            self.details = details
        }
    }

    public var verdict: Verdict
    public var steps: [Step]
    /// The instant certificate validity was judged at (receipt creation, JWS `signedDate`).
    public var validationTime: Date?
    /// What the validation time is (e.g. "receipt creation").
    public var validationTimeSource: String?

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
            return "valid: genuine Apple signature"
                + (validationTime.map { ", chain valid on \(AppleDate.iso8601($0).prefix(10))" } ?? "")
                + (validationTimeSource.map { " (\($0))" } ?? "")
        case .test:
            if steps.contains(where: { $0.name == "root" && $0.outcome == .warning }) {
                return "test: chains to a root given for test data (--root-ca), not to Apple's: never from the App Store"
            }
            return "test: signed by Xcode's StoreKit testing certificate, not by the App Store"
        case .invalid: return "invalid: " + (firstFailure.map { "\($0.name): \($0.reason)" } ?? "a check failed")
        case .unverifiable:
            return "unverifiable: "
                + (steps.first { $0.outcome == .warning || $0.outcome == .skipped }?.reason ?? "nothing to verify")
        }
    }
}
