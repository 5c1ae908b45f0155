import Foundation
import ReceiptCore
import UntrustedText

/// Why an offer signature could not be made. Equality compares only the ``Code``; ``reason``
/// says in words what to fix (it may quote a value, never the key). A key that cannot be
/// loaded is an ``APICredentialError``.
public struct OfferSignatureError: CodedError {
    public enum Code: String, CaseIterable, CodedErrorCode {
        /// The product id is empty, too long, or holds control or invisible characters.
        case invalidProductID = "invalid-product-id"
        /// The offer id is empty, too long, or holds control or invisible characters.
        case invalidOfferID = "invalid-offer-id"
        /// The application username is too long, or holds control or invisible characters.
        case invalidApplicationUsername = "invalid-application-username"
        /// The nonce is not a UUID.
        case invalidNonce = "invalid-nonce"
        /// The transaction id is not digits.
        case invalidTransactionID = "invalid-transaction-id"
        /// The instant is before 1970 (no UNIX timestamp).
        case invalidTimestamp = "invalid-timestamp"
        /// Signing failed.
        case signingFailed = "signing-failed"
    }

    public let code: Code
    public let reason: String

    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }
}

/// The checks every value of an offer signature passes before anything is signed: what an app
/// could not use (an empty product id, a nonce that is no UUID) is refused here, in words that
/// say what to give instead.
public enum OfferValues {
    /// The longest product id, offer id or application username accepted, in characters.
    public static let maximumLength = 256
    /// The longest transaction id accepted, in digits (Apple's are 15 to 19).
    public static let maximumTransactionIDDigits = 32

    /// A product id as App Store Connect has it.
    public static func productID(_ text: String) throws(OfferSignatureError) -> String {
        try identifier(text, what: "the product id", code: .invalidProductID)
    }

    /// A promotional offer's identifier as App Store Connect has it.
    public static func offerID(_ text: String) throws(OfferSignatureError) -> String {
        try identifier(text, what: "the offer id", code: .invalidOfferID)
    }

    /// The application username (the app account token, or any text the app passes to StoreKit;
    /// may be empty). Returned as given: the signature lowercases it.
    public static func applicationUsername(_ text: String) throws(OfferSignatureError) -> String {
        if let problem = problem(text) {
            throw OfferSignatureError(.invalidApplicationUsername, "the application username \(problem)")
        }
        return text
    }

    /// A nonce: a UUID in its 8-4-4-4-12 hexadecimal form (either case).
    public static func nonce(_ text: String) throws(OfferSignatureError) -> UUID {
        guard text.utf8.count == 36, let uuid = UUID(uuidString: text) else {
            throw OfferSignatureError(
                .invalidNonce, "the nonce must be a UUID such as 3f2b9c4e-8a1d-4e6f-9b0a-1c2d3e4f5a6b, not \(quoted(text))")
        }
        return uuid
    }

    /// A transaction id (any of the customer's, the appTransactionId included): digits.
    public static func transactionID(_ text: String) throws(OfferSignatureError) -> String {
        guard !text.isEmpty, text.utf8.count <= maximumTransactionIDDigits, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
            throw OfferSignatureError(
                .invalidTransactionID, "the transaction id takes digits only (e.g. 2000000123456789), not \(quoted(text))")
        }
        return text
    }

    private static func identifier(_ text: String, what: String, code: OfferSignatureError.Code) throws(OfferSignatureError) -> String {
        if text.trimmingCharacters(in: .whitespaces).isEmpty { throw OfferSignatureError(code, "\(what) is empty") }
        if let problem = problem(text) { throw OfferSignatureError(code, "\(what) \(problem)") }
        return text
    }

    /// What is wrong with `text` as a signed field, or nil: too long, or a control or invisible
    /// character (U+2063, the separator of version 1's fields, among them).
    private static func problem(_ text: String) -> String? {
        if text.count > maximumLength { return "is longer than \(maximumLength) characters" }
        if let scalar = text.unicodeScalars.first(where: { [.control, .format].contains($0.properties.generalCategory) }) {
            return "holds a control or invisible character (U+\(String(scalar.value, radix: 16, uppercase: true))): type it again by hand"
        }
        return nil
    }

    /// `text` in quotes, escaped and cut short, for a message.
    private static func quoted(_ text: String) -> String {
        "\"" + SafeText.escaped(text.count > 64 ? String(text.prefix(64)) + "…" : text) + "\""
    }
}
