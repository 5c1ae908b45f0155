import Crypto
import Foundation
import ReceiptCore

/// A compact JWT split and decoded by the test itself (not by the code under test).
public struct DecodedJWT {
    public let header: JSONValue
    public let claims: JSONValue
    public let headerJSON: String
    public let signingInput: Data
    public let signature: Data

    public init(_ token: String) throws {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3 else { throw JWTShapeError() }
        func decode(_ part: String) throws -> Data {
            var text = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            while text.count % 4 != 0 { text += "=" }
            guard let data = Data(base64Encoded: text) else { throw JWTShapeError() }
            return data
        }
        let headerData = try decode(parts[0])
        headerJSON = String(decoding: headerData, as: UTF8.self)
        header = try JSONValue.parse([UInt8](headerData))
        claims = try JSONValue.parse([UInt8](try decode(parts[1])))
        signingInput = Data((parts[0] + "." + parts[1]).utf8)
        signature = try decode(parts[2])
    }

    public func verifies(with key: P256.Signing.PublicKey) -> Bool {
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signature) else { return false }
        return key.isValidSignature(signature, for: signingInput)
    }

    public struct JWTShapeError: Error {}
}
