import Testing
@testable import ReceiptCore

@Suite struct OpenStepPlistTests {
    @Test func readsTheShapeOfATransactionReceipt() throws {
        let text = """
            {
            \t"signature" = "AAEC";
            \t"purchase-info" = "ewp9";
            \t"environment" = "Sandbox";
            \t"pod" = "100";
            }
            """
        let plist = try OpenStepPlist.parse(Array(text.utf8))
        #expect(plist["environment"] == .string("Sandbox"))
        #expect(plist["pod"]?.string == "100")
        guard case .dictionary(let entries) = plist else { Issue.record("not a dictionary"); return }
        #expect(entries.map(\.key) == ["signature", "purchase-info", "environment", "pod"])
    }

    @Test func readsEscapesArraysDataUnquotedWordsAndComments() throws {
        let text = #"""
            // leading comment
            { "q" = "a \"quoted\" \\ word\n\t\101\U00e9";
              unquoted = some.word-1;
              list = ( "x", y, ( z ) , );
              bytes = <0fbd 7766 00>; /* trailing */ }
            """#
        let plist = try OpenStepPlist.parse(Array(text.utf8))
        #expect(plist["q"] == .string("a \"quoted\" \\ word\n\tAé"))
        #expect(plist["unquoted"] == .string("some.word-1"))
        #expect(plist["list"] == .array([.string("x"), .string("y"), .array([.string("z")])]))
        #expect(plist["bytes"] == .data([0x0F, 0xBD, 0x77, 0x66, 0x00]))
    }

    @Test(arguments: [
        (#"{ "a" = "b" }"#, "plist line 1, column 13: expected ';' after the value of \"a\" but found character '}'"),
        (#"{ "a" "b"; }"#, "plist line 1, column 7: expected '=' after key \"a\" but found character '\"'"),
        ("{ \"a\" = \"b;\n }", "plist line 1, column 9: string opened at byte 8 is never closed"),
        (#"{ "a" = <0g>; }"#, "plist line 1, column 11: invalid character 'g' in data"),
        (#"{ "a" = <0f1>; }"#, "plist line 1, column 14: data opened at byte 8 has an odd number of hex digits"),
        (#"{ "a" = "b"; } extra"#, "plist line 1, column 16: unexpected character 'e' after the end of the property list"),
        ("{ \"a\" = ( \"b\" ; }", "plist line 1, column 15: expected ',' or ')' in array but found character ';'"),
        ("", "plist line 1, column 1: input ends where a value was expected"),
        ("/* never closed", "plist line 1, column 1: comment is never closed"),
    ])
    func reportsWhatAndWhere(text: String, message: String) {
        let error = decodingError { try OpenStepPlist.parse(Array(text.utf8)) }
        #expect(error?.code == .invalidPlist)
        #expect(error?.reason == message)
    }

    @Test func deepNestingIsRefusedNotRecursedInto() {
        let text = String(repeating: "(", count: 100_000) + String(repeating: ")", count: 100_000)
        let error = decodingError { try OpenStepPlist.parse(Array(text.utf8), maximumDepth: 64) }
        #expect(error?.code == .invalidPlist)
        #expect(error?.reason.contains("deeper than 64 levels") == true)
    }

    @Test func invalidUTF8BecomesReplacementCharacters() throws {
        let bytes: [UInt8] = Array(#"{ "k" = ""#.utf8) + [0xFF, 0xFE] + Array(#""; }"#.utf8)
        let plist = try OpenStepPlist.parse(bytes)
        #expect(plist["k"] == .string("\u{FFFD}\u{FFFD}"))
    }
}
