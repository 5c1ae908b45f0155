import Foundation
import Testing
import TestSupport
@testable import ReceiptCore

/// Every way a person pastes the same receipt gives the same decoded receipt.
@Suite struct InputSniffingTests {
    let decoder = ReceiptDecoder()

    func base64() throws -> String { try Fixture.text("production.b64").trimmingCharacters(in: .whitespacesAndNewlines) }
    func reference() throws -> AppReceipt { try #require(try decoder.decode(try Fixture.bytes("production.b64")).receipt) }

    @Test(arguments: [
        "wrapped at 76 columns", "quoted", "single-quoted", "url-safe without padding", "receipt-data JSON",
        "log line", "JSON-escaped slashes", "CRLF and indentation", "JSON string",
    ])
    func pastedForms(form: String) throws {
        let b64 = try base64()
        let text: String
        switch form {
        case "wrapped at 76 columns":
            text = stride(from: 0, to: b64.count, by: 76).map { i in
                String(b64.dropFirst(i).prefix(76))
            }.joined(separator: "\n")
        case "quoted": text = "\"\(b64)\""
        case "single-quoted": text = "'\(b64)'\n"
        case "url-safe without padding":
            text = b64.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        case "receipt-data JSON": text = #"{"receipt-data": "\#(b64)", "password": "x", "exclude-old-transactions": true}"#
        case "log line": text = "2024-02-23 17:27:16 INFO verify receipt=\(b64) user=42"
        case "JSON-escaped slashes": text = b64.replacingOccurrences(of: "/", with: "\\/")
        case "CRLF and indentation": text = "   \r\n\t" + b64.prefix(100) + "\r\n    " + b64.dropFirst(100) + "\r\n"
        case "JSON string": text = "\"" + b64.replacingOccurrences(of: "/", with: "\\/") + "\""
        default: Issue.record("unknown form"); return
        }
        let decoded = try decoder.decode(text: text)
        #expect(decoded.format == .pkcs7)
        #expect(decoded.receipt == (try reference()))
    }

    /// The JWS sniff, read 64 bytes at a time, answers as a byte-by-byte reading of its rule
    /// (`eyJ`, then only the base64 or base64url alphabet, `=` and dots, with a dot somewhere):
    /// every byte value, in a block, at a block's edge and in the tail.
    @Test func jwsSniffAnswersByteForByteAsItsRule() {
        // The characters written out, not read from the code under test.
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_=.".utf8)
        func rule(_ text: [UInt8]) -> Bool {
            text.starts(with: Array("eyJ".utf8)) && text.contains(UInt8(ascii: ".")) && text.allSatisfy(allowed.contains)
        }
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_+/=".utf8)
        var token = Array("eyJ".utf8) + (0..<140).map { alphabet[$0 * 7 % alphabet.count] }
        token[70] = UInt8(ascii: ".")
        #expect(JWSToken.looksLikeJWS(token[...]))
        var answers = 0
        for position in [3, 5, 63, 64, 65, 127, 128, 129, 142] {
            for value in UInt8.min...UInt8.max {
                var text = token
                text[position] = value
                #expect(JWSToken.looksLikeJWS(text[...]) == rule(text), "byte \(value) at \(position)")
                if rule(text) { answers += 1 }
            }
        }
        // 67 characters of the alphabets and `=`, and the dot: 68 values pass at each place.
        #expect(answers == 9 * 68)
        #expect(!JWSToken.looksLikeJWS(Array(token.map { $0 == UInt8(ascii: ".") ? UInt8(ascii: "A") : $0 })[...]))
        for text in ["", "e", "ey", "eyJ", "eyJ.", "eyK.abc", "eyJhbGciOiJFUzI1NiJ9.e30.sig"] {
            #expect(JWSToken.looksLikeJWS(Array(text.utf8)[...]) == rule(Array(text.utf8)), "\(text)")
        }
        // The alphabet the decoders and the sniff share: exactly those characters but the dot.
        for value in UInt8.min...UInt8.max {
            #expect(Base64Text.isAlphabet(value) == (allowed.contains(value) && value != UInt8(ascii: ".")), "byte \(value)")
        }
        // A slice that does not start at 0 (a token inside a log line).
        let line = Array("token=".utf8) + token
        #expect(JWSToken.looksLikeJWS(line[6...]))
    }

    /// A token is decoded before it is sniffed, and sniffed only when it did not decode
    /// strictly: what is taken as a JWS, and each error, are still the sniff's. A segment with
    /// a line break, a space, a tab or a `\/` escape decodes (the base64 reader tolerates them)
    /// but is not a JWS by the sniff's rule, so the text goes on to the base64 reading, which
    /// stops at the first dot, as before.
    @Test func jwsDecodedFirstIsTakenExactlyAsTheSniffSays() throws {
        let words = Wording("input-sniffing")
        let token = try Fixture.text("notification-v2.jws").trimmingCharacters(in: .whitespacesAndNewlines)
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        try #require(parts.count == 3)
        let (header, payload, signature) = (parts[0], parts[1], parts[2])

        let strict = try JWSToken(compact: Array(token.utf8))
        #expect(strict.isStrictText)
        let decoded = try decoder.decode(text: token)
        #expect(decoded.format == .jwsNotification)
        #expect(decoded.wrapping == [])
        #expect(decoded.nested.count == 2)

        // Tolerated inside a segment, so each decodes as a token, but not strictly. (`\/` stands
        // for a `/`, here in place of the signature's first character, which changes its bytes.)
        let slashEscaped = header + "." + payload + "." + "\\/" + signature.dropFirst()
        let tolerated: [(String, String, Int)] = [
            ("line break in the payload", header + "." + payload.prefix(100) + "\n" + payload.dropFirst(100) + "." + signature, header.utf8.count),
            ("space before the second dot", header + "." + payload + " ." + signature, header.utf8.count),
            ("tab in the header", header.prefix(40) + "\t" + header.dropFirst(40) + "." + payload + "." + signature, header.utf8.count + 1),
        ]
        for (what, text, dot) in tolerated {
            let bytes = Array(text.utf8)
            #expect(!JWSToken.looksLikeJWS(bytes[...]), "\(what)")
            let read = try JWSToken(compact: bytes)
            #expect(!read.isStrictText, "\(what)")
            #expect(read.payload == strict.payload, "\(what)")
            let error = decodingError { try decoder.decode(bytes) }
            #expect(error?.code == .invalidBase64, "\(what)")
            #expect(error?.offset == dot, "\(what)")
            words.said(error?.reason)
        }
        // The escape in the signature: not a JWS by the sniff either, so the search for a token
        // inside a line finds `header.payload.` (the longest run of token characters), as before.
        let escapedRead = try JWSToken(compact: Array(slashEscaped.utf8))
        #expect(!escapedRead.isStrictText)
        let embedded = try decoder.decode(text: slashEscaped)
        #expect(embedded.wrapping == ["embedded"])
        #expect(embedded.format == .jwsNotification)
        guard case .jws(let found)? = embedded.signature else {
            Issue.record("no token found")
            return
        }
        #expect(found.signature.isEmpty)
        #expect(found.signingInput == Array((header + "." + payload).utf8))

        // Strict characters that do not decode: the sniff says JWS, so the token's error stands.
        let padded = header + "." + payload.prefix(12) + "=" + payload.dropFirst(12) + "." + signature
        let error = decodingError { try decoder.decode(text: padded) }
        #expect(error?.code == .invalidJWS)
        words.said(error?.reason)
        // The standard alphabet is as strict as the URL one.
        let standard = header + "." + payload.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/") + "." + signature
        #expect(try JWSToken(compact: Array(standard.utf8)).isStrictText)
        #expect(try decoder.decode(text: standard).format == .jwsNotification)
        words.check()
    }

    @Test func binaryAndBase64AreTheSame() throws {
        let der = try Fixture.der("production.b64")
        let fromBinary = try decoder.decode(der)
        #expect(fromBinary.wrapping == ["binary"])
        #expect(fromBinary.receipt == (try reference()))
    }

    @Test func jwsPayloadPastedAsJSON() throws {
        let payload = #"{"transactionId":"1","originalTransactionId":"1","productId":"p","purchaseDate":1700000000000,"type":"Consumable"}"#
        let decoded = try decoder.decode(text: payload)
        #expect(decoded.format == .jwsTransaction)
        #expect(decoded.transactions.first?.productType == .consumable)
        #expect(decoded.signature == nil)
    }

    @Test func signedPayloadWrapper() throws {
        let jws = try Fixture.text("notification-v2.jws").trimmingCharacters(in: .whitespacesAndNewlines)
        let decoded = try decoder.decode(text: #"{"signedPayload":"\#(jws)"}"#)
        #expect(decoded.format == .jwsNotification)
        #expect(decoded.wrapping == ["json:signedPayload"])
    }

    @Test(arguments: [
        ("", "input is empty"),
        ("   \n\t ", "input is empty"),
        (#"{"hello": "world"}"#, "JSON object with keys hello is not a receipt, a verifyReceipt response or a notification"),
        ("aGVsbG8gd29ybGQ=", "base64 decoded to 11 bytes that are neither a PKCS#7 receipt (starts with 0x30) nor a transaction receipt plist (starts with '{'); the first byte is 0x68"),
        ("eyJhbGciOiJFUzI1NiJ9.eyJmb28iOjF9", "a JWS has three parts separated by '.', this one has 2"),
    ])
    func plainErrors(input: String, message: String) {
        let error = decodingError { try decoder.decode(text: input) }
        #expect(error?.reason == message)
    }

    @Test func binaryGarbageIsNamedAsSuch() {
        let words = Wording("input-sniffing")
        let error = decodingError { try decoder.decode([0x01, 0x02, 0xFF, 0xFE, 0x00, 0x10]) }
        #expect(error?.code == .unrecognisedFormat)
        words.said(error?.reason)
        words.check()
    }

    @Test func oversizedInputIsRefusedBeforeDecoding() {
        var limits = DecodingLimits()
        limits.maximumInputBytes = 1000
        let error = decodingError { try ReceiptDecoder(limits: limits).decode([UInt8](repeating: 0x41, count: 1001)) }
        #expect(error?.code == .inputTooLarge)
    }
}
