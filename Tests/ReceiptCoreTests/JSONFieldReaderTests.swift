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

    /// Objects of 8 to 64 members are read through the reader's own index of their keys: it
    /// finds what the dictionary finds, at every size around those bounds, for keys that share
    /// their length and first and last eight bytes (told apart by their text), short keys, the
    /// empty key and absent ones; with a key that is not ASCII the dictionary's canonical
    /// equivalence still answers (the Kelvin sign, U+212A, is the letter K).
    @Test func indexedObjectsFindWhatTheDictionaryFinds() {
        for size in [7, 8, 9, 30, 63, 64, 65] {
            var object: [String: JSONValue] = [:]
            // Same length, same first and last eight bytes: "abcdefgh-X-stuvwxyz" for each X.
            for i in 0..<size - 3 { object["abcdefgh-\(Character(Unicode.Scalar(65 + i % 26)!))\(i / 26)-stuvwxyz"] = .integer(Int64(i)) }
            object["id"] = .string("short")
            object[""] = .bool(true)
            object["productId"] = .string("pro.monthly")
            #expect(object.count == size)
            var r = JSONFieldReader(object)
            var wanted = Array(object.keys) + ["abcdefgh-Z9-stuvwxyz", "absent", "productID", "i", "idd"]
            wanted.append("")
            for key in wanted {
                #expect(r.value(key) == object[key].flatMap { $0 == .null ? nil : $0 }, "size \(size), key \(key)")
                #expect(r.has(key) == (object[key] != nil), "size \(size), key \(key)")
            }
            #expect(r.remainingFields().isEmpty, "size \(size)")
            var partly = JSONFieldReader(object)
            #expect(partly.int("abcdefgh-B0-stuvwxyz") == (size > 4 ? 1 : nil))
            #expect(partly.remainingFields().count == size - (size > 4 ? 1 : 0), "size \(size)")
        }
        var kelvin: [String: JSONValue] = ["\u{212A}elvinScale": .string("absolute")]
        for i in 0..<9 { kelvin["member\(i)"] = .integer(Int64(i)) }
        #expect(kelvin["KelvinScale"] == .string("absolute"))
        var r = JSONFieldReader(kelvin)
        #expect(r.string("KelvinScale") == "absolute")
        #expect(r.int("member8") == 8)
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
