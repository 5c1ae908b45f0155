import PlainWords
import Testing
import TestSupport

/// Every count phrase any output says, with 0, 1 and 2: the one pluraliser's words, pinned in
/// `Goldens/count-phrases.txt` (a new noun shows there as a diff to review).
@Suite struct CountPhraseTests {
    @Test func everyNounIsSaidWithZeroOneAndTwo() {
        let lines = CountNoun.every.map { noun in [0, 1, 2].map(noun.count).joined(separator: " · ") }
        Golden.check("count-phrases", lines.joined(separator: "\n") + "\n")
    }

    @Test func oneIsSingularAndEveryOtherCountPlural() {
        #expect(CountNoun.attempt.count(1) == "1 attempt")
        #expect(CountNoun.attempt.count(0) == "0 attempts")
        #expect(CountNoun.delivery.count(2) == "2 deliveries")
        #expect(CountNoun.problem.word(1) == "problem")
        #expect(CountNoun.problem.word(5) == "problems")
    }

    @Test func everyNounIsListedOnce() {
        #expect(Set(CountNoun.every).count == CountNoun.every.count)
    }
}

/// The known word a mistyped one was meant to be: close words are named, far ones are not.
@Suite struct NearestWordTests {
    @Test func aTypoNamesTheWordMeant() {
        let commands = ["lookup", "inspect", "receive", "verify", "notifications", "db"]
        #expect(NearestWord.closest(to: "lookp", in: commands) == "lookup")
        #expect(NearestWord.closest(to: "recieve", in: commands) == "receive")
        #expect(NearestWord.closest(to: "INSPECT", in: commands) == "inspect")
        #expect(NearestWord.closest(to: "receipts", in: commands) == nil)
        #expect(NearestWord.closest(to: "d", in: commands) == nil)
        #expect(NearestWord.closest(to: "private_key_flie", in: ["private_key_file", "key_id"]) == "private_key_file")
    }

    @Test func editsAreCounted() {
        #expect(NearestWord.distance(Array("lookp"), Array("lookup")) == 1)
        #expect(NearestWord.distance(Array("recieve"), Array("receive")) == 1)
        #expect(NearestWord.distance(Array(""), Array("abc")) == 3)
        #expect(NearestWord.distance(Array("kitten"), Array("sitting")) == 3)
    }
}
