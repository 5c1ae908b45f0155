import Foundation
import Testing
import TestSupport
@testable import ReceiptRendering
@testable import ReceiptCore

/// Builds DER by hand for crafted inputs.
enum TestDER {
    static func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        var out = [tag]
        let n = content.count
        if n < 0x80 {
            out.append(UInt8(n))
        } else if n < 0x100 {
            out += [0x81, UInt8(n)]
        } else if n < 0x10000 {
            out += [0x82, UInt8(n >> 8), UInt8(n & 0xFF)]
        } else {
            out += [0x83, UInt8(n >> 16), UInt8((n >> 8) & 0xFF), UInt8(n & 0xFF)]
        }
        return out + content
    }

    static func int(_ v: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        var x = v
        repeat {
            bytes.insert(UInt8(x & 0xFF), at: 0)
            x >>= 8
        } while x > 0
        if bytes[0] & 0x80 != 0 { bytes.insert(0, at: 0) }
        return tlv(0x02, bytes)
    }

    static func attribute(_ type: Int, _ value: [UInt8]) -> [UInt8] {
        tlv(0x30, int(type) + int(1) + tlv(0x04, value))
    }

    static func utf8(_ bytes: [UInt8]) -> [UInt8] { tlv(0x0C, bytes) }
    static func ia5(_ text: String) -> [UInt8] { tlv(0x16, Array(text.utf8)) }

    /// A PKCS#7 SignedData container around `payload`, with no certificates and an empty
    /// signer set (enough for decoding; signatures are checked elsewhere).
    static func container(_ payload: [UInt8]) -> [UInt8] {
        let signedDataOID: [UInt8] = [0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x02]
        let dataOID: [UInt8] = [0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x01]
        let sha1: [UInt8] = tlv(0x30, [0x06, 0x05, 0x2B, 0x0E, 0x03, 0x02, 0x1A, 0x05, 0x00])
        let content = tlv(0x30, dataOID + tlv(0xA0, tlv(0x04, payload)))
        let signedData = tlv(0x30, int(1) + tlv(0x31, sha1) + content + tlv(0x31, []))
        return tlv(0x30, signedDataOID + tlv(0xA0, signedData))
    }
}

@Suite struct HostileInputTests {
    let decoder = ReceiptDecoder()
    var slowDecoder: ReceiptDecoder {
        var d = ReceiptDecoder()
        d.fastPaths = false
        return d
    }

    /// Cutting a real receipt short at every byte gives an error, never a crash or a hang,
    /// on both the fast path and the swift-asn1 path.
    @Test(arguments: ["sandbox-2023.der", "xcode.der"])
    func truncationAtEveryByte(fixture: String) throws {
        let der = try Fixture.bytes(fixture)
        for decoder in [decoder, slowDecoder] {
            for length in 0..<der.count {
                let error = decodingError { try decoder.decode(der[0..<length]) }
                #expect(error != nil, "truncated to \(length) bytes decoded")
                if let error, length > 2 {
                    #expect(error.offset != nil, "no offset for truncation at \(length): \(error.reason)")
                }
            }
        }
    }

    @Test func truncatedContainerSaysWhereTheLengthRunsOut() throws {
        let words = Wording("hostile-input")
        let der = try Fixture.bytes("sandbox-2023.der")
        let error = decodingError { try decoder.decode(der[0..<1000]) }
        #expect(error?.code == .invalidASN1)
        #expect(error?.offset == 1)
        words.said(error?.reason)
        words.check()
    }

    /// Cutting the base64 text short at every character never crashes either.
    @Test func base64TruncationAtEveryCharacter() throws {
        let text = try Fixture.bytes("production.b64")
        for length in stride(from: 0, to: text.count, by: 3) {
            #expect(decodingError { try decoder.decode(text[0..<length]) } != nil)
        }
    }

    /// Overwriting any one of the first 400 bytes with each of a few values: decoded or a
    /// clear error, on both paths, never a crash.
    @Test func corruptedBytes() throws {
        let der = try Fixture.bytes("sandbox-2023.der")
        for decoder in [decoder, slowDecoder] {
            for position in 0..<400 {
                for value: UInt8 in [0x00, 0x7F, 0x80, 0x84, 0xFF] {
                    var copy = der
                    copy[position] = value
                    do {
                        _ = try decoder.decode(copy)
                    } catch let error as ReceiptDecodingError {
                        #expect(!error.reason.isEmpty)
                    } catch {
                        Issue.record("unexpected error type at \(position)=\(value): \(error)")
                    }
                }
            }
        }
    }

    @Test func hugeLengthIsRefused() {
        let words = Wording("hostile-input")
        let input: [UInt8] = [0x30, 0x84, 0x7F, 0xFF, 0xFF, 0xFF, 0x06, 0x09]
        let error = decodingError { try decoder.decode(input) }
        #expect(error?.code == .invalidASN1)
        words.said(error?.reason)
        words.check()
    }

    @Test func deepBERNestingIsRefused() {
        let input = Array([[UInt8]](repeating: [0x30, 0x80], count: 20_000).joined())
        let error = decodingError { try decoder.decode(input) }
        #expect(error?.code == .invalidASN1)
        #expect(error?.reason.contains("deeper than 50 levels") == true)
    }

    @Test func deepJSONNestingIsRefused() {
        let words = Wording("hostile-input")
        let input = String(repeating: "[", count: 200_000) + String(repeating: "]", count: 200_000)
        let error = decodingError { try decoder.decode(text: input) }
        #expect(error?.code == .limitExceeded)
        words.said(error?.reason)
        words.check()
    }

    @Test func tooManyPurchasesInAReceipt() {
        var limits = DecodingLimits()
        limits.maximumPurchases = 10
        let purchase = TestDER.tlv(0x31, TestDER.attribute(1702, TestDER.utf8(Array("p".utf8))))
        let payload = TestDER.tlv(0x31, Array([[UInt8]](repeating: TestDER.attribute(17, purchase), count: 11).joined()))
        let error = decodingError { try ReceiptDecoder(limits: limits).decode(TestDER.container(payload)) }
        #expect(error?.code == .limitExceeded)
        #expect(error?.reason.contains("more than 10 in-app purchases") == true)
        // Ten is fine.
        let ten = TestDER.tlv(0x31, Array([[UInt8]](repeating: TestDER.attribute(17, purchase), count: 10).joined()))
        #expect((try? ReceiptDecoder(limits: limits).decode(TestDER.container(ten)))?.receipt?.inApp.count == 10)
    }

    @Test func tooManyRowsInAResponse() {
        var limits = DecodingLimits()
        limits.maximumPurchases = 10
        let rows = Array(repeating: #"{"product_id":"p"}"#, count: 11).joined(separator: ",")
        let error = decodingError { try ReceiptDecoder(limits: limits).decode(text: #"{"status":0,"latest_receipt_info":[\#(rows)]}"#) }
        #expect(error?.code == .limitExceeded)
    }

    /// A product id with invalid UTF-8 and an escape sequence: decoded, kept, and shown escaped.
    @Test func controlCharactersAndInvalidUTF8InFields() throws {
        let words = Wording("hostile-input")
        let productID: [UInt8] = Array("evil".utf8) + [0x1B] + Array("[2J".utf8) + [0xFF]
        let purchase = TestDER.tlv(
            0x31,
            TestDER.attribute(1702, TestDER.utf8(productID)) + TestDER.attribute(1704, TestDER.ia5("2020-01-01T00:00:00Z")))
        let payload = TestDER.tlv(
            0x31,
            TestDER.attribute(2, TestDER.utf8(Array("com.example\u{202E}txt".utf8))) + TestDER.attribute(17, purchase))
        let decoded = try decoder.decode(TestDER.container(payload))
        #expect(decoded.receipt?.inApp.first?.productID == "evil\u{1B}[2J\u{FFFD}")
        words.said(decoded.warnings)
        let text = TextSummary.render(decoded, title: "x\u{07}")
        #expect(!text.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 || $0.value == 0x202E })
        #expect(text.contains(#"evil\x1b[2J"#))
        #expect(text.contains(#"com.example\u{202e}txt"#))
        #expect(text.hasPrefix(#"x\x07"#))
        words.check()
    }

    /// A known field with the wrong ASN.1 type is kept raw with a warning; the rest decodes.
    @Test func wrongValueTypeIsKeptRaw() throws {
        let words = Wording("hostile-input")
        let payload = TestDER.tlv(
            0x31,
            TestDER.attribute(2, TestDER.int(5)) + TestDER.attribute(3, TestDER.utf8(Array("1.0".utf8)))
                + TestDER.attribute(12, TestDER.ia5("not a date")))
        let decoded = try decoder.decode(TestDER.container(payload))
        #expect(decoded.receipt?.bundleID == nil)
        #expect(decoded.receipt?.applicationVersion == "1.0")
        #expect(decoded.receipt?.unknownAttributes.map(\.type) == [2, 12])
        words.said(decoded.warnings)
        words.check()
    }

    @Test func payloadThatIsNotASetSaysWhere() throws {
        let words = Wording("hostile-input")
        let payload = TestDER.tlv(0x30, TestDER.attribute(2, TestDER.utf8([0x41])))
        let error = decodingError { try decoder.decode(TestDER.container(payload)) }
        #expect(error?.code == .invalidReceiptPayload)
        words.said(error?.reason)
        words.said(error?.reason)
        words.check()
    }

    @Test(arguments: [
        #"{"status": 0, "receipt": 12}"#,
        #"{"status": 0, "latest_receipt_info": "x"}"#,
        #"{"status": 0, "pending_renewal_info": {"a": 1}}"#,
        #"{"status": 1e999}"#,
        #"{"status": 0, "receipt": {"in_app": [1, 2]}}"#,
        "{\"status\": 0, \"x\": \"\u{0}\u{1B}\"}",
        #"{"notification_type": "X", "unified_receipt": []}"#,
        #"{"signedPayload": "eyJ.eyJ.x"}"#,
        #"{"signedPayload": 7}"#,
    ])
    func hostileJSONBodies(body: String) {
        do {
            let decoded = try decoder.decode(text: body)
            _ = InspectJSON.encode(InspectJSON.object(for: decoded))
            _ = TextSummary.render(decoded)
        } catch let error as ReceiptDecodingError {
            #expect(!error.reason.isEmpty)
        } catch {
            Issue.record("unexpected error type: \(error)")
        }
    }
}
