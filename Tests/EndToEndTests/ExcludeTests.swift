import Foundation
import XCTest

/// `--exclude`, `--exclude-from`, `--exclude-caches`, `--exclude-if-present`, `--dry-run`.
final class ExcludeTests: EndToEndTestCase {
    // MARK: State

    private var source = ""
    private var dest = ""

    override func setUpWithError() throws {
        try super.setUpWithError()
        source = path("src")
        dest = path("dest")
        try Fixtures.makeTree(at: source, files: [
            "app.log": "log\n",
            "keep.log": "keep\n",
            "notes.txt": "notes\n",
            "build/out.o": "object\n",
            "src/build/inner.o": "object\n",
            "src/main.c": "int main(void) { return 0; }\n",
            "src/debug.log": "debug\n",
            "src/notes.txt": "inner notes\n",
            "cache/CACHEDIR.TAG": "Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag.\n",
            "cache/blob.bin": "cached\n",
            "fakecache/CACHEDIR.TAG": "Signature: not a real cache tag signature!!\n",
            "fakecache/data.bin": "data\n",
            "private/.nobackup": "",
            "private/secret.txt": "secret\n",
            "private/inner/deep.txt": "deep\n",
            "tmp/x.tmp": "temporary\n",
        ])
    }

    // MARK: Tests

    func testGlobDirectoryAndReinclude() throws {
        let listed = try backedUp(["--exclude", "*.log", "--exclude", "!keep.log", "--exclude", "build/"])
        for excluded in ["app.log", "src/debug.log", "build", "build/out.o", "src/build", "src/build/inner.o"] {
            XCTAssertFalse(listed.contains(excluded), "\(excluded) should be excluded: \(listed)")
        }
        for kept in ["keep.log", "notes.txt", "src/main.c", "src/notes.txt", "cache/blob.bin", "tmp/x.tmp"] {
            XCTAssertTrue(listed.contains(kept), "\(kept) should be kept: \(listed)")
        }
    }

    func testAnchoredPattern() throws {
        let listed = try backedUp(["--exclude", "/notes.txt"])
        XCTAssertFalse(listed.contains("notes.txt"), "the anchored pattern excludes the top-level file")
        XCTAssertTrue(listed.contains("src/notes.txt"), "the anchored pattern must not match deeper: \(listed)")
    }

    func testDoubleStarPatterns() throws {
        try Fixtures.makeTree(at: source, files: ["node_modules/x/f.js": "x", "src/node_modules/g.js": "g",
                                                  "docs/keep.md": "keep", "docs/drop.md": "drop"])
        let listed = try backedUp(["--exclude", "**/node_modules", "--exclude", "docs/**", "--exclude", "!docs/keep.md"])
        for excluded in ["node_modules", "node_modules/x/f.js", "src/node_modules", "src/node_modules/g.js", "docs/drop.md"] {
            XCTAssertFalse(listed.contains(excluded), "\(excluded) should be excluded: \(listed.sorted())")
        }
        XCTAssertTrue(listed.contains("docs"), "'docs/**' keeps the folder itself")
        XCTAssertTrue(listed.contains("docs/keep.md"), "'!docs/keep.md' re-includes it")
    }

    func testExcludeFrom() throws {
        let list = path("excludes.txt")
        try "# build products\n*.tmp\nbuild/\n\n*.o\n".write(toFile: list, atomically: true, encoding: .utf8)
        let listed = try backedUp(["--exclude-from", list])
        for excluded in ["tmp/x.tmp", "build", "src/build"] {
            XCTAssertFalse(listed.contains(excluded), "\(excluded) should be excluded: \(listed)")
        }
        XCTAssertTrue(listed.contains("tmp"), "the folder itself is kept")
        XCTAssertTrue(listed.contains("app.log"))
    }

    func testExcludeFromMissingFileIsAUsageError() throws {
        let outcome = try run(["backup", source, "--dest", dest, "--exclude-from", path("missing.txt")])
        assertExit(outcome, 2)
        XCTAssertTrue(outcome.stderrText.contains("missing.txt"), "\(outcome)")
    }

    func testExcludeCaches() throws {
        let listed = try backedUp(["--exclude-caches"])
        XCTAssertTrue(listed.contains("cache"), "the cache folder itself is kept")
        XCTAssertTrue(listed.contains("cache/CACHEDIR.TAG"), "the tag is kept")
        XCTAssertFalse(listed.contains("cache/blob.bin"), "the cache's contents are left out")
        XCTAssertTrue(listed.contains("fakecache/data.bin"), "a tag with a wrong signature does not count")
    }

    func testExcludeIfPresent() throws {
        let listed = try backedUp(["--exclude-if-present", ".nobackup"])
        XCTAssertTrue(listed.contains("private"))
        XCTAssertTrue(listed.contains("private/.nobackup"))
        XCTAssertFalse(listed.contains("private/secret.txt"))
        XCTAssertFalse(listed.contains("private/inner/deep.txt"))
        XCTAssertTrue(listed.contains("cache/blob.bin"))
    }

    func testExcludedFilesAreNotRestored() throws {
        _ = try backedUp(["--exclude", "*.log"])
        let target = path("target")
        assertExit(try run(["restore", "latest", "--dest", dest, "--target", target]), 0)
        let root = restored(source, into: target)
        XCTAssertFalse(RawFileSystem.exists(root + "/app.log"))
        XCTAssertEqual(try String(contentsOfFile: root + "/notes.txt", encoding: .utf8), "notes\n")
    }

    func testDryRunWritesNothing() throws {
        let outcome = try run(["backup", source, "--dest", dest, "--dry-run", "--exclude", "*.log"])
        assertExit(outcome, 0)
        XCTAssertFalse(RawFileSystem.exists(dest), "a dry run must not create the destination")

        try RawFileSystem.makeDirectory(RawFileSystem.bytes(dest))
        let json = try self.json(try run(["backup", source, "--dest", dest, "--dry-run", "--json"]))
        XCTAssertEqual(json["dry_run"] as? Bool, true)
        XCTAssertTrue(json["id"] is NSNull, "a dry run makes no backup id: \(json)")
        XCTAssertEqual(json["files"] as? Int, 16)
        XCTAssertEqual(try names(in: dest), [], "a dry run must write nothing into an existing destination")
    }

    /// `--dry-run --list` names every path the backup would save and every path it leaves
    /// out with the rule; what it says it would save is what a real backup then stores, as
    /// GNU tar lists the archive.
    func testADryRunListsWhatItWouldSaveAndWhatItLeavesOutWithTheRule() throws {
        let dest = source + "/backups"
        try backup([source], dest: dest, options: ["--quiet"])
        let options = ["--exclude", "*.log", "--exclude", "!keep.log", "--exclude", "build/", "--exclude-caches",
                       "--exclude-if-present", ".nobackup"]
        let planned = try run(["backup", source, "--dest", dest, "--dry-run", "--list"] + options)
        assertExit(planned, 0)
        XCTAssertTrue(planned.stderrText.contains("Dry run: nothing was written."), "the summary goes to stderr:\n\(planned)")
        let lines = planned.stdoutText.split(separator: "\n").map(String.init)
        let base = source + "/"
        XCTAssertEqual(Set(lines.filter { $0.hasPrefix("- ") }), [
            "- \(base)app.log  (--exclude '*.log')",
            "- \(base)src/debug.log  (--exclude '*.log')",
            "- \(base)build/  (--exclude 'build/')",
            "- \(base)src/build/  (--exclude 'build/')",
            "- \(base)cache/  (its contents: CACHEDIR.TAG, --exclude-caches)",
            "- \(base)private/  (its contents: .nobackup is present, --exclude-if-present)",
            "- \(dest)/  (the destination, left out automatically)",
        ], planned.stdoutText)
        let saved = Set(lines.filter { $0.hasPrefix("+ ") }.map { String($0.dropFirst(3)) }.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 })
        XCTAssertTrue(saved.contains(String(base.dropFirst()) + "keep.log"), "re-included: \(saved)")

        let real = try json(try run(["backup", source, "--dest", dest, "--full", "--json"] + options))
        let archive = dest + "/" + (try XCTUnwrap(real["archive"] as? String))
        let tar = try toolSucceeds("tar", ["--zstd", "-tf", archive])
        let stored = Set(tar.stdoutText.split(separator: "\n").map { $0.hasSuffix("/") ? String($0.dropLast()) : String($0) }
            .filter { !$0.hasPrefix(".keepsake") && !$0.contains("keepsake-manifest") })
        XCTAssertEqual(saved, stored, "the dry run's list is what the backup stores")

        let document = try json(try run(["backup", source, "--dest", dest, "--dry-run", "--list", "--json"] + options))
        XCTAssertEqual((document["saved"] as? [Any])?.count, saved.count)
        XCTAssertEqual((document["left_out"] as? [Any])?.count, 7)
        assertExit(try run(["backup", source, "--dest", dest, "--list"]), 2)
    }

    func testInvalidPatternIsAUsageError() throws {
        let outcome = try run(["backup", source, "--dest", dest, "--exclude", "[z-a"])
        assertExit(outcome, 2)
        XCTAssertTrue(outcome.stderrText.contains("[z-a"), "the bad pattern is quoted:\n\(outcome)")
    }

    // MARK: Helpers

    /// Backs up with `options` and returns the listed paths relative to the source.
    private func backedUp(_ options: [String], file: StaticString = #filePath, line: UInt = #line) throws -> Set<String> {
        try backup([source], dest: dest, options: options, file: file, line: line)
        let prefix = String(source.dropFirst()) + "/"
        return Set(try listedPaths("latest", dest: dest, file: file, line: line)
            .map(RawFileSystem.display)
            .compactMap { $0.hasPrefix(prefix) ? String($0.dropFirst(prefix.count)) : nil })
    }

    /// Issue 25 §2.2: `keepsake backup ~` with the default destination under
    /// ~/.local/share: the first backup held its own half-written archive and lock, and each
    /// later one every backup before it. The destination is left out (its temporary and lock
    /// files with it), and the backup says so once.
    func testTheDestinationInsideASourceIsLeftOutAndSaidOnce() throws {
        let home = path("home")
        try Fixtures.makeTree(at: home, files: ["docs/a.txt": "alpha\n", ".local/share/notes.txt": "kept\n"])
        let dest = home + "/.local/share/keepsake/backups"
        for round in 1...3 {
            let outcome = try run(["backup", home, "--dest", dest])
            assertExit(outcome, 0, "round \(round)")
            let said = outcome.stderrText.components(separatedBy: "leaving out \(dest), the destination").count - 1
            XCTAssertEqual(said, 1, "said once, round \(round):\n\(outcome)")
            let paths = try listedPaths("latest", dest: dest).map { String(decoding: $0, as: UTF8.self) }
            XCTAssertFalse(paths.contains { $0.contains("/keepsake/backups") }, "round \(round): \(paths)")
            XCTAssertTrue(paths.contains { $0.hasSuffix("/.local/share/notes.txt") }, "the rest of the folder stays: \(paths)")
        }
        XCTAssertEqual(try run(["backup", home, "--dest", dest, "--quiet"]).stderrText, "", "--quiet says nothing")
        let target = path("target")
        assertExit(try run(["restore", "latest", "--dest", dest, "--target", target]), 0)
        XCTAssertFalse(RawFileSystem.exists(restored(home, into: target) + "/.local/share/keepsake/backups"))
    }
}
