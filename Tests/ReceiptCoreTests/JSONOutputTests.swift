import Foundation
import JSONWriting
import Testing
import UntrustedText
@testable import ReceiptRendering
@testable import ReceiptCore
@testable import ReceiptTrust

/// The streaming writer must write exactly what `JSONEncoder` (pretty, sorted keys, slashes
/// unescaped) wrote for the same values: same layout, same key order, same escapes (but for the
/// scalars of `EscapedScalars` beyond C0, which only the writer escapes: ControlEscapingTests).
@Suite struct JSONOutputTests {
    static func foundation(_ value: JSONValue) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    static func streamed(_ value: JSONValue) -> String {
        var out = JSONOutput()
        out.value(value)
        return out.text
    }

    @Test func hostileTextKeysAndShapesMatchFoundation() throws {
        var controls = ""
        for v in 0..<0x20 { controls.unicodeScalars.append(Unicode.Scalar(UInt8(v))) }
        let value: JSONValue = .object([
            // DEL, C1 and bidi controls are left out here: the writer escapes them and
            // `JSONEncoder` does not (ControlEscapingTests).
            "text": .string(controls + "\"\\/ é👍 end"),
            controls: .string("a key full of controls"),
            "Zeta": .integer(.min), "zeta": .integer(.max), "_under": .bool(false), "-dash": .null, "": .string(""),
            "a10": .array([]), "a9": .object([:]), "é": .integer(0), "ß": .integer(-7), "A": .bool(true),
            "nested": .array([
                .object(["b": .array([.array([]), .string("")]), "a": .bool(true), "c": .object(["x": .null])]),
                .number(1.5), .number(-0.25), .number(1e300), .integer(0), .integer(-1),
            ]),
        ])
        #expect(Self.streamed(value) == (try Self.foundation(value)))
        #expect(Self.streamed(.array([])) == (try Self.foundation(.array([]))))
        #expect(Self.streamed(.string("/")) == "\"/\"")
        #expect(Self.streamed(.string("\u{1B}[2J\u{07}")) == #""\u001b[2J\u0007""#)
    }

    /// What `inspect --format json` writes for one input (trust and analysis included).
    static func inspect(_ bytes: [UInt8], source: String) async -> (streamed: [UInt8], input: DecodedInput)? {
        guard case .success(let input) = ReceiptDecoder().result(bytes) else { return nil }
        let trust = await TrustEvaluator().evaluate(input)
        let analysis = PurchaseAnalysis.analyze([input], at: utc("2025-01-01T00:00:00Z"))
        var out = JSONOutput()
        InspectJSON.write(input, source: source, trust: trust, analysis: analysis, into: &out)
        return (out.bytes, input)
    }

    @Test func everyFixtureMatchesFoundationByteForByte() async throws {
        let names = [
            "ios6-response.json", "legacy-sandbox.b64", "notification-v1.json", "notification-v2.jws", "production.b64",
            "sandbox-2023.der", "sandbox-g5.der", "verify-response.json", "xcode-app-transaction.jws", "xcode.der",
        ]
        for name in names {
            let (streamed, _) = try #require(await Self.inspect(try Fixture.bytes(name), source: name), "\(name)")
            let tree = try JSONValue.parse(streamed)
            #expect(String(decoding: streamed, as: UTF8.self) == (try Self.foundation(tree)), "\(name)")
        }
    }

    @Test(.enabled(if: SharedCorpus.isAvailable, "needs ../shared/corpus beside the package (the team's corpus); core tests use the copies in Tests/"))
    func everyCorpusInputMatchesFoundationByteForByte() async throws {
        var compared = 0
        var purchases = 0
        for path in SharedCorpus.notes.keys.sorted() {
            guard let (streamed, input) = await Self.inspect(try SharedCorpus.bytes(path), source: path) else { continue }
            let tree = try JSONValue.parse(streamed)
            #expect(String(decoding: streamed, as: UTF8.self) == (try Self.foundation(tree)), "\(path)")
            compared += 1
            purchases += input.allPurchases.count
        }
        // Most of the corpus decodes, with hundreds of purchase rows among them.
        #expect(compared >= 100)
        #expect(purchases >= 500)
    }

    @Test func flushesToItsConsoleInChunks() throws {
        let capture = ConsoleCapture()
        var out = JSONOutput(flushingTo: capture.console(), chunkSize: 16)
        out.beginArray()
        for i in 0..<10 { out.integer(i) }
        out.endArray()
        #expect(out.bytes.isEmpty, "the closing bracket crossed the chunk size, so it flushed")
        #expect(!capture.output.isEmpty)
        out.newline()
        out.flush()
        #expect(capture.output == (try Self.foundation(.array((0..<10).map { .integer($0) }))) + "\n")
        #expect(capture.error.isEmpty)
    }

    /// The one-reservation attribute object is byte for byte the three members written one by
    /// one: at the top level, as the first and a later element, nested, and with extreme numbers
    /// and an empty, short and long value.
    @Test func attributeObjectIsItsMembersWrittenOneByOne() {
        let values: [[UInt8]] = [[], [0x0C, 0x00], [0x02, 0x01, 0xFF], Array(0...255)]
        let numbers = [0, 1, 1709, -5, Int.max, Int.min]
        for depth in 0..<4 {
            var fast = JSONOutput()
            var slow = JSONOutput()
            for _ in 0..<depth {
                fast.beginArray()
                slow.beginArray()
            }
            for (i, value) in values.enumerated() {
                for (j, type) in numbers.enumerated() {
                    let version = numbers[(i + j) % numbers.count]
                    fast.attributeObject(type: type, hex: value[...], version: version)
                    slow.beginObject()
                    slow.member("type", type)
                    slow.key("value_hex")
                    slow.hex(value)
                    slow.member("version", version)
                    slow.endObject()
                    if depth == 0 { break }  // one value at the top level
                }
                if depth == 0 { break }
            }
            for _ in 0..<depth {
                fast.endArray()
                slow.endArray()
            }
            #expect(fast.text == slow.text, "depth \(depth)")
        }
        var one = JSONOutput()
        one.beginArray()
        one.attributeObject(type: 1709, hex: [0x0C, 0x00], version: -1)
        one.endArray()
        #expect(one.text == "[\n  {\n    \"type\" : 1709,\n    \"value_hex\" : \"0c00\",\n    \"version\" : -1\n  }\n]")
    }
}

