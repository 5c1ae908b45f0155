import AppStoreAPI
import Foundation
import Testing
import TestSupport

/// Apple's Retention Messaging limits, refused before sending with Apple's code named.
@Suite struct RetentionLimitsTests {
    let id = "7E3FB20B-4CDB-47CC-936D-99D65F608138"

    func refusal(_ body: UploadMessageRequestBody) -> RetentionLimitError? {
        do throws(RetentionLimitError) {
            _ = try RetentionLimits.checked(body)
            return nil
        } catch { return error }
    }

    @Test func messageLimitsAtAndPastTheEdge() {
        let atEdge = UploadMessageRequestBody(
            header: String(repeating: "h", count: 66), body: String(repeating: "b", count: 144),
            image: UploadMessageImage(imageIdentifier: id, altText: String(repeating: "a", count: 150)), headerPosition: .aboveImage,
            bulletPoints: Array(repeating: RetentionBulletPoint(text: String(repeating: "t", count: 66), imageIdentifier: id, altText: "x"), count: 5))
        #expect(refusal(atEdge) == nil)
        var body = atEdge
        body.header += "h"
        #expect(refusal(body)?.code == .headerTooLong)
        #expect(refusal(body)?.apiErrorCode == .headerTooLong)
        body = atEdge
        body.body += "b"
        #expect(refusal(body)?.apiErrorCode?.rawValue == 4_000_163)
        body = atEdge
        body.image?.altText += "a"
        #expect(refusal(body)?.apiErrorCode?.rawValue == 4_000_175)
        body = atEdge
        body.bulletPoints?.append(RetentionBulletPoint(text: "t", imageIdentifier: id, altText: "x"))
        #expect(refusal(body)?.apiErrorCode?.rawValue == 4_000_218)
        body = atEdge
        body.bulletPoints?[4].text += "t"
        #expect(refusal(body)?.apiErrorCode?.rawValue == 4_000_219)
        body = atEdge
        body.bulletPoints?[2].altText = String(repeating: "a", count: 151)
        #expect(refusal(body)?.apiErrorCode?.rawValue == 4_000_175)
        body = atEdge
        body.image = nil
        #expect(refusal(body)?.apiErrorCode?.rawValue == 4_000_224)
        body = atEdge
        body.bulletPoints?[0].imageIdentifier = "not-a-uuid"
        #expect(refusal(body)?.code == .identifierNotUUID)
        #expect(refusal(body)?.apiErrorCode == nil)
    }

    @Test func lengthsCountCharactersAsPeopleSeeThem() {
        // 66 flags are 66 characters (132 code points, 528 bytes), as Apple's Swift library counts.
        #expect(refusal(UploadMessageRequestBody(header: String(repeating: "🇫🇷", count: 66), body: "b")) == nil)
        #expect(refusal(UploadMessageRequestBody(header: String(repeating: "🇫🇷", count: 67), body: "b"))?.code == .headerTooLong)
    }

    @Test func identifiersAreSentUpperCaseAsApplesLibrarySendsThem() throws {
        #expect(try RetentionLimits.identifier(id.lowercased()) == id)
        let checked = try RetentionLimits.checked(
            UploadMessageRequestBody(header: "h", body: "b", image: UploadMessageImage(imageIdentifier: id.lowercased(), altText: "a")))
        #expect(checked.image?.imageIdentifier == id)
    }

    @Test func realtimeURLMustBeHTTPSAndAtMost256() {
        func code(_ url: String) -> RetentionLimitError.Code? {
            do throws(RetentionLimitError) {
                _ = try RetentionLimits.checked(RealtimeUrlRequest(realtimeURL: url))
                return nil
            } catch { return error.code }
        }
        let edge = "https://example.com/" + String(repeating: "r", count: 256 - 20)
        #expect(edge.count == 256)
        #expect(code(edge) == nil)
        #expect(code(edge + "r") == .realtimeURLInvalid)
        #expect(code("http://example.com/r") == .realtimeURLInvalid)
        #expect(code("https://") == .realtimeURLInvalid)
        #expect(RetentionLimitError(.realtimeURLInvalid).apiErrorCode?.rawValue == 4_000_215)
    }

    @Test func defaultKeysAreCheckedBeforeSending() {
        func code(_ product: String, _ locale: String) -> RetentionLimitError.Code? {
            do throws(RetentionLimitError) {
                try RetentionLimits.checkDefault(productID: product, locale: locale)
                return nil
            } catch { return error.code }
        }
        #expect(code("com.example.monthly", "en-US") == nil)
        #expect(code(" ", "en-US") == .productIDEmpty)
        #expect(code("p", "en US") == .localeInvalid)
        #expect(code("p", "") == .localeInvalid)
        #expect(RetentionLimitError(.localeInvalid).apiErrorCode?.rawValue == 4_000_164)
    }
}

/// The PNG checker: Apple's sizes, no transparency, and any bytes refused with a code, never a
/// crash or a hang.
@Suite struct PNGCheckTests {
    func code(_ bytes: [UInt8], _ size: RetentionImageSize = .fullSize) -> RetentionLimitError.Code? {
        do throws(RetentionLimitError) {
            try PNGCheck.check(bytes, size: size)
            return nil
        } catch { return error.code }
    }

    @Test func applesSizesAreTakenAtTheirEdges() throws {
        #expect(code(TestPNG.make(width: 3840, height: 160)) == nil)
        #expect(code(TestPNG.make(width: 3840, height: 2160)) == nil)
        #expect(code(TestPNG.make(width: 3840, height: 159)) == .imageSizeInvalid)
        #expect(code(TestPNG.make(width: 3840, height: 2161)) == .imageSizeInvalid)
        #expect(code(TestPNG.make(width: 3839, height: 1200)) == .imageSizeInvalid)
        #expect(code(TestPNG.bullet(), .bulletPoint) == nil)
        #expect(code(TestPNG.bullet(), .fullSize) == .imageSizeInvalid)
        #expect(code(TestPNG.make(width: 1024, height: 1023), .bulletPoint) == .imageSizeInvalid)
        let header = try PNGCheck.header(TestPNG.make(width: 3840, height: 700, colourType: 0, bitDepth: 1))
        #expect(header == PNGCheck.Header(width: 3840, height: 700, bitDepth: 1, colourType: 0, hasTransparencyChunk: false))
        #expect(RetentionLimitError(.imageSizeInvalid).apiErrorCode?.rawValue == 4_000_216)
    }

    @Test func transparencyIsRefusedByColourTypeOrTRNS() {
        #expect(code(TestPNG.make(width: 3840, height: 400, colourType: 6)) == .imageTransparent)
        #expect(code(TestPNG.make(width: 3840, height: 400, colourType: 4)) == .imageTransparent)
        #expect(code(TestPNG.make(width: 3840, height: 400, colourType: 3, transparencyChunk: true)) == .imageTransparent)
        #expect(code(TestPNG.make(width: 3840, height: 400, colourType: 2, transparencyChunk: true)) == .imageTransparent)
        #expect(code(TestPNG.make(width: 3840, height: 400, colourType: 3)) == nil)
        #expect(RetentionLimitError(.imageTransparent).apiErrorCode?.rawValue == 4_000_161)
    }

    @Test func everyTruncationAndDamageIsRefusedWithACode() {
        let good = TestPNG.make(width: 3840, height: 400, transparencyChunk: false)
        // Every prefix short of the IDAT chunk's end is refused as invalid.
        let idatEnd = 8 + 25 + 23
        for length in 0..<idatEnd { #expect(code(Array(good.prefix(length))) == .imageInvalid, "\(length) bytes") }
        #expect(code(Array(good.prefix(idatEnd))) == nil)
        // A flipped bit in the header is a CRC mismatch; a wrong colour/depth pair is refused.
        var damaged = good
        damaged[20] ^= 0x01
        #expect(code(damaged) == .imageInvalid)
        #expect(code(TestPNG.make(width: 3840, height: 400, colourType: 2, bitDepth: 4)) == .imageInvalid)
        #expect(code(TestPNG.make(width: 3840, height: 400, colourType: 7)) == .imageInvalid)
        #expect(code(Array("GIF89a".utf8) + good) == .imageInvalid)
        // A stated length past the end (2 GiB) is refused without reading it.
        var huge = good
        huge.replaceSubrange(33..<37, with: [0x7F, 0xFF, 0xFF, 0xFF])
        #expect(code(huge) == .imageInvalid)
        // IEND before IDAT: no image data.
        let noData = Array(good.prefix(33)) + TestPNG.chunk("IEND", [])
        #expect(code(noData) == .imageInvalid)
    }

    @Test func everyByteOfAPNGSetToEveryValueEndsInAHeaderOrACode() {
        // 68 bytes × 255 other values, both sizes: no crash; a change up to IDAT's CRC is caught.
        let good = TestPNG.make(width: 3840, height: 400, transparencyChunk: false)
        var accepted = 0
        for index in good.indices {
            for value in 0...255 where UInt8(value) != good[index] {
                var bytes = good
                bytes[index] = UInt8(value)
                for size in RetentionImageSize.allCases where code(bytes, size) == nil { accepted += 1 }
            }
        }
        #expect(good.count == 68)
        // Only changes to IEND (after the image data, read by nobody) pass, for the full size.
        #expect(accepted == 12 * 255)
    }

    @Test func manyChunksBeforeTheDataEndTheCheck() {
        let header = Array(TestPNG.make(width: 3840, height: 400).prefix(33))
        let text = TestPNG.chunk("tEXt", Array("k\u{0}v".utf8))
        var bytes = header
        for _ in 0..<1001 { bytes += text }
        #expect(code(bytes) == .imageInvalid)
    }
}
