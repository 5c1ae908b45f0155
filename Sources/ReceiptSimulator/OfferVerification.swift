import AppStoreAPI
import Crypto
import Foundation
import ReceiptCore

/// Why the simulator refused an offer signature: the stable `reason` of
/// `{"valid":false,"reason":…}`. Programs and tests compare these, never the `message`.
public enum OfferRefusal: String, Sendable, Hashable, CaseIterable {
    /// Not a JSON object of the fields asked for, a field of the wrong type, a nonce that is no
    /// UUID, a JWS that does not decode, an unknown `type` (HTTP 400).
    case malformed
    /// A body over ``OfferVerifier/maximumBodyBytes`` (HTTP 413).
    case tooLarge = "too_large"
    /// Anything but POST (HTTP 405).
    case methodNotAllowed = "method_not_allowed"
    /// The key id is not the simulator's In-App Purchase key, or the simulator has none.
    case unknownKey = "unknown_key"
    /// The signature does not verify with the key (tampered, or another key), or is not ES256.
    case badSignature = "bad_signature"
    /// A version 1 signature whose timestamp is more than 24 hours before the simulator's now.
    case expired
    /// A JWS whose `aud` is not the kind asked for (or no offer's at all).
    case wrongAudience = "wrong_audience"
    /// A bundle id that is not the simulator's app.
    case wrongBundle = "wrong_bundle"

    /// The HTTP status it is answered with: 4xx when the request could not be read, 200 with
    /// `"valid": false` when it could and the signature is refused.
    public var httpStatus: Int {
        switch self {
        case .malformed: 400
        case .tooLarge: 413
        case .methodNotAllowed: 405
        case .unknownKey, .badSignature, .expired, .wrongAudience, .wrongBundle: 200
        }
    }
}

/// Checks offer signatures as the App Store does when an app passes one to StoreKit, for
/// `POST /offers/verify`: the body is what `receiptdash offer-signature --format json` prints
/// (any other keys are ignored), either
///
/// - version 1: `{"type":"promotional","bundle_id","key_id","product_id","offer_id",
///   "application_username","nonce","timestamp","signature"}`, or
/// - a JWS: `{"jws":"…"}`, with `"type":"promotional-jws"` or `"introductory-eligibility"`
///   to say which it must be (without it, either offer audience is accepted).
///
/// The answer is `{"valid":true,…}` with what was signed, or `{"valid":false,"reason",
/// "message"}`.
public struct OfferVerifier: Sendable {
    /// Larger bodies are refused before they are parsed (`too_large`).
    public static let maximumBodyBytes = 16 * 1024

    /// The In-App Purchase key's public half; nil: every signature is `unknown_key`.
    public var publicKey: P256.Signing.PublicKey?
    /// The key id signatures must name; nil accepts any.
    public var keyID: String?
    /// The apps whose signatures are accepted; empty accepts any.
    public var bundleIDs: Set<String>

    public init(publicKey: P256.Signing.PublicKey?, keyID: String? = nil, bundleIDs: Set<String> = []) {
        self.publicKey = publicKey
        self.keyID = keyID
        self.bundleIDs = bundleIDs
    }

    /// A refusal: its code and what to fix, in words.
    public struct Refusal: Error, Sendable, Hashable {
        public var reason: OfferRefusal
        public var message: String

        init(_ reason: OfferRefusal, _ message: String) {
            self.reason = reason
            self.message = message
        }
    }

    /// The JSON answer to `body` at `now`: the signed values when valid.
    public func verify(_ body: [UInt8], now: Date) -> Result<[String: JSONValue], Refusal> {
        guard body.count <= Self.maximumBodyBytes else {
            return .failure(Refusal(.tooLarge, "the body is over \(Self.maximumBodyBytes) bytes"))
        }
        guard let parsed = try? JSONValue.parse(body, maximumDepth: 4), case .object(let fields) = parsed else {
            return .failure(Refusal(.malformed, "the body is not a JSON object"))
        }
        let type: String?
        switch fields["type"] {
        case nil: type = nil
        case .string(let text)?: type = text
        default: return .failure(Refusal(.malformed, "type must be a string"))
        }
        if fields["jws"] != nil {
            let kind: OfferJWSKind?
            switch type {
            case nil: kind = nil
            case "promotional-jws": kind = .promotional
            case "introductory-eligibility": kind = .introductoryEligibility
            case let other?: return .failure(Refusal(.malformed, "a jws is of type promotional-jws or introductory-eligibility, not \(other)"))
            }
            return Result { () throws(Refusal) in try verifyJWS(fields, kind: kind) }
        }
        guard type == nil || type == "promotional" else {
            return .failure(Refusal(.malformed, "type is promotional (with signature) or promotional-jws or introductory-eligibility (with jws)"))
        }
        return Result { () throws(Refusal) in try verifyPromotional(fields, now: now) }
    }

    // MARK: Version 1

    private func verifyPromotional(_ fields: [String: JSONValue], now: Date) throws(Refusal) -> [String: JSONValue] {
        func text(_ name: String) throws(Refusal) -> String {
            guard case .string(let value)? = fields[name] else { throw Refusal(.malformed, "\(name) must be a string") }
            return value
        }
        let (bundleID, keyID, productID, offerID) = (try text("bundle_id"), try text("key_id"), try text("product_id"), try text("offer_id"))
        let (username, nonceText, signatureText) = (try text("application_username"), try text("nonce"), try text("signature"))
        guard case .integer(let timestamp)? = fields["timestamp"], timestamp >= 0 else {
            throw Refusal(.malformed, "timestamp must be UNIX milliseconds, an integer")
        }
        guard let nonce = try? OfferValues.nonce(nonceText) else { throw Refusal(.malformed, "nonce must be a UUID") }
        guard let der = Data(base64Encoded: signatureText) else { throw Refusal(.malformed, "signature must be base64") }
        let key = try self.key(named: keyID)
        guard bundleIDs.isEmpty || bundleIDs.contains(bundleID) else { throw Refusal(.wrongBundle, "bundle_id is not the simulator's app") }
        let signed = PromotionalOfferSignature.signedText(
            bundleID: bundleID, keyID: keyID, productID: productID, offerID: offerID, applicationUsername: username,
            nonce: nonce.uuidString, timestamp: timestamp)
        guard let signature = try? P256.Signing.ECDSASignature(derRepresentation: der), key.isValidSignature(signature, for: Data(signed.utf8))
        else {
            throw Refusal(.badSignature, "the signature does not verify with the key \(keyID) over these fields")
        }
        let signedAt = Date(timeIntervalSince1970: Double(timestamp) / 1000)
        let validUntil = signedAt.addingTimeInterval(PromotionalOfferSignature.validity)
        guard now <= validUntil else {
            throw Refusal(.expired, "the signature was valid for 24 hours after its timestamp, until \(AppleDate.iso8601(validUntil))")
        }
        return [
            "valid": .bool(true), "type": .string("promotional"), "bundle_id": .string(bundleID), "key_id": .string(keyID),
            "product_id": .string(productID), "offer_id": .string(offerID), "application_username": .string(username.lowercased()),
            "nonce": .string(nonce.uuidString.lowercased()), "timestamp": .integer(timestamp),
            "valid_until": .string(AppleDate.iso8601(validUntil)),
        ]
    }

    // MARK: JWS

    private func verifyJWS(_ fields: [String: JSONValue], kind: OfferJWSKind?) throws(Refusal) -> [String: JSONValue] {
        guard case .string(let compact)? = fields["jws"], let token = try? JWSToken(compact: Array(compact.utf8), maximumDepth: 4),
            case .object(let claims) = token.payload
        else {
            throw Refusal(.malformed, "jws must be a compact JWS (header.claims.signature) whose claims are a JSON object")
        }
        guard case .string(let keyID)? = token.header["kid"] else { throw Refusal(.malformed, "the JWS header has no kid") }
        let key = try self.key(named: keyID)
        guard token.algorithm == "ES256", let signature = try? P256.Signing.ECDSASignature(rawRepresentation: token.signature),
            key.isValidSignature(signature, for: Data(token.signingInput))
        else {
            throw Refusal(.badSignature, "the JWS is not an ES256 signature by the key \(keyID)")
        }
        let audiences = kind.map { [$0] } ?? OfferJWSKind.allCases
        guard case .string(let audience)? = claims["aud"], let found = audiences.first(where: { $0.audience == audience }) else {
            throw Refusal(
                .wrongAudience, "aud is \(claims["aud"]?.text ?? "missing"), not " + audiences.map(\.audience).joined(separator: " or "))
        }
        func text(_ name: String) throws(Refusal) -> String {
            guard case .string(let value)? = claims[name], !value.isEmpty else { throw Refusal(.malformed, "the claim \(name) must be a string") }
            return value
        }
        _ = try text("iss")
        let bundleID = try text("bid")
        guard case .integer = claims["iat"] else { throw Refusal(.malformed, "the claim iat must be UNIX seconds, an integer") }
        guard (try? OfferValues.nonce(try text("nonce"))) != nil else { throw Refusal(.malformed, "the claim nonce must be a UUID") }
        _ = try text("productId")
        switch found {
        case .promotional:
            _ = try text("offerIdentifier")
            if claims["transactionId"] != nil, (try? OfferValues.transactionID(try text("transactionId"))) == nil {
                throw Refusal(.malformed, "the claim transactionId must be digits")
            }
        case .introductoryEligibility:
            guard case .bool = claims["allowIntroductoryOffer"] else {
                throw Refusal(.malformed, "the claim allowIntroductoryOffer must be true or false")
            }
            guard (try? OfferValues.transactionID(try text("transactionId"))) != nil else {
                throw Refusal(.malformed, "the claim transactionId must be digits")
            }
        }
        guard bundleIDs.isEmpty || bundleIDs.contains(bundleID) else { throw Refusal(.wrongBundle, "bid is not the simulator's app") }
        return [
            "valid": .bool(true), "type": .string(found == .promotional ? "promotional-jws" : "introductory-eligibility"),
            "key_id": .string(keyID), "claims": .object(claims),
        ]
    }

    /// The key `keyID` names: the simulator's, when it has one and the id is its own.
    private func key(named keyID: String) throws(Refusal) -> P256.Signing.PublicKey {
        guard let publicKey else {
            throw Refusal(.unknownKey, "the simulator has no In-App Purchase key: start it with --pki DIR or --api-key-file FILE")
        }
        if let expected = self.keyID, expected != keyID { throw Refusal(.unknownKey, "the key id \(keyID) is not the simulator's key") }
        return publicKey
    }
}

extension ServerAPIService {
    /// The path offer signatures are checked at.
    public static let offerVerificationPath = "/offers/verify"

    /// The verifier for this simulator's key, key id and app.
    public var offerVerifier: OfferVerifier {
        OfferVerifier(publicKey: configuration.publicKey, keyID: configuration.keyID, bundleIDs: store.bundleIDs)
    }

    /// `POST /offers/verify`: no bearer token (the signature is what is checked).
    func answerOfferVerification(_ request: ServerAPIRequest) -> ServerAPIReply {
        let result: Result<[String: JSONValue], OfferVerifier.Refusal>
        if request.method != "POST" {
            result = .failure(OfferVerifier.Refusal(.methodNotAllowed, "POST the offer's JSON to \(Self.offerVerificationPath)"))
        } else if request.bodyTooLarge {
            result = .failure(OfferVerifier.Refusal(.tooLarge, "the body is over \(OfferVerifier.maximumBodyBytes) bytes"))
        } else {
            result = offerVerifier.verify(request.body, now: configuration.clock.now())
        }
        switch result {
        case .success(let fields):
            return json(.object(fields))
        case .failure(let refusal):
            var reply = json(
                .object(["valid": .bool(false), "reason": .string(refusal.reason.rawValue), "message": .string(refusal.message)]))
            reply.status = refusal.reason.httpStatus
            return reply
        }
    }
}
