import Foundation
import Testing

@testable import ReceiptCore

/// `JSONFieldReader` keeps every key nobody read for the "every field" view: a key read twice
/// must not hide one never read, and a value of the wrong shape stays.
@Suite struct JSONFieldReaderTests {
    let object: [String: JSONValue] = [
        "name": .string("Pro"), "count": .integer(3), "flag": .bool(true), "when": .integer(1_700_000_000_000),
        "extra": .array([.integer(1), .string("two")]), "password": .string("hunter2"),
    ]

    @Test func everyKeyReadLeavesNothing() {
        var r = JSONFieldReader(object)
        #expect(r.string("name") == "Pro")
        #expect(r.int("count") == 3)
        #expect(r.bool("flag") == true)
        #expect(r.epochMillisecondsDate("when") == Date(timeIntervalSince1970: 1_700_000_000))
        #expect(r.value("extra") == .array([.integer(1), .string("two")]))
        #expect(r.string("password") == "hunter2")
        #expect(r.string("absent") == nil)
        #expect(r.remainingFields().isEmpty)
    }

    @Test func aKeyReadTwiceDoesNotHideOneNeverRead() {
        // Six reads of five keys, as many reads as the object has keys: "extra" is still left.
        var r = JSONFieldReader(object)
        _ = r.string("name")
        _ = r.string("name")
        _ = r.int("count")
        _ = r.bool("flag")
        _ = r.epochMillisecondsDate("when")
        _ = r.string("password")
        #expect(r.remainingFields().map(\.name) == ["extra"])
        #expect(r.remainingFields().first?.value == #"[1,"two"]"#)
    }

    @Test func aValueOfTheWrongShapeStaysAndSecretsNeverDo() {
        var r = JSONFieldReader(object)
        r.secretKeys = ["password"]
        #expect(r.int("name") == nil)  // a string is no integer: not read
        #expect(r.bool("extra") == nil)  // nor an array a flag
        _ = r.string("when")
        #expect(r.remainingFields().map(\.name) == ["count", "extra", "flag", "name"])
        #expect(r.remainingFields().first(where: { $0.name == "name" })?.value == "Pro")
    }

    @Test func verifyReceiptDatesTakeTheirTwinsAlong() {
        var r = JSONFieldReader([
            "purchase_date": .string("2023-01-02 03:04:05 Etc/GMT"), "purchase_date_ms": .string("1672628645000"),
            "purchase_date_pst": .string("2023-01-01 19:04:05 America/Los_Angeles"), "other": .null,
        ])
        #expect(r.appleDate("purchase_date") == Date(timeIntervalSince1970: 1_672_628_645))
        #expect(r.remainingFields().map(\.name) == ["other"])
    }
}
