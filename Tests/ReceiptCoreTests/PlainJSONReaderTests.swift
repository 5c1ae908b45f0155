import Foundation
import Testing

@testable import ReceiptCore

/// `PlainJSONReader` reads Apple's payloads without `JSONDecoder`; wherever it gives a value,
/// it must be the value `JSONDecoder` gives, and wherever `JSONDecoder` refuses the text, it must
/// give none (so the error stays Foundation's).
@Suite struct PlainJSONReaderTests {
    /// The reader's value, nil when it hands the text to Foundation.
    func plain(_ bytes: [UInt8], maximumDepth: Int = 64) -> JSONValue? {
        bytes.withUnsafeBytes { PlainJSONReader.read($0, maximumDepth: maximumDepth) }
    }

    func foundation(_ bytes: [UInt8], maximumDepth: Int = 64) -> JSONValue? {
        try? JSONValue.parseWithFoundation(bytes, maximumDepth: maximumDepth)
    }

    /// The header and payload JSON of a compact JWS, and of every JWS in its payload's strings.
    func jsonTexts(ofJWS text: String) throws -> [[UInt8]] {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return [] }
        var texts: [[UInt8]] = []
        for part in parts.prefix(2) {
            let json = try Base64Text.decode(Array(part.utf8), what: "part")
            texts.append(json)
            guard let value = foundation(json) else { continue }
            for nested in strings(in: value) where nested.hasPrefix("eyJ") && nested.split(separator: ".").count == 3 {
                texts += try jsonTexts(ofJWS: nested)
            }
        }
        return texts
    }

    func strings(in value: JSONValue) -> [String] {
        switch value {
        case .string(let s): [s]
        case .array(let a): a.flatMap(strings(in:))
        case .object(let o): o.values.flatMap(strings(in:))
        default: []
        }
    }

    /// Every JSON text the bundled fixtures hold, as files and inside their JWS.
    func fixtureTexts() throws -> [(String, [UInt8])] {
        var texts: [(String, [UInt8])] = []
        for name in ["notification-v2.jws", "xcode-app-transaction.jws"] {
            let text = try Fixture.text(name).trimmingCharacters(in: .whitespacesAndNewlines)
            texts += try jsonTexts(ofJWS: text).enumerated().map { ("\(name)#\($0.offset)", $0.element) }
        }
        for name in ["ios6-response.json", "notification-v1.json", "verify-response.json", "inspect-production.expected.json"] {
            texts.append((name, try Fixture.bytes(name)))
        }
        return texts
    }

    /// What the App Store signs is in the plain subset: the reader reads every one of those
    /// texts as Foundation does. Xcode writes its dates with fractions of a millisecond
    /// (`1697680122257.447`): that payload goes to Foundation, and parse gives its value.
    @Test func readsEveryFixturePayloadAsFoundationDoes() throws {
        let texts = try fixtureTexts()
        #expect(texts.count == 12)
        var handedOver: [String] = []
        for (name, bytes) in texts {
            let reference = try #require(foundation(bytes), "\(name)")
            if let value = plain(bytes) {
                #expect(value == reference, "\(name)")
            } else {
                handedOver.append(name)
            }
            #expect(try JSONValue.parse(bytes) == reference, "\(name)")
        }
        #expect(handedOver == ["xcode-app-transaction.jws#1"])
    }

    @Test(.enabled(if: SharedCorpus.isAvailable, "needs ../shared/corpus beside the package (the team's corpus); core tests use the copies in Tests/"))
    func readsTheSharedCorpusAsFoundationDoes() throws {
        var read = 0
        var handedOver = 0
        for file in SharedCorpus.files(in: "jws", suffix: ".jws") + SharedCorpus.files(in: "responses", suffix: ".json") {
            let bytes = try SharedCorpus.bytes(file)
            let texts = file.hasSuffix(".jws") ? try jsonTexts(ofJWS: String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) : [bytes]
            for text in texts {
                guard let value = plain(text) else {
                    handedOver += 1
                    continue
                }
                read += 1
                #expect(value == foundation(text), "\(file)")
            }
        }
        #expect(read > 50)
        #expect(handedOver < read)
    }

    /// Each case: what the reader gives (nil: Foundation decides), and that Foundation agrees.
    @Test func theSubsetsEdges() throws {
        let cases: [(String, JSONValue?)] = [
            (#"{}"#, .object([:])),
            (" \t\r\n{\"a\" : [ ] , \"b\":{ } }\n", .object(["a": .array([]), "b": .object([:])])),
            (#"{"a":[true,false,null,-0,0,7,-12]}"#, .object(["a": .array([.bool(true), .bool(false), .null, .integer(0), .integer(0), .integer(7), .integer(-12)])])),
            (#"{"a":123456789012345678,"b":-123456789012345678}"#, .object(["a": .integer(123_456_789_012_345_678), "b": .integer(-123_456_789_012_345_678)])),
            (#"{"e":"\"\\\/\b\f\n\r\t","x":"a\\"}"#, .object(["e": .string("\"\\/\u{8}\u{C}\n\r\t"), "x": .string("a\\")])),
            ("{\"é\":\"日本 — ✓ 😀\",\"\":\"\"}", .object(["é": .string("日本 — ✓ 😀"), "": .string("")])),
            (#"{"s":"0123456789abcdefghijklmnopqrstuvwxyz\"0123456789"}"#, .object(["s": .string("0123456789abcdefghijklmnopqrstuvwxyz\"0123456789")])),
            ("{\"a\":\"\u{7F}\"}", .object(["a": .string("\u{7F}")])),
            // Handed to Foundation, which reads them:
            (#"{"a":"\u00e9"}"#, nil), (#"{"a":1.5}"#, nil), (#"{"a":1.0}"#, nil), (#"{"a":1e3}"#, nil), (#"{"a":1E3}"#, nil),
            (#"{"a":1234567890123456789}"#, nil), (#"{"a":1,"a":2}"#, nil), (#"[1,2]"#, nil), (#""text""#, nil), ("\u{FEFF}{}", nil),
            // Handed to Foundation, which refuses them:
            (#"{"a":01}"#, nil), (#"{"a":-}"#, nil), (#"{"a":tru}"#, nil), (#"{"a":truex}"#, nil), (#"{"a":1,}"#, nil), (#"{,}"#, nil),
            (#"{"a":[1,]}"#, nil), (#"{"a":1}x"#, nil), (#"{"a" 1}"#, nil), (#"{"a":"x"#, nil), (#"{"a":"\x"}"#, nil), ("{\"a\":\"\\", nil),
            ("{\"a\":\"x\ty\"}", nil), ("{\"a\":\"x\u{0}y\"}", nil), (#"{a:1}"#, nil), (#"{"a":+1}"#, nil), (#"{"a":.5}"#, nil),
            ("{\"a\":1}\u{0B}", nil), ("", nil), ("{", nil),
        ]
        for (text, expected) in cases {
            let bytes = Array(text.utf8)
            #expect(plain(bytes) == expected, "\(text)")
            if let expected { #expect(foundation(bytes) == expected, "\(text)") }
        }
        // Invalid UTF-8 in a string, an overlong '/', an encoded surrogate: Foundation's to judge.
        for bytes: [UInt8] in [[0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xFF, 0x22, 0x7D], [0x7B, 0x22, 0xC0, 0xAF, 0x22, 0x3A, 0x31, 0x7D], [0x7B, 0x22, 0xED, 0xA0, 0x80, 0x22, 0x3A, 0x31, 0x7D]] {
            #expect(plain(bytes) == nil)
        }
        // The values Foundation gives for the handed-over texts are still what parse returns.
        #expect(try JSONValue.parse(Array(#"{"a":"\u00e9","b":1.0,"c":1.5}"#.utf8)) == .object(["a": .string("é"), "b": .integer(1), "c": .number(1.5)]))
    }

    /// Nesting up to the limit is read; one level more is handed over, and parse then reports
    /// the limit as it always did.
    @Test func nestingLimit() throws {
        func nested(_ depth: Int) -> [UInt8] {
            Array(("{\"a\":" + String(repeating: "[", count: depth - 1) + String(repeating: "]", count: depth - 1) + "}").utf8)
        }
        #expect(plain(nested(64)) != nil)
        #expect(plain(nested(64)) == foundation(nested(64)))
        #expect(plain(nested(65)) == nil)
        #expect(plain(nested(3), maximumDepth: 3) != nil)
        #expect(plain(nested(4), maximumDepth: 3) == nil)
        #expect(throws: ReceiptDecodingError.self) { try JSONValue.parse(nested(65)) }
    }

    /// Random edits of real payloads (bytes that matter to JSON put in, taken out, cut short):
    /// whenever the reader reads the result, Foundation reads the same value; whenever
    /// Foundation refuses it, the reader did too.
    @Test func mutationsNeverMakeTheReaderDisagree() throws {
        let seeds = try fixtureTexts().map(\.1).filter { $0.count < 4000 }
        #expect(seeds.count >= 5)
        var random = SplitMix(seed: 0x5EED_1234)
        let alphabet = Array("\"\\{}[]:,0123456789-+.eEtrufalsn \t\n/bfu\u{7F}".utf8) + [0x00, 0x1F, 0x80, 0xC3, 0xA9, 0xFF, 0xED]
        var read = 0
        var refused = 0
        for round in 0..<6000 {
            var bytes = seeds[round % seeds.count]
            for _ in 0..<Int(random.next() % 3 + 1) {
                let at = Int(random.next() % UInt64(bytes.count))
                switch random.next() % 4 {
                case 0: bytes[at] = alphabet[Int(random.next() % UInt64(alphabet.count))]
                case 1: bytes.insert(alphabet[Int(random.next() % UInt64(alphabet.count))], at: at)
                case 2: bytes.remove(at: at)
                default: bytes.removeLast(min(bytes.count - 1, Int(random.next() % 8)))
                }
                if bytes.isEmpty { bytes = [0x7B] }
            }
            let reference = foundation(bytes)
            if let value = plain(bytes) {
                read += 1
                #expect(value == reference, "\(String(decoding: bytes, as: UTF8.self))")
            } else if reference == nil {
                refused += 1
            }
        }
        // Both outcomes are exercised: edits that stay JSON, and edits that break it.
        #expect(read > 300)
        #expect(refused > 3000)
    }
}

/// A small seeded generator, so a failing mutation can be found again.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
