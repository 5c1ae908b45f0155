import Foundation
import JSONWriting
import Testing
import UntrustedText
@testable import ReceiptRendering
@testable import ReceiptCore

/// One table (``EscapedScalars``) decides what the text sanitiser and the JSON writer escape:
/// DEL, C1 controls, U+2028/U+2029 and the bidi controls never reach any output raw.
@Suite struct ControlEscapingTests {
    static func json(_ text: String) -> String {
        var out = JSONOutput()
        out.string(text)
        return out.text
    }

    @Test func jsonEscapesDelC1SeparatorsAndBidiControls() throws {
        #expect(Self.json("\u{7F}\u{85}\u{202E}\u{2066}\u{2028}") == #""\u007f\u0085\u202e\u2066\u2028""#)
        #expect(Self.json("a\u{9B}31mb\u{2029}c\u{202A}\u{202D}\u{2069}d") == #""a\u009b31mb\u2029c\u202a\u202d\u2069d""#)
        // C0 as before (JSONEncoder's escapes), mixed with the new ones and with text to copy.
        #expect(Self.json("x\u{1B}[2J\u{7F}\"\\/\n\u{80}é€…👍\u{9F}") == #""x\u001b[2J\u007f\"\\/\n\u0080é€…👍\u009f""#)
        // Escapes at the very start and end, and a string of nothing else.
        #expect(Self.json("\u{202E}") == #""\u202e""#)
        #expect(Self.json("\u{2066}abc\u{7F}") == #""\u2066abc\u007f""#)
        // Keys from data go through the same escaping.
        var out = JSONOutput()
        out.beginObject()
        out.member(text: "k\u{85}", "v\u{2028}")
        out.endObject()
        #expect(out.text == "{\n  \"k\\u0085\" : \"v\\u2028\"\n}")
    }

    /// The neighbours of every range, and lead bytes 0xC2 and 0xE2 in scalars outside the table,
    /// are written as they are.
    @Test func neighboursOfTheTableAreCopied() throws {
        for text in ["\u{A0}", "\u{A9}", "\u{2027}", "\u{202F}", "\u{2065}", "\u{206A}", "\u{2030}", "€", "…", "™", "\u{200E}", "ok"] {
            #expect(Self.json(text) == "\"" + text + "\"", "\(text.unicodeScalars.map { String($0.value, radix: 16) })")
        }
    }

    /// Every scalar below U+3000 (every range of the table and far around it): the JSON writer
    /// escapes exactly the scalars the sanitiser escapes, as `\uxxxx`, and reading the JSON back
    /// gives the scalar again.
    @Test func jsonAndTextEscapeTheSameScalars() throws {
        for value in UInt32(0)..<0x3000 {
            guard let scalar = Unicode.Scalar(value) else { continue }
            let text = "a" + String(Character(scalar)) + "b"
            let json = Self.json(text)
            let sanitised = SafeText.escaped(text)
            let inTable = EscapedScalars.ranges.contains { $0.contains(value) }
            #expect(EscapedScalars.contains(value) == inTable)
            #expect((sanitised != text) == inTable, "U+\(String(value, radix: 16))")
            if inTable {
                #expect(!json.unicodeScalars.contains(scalar), "U+\(String(value, radix: 16)) raw in \(json.debugDescription)")
                #expect(json.contains("\\u") || json.contains("\\b") || json.contains("\\f") || json.contains("\\n") || json.contains("\\r") || json.contains("\\t"))
            } else if value != 0x22 && value != 0x5C {
                #expect(json == "\"" + text + "\"", "U+\(String(value, radix: 16))")
            }
            #expect(try JSONValue.parse(Array(json.utf8)) == .string(text), "U+\(String(value, radix: 16))")
        }
    }

    @Test func theTableAndItsLeadBytes() {
        #expect(EscapedScalars.ranges == [0x00...0x1F, 0x7F...0x9F, 0x2028...0x202E, 0x2066...0x2069])
        let leads = (0..<256).filter { EscapedScalars.utf8LeadBytes[$0] }
        #expect(leads == Array(0x00...0x1F) + [0x7F, 0xC2, 0xE2])
    }

    @Test func textSanitiserUsesTheSameTable() {
        #expect(SafeText.escaped("a\u{7F}b\u{85}c\u{202E}d\u{2066}e\u{2028}f\u{2029}") == #"a\x7fb\x85c\u{202e}d\u{2066}e\u{2028}f\u{2029}"#)
        #expect(SafeText.escaped("plain é € … 👍") == "plain é € … 👍")
        #expect(SafeText.csvCell("=x\u{2028}") == #"'=x\u{2028}"#)
    }

    /// A whole document with such text: valid JSON, no raw control, the values read back.
    @Test func aDocumentWithHostileValuesHasNoRawControls() throws {
        let hostile = "id\u{7F}\u{85}\u{9B}2J\u{202E}gpj.exe\u{2066}\u{2028}\u{2029}"
        let value: JSONValue = .object(["product_id": .string(hostile), hostile: .array([.string(hostile), .integer(1)])])
        var out = JSONOutput()
        out.value(value)
        let text = out.text
        #expect(!text.unicodeScalars.contains { $0.value >= 0x7F && EscapedScalars.contains($0) })
        #expect(try JSONValue.parse(out.bytes) == value)
    }
}
