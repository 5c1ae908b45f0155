import AppStoreAPI
import Foundation
import JSONWriting
import ReceiptCore
import UntrustedText

/// What `receiptdash offer-signature` prints: one fact a line (`name: value`, ready to paste
/// into a test app), or one JSON object whose keys never change. No key material: only the
/// key id.
public enum OfferSignatureRendering {
    // MARK: Version 1

    /// The version 1 signature, a fact a line, with how long Apple accepts it.
    public static func text(_ offer: PromotionalOfferSignature) -> String {
        lines([
            ("kind", "promotional offer signature, version 1 (ECDSA P-256 SHA-256, DER, base64)"),
            ("bundle id", offer.bundleID),
            ("key id", offer.keyID),
            ("product id", offer.productID),
            ("offer id", offer.offerID),
            ("application username", offer.applicationUsername),
            ("nonce", offer.nonceText),
            ("timestamp", String(offer.timestamp)),
            ("signature", offer.signature),
            ("valid until", "\(AppleDate.iso8601(offer.validUntil)) (Apple accepts a version 1 signature for 24 h after its timestamp)"),
        ])
    }

    /// `{"type":"promotional","bundle_id","key_id","product_id","offer_id",
    /// "application_username","nonce","timestamp","signature","valid_until"}`: also the body
    /// the simulator's `POST /offers/verify` takes.
    public static func json(_ offer: PromotionalOfferSignature) -> String {
        var out = JSONOutput()
        out.beginObject()
        out.member("type", "promotional")
        out.member("bundle_id", offer.bundleID)
        out.member("key_id", offer.keyID)
        out.member("product_id", offer.productID)
        out.member("offer_id", offer.offerID)
        out.member("application_username", offer.applicationUsername)
        out.member("nonce", offer.nonceText)
        out.member("timestamp", offer.timestamp)
        out.member("signature", offer.signature)
        out.member("valid_until", AppleDate.iso8601(offer.validUntil))
        out.endObject()
        out.newline()
        return String(decoding: out.bytes, as: UTF8.self)
    }

    // MARK: JWS

    /// The `type` of a JWS's JSON (the subcommand that makes it).
    public static func type(_ kind: OfferJWSKind) -> String {
        switch kind {
        case .promotional: "promotional-jws"
        case .introductoryEligibility: "introductory-eligibility"
        }
    }

    /// A signed JWS and what it says, a fact a line.
    public static func text(_ signed: OfferJWS) -> String {
        var facts: [(String, String)] = [
            (
                "kind",
                signed.kind == .promotional
                    ? "promotional offer signature, version 2 (JWS, ES256, aud promotional-offer)"
                    : "introductory offer eligibility (JWS, ES256, aud introductory-offer-eligibility)"
            ),
            ("key id", signed.keyID),
            ("product id", signed.productID),
        ]
        if let offerID = signed.offerID { facts.append(("offer id", offerID)) }
        if let allow = signed.allowIntroductoryOffer { facts.append(("allow introductory offer", allow ? "true" : "false")) }
        if let transactionID = signed.transactionID { facts.append(("transaction id", transactionID)) }
        facts += [
            ("nonce", signed.nonceText),
            ("issued at", "\(signed.issuedAt) (\(AppleDate.iso8601(Date(timeIntervalSince1970: Double(signed.issuedAt)))))"),
            ("jws", signed.compact),
        ]
        return lines(facts)
    }

    /// `{"type","key_id","product_id","offer_id"|"allow_introductory_offer","transaction_id",
    /// "nonce","issued_at","jws"}` (`transaction_id` left out when not signed): also the body
    /// the simulator's `POST /offers/verify` takes.
    public static func json(_ signed: OfferJWS) -> String {
        var out = JSONOutput()
        out.beginObject()
        out.member("type", type(signed.kind))
        out.member("key_id", signed.keyID)
        out.member("product_id", signed.productID)
        out.member("offer_id", signed.offerID)
        out.member("allow_introductory_offer", signed.allowIntroductoryOffer)
        out.member("transaction_id", signed.transactionID)
        out.member("nonce", signed.nonceText)
        out.member("issued_at", signed.issuedAt)
        out.member("jws", signed.compact)
        out.endObject()
        out.newline()
        return String(decoding: out.bytes, as: UTF8.self)
    }

    private static func lines(_ facts: [(String, String)]) -> String {
        facts.map { "\($0.0): \(SafeText.escaped($0.1))\n" }.joined()
    }
}
