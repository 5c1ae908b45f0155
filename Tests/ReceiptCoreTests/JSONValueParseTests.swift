import Foundation
import Testing

@testable import ReceiptCore

// `JSONValue`'s nesting check skips strings with memchr, and `init(from:)` tries `String` first:
// both must give exactly what the byte-at-a-time check and the old try-order gave.

/// The nesting check as it was: one byte at a time, strings skipped by an escape flag.
private func referenceNestingProblem(_ bytes: [UInt8], maximumDepth: Int) -> Int? {
    var depth = 0
    var inString = false
    var escaped = false
    for (offset, b) in bytes.enumerated() {
        if inString {
            if escaped {
                escaped = false
            } else if b == 0x5C {
                escaped = true
            } else if b == 0x22 {
                inString = false
            }
            continue
        }
        switch b {
        case 0x22: inString = true
        case 0x5B, 0x7B:
            depth += 1
            if depth > maximumDepth { return offset }
        case 0x5D, 0x7D: depth -= 1
        default: break
        }
    }
    return nil
}

@Suite struct JSONValueParseTests {
    @Test func nestingCheckMatchesTheByteAtATimeCheck() {
        let cases: [String] = [
            "", "\"", "\"\\", "\"\\\"", "[\"\\\\\"[[[", "[\"\\\\\\\"[[[\"]", "{\"a\":\"]]]\\\"[[[\"}",
            "[[[[", "\"abc", "[\"a\\\\\\\\\"[", "\\\"[[", "[\"\\u005C\"[[",
        ]
        for text in cases {
            let bytes = Array(text.utf8)
            for depth in 0...3 {
                #expect(JSONValue.nestingProblem(Data(bytes), maximumDepth: depth) == referenceNestingProblem(bytes, maximumDepth: depth), "\(text)")
            }
        }
        // Random texts over the bytes that matter.
        var generator = SystemRandomNumberGenerator()
        let alphabet: [UInt8] = Array("\"\\[]{}a".utf8)
        for _ in 0..<3000 {
            let count = Int.random(in: 0...40, using: &generator)
            let bytes = (0..<count).map { _ in alphabet.randomElement(using: &generator)! }
            let depth = Int.random(in: 0...4, using: &generator)
            #expect(
                JSONValue.nestingProblem(Data(bytes), maximumDepth: depth) == referenceNestingProblem(bytes, maximumDepth: depth),
                "\(String(decoding: bytes, as: UTF8.self))")
        }
    }

    @Test func everyKindDecodesAsBefore() throws {
        let value = try JSONValue.parse(
            Array(#"{"s":"x","i":12,"big":12345678901234567890,"d":1.5,"one":1.0,"e":1e3,"t":true,"f":false,"n":null,"a":[1,"2",[]],"o":{}}"#.utf8))
        #expect(
            value
                == .object([
                    "s": .string("x"), "i": .integer(12), "big": .number(12_345_678_901_234_567_168), "d": .number(1.5),
                    "one": .integer(1), "e": .integer(1000), "t": .bool(true), "f": .bool(false), "n": .null,
                    "a": .array([.integer(1), .string("2"), .array([])]), "o": .object([:]),
                ]))
    }

    @Test func deepAndBrokenInputKeepTheirErrors() {
        #expect(throws: ReceiptDecodingError.self) { try JSONValue.parse(Array("[\"]\\\"\",[[[".utf8), maximumDepth: 2) }
        do {
            _ = try JSONValue.parse(Array("[\"]\\\"\",[[[".utf8), maximumDepth: 2)
        } catch let error as ReceiptDecodingError {
            #expect(error.code == .limitExceeded)
            #expect(error.offset == 8)
        } catch {
            Issue.record("unexpected \(error)")
        }
        do {
            _ = try JSONValue.parse(Array("[1e400]".utf8))
            Issue.record("1e400 decoded")
        } catch let error as ReceiptDecodingError {
            #expect(error.code == .invalidJSON)
        } catch {
            Issue.record("unexpected \(error)")
        }
    }
}
