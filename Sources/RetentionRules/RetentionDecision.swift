import RuleFiles
import AppStoreAPI
import AuditTrail
import Foundation
import ReceiptCore

/// A realtime request as the rules see it, with what the trail knows of its customer. A
/// count the trail does not know is nil, and a rule that asks for it does not match.
public struct RetentionAsk: Sendable, Hashable {
    public var originalTransactionID: String
    public var productID: String
    public var locale: String
    /// `Production` or `Sandbox`, as Apple signed it.
    public var environment: String
    public var monthsSubscribed: Int?
    public var offersRedeemed: Int?
    public var refunds: Int?

    /// The request's ids with what the trail knows of the customer at `now`.
    public init(originalTransactionID: String, productID: String, locale: String, environment: String, facts: RetentionFacts?, now: Date) {
        self.init(
            originalTransactionID: originalTransactionID, productID: productID, locale: locale, environment: environment,
            monthsSubscribed: facts?.monthsSubscribed(at: now), offersRedeemed: facts.flatMap { $0.known ? $0.offersRedeemed : nil },
            refunds: facts.flatMap { $0.known ? $0.refunds : nil })
    }

    public init(
        originalTransactionID: String, productID: String, locale: String, environment: String, monthsSubscribed: Int? = nil,
        offersRedeemed: Int? = nil, refunds: Int? = nil
    ) {
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.locale = locale
        self.environment = environment
        self.monthsSubscribed = monthsSubscribed
        self.offersRedeemed = offersRedeemed
        self.refunds = refunds
    }
}

/// The content states the responder answers by: only an `APPROVED` message, with an
/// `APPROVED` image when it shows one, is ever named to Apple.
public struct ApprovedContent: Sendable, Hashable {
    /// Upper-cased ids.
    public var messages: [String: String]
    public var images: [String: String]
    /// A message's image, where the trail knows it.
    public var imageOfMessage: [String: String]

    public init(messages: [String: String] = [:], images: [String: String] = [:], imageOfMessage: [String: String] = [:]) {
        self.messages = messages
        self.images = images
        self.imageOfMessage = imageOfMessage
    }

    /// What the trail last read of one environment's images and messages.
    public init(_ items: [RetentionContentItem]) {
        self.init()
        for item in items {
            let id = item.identifier.uppercased()
            switch item.kind {
            case .message:
                messages[id] = item.state
                if let image = item.imageIdentifier { imageOfMessage[id] = image.uppercased() }
            case .image:
                images[id] = item.state
            }
        }
    }

    /// Why `messageID` cannot be shown, nil when it can.
    public func refusal(_ messageID: String) -> String? {
        let id = messageID.uppercased()
        guard let state = messages[id] else {
            return "message \(id) is not known to the trail as APPROVED (run receiptdash messaging status to record what Apple holds)"
        }
        guard state == "APPROVED" else { return "message \(id) is \(state), not APPROVED" }
        if let image = imageOfMessage[id] {
            let imageState = images[image] ?? "not known to the trail"
            if imageState != "APPROVED" { return "message \(id) shows image \(image), which is \(imageState), not APPROVED" }
        }
        return nil
    }
}

/// What the responder answers one request, and why.
public struct RetentionDecision: Sendable, Hashable {
    public var result: RetentionResult
    public var reason: String
    public var rule: String?
    public var answerKind: String?
    public var messageID: String?
    /// The HTTP 200 body: a RealtimeResponseBody with one key, or `{}` (nothing usable: Apple
    /// shows the default message).
    public var body: [UInt8]

    public static let emptyBody = Array("{}".utf8)
}

extension RetentionRule {
    /// Whether this rule matches `ask`: every key it sets holds.
    public func matches(_ ask: RetentionAsk) -> Bool {
        if !products.isEmpty, !products.contains(where: { ProductGlob.matches($0, ask.productID) }) { return false }
        if !locales.isEmpty, !locales.contains(where: { Self.locale($0, covers: ask.locale) }) { return false }
        if !environments.isEmpty, !environments.contains(ask.environment) { return false }
        for (range, value) in [(monthsSubscribed, ask.monthsSubscribed), (offersRedeemed, ask.offersRedeemed), (refunds, ask.refunds)] {
            guard let range else { continue }
            guard let value, range.contains(value) else { return false }
        }
        return true
    }

    /// `fr` covers `fr`, `fr-CA` and `fr_CA`; `fr-CA` covers `fr-CA` only. Apple's locale
    /// codes are case-sensitive, and so is this.
    static func locale(_ rule: String, covers locale: String) -> Bool {
        if rule == locale { return true }
        guard !rule.contains("-"), !rule.contains("_") else { return false }
        return locale.hasPrefix(rule + "-") || locale.hasPrefix(rule + "_")
    }
}

extension RetentionRules {
    /// The first rule that matches, in file order.
    public func firstMatch(_ ask: RetentionAsk) -> RetentionRule? {
        rules.first { $0.matches(ask) }
    }

    /// The whole decision: the first rule that matches, its message checked against what
    /// Apple approved, its offer signed (with `nonce` at `now`).
    public func decide(_ ask: RetentionAsk, approved: ApprovedContent, signer: OfferSigner?, nonce: UUID, now: Date) -> RetentionDecision {
        guard let rule = firstMatch(ask) else {
            return RetentionDecision(
                result: .noMatch, reason: "no rule matches \(ask.productID) in \(ask.locale) (\(ask.environment))", body: RetentionDecision.emptyBody)
        }
        let answer = rule.answer
        if let refusal = approved.refusal(answer.messageID) {
            return RetentionDecision(
                result: .notApproved, reason: "rule \(rule.name): \(refusal)", rule: rule.name, answerKind: answer.kind, messageID: answer.messageID,
                body: RetentionDecision.emptyBody)
        }
        let key: String
        var fields: [String: JSONValue] = ["messageIdentifier": .string(answer.messageID)]
        switch answer {
        case .message:
            key = "message"
        case .alternateProduct(_, let product, let plan):
            key = "alternateProduct"
            fields["productId"] = .string(product)
            if let plan { fields["billingPlanType"] = .string(plan) }
        case .promotionalOffer(let id, let offer, let version):
            key = "promotionalOffer"
            guard let signer else {
                return RetentionDecision(
                    result: .fault, reason: "rule \(rule.name): no offer key to sign with", rule: rule.name, answerKind: answer.kind, messageID: id,
                    body: RetentionDecision.emptyBody)
            }
            do throws(OfferSignatureError) {
                switch version {
                case .v2:
                    // For retention, transactionId is required: the request's original transaction.
                    let jws = try signer.promotionalJWS(
                        productID: ask.productID, offerID: offer, transactionID: ask.originalTransactionID, nonce: nonce, at: now)
                    fields["promotionalOfferSignatureV2"] = .string(jws.compact)
                case .v1:
                    let signature = try signer.promotional(productID: ask.productID, offerID: offer, applicationUsername: "", nonce: nonce, at: now)
                    fields["promotionalOfferSignatureV1"] = .object([
                        "encodedSignature": .string(signature.signature), "productId": .string(signature.productID),
                        "nonce": .string(signature.nonceText), "timestamp": .integer(signature.timestamp), "keyId": .string(signature.keyID),
                        "offerIdentifier": .string(signature.offerID),
                    ])
                }
            } catch {
                return RetentionDecision(
                    result: .fault, reason: "rule \(rule.name): the offer could not be signed: \(error.reason)", rule: rule.name,
                    answerKind: answer.kind, messageID: id, body: RetentionDecision.emptyBody)
            }
        }
        // Exactly one key, the others left out (never null), as Apple's encoder writes it.
        let body = Array(JSONValue.object([key: .object(fields)]).compactJSON.utf8)
        return RetentionDecision(
            result: .offered, reason: "rule \(rule.name): \(answer.kind) \(answer.messageID)", rule: rule.name, answerKind: answer.kind,
            messageID: answer.messageID, body: body)
    }
}
