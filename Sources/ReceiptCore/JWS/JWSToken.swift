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
    /// The bytes the signature covers: ASCII `base64url(header) "." base64url(payload)`
    /// (a copy of ``signedBytes``).
    public var signingInput: [UInt8] { Array(signedBytes) }
    /// The bytes the signature covers, in the token's own array: what the signature check
    /// hashes. A slice, not an array of its own: cutting the signature off the caller's array
    /// copied the whole token.
    package let signedBytes: ArraySlice<UInt8>
    /// The raw signature (for ES256, `r ‖ s`, 64 bytes).
    public var signature: [UInt8]

    // MARK: - Bounds

    /// The longest header segment read (base64url text): Apple's, with three certificates, is
    /// about 4 KB. Checked before anything in it is decoded.
    public static let maximumHeaderBytes = 16 * 1024
    /// The most `x5c` certificates read (Apple sends 3: leaf, intermediate, root).
    public static let maximumCertificates = 4
    /// The largest `x5c` certificate read, decoded (Apple's are about 1 KB each).
    public static let maximumCertificateBytes = 8 * 1024

    /// Splits and decodes a compact JWS.
    ///
    /// Bounded before any work that could grow with hostile input: a header segment over
    /// ``maximumHeaderBytes``, more than ``maximumCertificates`` `x5c` entries or one over
    /// ``maximumCertificateBytes`` is refused at once (`limitExceeded`), naming which.
    ///
    /// - Throws: ``ReceiptDecodingError`` (`invalidJWS`, or `limitExceeded` for the bounds)
    ///   naming the part that is wrong.
    public init(compact text: some Collection<UInt8>, maximumDepth: Int = 64) throws {
        // A slice of the caller's array is kept as it is (the signature check hashes part of
        // it): a file's token, 10-15 KB for a notification, was copied whole first.
        let bytes = (text as? ArraySlice<UInt8>) ?? Array(text)[...]
        // The two dots found by memchr (a generic split went through the token a byte at a time),
        // as offsets from the slice's start.
        let dots = bytes.withUnsafeBufferPointer { b -> (Int, Int)? in
            guard let base = b.baseAddress else { return nil }
            func dot(after start: Int) -> Int? {
                guard start < b.count, let found = memchr(base + start, Int32(UInt8(ascii: ".")), b.count - start) else { return nil }
                return UnsafeRawPointer(base).distance(to: UnsafeRawPointer(found))
            }
            guard let first = dot(after: 0), let second = dot(after: first + 1), dot(after: second + 1) == nil else { return nil }
            return (first, second)
        }
        guard let (firstOffset, secondOffset) = dots else {
            let count = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false).count
            throw ReceiptDecodingError(.invalidJWS, "a JWS has three parts separated by '.', this one has \(count)")
        }
        let firstDot = bytes.startIndex + firstOffset, secondDot = bytes.startIndex + secondOffset
        // Three slices, not an array of them (one allocation a token).
        let parts = (bytes[..<firstDot], bytes[(firstDot + 1)..<secondDot], bytes[(secondDot + 1)...])
        guard parts.0.count <= Self.maximumHeaderBytes else {
            throw ReceiptDecodingError(
                .limitExceeded,
                "the JWS header is \(parts.0.count) bytes; at most \(Self.maximumHeaderBytes) are read (Apple's is about 4 KB)")
        }
        let (segment, known) = Self.headers.withLock { memo -> ([UInt8], DecodedHeader?) in
            // The last header found, compared byte for byte in place before ~4 KB of text is
            // copied and hashed: a notification's nested tokens carry their notification's
            // header. Its text is then shared, not copied.
            if let last = memo.last, last.key.maximumDepth == maximumDepth, sameBytes(last.key.text[...], parts.0) {
                return (last.key.text, last.header)
            }
            let key = HeaderKey(text: Array(parts.0), maximumDepth: maximumDepth)
            guard let found = memo.entries[key] else { return (key.text, nil) }
            memo.last = (key, found)
            return (key.text, found)
        }
        let headerBytes: [UInt8]
        let payloadBytes: [UInt8]
        var headerStrict = known?.strict ?? true
        var strict = true
        do {
            headerBytes = known == nil ? try Base64Text.decode(parts.0, what: "JWS header", strict: &headerStrict) : []
            payloadBytes = try Base64Text.decode(parts.1, what: "JWS payload", strict: &strict)
            signature = parts.2.isEmpty ? [] : try Base64Text.decode(parts.2, what: "JWS signature", strict: &strict)
        } catch let error as ReceiptDecodingError {
            throw ReceiptDecodingError(.invalidJWS, error.reason, offset: error.offset)
        }
        let decodedHeader: DecodedHeader
        isStrictText = strict && headerStrict
        if let known {
            decodedHeader = known
        } else {
            do {
                decodedHeader = DecodedHeader(header: try JSONValue.parse(headerBytes, maximumDepth: maximumDepth), strict: headerStrict)
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
                guard x5c.count <= Self.maximumCertificates else {
                    throw ReceiptDecodingError(
                        .limitExceeded,
                        "the JWS header's x5c has \(x5c.count) certificates; at most \(Self.maximumCertificates) are read (Apple sends 3)")
                }
                // Base64 of n bytes is 4⌈n/3⌉ characters (line breaks aside): a longer text is
                // refused before it is decoded.
                let longestText = (Self.maximumCertificateBytes + 2) / 3 * 4
                for (index, entry) in x5c.enumerated() {
                    guard case .string(let b64) = entry else {
                        throw ReceiptDecodingError(.invalidJWS, "JWS header x5c[\(index)] is not a string")
                    }
                    let size = b64.utf8.count
                    guard size <= longestText + 64 else {
                        throw ReceiptDecodingError(
                            .limitExceeded,
                            "JWS header x5c[\(index)] is \(size) characters of base64; a certificate of at most \(Self.maximumCertificateBytes) bytes is read")
                    }
                    let der: [UInt8]
                    do {
                        der = try Base64Text.decode(Array(b64.utf8), what: "JWS header x5c[\(index)]")
                    } catch let error as ReceiptDecodingError {
                        throw ReceiptDecodingError(.invalidJWS, error.reason, offset: error.offset)
                    }
                    guard der.count <= Self.maximumCertificateBytes else {
                        throw ReceiptDecodingError(
                            .limitExceeded,
                            "JWS header x5c[\(index)] is \(der.count) bytes; a certificate of at most \(Self.maximumCertificateBytes) bytes is read")
                    }
                    chain.append(der)
                }
            }
            certificateChain = chain
            decodedHeaderForMemo = DecodedHeader(
                header: decodedHeader.header, strict: headerStrict, algorithm: algorithm, certificateChain: chain)
        }
        headerSegment = segment
        signedBytes = bytes[..<secondDot]
        headerDepth = maximumDepth
    }

    /// True when the three segments are nothing but base64 characters and `=` (no white
    /// space or escapes that decoding tolerated): then the text is, character for character,
    /// what ``looksLikeJWS(_:)`` accepts (given its `eyJ` start), and the sniff need not run.
    let isStrictText: Bool
    /// The header segment as it came (base64url), the memo's key once the token verified.
    let headerSegment: [UInt8]
    /// The depth limit the header was parsed under (part of the memo's key).
    let headerDepth: Int
    /// The decoded header, to remember once a signature made with it verified (nil when it
    /// came from the memo already).
    private var decodedHeaderForMemo: DecodedHeader?

    public static func == (a: JWSToken, b: JWSToken) -> Bool {
        sameBytes(a.signedBytes, b.signedBytes) && a.signature == b.signature && a.headerDepth == b.headerDepth
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(signedBytes.count)
        signedBytes.withUnsafeBytes { hasher.combine(bytes: $0) }
        hasher.combine(signature)
    }

    /// Remembers this token's decoded header, so later tokens with the same header segment
    /// skip decoding it. Called by the trust check only after the token's signature verified
    /// with the header's own leaf key: unverified input never fills the memo.
    package func rememberHeader() {
        guard let decoded = decodedHeaderForMemo else { return }
        let key = HeaderKey(text: headerSegment, maximumDepth: headerDepth)
        Self.headers.withLock { memo in
            if memo.entries[key] != nil { return }
            if memo.entries.count >= Self.headerLimit { memo.entries.removeAll(keepingCapacity: true) }
            memo.entries[key] = decoded
            memo.last = (key, decoded)
        }
    }

    // MARK: - Header memo

    // Apple signs every token of a signing period with the same header (`alg` and the same
    // `x5c` chain), so a fleet sees a handful of distinct headers: each is base64-decoded, parsed
    // and its certificates decoded once. Keyed by the exact base64url text (and the depth
    // limit it was parsed under), so the memo returns what decoding that text gives. Filled
    // only with the header of a token whose signature verified (``rememberHeader()``), so
    // forged or unsigned tokens cannot fill it; bounded: past `headerLimit` entries (each at
    // most ``maximumHeaderBytes`` of text) it is cleared.

    private struct HeaderKey: Hashable, Sendable {
        var text: [UInt8]
        var maximumDepth: Int

        /// The length, the first 256 characters (the leaf certificate's serial and dates) and
        /// the last 64 (``hashSample(_:head:tail:into:)``): every byte of 4 KB was hashed for
        /// each token whose header was not the last one seen.
        func hash(into hasher: inout Hasher) {
            hasher.combine(maximumDepth)
            hashSample(text[...], head: 256, tail: 64, into: &hasher)
        }

        static func == (a: HeaderKey, b: HeaderKey) -> Bool {
            a.maximumDepth == b.maximumDepth && sameBytes(a.text[...], b.text[...])
        }
    }

    private struct DecodedHeader: Sendable {
        var header: JSONValue
        /// The header's text decoded strictly (see ``isStrictText``).
        var strict: Bool
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

    /// Whether this token's header is in the memo (for tests: the memo is shared by the
    /// whole process, so a test asks about its own header rather than counting entries).
    var isHeaderRemembered: Bool {
        let key = HeaderKey(text: headerSegment, maximumDepth: headerDepth)
        return Self.headers.withLock { $0.entries[key] != nil }
    }

    /// True when `text` starts as a compact JWS does (`eyJ`) and has a dot: worth decoding as
    /// one. Whether it is one is ``looksLikeJWS(_:)``'s to say; a token that decodes strictly
    /// (``isStrictText``) is one without asking.
    static func mightBeJWS(_ text: ArraySlice<UInt8>) -> Bool {
        text.withUnsafeBufferPointer { bytes in
            guard bytes.count >= 3, bytes[0] == UInt8(ascii: "e"), bytes[1] == UInt8(ascii: "y"), bytes[2] == UInt8(ascii: "J"),
                let base = bytes.baseAddress
            else { return false }
            return memchr(base, Int32(UInt8(ascii: ".")), bytes.count) != nil
        }
    }

    /// True when `text` has the shape of a compact JWS: base64url parts separated by dots, the
    /// first starting with `eyJ` (the base64 of `{"`). The part count is checked when decoding,
    /// so a token with a part missing gets an error that says so.
    static func looksLikeJWS(_ text: ArraySlice<UInt8>) -> Bool {
        guard mightBeJWS(text) else { return false }
        return text.withUnsafeBufferPointer { bytes in
            guard let base = bytes.baseAddress else { return false }
            // This runs over every input, nested tokens too. Blocks of 64 bytes with no branch
            // inside, which the compiler turns into vector code: half the time of a byte table.
            var i = 0
            while i + 64 <= bytes.count {
                let block = base + i
                var bad: UInt8 = 0
                for k in 0..<64 { bad |= isTokenCharacter(block[k]) ^ 1 }
                guard bad == 0 else { return false }
                i &+= 64
            }
            while i < bytes.count {
                guard isTokenCharacter(base[i]) == 1 else { return false }
                i += 1
            }
            return true
        }
    }

    /// 1 for a character of the base64/base64url alphabet, `=` or `.`; else 0, without
    /// branches (``Base64Text/alphabetMark(_:)``), so a loop over it can be vectorised.
    @inline(__always)
    private static func isTokenCharacter(_ c: UInt8) -> UInt8 {
        Base64Text.alphabetMark(c) | (c == UInt8(ascii: ".") ? 1 : 0)
    }
}
