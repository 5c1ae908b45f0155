import Foundation
import Testing
@testable import ReceiptCore

@Suite struct AppleDateTests {
    @Test(arguments: [
        ("2017-09-11T09:38:34Z", 1_505_122_714.0),
        ("2023-02-22T14:30:15.123Z", 1_677_076_215.123),
        ("2020-07-22T18:33:15+0100", 1_595_439_195.0),
        ("2020-07-22T18:33:15+01:00", 1_595_439_195.0),
        ("2020-07-22T12:33:15-05:00", 1_595_439_195.0),
        ("2012-04-30 15:05:55 Etc/GMT", 1_335_798_355.0),
        ("2012-04-30 08:05:55 America/Los_Angeles", 1_335_798_355.0),
        ("2012-12-01 23:15:54 America/Los_Angeles", 1_354_432_554.0),
        ("4001-01-01T00:00:00Z", 64_092_211_200.0),
        ("0001-01-01T00:00:00Z", -62_135_596_800.0),
    ])
    func parses(text: String, epoch: Double) throws {
        let date = try #require(AppleDate.parse(text))
        #expect(abs(date.timeIntervalSince1970 - epoch) < 0.0005)
    }

    @Test(arguments: ["", "2017-13-01T00:00:00Z", "2017-09-11", "2017-09-11T09:38:34Zjunk", "yesterday", "2017-09-11T25:00:00Z"])
    func rejects(text: String) {
        #expect(AppleDate.parse(text) == nil)
    }

    @Test func milliseconds() {
        #expect(AppleDate.fromMilliseconds("1335798355868")?.timeIntervalSince1970 == 1_335_798_355.868)
        #expect(AppleDate.fromMilliseconds("13357x") == nil)
    }

    @Test func formatsISO8601InUTC() {
        #expect(AppleDate.iso8601(Date(timeIntervalSince1970: 1_505_122_714)) == "2017-09-11T09:38:34Z")
        #expect(AppleDate.iso8601(Date(timeIntervalSince1970: 1_335_798_355.868)) == "2012-04-30T15:05:55.868Z")
        #expect(AppleDate.iso8601(Date(timeIntervalSince1970: -62_135_596_800)) == "0001-01-01T00:00:00Z")
    }
}
