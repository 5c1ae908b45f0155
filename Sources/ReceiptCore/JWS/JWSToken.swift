import Foundation
import Synchronization

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
        let headerKey = HeaderKey(text: Array(parts[0]), maximumDepth: maximumDepth)
        let known = Self.headers.withLock { memo -> DecodedHeader? in
            // The last header found, compared byte for byte before hashing ~4 KB of text:
            // a notification's nested tokens carry their notification's header.
            if let last = memo.last, last.key == headerKey { return last.header }
            guard let found = memo.entries[headerKey] else { return nil }
            memo.last = (headerKey, found)
            return found
        }
        let headerBytes: [UInt8]
        let payloadBytes: [UInt8]
        do {
            headerBytes = known == nil ? try Base64Text.decode(parts[0], what: "JWS header") : []
            payloadBytes = try Base64Text.decode(parts[1], what: "JWS payload")
            signature = parts[2].isEmpty ? [] : try Base64Text.decode(parts[2], what: "JWS signature")
        } catch let error as ReceiptDecodingError {
            throw ReceiptDecodingError(.invalidJWS, error.reason, offset: error.offset)
        }
        let decodedHeader: DecodedHeader
        if let known {
            decodedHeader = known
        } else {
            do {
                decodedHeader = DecodedHeader(header: try JSONValue.parse(headerBytes, maximumDepth: maximumDepth))
            } catch let error as ReceiptDecodingError {
                throw ReceiptDecodingError(.invalidJWS, "JWS header: \(error.reason)")
            }
        }
        header = decodedHeader.header
        do {
            payload = try JSONValue.parse(payloadBytes, maximumDepth: maximumDepth)
        } catch let error as ReceiptDecodingError {
            throw ReceiptDecodingError(.invalidJWS, "JWS payload: \(error.reason)")
        }
        guard header.object != nil else { throw ReceiptDecodingError(.invalidJWS, "JWS header is not a JSON object") }
        guard payload.object != nil else { throw ReceiptDecodingError(.invalidJWS, "JWS payload is not a JSON object") }
        if let known {
            algorithm = known.algorithm
            certificateChain = known.certificateChain
        } else {
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
            // Only a header that decoded completely is remembered: errors are always found afresh.
            var complete = decodedHeader
            complete.algorithm = algorithm
            complete.certificateChain = chain
            Self.headers.withLock { memo in
                if memo.entries.count >= Self.headerLimit { memo.entries.removeAll(keepingCapacity: true) }
                memo.entries[headerKey] = complete
                memo.last = (headerKey, complete)
            }
        }
        signingInput = Array(parts[0]) + [UInt8(ascii: ".")] + Array(parts[1])
    }

    // MARK: - Header memo

    // Apple signs every token of a signing period with the same header (`alg` and the same
    // `x5c` chain), so a fleet sees a handful of distinct headers: each is base64-decoded, parsed
    // and its certificates decoded once. Keyed by the exact base64url text (and the depth
    // limit it was parsed under), so the memo returns what decoding that text gives; bounded:
    // past `headerLimit` entries it is cleared, so a stream of distinct headers cannot grow it.

    private struct HeaderKey: Hashable, Sendable {
        var text: [UInt8]
        var maximumDepth: Int

        /// Every byte, in bulk (an array's own hash feeds the hasher one element at a time).
        func hash(into hasher: inout Hasher) {
            hasher.combine(maximumDepth)
            hasher.combine(text.count)
            text.withUnsafeBytes { hasher.combine(bytes: $0) }
        }

        /// `memcmp` over the bytes (an array's own `==` compares one element at a time).
        static func == (a: HeaderKey, b: HeaderKey) -> Bool {
            guard a.maximumDepth == b.maximumDepth, a.text.count == b.text.count else { return false }
            return a.text.withUnsafeBytes { x in
                b.text.withUnsafeBytes { y in x.count == 0 || memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0 }
            }
        }
    }

    private struct DecodedHeader: Sendable {
        var header: JSONValue
        var algorithm: String?
        var certificateChain: [[UInt8]] = []
    }

    private struct HeaderMemo: Sendable {
        var entries: [HeaderKey: DecodedHeader] = [:]
        /// The entry found or added last (kept through a clear of `entries`: one more at most).
        var last: (key: HeaderKey, header: DecodedHeader)?
    }

    private static let headerLimit = 64
    private static let headers = Mutex(HeaderMemo())

    /// How many decoded headers are remembered (for tests of the bound).
    static var rememberedHeaders: Int { headers.withLock { $0.entries.count } }

    /// True when `text` has the shape of a compact JWS: base64url parts separated by dots, the
    /// first starting with `eyJ` (the base64 of `{"`). The part count is checked when decoding,
    /// so a token with a part missing gets an error that says so.
    static func looksLikeJWS(_ text: ArraySlice<UInt8>) -> Bool {
        guard text.starts(with: Array("eyJ".utf8)) else { return false }
        // A byte table over the contiguous bytes: this runs over every input, nested tokens too.
        return text.withUnsafeBufferPointer { bytes in
            jwsClasses.withUnsafeBufferPointer { classes in
                var dots = 0
                for b in bytes {
                    switch classes[Int(b)] {
                    case 1: continue
                    case 2: dots += 1
                    default: return false
                    }
                }
                return dots >= 1
            }
        }
    }

    /// 1 for the base64/base64url alphabet and `=` (``Base64Text/isAlphabet(_:)``), 2 for `.`.
    private static let jwsClasses: [UInt8] = (0...255).map { b in
        b == Int(UInt8(ascii: ".")) ? 2 : Base64Text.isAlphabet(UInt8(b)) ? 1 : 0
    }
}
