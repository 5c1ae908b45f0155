import Foundation
import Testing
@testable import ReceiptCore

@Suite struct Base64TextTests {
    let sample: [UInt8] = Array(0...255)
    var standard: String { Data(sample).base64EncodedString() }

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
        var text = Array(standard.utf8)
        text[88] = UInt8(ascii: "!")
        let error = decodingError { try Base64Text.decode(text) }
        #expect(error?.code == .invalidBase64)
        #expect(error?.offset == 88)
        #expect(error?.reason == "base64 has an invalid character '!' at offset 88")
    }

    @Test func controlCharactersAreDescribedNotPrinted() {
        let error = decodingError { try Base64Text.decode(Array("QUJD\u{1B}[31m".utf8)) }
        #expect(error?.reason == "base64 has an invalid character 0x1B at offset 4")
    }

    @Test func truncatedLengthIsAnError() {
        let error = decodingError { try Base64Text.decode(Array("QUJDR".utf8)) }
        #expect(error?.code == .invalidBase64)
        #expect(error?.reason.contains("truncated: 5 characters") == true)
    }

    @Test func dataAfterPaddingIsAnError() {
        let error = decodingError { try Base64Text.decode(Array("QQ==QQ==".utf8)) }
        #expect(error?.offset == 4)
        #expect(error?.reason == "base64 has data after its '=' padding at offset 4")
    }

    @Test func emptyIsAnError() {
        #expect(decodingError { try Base64Text.decode(Array(" \n ".utf8)) }?.reason == "base64 is empty")
    }
}
