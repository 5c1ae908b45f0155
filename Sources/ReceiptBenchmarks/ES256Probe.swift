import Crypto
import ReceiptCore
import X509

/// One ES256 check and nothing around it: swift-crypto's `P256.Signing.PublicKey
/// .isValidSignature` (SHA-256 of the signing input, then ECDSA P-256) with a token's own leaf
/// key and signature, prepared once. `bench --verify --suffix .jws` times it beside the whole
/// JWS verification, as the rate no verifier on this machine can beat.
public struct ES256Probe: Sendable {
    private let key: P256.Signing.PublicKey
    private let signature: P256.Signing.ECDSASignature
    private let signingInput: [UInt8]

    /// `nil` when the token has no readable P-256 leaf or no 64-byte signature.
    public init?(_ token: JWSToken) {
        guard let der = token.certificateChain.first, let leaf = try? Certificate(derEncoded: der),
            let key = P256.Signing.PublicKey(leaf.publicKey), token.signature.count == 64,
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: token.signature)
        else { return nil }
        self.key = key
        self.signature = signature
        signingInput = token.signingInput
    }

    /// How many bytes the signature covers (the hash runs over all of them).
    public var signingInputBytes: Int { signingInput.count }

    /// Whether the signature verifies.
    public func verify() -> Bool {
        key.isValidSignature(signature, for: signingInput)
    }
}
