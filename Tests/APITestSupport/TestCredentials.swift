import Crypto
import AppStoreAPI

/// A fresh In-App Purchase key per test (generated here, never a real one).
package func makeTestCredentials(bundleID: String = "com.example.app") -> (APICredentials, P256.Signing.PrivateKey) {
    let key = P256.Signing.PrivateKey()
    let credentials = APICredentials(
        issuerID: "57246542-96fe-1a63-e053-0824d011072a", keyID: "2X9R4HXF34", privateKey: APIPrivateKey(key), bundleID: bundleID,
        appAppleID: 1_234_567_890)
    return (credentials, key)
}
