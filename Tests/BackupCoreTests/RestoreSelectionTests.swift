import Foundation
@testable import KeepsakeScan
import XCTest
@testable import BackupCore

final class RestoreSelectionTests: KeepsakeTestCase {
    // MARK: Helpers

    private func selection(_ selections: [String], file: StaticString = #filePath, line: UInt = #line) throws -> RestoreSelection {
        try RestoreSelection(selections)
    }

    private func selects(_ selection: RestoreSelection, _ path: String, directory: Bool = false) -> Bool {
        selection.matches(Array(path.utf8), isDirectory: directory)
    }

    private func assertSelected(_ selection: RestoreSelection, _ paths: [String], directory: Bool = false,
                                file: StaticString = #filePath, line: UInt = #line) {
        for path in paths {
            XCTAssertTrue(selects(selection, path, directory: directory), "\(path) should be selected", file: file, line: line)
        }
    }

    private func assertNotSelected(_ selection: RestoreSelection, _ paths: [String], directory: Bool = false,
                                   file: StaticString = #filePath, line: UInt = #line) {
        for path in paths {
            XCTAssertFalse(selects(selection, path, directory: directory), "\(path) should not be selected", file: file, line: line)
        }
    }

    // MARK: Everything

    func testNoSelectionTakesEverything() throws {
        let all = try selection([])
        XCTAssertTrue(all.isEverything)
        assertSelected(all, ["a", "a/b/c", ".hidden"])
        XCTAssertTrue(try selection(["", "/", "."]).isEverything, "empty selections are ignored")
    }

    // MARK: Exact paths

    func testExactPathSelectsItselfAndDescendants() throws {
        let chosen = try selection(["a/b"])
        XCTAssertFalse(chosen.isEverything)
        assertSelected(chosen, ["a/b", "a/b/c", "a/b/c/d.txt"])
        assertSelected(chosen, ["a/b"], directory: true)
    }

    func testExactPathDoesNotSelectSiblingsWithACommonPrefix() throws {
        let chosen = try selection(["a/b"])
        assertNotSelected(chosen, ["a/bc", "a/bc/d", "a/b.txt", "a/b-old/x", "a", "b", "x/a/b", "a/ab"])
        assertNotSelected(chosen, ["a"], directory: true)
    }

    func testLeadingSlashAndRedundantSeparatorsAreIgnored() throws {
        for spelling in ["/a/b", "a/b/", "//a//b", "./a/./b", "/a/b/"] {
            let chosen = try selection([spelling])
            assertSelected(chosen, ["a/b", "a/b/c"])
            assertNotSelected(chosen, ["a/bc", "a"])
        }
    }

    func testSeveralSelectionsCombine() throws {
        let chosen = try selection(["/etc/hosts", "home/ana/docs"])
        assertSelected(chosen, ["etc/hosts", "home/ana/docs/cv.pdf"])
        assertNotSelected(chosen, ["etc/hostname", "etc", "home/ana/docs2", "home/ana"])
    }

    func testNonASCIIPaths() throws {
        let chosen = try selection(["home/zoë/Fotos"])
        assertSelected(chosen, ["home/zoë/Fotos/1.jpg"])
        assertNotSelected(chosen, ["home/zoe/Fotos/1.jpg"])
    }

    // MARK: Patterns

    func testStarPatternMatchesAtAnyDepth() throws {
        let chosen = try selection(["*.txt"])
        assertSelected(chosen, ["a.txt", "home/ana/notes.txt", "deep/er/x.txt"])
        assertNotSelected(chosen, ["a.txt.bak", "txt", "home/ana/notes.md", "a.TXT"])
    }

    func testPatternWithSlashIsAnchoredAtTheRoot() throws {
        let chosen = try selection(["home/*/notes"])
        assertSelected(chosen, ["home/ana/notes", "home/bob/notes"])
        assertSelected(chosen, ["home/ana/notes"], directory: true)
        assertNotSelected(chosen, ["x/home/ana/notes", "home/ana/sub/notes", "home/notes", "home/ana/notes2"])
    }

    func testPatternWithLeadingSlashIsAnchoredToo() throws {
        let chosen = try selection(["/home/*/notes"])
        assertSelected(chosen, ["home/ana/notes"])
        assertNotSelected(chosen, ["x/home/ana/notes"])
    }

    func testDirectoryPatternSelectsItsContents() throws {
        let chosen = try selection(["home/*/notes"])
        assertSelected(chosen, ["home/ana/notes/today.md", "home/ana/notes/2024/jan.md"])
        assertNotSelected(chosen, ["home/ana/notesx/today.md", "home/ana/other/notes.md"])

        let byName = try selection(["build*"])
        assertSelected(byName, ["build", "src/build-x86/obj/main.o", "buildlog.txt"])
        assertNotSelected(byName, ["src/rebuild/x"])
    }

    func testQuestionMarkAndBracketPatterns() throws {
        let chosen = try selection(["file?.log", "[ab].conf"])
        assertSelected(chosen, ["file1.log", "var/fileX.log", "a.conf", "etc/b.conf"])
        assertNotSelected(chosen, ["file10.log", "file.log", "c.conf", "ab.conf"])
    }

    func testDoubleStarPattern() throws {
        let chosen = try selection(["**/cache"])
        assertSelected(chosen, ["cache/x", "a/b/cache", "a/b/cache/z"])
        assertNotSelected(chosen, ["a/b/cached"])
    }

    func testPatternsAndExactPathsCombine() throws {
        let chosen = try selection(["etc/fstab", "*.conf"])
        assertSelected(chosen, ["etc/fstab", "etc/nginx/site.conf"])
        assertNotSelected(chosen, ["etc/passwd"])
    }

    func testInvalidPatternIsRefused() {
        XCTAssertThrowsError(try RestoreSelection(["[unclosed"])) { error in
            XCTAssertTrue(error is ExcludePatternError, "\(error)")
        }
    }
}
