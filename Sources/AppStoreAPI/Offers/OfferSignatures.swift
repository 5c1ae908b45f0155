import Crypto
import Foundation

/// A version 1 promotional offer signature (StoreKit 1's `SKPaymentDiscount`, StoreKit 2's
/// `Product.PurchaseOption.promotionalOffer(offerID:keyID:nonce:signature:timestamp:)`):
/// ECDSA P-256 with SHA-256 over ``signedText``, DER-encoded, then base64. The App Store
/// accepts it for 24 hours after ``timestamp``.
public struct PromotionalOfferSignature: Sendable, Hashable {
    /// How long the App Store accepts a signature after its timestamp.
    public static let validity: TimeInterval = 24 * 60 * 60
    /// What joins the signed fields: U+2063 INVISIBLE SEPARATOR.
    public static let separator = "\u{2063}"

    public var bundleID: String
    public var keyID: String
    public var productID: String
    public var offerID: String
    /// Lowercased, as signed.
    public var applicationUsername: String
    public var nonce: UUID
    /// UNIX milliseconds.
    public var timestamp: Int64
    /// Base64 of the DER signature.
    public var signature: String

    /// The nonce as signed and as the app passes it: lowercase.
    public var nonceText: String { nonce.uuidString.lowercased() }

    /// When the App Store stops accepting it (24 hours after ``timestamp``).
    public var validUntil: Date { Date(timeIntervalSince1970: Double(timestamp) / 1000 + Self.validity) }

    /// The text that is signed, in Apple's order: bundle id, key id, product id, offer id,
    /// application username (lowercased), nonce (lowercased), timestamp (ms), joined by U+2063.
    public static func signedText(
        bundleID: String, keyID: String, productID: String, offerID: String, applicationUsername: String, nonce: String, timestamp: Int64
    ) -> String {
        [bundleID, keyID, productID, offerID, applicationUsername.lowercased(), nonce.lowercased(), String(timestamp)]
            .joined(separator: separator)
    }

    /// This signature's signed text.
    public var signedText: String {
        Self.signedText(
            bundleID: bundleID, keyID: keyID, productID: productID, offerID: offerID, applicationUsername: applicationUsername,
            nonce: nonceText, timestamp: timestamp)
    }
}

/// What a signed offer JWS is for: its `aud` claim.
public enum OfferJWSKind: String, Sendable, Hashable, CaseIterable {
    /// A version 2 promotional offer signature (`PromotionalOfferV2SignatureCreator`).
    case promotional = "promotional-offer"
    /// Whether the customer may have an introductory offer
    /// (`IntroductoryOfferEligibilitySignatureCreator`).
    case introductoryEligibility = "introductory-offer-eligibility"

    /// The `aud` claim.
    public var audience: String { rawValue }
}

/// A signed offer JWS (ES256, header `kid`) and the values it was made with.
public struct OfferJWS: Sendable, Hashable {
    public var kind: OfferJWSKind
    /// The compact JWS the app passes to StoreKit.
    public var compact: String
    public var keyID: String
    public var nonce: UUID
    /// The `iat` claim, UNIX seconds.
    public var issuedAt: Int64
    /// The `productId` claim.
    public var productID: String
    /// The `offerIdentifier` claim (promotional offers).
    public var offerID: String?
    /// The `transactionId` claim, when there is one.
    public var transactionID: String?
    /// The `allowIntroductoryOffer` claim (introductory offer eligibility).
    public var allowIntroductoryOffer: Bool?

    /// The `nonce` claim: lowercase.
    public var nonceText: String { nonce.uuidString.lowercased() }
}

/// Signs offers with an In-App Purchase key, as Apple's server libraries do
/// (`PromotionalOfferSignatureCreator`, `PromotionalOfferV2SignatureCreator`,
/// `IntroductoryOfferEligibilitySignatureCreator`). Every value is checked first
/// (``OfferValues``); the instant and the nonce are the caller's, so a test gets exact values.
public struct OfferSigner: Sendable {
    public let credentials: APICredentials

    public init(_ credentials: APICredentials) {
        self.credentials = credentials
    }

    /// A version 1 promotional offer signature, timestamped `instant` (whole milliseconds).
    public func promotional(productID: String, offerID: String, applicationUsername: String, nonce: UUID, at instant: Date)
        throws(OfferSignatureError) -> PromotionalOfferSignature
    {
        var offer = PromotionalOfferSignature(
            bundleID: credentials.bundleID, keyID: credentials.keyID, productID: try OfferValues.productID(productID),
            offerID: try OfferValues.offerID(offerID),
            applicationUsername: try OfferValues.applicationUsername(applicationUsername).lowercased(), nonce: nonce,
            timestamp: try Self.milliseconds(instant), signature: "")
        guard let signature = try? credentials.privateKey.key.signature(for: Data(offer.signedText.utf8)) else {
            throw OfferSignatureError(.signingFailed, "the promotional offer could not be signed")
        }
        offer.signature = signature.derRepresentation.base64EncodedString()
        return offer
    }

    /// A version 2 promotional offer signature: a JWS with `aud` `promotional-offer`,
    /// `productId`, `offerIdentifier` and, when given, `transactionId`.
    public func promotionalJWS(productID: String, offerID: String, transactionID: String?, nonce: UUID, at instant: Date)
        throws(OfferSignatureError) -> OfferJWS
    {
        let kind = OfferJWSKind.promotional
        let claims = PromotionalClaims(
            iss: credentials.issuerID, bid: credentials.bundleID, aud: kind.audience, iat: try Self.milliseconds(instant) / 1000,
            nonce: nonce.uuidString.lowercased(), productId: try OfferValues.productID(productID), offerIdentifier: try OfferValues.offerID(offerID),
            transactionId: try transactionID.map(OfferValues.transactionID))
        var signed = try sign(claims, kind, nonce: nonce, issuedAt: claims.iat, productID: claims.productId)
        (signed.offerID, signed.transactionID) = (claims.offerIdentifier, claims.transactionId)
        return signed
    }

    /// An introductory offer eligibility signature: a JWS with `aud`
    /// `introductory-offer-eligibility`, `productId`, `allowIntroductoryOffer` and `transactionId`.
    public func introductoryEligibility(productID: String, allowIntroductoryOffer: Bool, transactionID: String, nonce: UUID, at instant: Date)
        throws(OfferSignatureError) -> OfferJWS
    {
        let kind = OfferJWSKind.introductoryEligibility
        let claims = EligibilityClaims(
            iss: credentials.issuerID, bid: credentials.bundleID, aud: kind.audience, iat: try Self.milliseconds(instant) / 1000,
            nonce: nonce.uuidString.lowercased(), productId: try OfferValues.productID(productID),
            allowIntroductoryOffer: allowIntroductoryOffer, transactionId: try OfferValues.transactionID(transactionID))
        var signed = try sign(claims, kind, nonce: nonce, issuedAt: claims.iat, productID: claims.productId)
        (signed.allowIntroductoryOffer, signed.transactionID) = (allowIntroductoryOffer, claims.transactionId)
        return signed
    }

    // MARK: Claims

    /// `PromotionalOfferV2SignatureCreator`'s claims (`transactionId` left out when nil).
    struct PromotionalClaims: Encodable {
        var iss: String
        var bid: String
        var aud: String
        var iat: Int64
        var nonce: String
        var productId: String
        var offerIdentifier: String
        var transactionId: String?
    }

    /// `IntroductoryOfferEligibilitySignatureCreator`'s claims.
    struct EligibilityClaims: Encodable {
        var iss: String
        var bid: String
        var aud: String
        var iat: Int64
        var nonce: String
        var productId: String
        var allowIntroductoryOffer: Bool
        var transactionId: String
    }

    private func sign(_ claims: some Encodable, _ kind: OfferJWSKind, nonce: UUID, issuedAt: Int64, productID: String)
        throws(OfferSignatureError) -> OfferJWS
    {
        guard let compact = ES256JWT.sign(claims, keyID: credentials.keyID, with: credentials.privateKey) else {
            throw OfferSignatureError(.signingFailed, "the \(kind.audience) signature could not be signed")
        }
        return OfferJWS(kind: kind, compact: compact, keyID: credentials.keyID, nonce: nonce, issuedAt: issuedAt, productID: productID)
    }

    /// `instant` in whole UNIX milliseconds; before 1970 has none.
    static func milliseconds(_ instant: Date) throws(OfferSignatureError) -> Int64 {
        let value = (instant.timeIntervalSince1970 * 1000).rounded(.down)
        guard value >= 0, value < 1e15 else {
            throw OfferSignatureError(.invalidTimestamp, "an offer is signed at an instant from 1970 to year 33658, not \(instant)")
        }
        return Int64(value)
    }
}
