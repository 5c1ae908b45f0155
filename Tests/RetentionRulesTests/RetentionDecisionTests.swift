import AppStoreAPI
import AuditTrail
import Crypto
import Foundation
import ReceiptCore
import RetentionRules
import Testing
import TestSupport

/// Which rule answers a realtime request, and the exact body Apple gets: offers signed so that
/// swift-crypto verifies them with the key's public half.
@Suite struct RetentionDecisionTests {
    static let message = RetentionRulesFileTests.message
    static let other = RetentionRulesFileTests.other
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let nonce = UUID(uuidString: "3DB5C98D-8ACF-4E29-831E-8E1F82F9F6E9")!
    static let key = P256.Signing.PrivateKey()
    static let signer = OfferSigner(
        APICredentials(issuerID: "57246542-96fe-1a63-e053-0824d011072a", keyID: "2X9R4HXF34", privateKey: APIPrivateKey(key), bundleID: "com.example.app"))

    static func rules(signature: String = "v2") throws -> RetentionRules {
        let text = RetentionRulesFileTests.good.replacingOccurrences(of: "offer = \"loyal_month_free\"", with: "offer = \"loyal_month_free\"\nsignature = \"\(signature)\"")
        return try RetentionRules.parse(text, path: "rules.toml")
    }

    static let approved = ApprovedContent(messages: [message: "APPROVED", other: "APPROVED"])

    static func ask(
        product: String = "com.example.monthly", locale: String = "fr-CA", environment: String = "Production", months: Int? = 14, offers: Int? = 0,
        refunds: Int? = 0
    ) -> RetentionAsk {
        RetentionAsk(
            originalTransactionID: "2000000123", productID: product, locale: locale, environment: environment, monthsSubscribed: months,
            offersRedeemed: offers, refunds: refunds)
    }

    struct Case: CustomTestStringConvertible, Sendable {
        var label: String
        var ask: RetentionAsk
        var rule: String?
        var body: String?
        var testDescription: String { label }
    }

    static let cases: [Case] = [
        // fr-CA falls back to the rule's fr.
        Case(label: "loyal in fr-CA", ask: ask(), rule: "loyal-month-free", body: nil),
        Case(label: "loyal in en-US", ask: ask(locale: "en-US"), rule: "loyal-month-free", body: nil),
        Case(
            label: "en-GB is not en-US", ask: ask(locale: "en-GB"), rule: "switch-to-yearly",
            body: #"{"alternateProduct":{"billingPlanType":"MONTHLY","messageIdentifier":"0F1E2D3C-4B5A-4968-8776-A5B4C3D2E1F0","productId":"com.example.yearly"}}"#),
        Case(
            label: "a refund", ask: ask(refunds: 1), rule: "switch-to-yearly",
            body: #"{"alternateProduct":{"billingPlanType":"MONTHLY","messageIdentifier":"0F1E2D3C-4B5A-4968-8776-A5B4C3D2E1F0","productId":"com.example.yearly"}}"#),
        Case(
            label: "months unknown to the trail", ask: ask(months: nil), rule: "switch-to-yearly",
            body: #"{"alternateProduct":{"billingPlanType":"MONTHLY","messageIdentifier":"0F1E2D3C-4B5A-4968-8776-A5B4C3D2E1F0","productId":"com.example.yearly"}}"#),
        Case(
            label: "sandbox", ask: ask(environment: "Sandbox", offers: 2), rule: "everyone-else",
            body: #"{"message":{"messageIdentifier":"8D5A1C2E-4B6F-4E21-9A3B-5C7D9E1F2A3B"}}"#),
        Case(
            label: "yearly", ask: ask(product: "com.example.yearly"), rule: "everyone-else",
            body: #"{"message":{"messageIdentifier":"8D5A1C2E-4B6F-4E21-9A3B-5C7D9E1F2A3B"}}"#),
    ]

    @Test(arguments: cases) func theFirstRuleThatMatchesAnswers(_ c: Case) throws {
        let decision = try Self.rules().decide(c.ask, approved: Self.approved, signer: Self.signer, nonce: Self.nonce, now: Self.now)
        #expect(decision.rule == c.rule)
        #expect(decision.result == .offered)
        if let body = c.body { #expect(String(decoding: decision.body, as: UTF8.self) == body) }
    }

    @Test func aPromotionalOfferIsSignedAsV2ForTheOriginalTransaction() throws {
        let decision = try Self.rules().decide(Self.ask(), approved: Self.approved, signer: Self.signer, nonce: Self.nonce, now: Self.now)
        let body = try JSONValue.parse(decision.body)
        let offer = try #require(body.object?["promotionalOffer"]?.object)
        #expect(Set(body.object!.keys) == ["promotionalOffer"])
        #expect(offer["messageIdentifier"]?.text == Self.message)
        #expect(offer["promotionalOfferSignatureV1"] == nil)
        let v2 = try #require(offer["promotionalOfferSignatureV2"]?.text)
        let jwt = try DecodedJWT(v2)
        #expect(jwt.verifies(with: Self.key.publicKey))
        #expect(jwt.header.object?["kid"]?.text == "2X9R4HXF34")
        #expect(jwt.header.object?["alg"]?.text == "ES256")
        let claims = try #require(jwt.claims.object)
        #expect(claims["aud"]?.text == "promotional-offer")
        #expect(claims["transactionId"]?.text == "2000000123")
        #expect(claims["productId"]?.text == "com.example.monthly")
        #expect(claims["offerIdentifier"]?.text == "loyal_month_free")
        #expect(claims["bid"]?.text == "com.example.app")
        #expect(claims["nonce"]?.text == "3db5c98d-8acf-4e29-831e-8e1f82f9f6e9")
        #expect(claims["iat"]?.int64 == 1_800_000_000)
    }

    @Test func aPromotionalOfferIsSignedAsV1WhenTheRuleSaysSo() throws {
        let decision = try Self.rules(signature: "v1").decide(Self.ask(), approved: Self.approved, signer: Self.signer, nonce: Self.nonce, now: Self.now)
        let parsed = try JSONValue.parse(decision.body)
        let offer = try #require(parsed.object?["promotionalOffer"]?.object)
        let v1 = try #require(offer["promotionalOfferSignatureV1"]?.object)
        #expect(offer["promotionalOfferSignatureV2"] == nil)
        #expect(v1["nonce"]?.text == "3db5c98d-8acf-4e29-831e-8e1f82f9f6e9")
        #expect(v1["timestamp"]?.int64 == 1_800_000_000_000)
        #expect(v1["keyId"]?.text == "2X9R4HXF34")
        #expect(v1["offerIdentifier"]?.text == "loyal_month_free")
        #expect(v1["productId"]?.text == "com.example.monthly")
        #expect(v1["appAccountToken"] == nil)
        // bundle ⁣ key ⁣ product ⁣ offer ⁣ token ⁣ nonce ⁣ timestamp, joined by U+2063.
        let signed = ["com.example.app", "2X9R4HXF34", "com.example.monthly", "loyal_month_free", "", "3db5c98d-8acf-4e29-831e-8e1f82f9f6e9", "1800000000000"]
            .joined(separator: "\u{2063}")
        let encoded = try #require(v1["encodedSignature"]?.text)
        let der = try #require(Data(base64Encoded: encoded))
        let signature = try P256.Signing.ECDSASignature(derRepresentation: der)
        #expect(Self.key.publicKey.isValidSignature(signature, for: Data(signed.utf8)))
    }

    @Test func nothingUsableIsAnsweredWithoutAMatchOrAnApprovedMessage() throws {
        let rules = try Self.rules()
        let noMatch = try RetentionRules.parse(
            "[[rule]]\nname = \"yearly only\"\nproduct = \"com.example.yearly\"\nanswer = \"message\"\nmessage = \"\(Self.message)\"\n", path: "r.toml"
        ).decide(Self.ask(), approved: Self.approved, signer: nil, nonce: Self.nonce, now: Self.now)
        #expect(noMatch.result == .noMatch && noMatch.rule == nil && noMatch.body == Array("{}".utf8))

        let pending = rules.decide(
            Self.ask(product: "com.example.yearly"), approved: ApprovedContent(messages: [Self.message: "PENDING"]), signer: Self.signer, nonce: Self.nonce,
            now: Self.now)
        #expect(pending.result == .notApproved && pending.rule == "everyone-else" && pending.body == Array("{}".utf8))

        let unknown = rules.decide(Self.ask(product: "com.example.yearly"), approved: ApprovedContent(), signer: Self.signer, nonce: Self.nonce, now: Self.now)
        #expect(unknown.result == .notApproved)

        let image = "11111111-2222-4333-8444-555555555555"
        let imagePending = rules.decide(
            Self.ask(product: "com.example.yearly"),
            approved: ApprovedContent(messages: [Self.message: "APPROVED"], images: [image: "PENDING"], imageOfMessage: [Self.message: image]),
            signer: Self.signer, nonce: Self.nonce, now: Self.now)
        #expect(imagePending.result == .notApproved)

        let unsigned = rules.decide(Self.ask(), approved: Self.approved, signer: nil, nonce: Self.nonce, now: Self.now)
        #expect(unsigned.result == .fault && unsigned.body == Array("{}".utf8))
    }

    @Test func theTrailsFactsBecomeTheAsk() {
        let first = Self.now.addingTimeInterval(-400 * 86_400)
        let known = RetentionAsk(
            originalTransactionID: "1", productID: "p", locale: "fr", environment: "Production",
            facts: RetentionFacts(firstSeen: first, offersRedeemed: 2, refunds: 1, known: true), now: Self.now)
        #expect(known.monthsSubscribed == 13 && known.offersRedeemed == 2 && known.refunds == 1)
        let unknown = RetentionAsk(
            originalTransactionID: "1", productID: "p", locale: "fr", environment: "Production",
            facts: RetentionFacts(firstSeen: nil, offersRedeemed: 0, refunds: 0, known: false), now: Self.now)
        #expect(unknown.monthsSubscribed == nil && unknown.offersRedeemed == nil && unknown.refunds == nil)
    }
}
