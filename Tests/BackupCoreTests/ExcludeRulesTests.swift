import Foundation
@testable import KeepsakeScan
import XCTest
@testable import BackupCore

final class ExcludeRulesTests: KeepsakeTestCase {
    // MARK: Helpers

    private func rules(_ patterns: [String]) throws -> ExcludeRules {
        try ExcludeRules(patterns: patterns)
    }

    /// Whether `relative` is excluded when the source root is `root`.
    private func excluded(
        _ rules: ExcludeRules, _ relative: String, root: String = "/home/u/proj", directory: Bool = false
    ) -> Bool {
        let absolute = relative.isEmpty ? root : root + "/" + relative
        return rules.isExcluded(relativePath: Array(relative.utf8), absolutePath: Array(absolute.utf8), isDirectory: directory)
    }

    private func excluded(_ rules: ExcludeRules, bytes relative: [UInt8], directory: Bool = false) -> Bool {
        rules.isExcluded(relativePath: relative, absolutePath: Array("/root/".utf8) + relative, isDirectory: directory)
    }

    private func assertError(_ pattern: String, _ kind: ExcludePatternError.Kind, file: StaticString = #filePath, line: UInt = #line) {
        do {
            _ = try ExcludeRules(patterns: ["ok", pattern])
            XCTFail("'\(pattern)' should be rejected", file: file, line: line)
        } catch {
            XCTAssertEqual(error.pattern, pattern, file: file, line: line)
            XCTAssertEqual(error.kind, kind, file: file, line: line)
            XCTAssertTrue(error.description.contains("'\(pattern)'"), error.description, file: file, line: line)
        }
    }

    // MARK: Basics

    func testEmptyRulesExcludeNothing() throws {
        let none = try rules([])
        XCTAssertTrue(none.isEmpty)
        XCTAssertEqual(none.count, 0)
        XCTAssertFalse(excluded(none, "a"))
        XCTAssertFalse(try rules(["x"]).isEmpty)
    }

    func testPlainNameMatchesAtAnyDepth() throws {
        let r = try rules(["node_modules"])
        XCTAssertTrue(excluded(r, "node_modules", directory: true))
        XCTAssertTrue(excluded(r, "web/app/node_modules", directory: true))
        XCTAssertTrue(excluded(r, "web/node_modules"))
        XCTAssertFalse(excluded(r, "node_modules2"))
        XCTAssertFalse(excluded(r, "xnode_modules"))
        XCTAssertFalse(excluded(r, "node_modules/inner"))
    }

    func testStarSuffixAndPrefix() throws {
        let r = try rules(["*.o", "cache*"])
        XCTAssertTrue(excluded(r, "a.o"))
        XCTAssertTrue(excluded(r, "src/deep/b.o"))
        XCTAssertTrue(excluded(r, ".o"))
        XCTAssertFalse(excluded(r, "a.obj"))
        XCTAssertFalse(excluded(r, "o"))
        XCTAssertTrue(excluded(r, "x/cache"))
        XCTAssertTrue(excluded(r, "x/cache-2"))
        XCTAssertFalse(excluded(r, "x/mycache"))
    }

    func testStarDoesNotCrossSlash() throws {
        let r = try rules(["src/*.c"])
        XCTAssertTrue(excluded(r, "src/a.c"))
        XCTAssertFalse(excluded(r, "src/sub/a.c"))
        XCTAssertFalse(excluded(r, "lib/src/a.c"))
    }

    func testGeneralStarPatterns() throws {
        let r = try rules(["a*b*c", "*x*"])
        XCTAssertTrue(excluded(r, "abc"))
        XCTAssertTrue(excluded(r, "aXXbYYc"))
        XCTAssertTrue(excluded(r, "abbbcc"))
        XCTAssertFalse(excluded(r, "abcd"))
        XCTAssertFalse(excluded(r, "acb"))
        XCTAssertTrue(excluded(r, "x"))
        XCTAssertTrue(excluded(r, "boxes"))
        XCTAssertFalse(excluded(r, "box/es"))
    }

    func testQuestionMark() throws {
        let r = try rules(["?.txt", "a?c"])
        XCTAssertTrue(excluded(r, "x.txt"))
        XCTAssertFalse(excluded(r, ".txt"))
        XCTAssertFalse(excluded(r, "xy.txt"))
        XCTAssertTrue(excluded(r, "abc"))
        XCTAssertFalse(excluded(r, "ac"))
        // `?` never matches the slash between components.
        XCTAssertFalse(try rules(["a?b"]).isExcluded(relativePath: Array("a/b".utf8), absolutePath: Array("/r/a/b".utf8), isDirectory: false))
    }

    func testQuestionMarkMatchesOneMultiByteCharacter() throws {
        let r = try rules(["?.txt"])
        XCTAssertTrue(excluded(r, "é.txt"))        // 2 bytes
        XCTAssertTrue(excluded(r, "€.txt"))        // 3 bytes
        XCTAssertTrue(excluded(r, "😀.txt"))       // 4 bytes
        XCTAssertTrue(excluded(r, "한.txt"))
        XCTAssertFalse(excluded(r, "éé.txt"))
        let two = try rules(["??"])
        XCTAssertFalse(excluded(two, "é"))
        XCTAssertTrue(excluded(two, "éa"))
        // A star never stops inside a character, so `*??` cannot split one 3-byte `€` in three.
        XCTAssertFalse(excluded(try rules(["*??"]), "€"))
        XCTAssertTrue(excluded(try rules(["*??"]), "€€"))
    }

    func testInvalidUTF8Names() throws {
        let name: [UInt8] = [0x66, 0xff, 0xfe, 0x2e, 0x6f] // "f\xff\xfe.o"
        XCTAssertTrue(excluded(try rules(["*"]), bytes: name))
        XCTAssertTrue(excluded(try rules(["*.o"]), bytes: name))
        XCTAssertTrue(excluded(try rules(["f*"]), bytes: name))
        XCTAssertTrue(excluded(try rules(["f*.o"]), bytes: name))
        XCTAssertTrue(excluded(try rules(["f??.o"]), bytes: name), "each invalid byte is one character")
        XCTAssertFalse(excluded(try rules(["f?.o"]), bytes: name))
        XCTAssertTrue(excluded(try rules(["f[!a]*"]), bytes: name), "a negated class matches an invalid byte")
        XCTAssertFalse(excluded(try rules(["f[a-z]*"]), bytes: name))
        // Truncated multi-byte sequence: E2 82 without its last byte is two characters.
        let truncated: [UInt8] = [0xe2, 0x82, 0x2e, 0x6f]
        XCTAssertTrue(excluded(try rules(["??.o"]), bytes: truncated))
        XCTAssertTrue(excluded(try rules(["*.o"]), bytes: truncated))
        // In a directory component, with an anchored pattern.
        let nested: [UInt8] = Array("d/".utf8) + [0xff] + Array("/x".utf8)
        XCTAssertTrue(excluded(try rules(["d/*/x"]), bytes: nested))
        XCTAssertTrue(excluded(try rules(["d/?/x"]), bytes: nested))
    }

    // MARK: Classes and escapes

    func testCharacterClasses() throws {
        let r = try rules(["file[0-9].log", "[abc]", "x[!0-9]", "y[^a-c]"])
        XCTAssertTrue(excluded(r, "file7.log"))
        XCTAssertFalse(excluded(r, "filex.log"))
        XCTAssertFalse(excluded(r, "file10.log"))
        XCTAssertTrue(excluded(r, "b"))
        XCTAssertFalse(excluded(r, "d"))
        XCTAssertTrue(excluded(r, "xa"))
        XCTAssertFalse(excluded(r, "x5"))
        XCTAssertTrue(excluded(r, "yd"))
        XCTAssertFalse(excluded(r, "yb"))
    }

    func testClassSpecialMembers() throws {
        // `]` first is a member; `-` first or last is a member; `\` escapes inside.
        XCTAssertTrue(excluded(try rules(["[]a]"]), "]"))
        XCTAssertTrue(excluded(try rules(["[!]a]"]), "b"))
        XCTAssertFalse(excluded(try rules(["[!]a]"]), "]"))
        XCTAssertTrue(excluded(try rules(["[-a]"]), "-"))
        XCTAssertTrue(excluded(try rules(["[a-]"]), "-"))
        XCTAssertTrue(excluded(try rules(["[\\]]"]), "]"))
        XCTAssertTrue(excluded(try rules(["[a\\-z]"]), "-"))
        XCTAssertFalse(excluded(try rules(["[a\\-z]"]), "m"))
    }

    func testClassesMatchCharactersNotBytes() throws {
        let r = try rules(["[éà].txt", "[α-ω]"])
        XCTAssertTrue(excluded(r, "é.txt"))
        XCTAssertTrue(excluded(r, "à.txt"))
        XCTAssertFalse(excluded(r, "e.txt"))
        XCTAssertTrue(excluded(r, "λ"))
        XCTAssertFalse(excluded(r, "a"))
        XCTAssertTrue(excluded(try rules(["[!a]"]), "😀"))
    }

    func testEscapes() throws {
        let r = try rules(["\\*.txt", "a\\?", "\\[x]"])
        XCTAssertTrue(excluded(r, "*.txt"))
        XCTAssertFalse(excluded(r, "a.txt"))
        XCTAssertTrue(excluded(r, "a?"))
        XCTAssertFalse(excluded(r, "ab"))
        XCTAssertTrue(excluded(r, "[x]"))
        XCTAssertFalse(excluded(r, "x"))
        // A leading `\!` is a literal `!`, not a negation.
        let bang = try rules(["\\!important"])
        XCTAssertTrue(excluded(bang, "!important"))
        XCTAssertTrue(excluded(try rules(["\\#x"]), "#x"))
    }

    // MARK: Negation and order

    func testNegationReincludes() throws {
        let r = try rules(["*.log", "!keep.log"])
        XCTAssertTrue(excluded(r, "a.log"))
        XCTAssertFalse(excluded(r, "keep.log"))
        XCTAssertFalse(excluded(r, "dir/keep.log"))
    }

    func testLastMatchingPatternWins() throws {
        let reincludedThenExcluded = try rules(["*.log", "!keep.log", "keep.*"])
        XCTAssertTrue(excluded(reincludedThenExcluded, "keep.log"))
        let negationFirst = try rules(["!keep.log", "*.log"])
        XCTAssertTrue(excluded(negationFirst, "keep.log"), "a negation before the exclusion has no effect")
        let alone = try rules(["!a"])
        XCTAssertFalse(excluded(alone, "a"))
    }

    // MARK: Directories

    func testTrailingSlashMatchesDirectoriesOnly() throws {
        let r = try rules(["build/"])
        XCTAssertTrue(excluded(r, "build", directory: true))
        XCTAssertTrue(excluded(r, "sub/build", directory: true))
        XCTAssertFalse(excluded(r, "build", directory: false))
        let negated = try rules(["*", "!src/"])
        XCTAssertFalse(excluded(negated, "src", directory: true))
        XCTAssertTrue(excluded(negated, "src", directory: false))
    }

    // MARK: Anchoring

    func testLeadingSlashAnchorsToRoot() throws {
        let r = try rules(["/build"])
        XCTAssertTrue(excluded(r, "build", directory: true))
        XCTAssertFalse(excluded(r, "sub/build", directory: true))
    }

    func testMiddleSlashAnchorsToRoot() throws {
        let r = try rules(["docs/*.pdf"])
        XCTAssertTrue(excluded(r, "docs/a.pdf"))
        XCTAssertFalse(excluded(r, "x/docs/a.pdf"))
        let dirOnly = try rules(["a/b/"])
        XCTAssertTrue(excluded(dirOnly, "a/b", directory: true))
        XCTAssertFalse(excluded(dirOnly, "a/b"))
        XCTAssertFalse(excluded(dirOnly, "c/a/b", directory: true))
    }

    func testAnchoredPatternsAlsoMatchAbsolutePath() throws {
        let r = try rules(["/home/u/.cache"])
        XCTAssertTrue(excluded(r, "u/.cache", root: "/home", directory: true))
        XCTAssertTrue(excluded(r, ".cache", root: "/home/u", directory: true))
        XCTAssertFalse(excluded(r, "u/.cache2", root: "/home", directory: true))
        XCTAssertFalse(excluded(r, "v/.cache", root: "/home", directory: true))
        // Same pattern from the file-system root: relative and absolute agree.
        XCTAssertTrue(excluded(r, "home/u/.cache", root: "", directory: true))
        // Wildcards work on the absolute form too, and sloppy slashes do not matter.
        XCTAssertTrue(excluded(try rules(["/home/*/.cache/"]), "bob/.cache", root: "/home", directory: true))
        XCTAssertTrue(try rules(["/home/u/.cache"]).isExcluded(
            relativePath: Array(".cache".utf8), absolutePath: Array("//home/u//.cache/".utf8), isDirectory: true))
        // A slash-free pattern never looks at the absolute path's parents.
        XCTAssertFalse(excluded(try rules(["u"]), "x", root: "/home/u"))
    }

    func testAbsoluteMatchingRequiresTheWholePath() throws {
        let r = try rules(["src/*.o"])
        XCTAssertFalse(excluded(r, "a.o", root: "/home/u/proj/src"), "absolute matching is anchored at /")
        XCTAssertTrue(excluded(r, "a.o", root: "/src"))
    }

    func testEmptyRelativePathUsesAbsolutePath() throws {
        let r = try rules(["*.o"])
        XCTAssertTrue(r.isExcluded(relativePath: [], absolutePath: Array("/home/u/a.o".utf8), isDirectory: false))
        XCTAssertFalse(r.isExcluded(relativePath: [], absolutePath: Array("/home/u/a.c".utf8), isDirectory: false))
        XCTAssertFalse(r.isExcluded(relativePath: [], absolutePath: [], isDirectory: false))
    }

    // MARK: Double star

    func testLeadingDoubleStar() throws {
        let r = try rules(["**/logs"])
        XCTAssertTrue(excluded(r, "logs", directory: true))
        XCTAssertTrue(excluded(r, "a/logs", directory: true))
        XCTAssertTrue(excluded(r, "a/b/c/logs", directory: true))
        XCTAssertFalse(excluded(r, "a/logs/x"))
        let nested = try rules(["**/logs/*.txt"])
        XCTAssertTrue(excluded(nested, "logs/a.txt"))
        XCTAssertTrue(excluded(nested, "x/y/logs/a.txt"))
        XCTAssertFalse(excluded(nested, "x/logs/y/a.txt"))
    }

    func testTrailingDoubleStarMatchesInsideOnly() throws {
        let r = try rules(["tmp/**"])
        XCTAssertFalse(excluded(r, "tmp", directory: true), "the directory itself stays, so negations inside work")
        XCTAssertTrue(excluded(r, "tmp/a"))
        XCTAssertTrue(excluded(r, "tmp/a/b/c", directory: true))
        XCTAssertFalse(excluded(r, "x/tmp/a"))
        let keep = try rules(["tmp/**", "!tmp/keep"])
        XCTAssertTrue(excluded(keep, "tmp/other"))
        XCTAssertFalse(excluded(keep, "tmp/keep"))
    }

    func testMiddleDoubleStar() throws {
        let r = try rules(["a/**/b"])
        XCTAssertTrue(excluded(r, "a/b"))
        XCTAssertTrue(excluded(r, "a/x/b"))
        XCTAssertTrue(excluded(r, "a/x/y/z/b"))
        XCTAssertFalse(excluded(r, "a/x/y/z/c"))
        XCTAssertFalse(excluded(r, "z/a/x/b"))
        let repeated = try rules(["a/**/**/b/**/c"])
        XCTAssertTrue(excluded(repeated, "a/b/c"))
        XCTAssertTrue(excluded(repeated, "a/1/2/b/3/c"))
        XCTAssertFalse(excluded(repeated, "a/1/2/c/3/b"))
    }

    func testOtherDoubleStarsActLikeStar() throws {
        let r = try rules(["a**b", "**"])
        XCTAssertTrue(excluded(r, "anything"), "a lone ** is a slash-free pattern matching every name")
        let inside = try rules(["a**b"])
        XCTAssertTrue(excluded(inside, "axxb"))
        XCTAssertFalse(excluded(inside, "ax/xb"))
        XCTAssertTrue(excluded(try rules(["x/a**"]), "x/abc"))
    }

    // MARK: Errors

    func testBadPatternsThrowNamingThePattern() throws {
        assertError("foo[", .unterminatedClass)
        assertError("[abc", .unterminatedClass)
        assertError("[]", .unterminatedClass)
        assertError("[!]", .unterminatedClass)
        assertError("a/[b/c]", .unterminatedClass)
        assertError("[z-a]", .invalidRange)
        assertError("foo\\", .trailingBackslash)
        assertError("[a\\", .unterminatedClass)
        assertError("", .empty)
        assertError("!", .empty)
        assertError("/", .empty)
        assertError("!//", .empty)
    }

    func testErrorDescription() throws {
        XCTAssertThrowsError(try ExcludeRules(patterns: ["*.[ch"])) { error in
            XCTAssertEqual("\(error)", "Invalid exclude pattern '*.[ch': unterminated '[' (a character class needs a closing ']')")
        }
    }

    // MARK: Exclude files

    func testPatternsFromFileContents() throws {
        let contents = """
        # comment
        *.o

           
        \\#literal
        \\!bang
        !keep.o
        trailing   
        escaped\\ 
        both\\  \t
        crlf\r
        /anchored/
        """
        XCTAssertEqual(ExcludeRules.patterns(fromFileContents: contents), [
            "*.o", "\\#literal", "\\!bang", "!keep.o", "trailing", "escaped\\ ", "both\\  \t", "crlf", "/anchored/",
        ])
        let r = try rules(ExcludeRules.patterns(fromFileContents: contents))
        XCTAssertTrue(excluded(r, "#literal"))
        XCTAssertTrue(excluded(r, "!bang"))
        XCTAssertTrue(excluded(r, "escaped "))
        XCTAssertFalse(excluded(r, "escaped"))
        XCTAssertTrue(excluded(r, "a.o"))
        XCTAssertFalse(excluded(r, "keep.o"))
        XCTAssertTrue(excluded(r, "crlf"))
        XCTAssertTrue(excluded(r, "anchored", directory: true))
        XCTAssertEqual(ExcludeRules.patterns(fromFileContents: ""), [])
        XCTAssertEqual(ExcludeRules.patterns(fromFileContents: "#only\n\n"), [])
    }

    // MARK: Performance safety

    func testHostilePatternIsFast() throws {
        let hostile = try rules(["*a*a*a*a*a*a*a*a*a*a*b", "**/**/**/**/**/**/**/**/z"])
        let name = [UInt8](repeating: UInt8(ascii: "a"), count: 10_000)
        let deep = Array(repeating: "d", count: 2_000).joined(separator: "/")
        let start = Date()
        XCTAssertFalse(excluded(hostile, bytes: name))
        XCTAssertFalse(excluded(hostile, deep))
        XCTAssertTrue(excluded(hostile, bytes: name + [UInt8(ascii: "b")]))
        XCTAssertTrue(excluded(hostile, deep + "/z"))
        // Generous bound: exponential backtracking would take far longer than this.
        XCTAssertLessThan(Date().timeIntervalSince(start), 10)
    }

    func testManyPathsManyRules() throws {
        let r = try rules(["*.o", "*.tmp", "node_modules/", ".git/", "/build", "src/**/gen", "!important.o", "cache[0-9]"])
        var count = 0
        for index in 0..<20_000 {
            let path = "src/module\(index % 50)/file\(index).\(index % 3 == 0 ? "o" : "c")"
            if excluded(r, path) { count += 1 }
        }
        XCTAssertEqual(count, 6_667)
    }
}
