import RuleFiles
import Foundation

/// One `[[rule]]` of a retention rules file: what it matches, and what it answers.
public struct RetentionRule: Sendable, Hashable {
    /// What Apple is answered with (the realtime response's one key).
    public enum Answer: Sendable, Hashable {
        /// `{"message": {"messageIdentifier"}}`.
        case message(messageID: String)
        /// `{"alternateProduct": {"messageIdentifier", "productId", "billingPlanType"?}}`.
        case alternateProduct(messageID: String, productID: String, billingPlanType: String?)
        /// `{"promotionalOffer": {"messageIdentifier", "promotionalOfferSignatureV2" | "…V1"}}`,
        /// signed for the request's product and original transaction.
        case promotionalOffer(messageID: String, offerID: String, signature: SignatureVersion)

        /// `message`, `alternate-product`, `promotional-offer`: the rules file's and the trail's name.
        public var kind: String {
            switch self {
            case .message: "message"
            case .alternateProduct: "alternate-product"
            case .promotionalOffer: "promotional-offer"
            }
        }

        public var messageID: String {
            switch self {
            case .message(let id), .alternateProduct(let id, _, _), .promotionalOffer(let id, _, _): id
            }
        }
    }

    public enum SignatureVersion: String, Sendable, Hashable { case v1, v2 }

    public var name: String
    /// The 1-based line of its `[[rule]]` header.
    public var line: Int
    /// Product id globs (`*`, `?`); empty matches any.
    public var products: [String] = []
    /// Locales: `fr` matches `fr`, `fr-CA`, `fr-FR`; `fr-CA` matches `fr-CA` only. Empty matches any.
    public var locales: [String] = []
    /// `Production`, `Sandbox`; empty matches any.
    public var environments: [String] = []
    public var monthsSubscribed: CountRange?
    public var offersRedeemed: CountRange?
    public var refunds: CountRange?
    public var answer: Answer

    public init(name: String, line: Int, answer: Answer) {
        self.name = name
        self.line = line
        self.answer = answer
    }
}
