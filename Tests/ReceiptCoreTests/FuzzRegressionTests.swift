import Foundation
import Testing
@testable import ReceiptRendering
@testable import ReceiptCore

/// One test per defect the fuzzers in `Fuzz/` found, each with the fuzzer's input as a fixture
/// in `Fixtures/fuzz/` (see Fuzz/README.md for how they are run).
@Suite struct FuzzRegressionTests {
    /// fuzz-pkcs7: a receipt whose digest algorithm OID starts with the byte 0xD8 (first
    /// subidentifier 11278, i.e. X.690 arc 2.11198). The fast DER scan printed it as
    /// `2.11198.3.2.26`, the swift-asn1 path (BER receipts, and `fastPaths = false`) as
    /// `281.38.3.2.26`, because swift-asn1's `description` divides the first subidentifier by 40.
    @Test func digestOIDWithFirstArcTwoReadsTheSameOnBothPaths() throws {
        let bytes = try Fixture.bytes("fuzz/pkcs7-digest-oid-arc-2.der")
        let fast = try PKCS7SignedData(berEncoded: bytes, fastPath: true)
        let slow = try PKCS7SignedData(berEncoded: bytes, fastPath: false)
        #expect(fast.digestAlgorithmOIDs == ["2.11198.3.2.26"])
        #expect(slow.digestAlgorithmOIDs == ["2.11198.3.2.26"])
        #expect(fast == slow)
    }

    /// The OID writer refuses a subidentifier padded with a leading 0x80 (not minimal), as
    /// swift-asn1 does, so the two paths also agree on those.
    @Test func oidWithPaddedSubidentifierIsRefused() {
        #expect(PKCS7SignedData.dottedOID([0x2A, 0x86, 0x48][...]) == "1.2.840")
        #expect(PKCS7SignedData.dottedOID([0x2A, 0x80, 0x86, 0x48][...]) == nil)
        #expect(PKCS7SignedData.dottedOID([0x81, 0x00][...]) == "2.48")
    }

    /// fuzz-decode: a StoreKit 2 payload whose `purchaseDate` is `1e300` (milliseconds) decodes
    /// to a date 10^297 s after 1970; printing it trapped in `AppleDate.iso8601`, which converted
    /// the milliseconds with `Int64(_:)`. `inspect` crashed on this 43-byte file.
    @Test func hugeDateIsPrintedNotTrapped() throws {
        let decoded = try ReceiptDecoder().decode(try Fixture.bytes("fuzz/jws-payload-purchase-date-1e300.json"))
        #expect(decoded.format == .jwsTransaction)
        let text = TextSummary.render(decoded)
        #expect(text.contains("291538364-04-06T11:33:20Z"))
        _ = InspectJSON.encode(InspectJSON.object(for: decoded))
    }

    /// Dates past the Int64 millisecond range are clamped to it; years past 9999 keep all
    /// their digits (they were cut to the last four: year 10000 printed as 0000).
    @Test func iso8601OutOfRange() {
        #expect(AppleDate.iso8601(Date(timeIntervalSince1970: 1e297)) == "291538364-04-06T11:33:20Z")
        #expect(AppleDate.iso8601(Date(timeIntervalSince1970: Double(Int64.max) / 1000)) == "291538364-04-06T11:33:20Z")
        #expect(AppleDate.iso8601(Date(timeIntervalSince1970: -1e297)) == "-291534425-09-27T12:26:40Z")
        #expect(AppleDate.iso8601(Date(timeIntervalSince1970: 253_402_300_800)) == "10000-01-01T00:00:00Z")
        #expect(AppleDate.iso8601(Date(timeIntervalSince1970: 1_505_122_714)) == "2017-09-11T09:38:34Z")
    }

    /// fuzz-decode: an in-app purchase whose transaction id (field 1703) holds `00 00`, BER's
    /// end-of-contents marker, not a value. The fast DER scan took it as a primitive with tag 0
    /// and warned "should be a string but has ASN.1 tag 0"; the swift-asn1 path (BER receipts)
    /// refuses it and warned "is not a single ASN.1 value", so the same field read two ways.
    @Test func endOfContentsAsAFieldValueWarnsTheSameOnBothPaths() throws {
        let bytes = try Fixture.bytes("fuzz/pkcs7-in-app-field-tag-0.der")
        var slow = ReceiptDecoder()
        slow.fastPaths = false
        let fast = try ReceiptDecoder().decode(bytes)
        let viaBER = try slow.decode(bytes)
        let warning = "in-app purchase 0 field 1703 is not a single ASN.1 value; kept as raw bytes"
        #expect(fast.warnings.contains(warning))
        #expect(viaBER.warnings.contains(warning))
        #expect(fast.receipt?.inApp.first?.transactionID == nil)
        #expect(fast == viaBER)
    }
}
