import XCTest
@testable import TerminalUI

final class DisplayWidthTests: KeepsakeTestCase {

    // MARK: Measuring

    func testASCIIIsOneCellPerCharacter() {
        XCTAssertEqual(DisplayWidth.width(of: "hello"), 5)
        XCTAssertEqual(DisplayWidth.width(of: ""), 0)
    }

    func testEastAsianWideCharactersAreTwoCells() {
        XCTAssertEqual(DisplayWidth.width(of: "사진"), 4)             // Hangul syllables
        XCTAssertEqual(DisplayWidth.width(of: "사진_백업_2024.jpg"), 18)
        XCTAssertEqual(DisplayWidth.width(of: "漢字"), 4)             // CJK
        XCTAssertEqual(DisplayWidth.width(of: "ひらがなカタカナ"), 16)  // kana
        XCTAssertEqual(DisplayWidth.width(of: "ＡＢ"), 4)             // fullwidth forms
        XCTAssertEqual(DisplayWidth.width(of: "\u{3000}"), 2)         // ideographic space
    }

    func testHangulJamoSequenceIsOneWideCell() {
        // 한 as conjoining jamo L + V + T: one grapheme, two cells.
        let jamo = "\u{1112}\u{1161}\u{11AB}"
        XCTAssertEqual(jamo.count, 1)
        XCTAssertEqual(DisplayWidth.width(of: jamo), 2)
    }

    func testCombiningMarksAndJoinersAreZeroWidth() {
        XCTAssertEqual(DisplayWidth.width(of: "e\u{301}"), 1)         // é decomposed
        XCTAssertEqual(DisplayWidth.width(of: "a\u{200B}b"), 2)       // zero-width space
        XCTAssertEqual(DisplayWidth.width(of: "\u{301}"), 0)          // lone combining mark
        XCTAssertEqual(DisplayWidth.width(of: "\u{200D}"), 0)         // lone ZWJ
    }

    func testEmojiAreTwoCells() {
        XCTAssertEqual(DisplayWidth.width(of: "🎉"), 2)
        XCTAssertEqual(DisplayWidth.width(of: "🎉party.txt"), 11)
        XCTAssertEqual(DisplayWidth.width(of: "👨‍👩‍👧"), 2)               // ZWJ family, one grapheme
        XCTAssertEqual(DisplayWidth.width(of: "👍🏽"), 2)               // skin tone modifier
        XCTAssertEqual(DisplayWidth.width(of: "❤️"), 2)               // text-default + VS16
        XCTAssertEqual(DisplayWidth.width(of: "1️⃣"), 2)               // keycap
        XCTAssertEqual(DisplayWidth.width(of: "🇰🇷"), 2)               // flag
        XCTAssertEqual(DisplayWidth.width(of: "❤"), 1)                // text presentation
    }

    func testControlCharactersAndEscapesAreZeroWidth() {
        XCTAssertEqual(DisplayWidth.width(of: "a\u{7}b"), 2)
        XCTAssertEqual(DisplayWidth.width(of: "\u{1B}[1;31mred\u{1B}[0m"), 3)
        XCTAssertEqual(DisplayWidth.width(of: "\u{1B}[38;5;200m사진\u{1B}[0m"), 4)
        XCTAssertEqual(DisplayWidth.width(of: "\u{1B}]8;;https://example.com\u{7}link\u{1B}]8;;\u{1B}\\"), 4)
    }

    // MARK: Stripping

    func testStripANSIRemovesCSIAndOSC() {
        XCTAssertEqual(DisplayWidth.stripANSI("\u{1B}[1mbold\u{1B}[0m plain"), "bold plain")
        XCTAssertEqual(DisplayWidth.stripANSI("\r\u{1B}[2Kline"), "\rline")
        XCTAssertEqual(DisplayWidth.stripANSI("\u{1B}]0;title\u{7}text"), "text")
        XCTAssertEqual(DisplayWidth.stripANSI("\u{1B}]8;;x\u{1B}\\a\u{1B}]8;;\u{1B}\\"), "a")
        XCTAssertEqual(DisplayWidth.stripANSI("사진 🎉"), "사진 🎉")
    }

    // MARK: Truncating

    func testTruncateAtEndMiddleAndStart() {
        let text = "abcdefghij"
        XCTAssertEqual(DisplayWidth.truncate(text, toWidth: 10), text)
        XCTAssertEqual(DisplayWidth.truncate(text, toWidth: 6, position: .end), "abcde…")
        XCTAssertEqual(DisplayWidth.truncate(text, toWidth: 6, position: .middle), "abc…ij")
        XCTAssertEqual(DisplayWidth.truncate(text, toWidth: 6, position: .start), "…fghij")
        XCTAssertEqual(DisplayWidth.truncate(text, toWidth: 1), "…")
        XCTAssertEqual(DisplayWidth.truncate(text, toWidth: 0), "")
    }

    func testTruncateNeverSplitsWideCharacters() {
        // "사진_백업" is 2+2+1+2+2 = 9 cells.
        let cut = DisplayWidth.truncate("사진_백업", toWidth: 4)
        XCTAssertEqual(cut, "사…")
        XCTAssertEqual(DisplayWidth.width(of: cut), 3)
        XCTAssertEqual(DisplayWidth.fit("사진_백업", toWidth: 4), "사… ")
        let middle = DisplayWidth.truncate("사진_백업_2024.jpg", toWidth: 10, position: .middle)
        XCTAssertEqual(middle, "사진_….jpg")
        XCTAssertEqual(DisplayWidth.width(of: middle), 10)
        XCTAssertEqual(DisplayWidth.truncate("🎉🎉🎉", toWidth: 4, position: .start), "…🎉")
    }

    func testTruncateStyledTextResetsStyle() {
        let styled = "\u{1B}[31mabcdefgh\u{1B}[0m"
        let cut = DisplayWidth.truncate(styled, toWidth: 4)
        XCTAssertEqual(DisplayWidth.stripANSI(cut), "abc…")
        XCTAssertTrue(cut.hasPrefix("\u{1B}[31m"))
        XCTAssertTrue(cut.contains("\u{1B}[0m"))
    }

    // MARK: Padding

    func testPadAlignments() {
        XCTAssertEqual(DisplayWidth.pad("ab", toWidth: 5), "ab   ")
        XCTAssertEqual(DisplayWidth.pad("ab", toWidth: 5, alignment: .right), "   ab")
        XCTAssertEqual(DisplayWidth.pad("ab", toWidth: 5, alignment: .center), " ab  ")
        XCTAssertEqual(DisplayWidth.pad("사진", toWidth: 6, alignment: .right), "  사진")
        XCTAssertEqual(DisplayWidth.pad("toolong", toWidth: 3), "toolong")
        XCTAssertEqual(DisplayWidth.pad("\u{1B}[1mab\u{1B}[0m", toWidth: 4), "\u{1B}[1mab\u{1B}[0m  ")
    }

    // MARK: Wrapping

    func testWrapBreaksAtSpaces() {
        XCTAssertEqual(
            DisplayWidth.wrap("the quick brown fox jumps over the lazy dog", width: 10),
            ["the quick", "brown fox", "jumps over", "the lazy", "dog"]
        )
    }

    func testWrapKeepsLineBreaksAndEmptyLines() {
        XCTAssertEqual(DisplayWidth.wrap("one\n\ntwo  three", width: 20), ["one", "", "two three"])
        XCTAssertEqual(DisplayWidth.wrap("", width: 5), [""])
    }

    func testWrapBreaksLongWordsWithoutSplittingWideCharacters() {
        XCTAssertEqual(DisplayWidth.wrap("abcdefghij xy", width: 4), ["abcd", "efgh", "ij", "xy"])
        let lines = DisplayWidth.wrap("사진백업사진", width: 5)
        XCTAssertEqual(lines, ["사진", "백업", "사진"])
        for line in DisplayWidth.wrap("🎉party 사진_백업_2024.jpg done", width: 7) {
            XCTAssertLessThanOrEqual(DisplayWidth.width(of: line), 7, line)
        }
    }

    func testSingleLineReplacesControlCharacters() {
        XCTAssertEqual(DisplayWidth.singleLine("a\nb\tc\u{7}d"), "a b c?d")
        XCTAssertEqual(DisplayWidth.singleLine("\u{1B}[31mx"), "?[31mx")
        XCTAssertEqual(DisplayWidth.singleLine("사진"), "사진")
    }

    func testWrapHangsLaterLinesUnderAPrefix() {
        XCTAssertEqual(DisplayWidth.wrap("one two three four five", width: 12, firstPrefix: "> ", restPrefix: "  "),
                       ["> one two", "  three four", "  five"])
        XCTAssertEqual(DisplayWidth.wrap("a  b\n\nc", width: 10, firstPrefix: "X: ", restPrefix: "   "), ["X: a b", "", "   c"],
                       "an empty line keeps no prefix spaces")
        XCTAssertEqual(DisplayWidth.wrap("", width: 10, firstPrefix: "X: "), ["X:"])
    }

    /// The room left by each line's own prefix decides where a long word is cut, in cells.
    func testWrapCutsLongWordsToTheRoomOfEachLine() {
        XCTAssertEqual(DisplayWidth.wrap("ab abcdefghij", width: 4), ["ab", "abcd", "efgh", "ij"])
        XCTAssertEqual(DisplayWidth.wrap("abcdefgh", width: 6, firstPrefix: "Err: ", restPrefix: "  "),
                       ["Err: a", "  bcde", "  fgh"])
        XCTAssertEqual(DisplayWidth.wrap("사진가족", width: 7, firstPrefix: "> ", restPrefix: "> "), ["> 사진", "> 가족"])
    }

    func testWrapNeverBreaksAtANoBreakSpace() {
        let glued = "see (env:" + String(DisplayWidth.noBreakSpace) + "HOME)"
        XCTAssertEqual(DisplayWidth.wrap(glued, width: 12), ["see", "(env:\u{00A0}HOME)"])
    }

    /// A path too long for a line breaks after a slash; glued words too long for any line
    /// come apart at their no-break space.
    func testWrapBreaksLongPathsAtSlashesAndUngluesWhatCannotFit() {
        XCTAssertEqual(DisplayWidth.wrap("/home/ana/projects/keepsake", width: 20), ["/home/ana/projects/", "keepsake"])
        let glued = "(default:" + String(DisplayWidth.noBreakSpace) + "/a/long/default/path)"
        XCTAssertEqual(DisplayWidth.wrap(glued, width: 24), ["(default:", "/a/long/default/path)"])
    }

    /// A span kept whole starts its own line when it does not fit the current one, stands
    /// alone when wider than any line, and the words after it go on as usual.
    func testWrapKeepsWholeSpansOnOneLine() {
        let text = "No backup 'x' in /srv/backups; run 'keepsake list --dest /srv/backups' to see them."
        let spans = ["'keepsake list --dest /srv/backups'"]
        XCTAssertEqual(DisplayWidth.wrap(text, width: 50, keepingWhole: spans),
                       ["No backup 'x' in /srv/backups; run", "'keepsake list --dest /srv/backups' to see them."])
        XCTAssertEqual(DisplayWidth.wrap(text, width: 20, keepingWhole: spans),
                       ["No backup 'x' in", "/srv/backups; run", "'keepsake list --dest /srv/backups'", "to see them."])
        // Without the span, the command comes apart.
        XCTAssertFalse(DisplayWidth.wrap(text, width: 20).contains(spans[0]))
    }
}
