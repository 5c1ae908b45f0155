import AppStoreAPI
import Foundation

extension RetentionRules {
    /// The signer of the file's `[offer_key]` (its settings, else the API's environment
    /// variables), nil when no rule signs an offer. The key's file is read once, here.
    public func offerSigner(environment: [String: String]) throws(APICredentialError) -> (signer: OfferSigner?, warnings: [String]) {
        guard let key = offerKey else { return (nil, []) }
        let loaded = try APICredentials.load(
            APICredentials.Flags(issuerID: key.issuerID, keyID: key.keyID, privateKeyFile: key.privateKeyFile, bundleID: key.bundleID),
            environment: environment)
        return (OfferSigner(loaded.credentials), loaded.warnings)
    }
}
