import Crypto
import Foundation
import ReceiptCore

/// The compact ES256 JWT this module signs with an In-App Purchase key: the Server API's bearer
/// tokens (``APIToken``) and the offer signatures (``OfferSigner``). Header
/// `{"alg":"ES256","kid":KEY_ID,"typ":"JWT"}`, the claims as JSON with sorted keys, and the
/// signature as JWS wants it (r ‖ s, 64 bytes), each part base64url without padding.
enum ES256JWT {
    struct Header: Encodable {
        var alg = "ES256"
        var kid: String
        var typ = "JWT"
    }

    /// `claims` signed with `key`, naming `keyID`; nil when encoding or signing failed (the
    /// caller says what could not be signed, with its own error).
    static func sign(_ claims: some Encodable, keyID: String, with key: APIPrivateKey) -> String? {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let header = try? encoder.encode(Header(kid: keyID)), let body = try? encoder.encode(claims) else { return nil }
        let signingInput = Base64Text.encodeURL(header) + "." + Base64Text.encodeURL(body)
        guard let signature = try? key.key.signature(for: Data(signingInput.utf8)) else { return nil }
        return signingInput + "." + Base64Text.encodeURL(signature.rawRepresentation)
    }
}
