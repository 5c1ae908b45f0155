import Foundation
import Testing
import TestSupport
@testable import ReceiptCore

@Suite struct Base64TextTests {
    let sample: [UInt8] = Array(0...255)
    var standard: String { Data(sample).base64EncodedString() }

    @Test func encodesBase64URLWithoutPaddingAsFoundationDoes() throws {
        // RFC 4648's test vectors, then every length up to 300 over all byte values: the text
        // is Foundation's base64 with + → -, / → _ and the padding dropped, and decodes back.
        let vectors = ["": "", "f": "Zg", "fo": "Zm8", "foo": "Zm9v", "foob": "Zm9vYg", "fooba": "Zm9vYmE", "foobar": "Zm9vYmFy"]
        for (plain, encoded) in vectors { #expect(Base64Text.encodeURL(Array(plain.utf8)) == encoded) }
        #expect(Base64Text.encodeURL([0xFB, 0xFF, 0xBF]) == "-_-_")
        for length in 0...300 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ length) }
            let expected = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            let text = Base64Text.encodeURL(bytes)
            #expect(text == expected, "length \(length)")
            if length > 0 { #expect(try Base64Text.decode(Array(text.utf8)) == bytes, "length \(length)") }
            #expect(Base64Text.encodeURL(bytes.lazy.map { $0 }) == expected, "a non-contiguous collection, length \(length)")
        }
    }

    @Test func cleanTextDecodesAsFoundationDecodesIt() throws {
        // Either alphabet, every length up to 200, with and without padding and a trailing
        // newline: the bytes are Foundation's for the same text made standard and padded. A
        // last character with bits left over, or a character out of place, takes the tolerant
        // path and answers as it did.
        for length in 1...200 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 91 &+ 7 &* length) }
            let standard = Data(bytes).base64EncodedString()
            let url = Base64Text.encodeURL(bytes)
            for text in [standard, url, url + "\n", standard.replacingOccurrences(of: "=", with: "") + " \r\n"] {
                #expect(try Base64Text.decode(Array(text.utf8)) == bytes, "length \(length): \(text.suffix(8))")
            }
        }
        // "Zh" leaves bits over: Foundation's answer, whatever it is, stands.
        for text in ["Zh", "Zm9", "Zm9vYh", "QQ", "QR", "QUI", "QUJ"] {
            let foundation = Data(base64Encoded: text + String(repeating: "=", count: (4 - text.count % 4) % 4)).map { [UInt8]($0) }
            #expect((try? Base64Text.decode(Array(text.utf8))) == foundation, "\(text)")
        }
    }

    @Test func decodesStandardBase64() throws {
        #expect(try Base64Text.decode(Array(standard.utf8)) == sample)
    }

    @Test func toleratesLineBreaksSpacesAndTabs() throws {
        var wrapped = ""
        for (i, c) in standard.enumerated() {
            wrapped.append(c)
            if i % 64 == 63 { wrapped += "\r\n" }
            if i % 17 == 0 { wrapped += " \t" }
        }
        #expect(try Base64Text.decode(Array(wrapped.utf8)) == sample)
    }

    @Test func acceptsURLSafeAlphabetAndMissingPadding() throws {
        let urlSafe = standard.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        #expect(urlSafe.contains("-") || urlSafe.contains("_"))
        #expect(try Base64Text.decode(Array(urlSafe.utf8)) == sample)
        // One and two bytes: the padding cases.
        #expect(try Base64Text.decode(Array("AQ".utf8)) == [1])
        #expect(try Base64Text.decode(Array("AQI".utf8)) == [1, 2])
    }

    @Test func acceptsJSONEscapedSlashes() throws {
        let escaped = standard.replacingOccurrences(of: "/", with: "\\/")
        #expect(try Base64Text.decode(Array(escaped.utf8)) == sample)
    }

    @Test func namesTheInvalidCharacterAndItsOffset() {
        let words = Wording("base64-text")
        var text = Array(standard.utf8)
        text[88] = UInt8(ascii: "!")
        let error = decodingError { try Base64Text.decode(text) }
        #expect(error?.code == .invalidBase64)
        #expect(error?.offset == 88)
        words.said(error?.reason)
        words.check()
    }

    @Test func aCharacterOutOfPlaceIsFoundWhereverItStands() {
        // The clean path reads eight characters at a time, then four: a bad character at each
        // place of each (and in the last, partial quartet) stops it there, and the error names
        // that offset; a padded text with one character of either alphabet changed at each
        // offset still decodes to what Foundation gives.
        let bytes = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 53 &+ 11) }
        let text = Array(Data(bytes).base64EncodedString().utf8)  // 44 characters, the last '='
        for offset in 0..<43 {
            for bad in [UInt8(ascii: "!"), 0x00, 0x80, 0xFF, UInt8(ascii: "=")] where !(bad == UInt8(ascii: "=") && offset == 42) {
                var broken = text
                broken[offset] = bad
                let error = decodingError { try Base64Text.decode(broken) }
                #expect(error?.code == .invalidBase64, "offset \(offset), byte \(bad)")
                #expect(error?.offset == offset || bad == UInt8(ascii: "="), "offset \(offset), byte \(bad)")
            }
            var changed = text
            changed[offset] = offset % 2 == 0 ? UInt8(ascii: "z") : UInt8(ascii: "-")
            let standard = String(decoding: changed, as: UTF8.self).replacingOccurrences(of: "-", with: "+")
            #expect((try? Base64Text.decode(changed)) == Data(base64Encoded: standard).map { [UInt8]($0) }, "offset \(offset)")
        }
    }

    @Test func controlCharactersAreDescribedNotPrinted() {
        let words = Wording("base64-text")
        let error = decodingError { try Base64Text.decode(Array("QUJD\u{1B}[31m".utf8)) }
        words.said(error?.reason)
        words.check()
    }

    @Test func truncatedLengthIsAnError() {
        let error = decodingError { try Base64Text.decode(Array("QUJDR".utf8)) }
        #expect(error?.code == .invalidBase64)
        #expect(error?.reason.contains("truncated: 5 characters") == true)
    }

    @Test func dataAfterPaddingIsAnError() {
        let words = Wording("base64-text")
        let error = decodingError { try Base64Text.decode(Array("QQ==QQ==".utf8)) }
        #expect(error?.offset == 4)
        words.said(error?.reason)
        words.check()
    }

    @Test func emptyIsAnError() {
        #expect(decodingError { try Base64Text.decode(Array(" \n ".utf8)) }?.reason == "base64 is empty")
    }
}
