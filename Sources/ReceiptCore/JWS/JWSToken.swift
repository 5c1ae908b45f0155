/// A JWS in compact serialization (`header.payload.signature`), as StoreKit 2 and App Store
/// Server Notifications V2 use it. Decoding only: the signature is checked elsewhere.
public struct JWSToken: Sendable, Hashable {
    /// The header's `alg` (Apple uses `ES256`).
    public var algorithm: String?
    /// The header's `x5c` chain, DER, leaf first.
    public var certificateChain: [[UInt8]]
    /// The decoded header JSON.
    public var header: JSONValue
    /// The decoded payload JSON.
    public var payload: JSONValue
    /// The bytes the signature covers: ASCII `base64url(header) "." base64url(payload)`.
    public var signingInput: [UInt8]
    /// The raw signature (for ES256, `r ‖ s`, 64 bytes).
    public var signature: [UInt8]

    /// Splits and decodes a compact JWS.
    ///
    /// - Throws: ``ReceiptDecodingError`` (`invalidJWS`) naming the part that is wrong.
    public init(compact text: some Collection<UInt8>, maximumDepth: Int = 64) throws {
        let bytes = Array(text)
        let parts = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw ReceiptDecodingError(
                .invalidJWS, "a JWS has three parts separated by '.', this one has \(parts.count)")
        }
        let headerBytes: [UInt8]
        let payloadBytes: [UInt8]
        do {
            headerBytes = try Base64Text.decode(parts[0], what: "JWS header")
            payloadBytes = try Base64Text.decode(parts[1], what: "JWS payload")
            signature = parts[2].isEmpty ? [] : try Base64Text.decode(parts[2], what: "JWS signature")
        } catch let error as ReceiptDecodingError {
            throw ReceiptDecodingError(.invalidJWS, error.reason, offset: error.offset)
        }
        do {
            header = try JSONValue.parse(headerBytes, maximumDepth: maximumDepth)
        } catch let error as ReceiptDecodingError {
            throw ReceiptDecodingError(.invalidJWS, "JWS header: \(error.reason)")
        }
        do {
            payload = try JSONValue.parse(payloadBytes, maximumDepth: maximumDepth)
        } catch let error as ReceiptDecodingError {
            throw ReceiptDecodingError(.invalidJWS, "JWS payload: \(error.reason)")
        }
        guard header.object != nil else { throw ReceiptDecodingError(.invalidJWS, "JWS header is not a JSON object") }
        guard payload.object != nil else { throw ReceiptDecodingError(.invalidJWS, "JWS payload is not a JSON object") }
        algorithm = header["alg"]?.text
        var chain: [[UInt8]] = []
        if let x5c = header["x5c"]?.array {
            for (index, entry) in x5c.enumerated() {
                guard case .string(let b64) = entry else {
                    throw ReceiptDecodingError(.invalidJWS, "JWS header x5c[\(index)] is not a string")
                }
                do {
                    chain.append(try Base64Text.decode(Array(b64.utf8), what: "JWS header x5c[\(index)]"))
                } catch let error as ReceiptDecodingError {
                    throw ReceiptDecodingError(.invalidJWS, error.reason, offset: error.offset)
                }
            }
        }
        certificateChain = chain
        signingInput = Array(parts[0]) + [UInt8(ascii: ".")] + Array(parts[1])
    }

    /// True when `text` has the shape of a compact JWS: base64url parts separated by dots, the
    /// first starting with `eyJ` (the base64 of `{"`). The part count is checked when decoding,
    /// so a token with a part missing gets an error that says so.
    static func looksLikeJWS(_ text: ArraySlice<UInt8>) -> Bool {
        guard text.starts(with: Array("eyJ".utf8)) else { return false }
        var dots = 0
        for b in text {
            if b == UInt8(ascii: ".") {
                dots += 1
            } else if !Base64Text.isAlphabet(b) {
                return false
            }
        }
        return dots >= 1
    }
}
