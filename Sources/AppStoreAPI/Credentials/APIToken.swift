import Foundation

/// The JWT that authorises one App Store Server API request: ES256 over
/// `{"alg":"ES256","kid":KEY_ID,"typ":"JWT"}` and `{"aud":"appstoreconnect-v1","bid":…,"exp":…,
/// "iat":…,"iss":…}`, signed with the In-App Purchase key.
///
/// Why swift-crypto and not vapor/jwt-kit: the token is two small JSON objects and one P-256
/// signature, which swift-crypto (already a dependency, for the JWS trust) does in a few lines
/// through `P256.Signing.PrivateKey(pemRepresentation:)`. jwt-kit 5.7 would add a package
/// (78 files, ~5,500 lines) plus swift-log to resolve and compile on every clean build and CI
/// run, demand swift-tools 6.2 and swift-crypto >= 4.1 (we accept 3.12.3..<5), and bring a wide
/// API (key collections, claim protocols, RSA/EdDSA, verification) for one signing call; its
/// strength is verification, which our JWS trust does with our own policies. Nothing was
/// measured: no package was added.
public enum APIToken {
    /// The audience Apple requires.
    public static let audience = "appstoreconnect-v1"
    /// Apple's libraries mint a fresh 5-minute token per request; so do we.
    public static let defaultLifetime: TimeInterval = 300
    /// Apple refuses tokens whose `exp` is more than 60 minutes after `iat`.
    public static let maximumLifetime: TimeInterval = 3600

    struct Claims: Encodable {
        var iss: String
        var iat: Int64
        var exp: Int64
        var aud: String
        var bid: String
    }

    /// A compact JWT for `credentials`, issued at `now` (whole seconds) and valid `lifetime`
    /// seconds (at most 60 minutes).
    public static func mint(_ credentials: APICredentials, now: Date, lifetime: TimeInterval = defaultLifetime) throws(APICredentialError)
        -> String
    {
        guard lifetime > 0, lifetime <= maximumLifetime else {
            throw APICredentialError(.invalidLifetime, "an API token lives more than 0 and at most 60 minutes")
        }
        let issuedAt = Int64(now.timeIntervalSince1970.rounded(.down))
        let claims = Claims(
            iss: credentials.issuerID, iat: issuedAt, exp: issuedAt + Int64(lifetime.rounded(.down)), aud: audience, bid: credentials.bundleID)
        guard let token = ES256JWT.sign(claims, keyID: credentials.keyID, with: credentials.privateKey) else {
            throw APICredentialError(.signingFailed, "the API token could not be signed")
        }
        return token
    }
}
