import Foundation
import XCTest

/// `keepsake restore ID PATH...`: one file, one folder, a pattern, and a path that
/// matches nothing.
// test-tag(threads): partial restores over the parallel decoder
final class SubsetRestoreTests: EndToEndTestCase {
    // MARK: State

    private var source = ""
    private var dest = ""
    private var target = ""

    private let files = [
        "notes.txt": "notes\n",
        "docs/a.txt": "a\n",
        "docs/b.md": "b\n",
        "docs/sub/c.txt": "c\n",
        "photos/x.jpg": "jpeg\n",
    ]

    override func setUpWithError() throws {
        try super.setUpWithError()
        source = path("src")
        dest = path("dest")
        target = path("target")
        try Fixtures.makeTree(at: source, files: files)
        try backup([source], dest: dest)
    }

    // MARK: Tests

    func testSingleFile() throws {
        let outcome = try run(["restore", "latest", source + "/notes.txt", "--dest", dest, "--target", target])
        assertExit(outcome, 0)
        XCTAssertEqual(try restoredFiles(), ["notes.txt"])
        XCTAssertEqual(try String(contentsOfFile: restored(source, into: target) + "/notes.txt", encoding: .utf8), "notes\n")
    }

    func testSingleFileWithoutLeadingSlash() throws {
        let outcome = try run(["restore", "latest", String(source.dropFirst()) + "/docs/b.md", "--dest", dest, "--target", target])
        assertExit(outcome, 0)
        XCTAssertEqual(try restoredFiles(), ["docs/b.md"])
    }

    func testFolderBringsItsContents() throws {
        let outcome = try run(["restore", "latest", source + "/docs", "--dest", dest, "--target", target])
        assertExit(outcome, 0)
        XCTAssertEqual(try restoredFiles(), ["docs/a.txt", "docs/b.md", "docs/sub/c.txt"])
    }

    func testPattern() throws {
        let outcome = try run(["restore", "latest", "*.txt", "--dest", dest, "--target", target])
        assertExit(outcome, 0)
        XCTAssertEqual(try restoredFiles(), ["docs/a.txt", "docs/sub/c.txt", "notes.txt"])
        for name in ["docs/a.txt", "docs/sub/c.txt", "notes.txt"] {
            XCTAssertEqual(try String(contentsOfFile: restored(source, into: target) + "/" + name, encoding: .utf8), files[name])
        }
    }

    func testSeveralSelections() throws {
        let outcome = try run(["restore", "latest", source + "/photos", source + "/notes.txt", "--dest", dest, "--target", target])
        assertExit(outcome, 0)
        XCTAssertEqual(try restoredFiles(), ["notes.txt", "photos/x.jpg"])
    }

    func testSecondNameOfAHardLinkRestoresAlone() throws {
        let linked = path("linked")
        try Fixtures.makeTree(at: linked, files: ["one.txt": "shared content\n"])
        try RawFileSystem.makeHardLink(RawFileSystem.bytes(linked + "/two.txt"), to: RawFileSystem.bytes(linked + "/one.txt"))
        let linkedDest = path("linked-dest")
        try backup([linked], dest: linkedDest)
        let outcome = try run(["restore", "latest", linked + "/two.txt", "--dest", linkedDest, "--target", target])
        assertExit(outcome, 0, "restoring only the second name of a hard-linked file")
        XCTAssertEqual(try? String(contentsOfFile: restored(linked, into: target) + "/two.txt", encoding: .utf8),
                       "shared content\n", "the selected hard-linked file was not restored")
    }

    /// Issue 25 §2.6: in an incremental backup both names of a hard-linked file are carried
    /// over from an earlier one (`in`); each name alone, and the folder with both, restore
    /// from the second and the third backup of the chain.
    func testEitherNameOfAHardLinkCarriedOverRestoresFromAnIncremental() throws {
        let linked = path("linked")
        try Fixtures.makeTree(at: linked, files: ["sub/numbers.txt": (1...1000).map(String.init).joined(separator: "\n"),
                                                  "other.txt": "first\n"])
        try RawFileSystem.makeHardLink(RawFileSystem.bytes(linked + "/sub/numbers-hardlink.txt"),
                                       to: RawFileSystem.bytes(linked + "/sub/numbers.txt"))
        let linkedDest = path("linked-dest")
        try backup([linked], dest: linkedDest)
        let expected = try RawFileSystem.readFile(RawFileSystem.bytes(linked + "/sub/numbers.txt"))
        for night in 2...3 {
            try Fixtures.makeTree(at: linked, files: ["other.txt": "night \(night)\n"])
            let id = try backup([linked], dest: linkedDest)
            for name in ["numbers.txt", "numbers-hardlink.txt"] {
                let into = path("target-\(night)-\(name)")
                let outcome = try run(["restore", id, linked + "/sub/" + name, "--dest", linkedDest, "--target", into])
                assertExit(outcome, 0, "backup \(night), \(name) alone")
                let names = try RawFileSystem.listDirectory(RawFileSystem.bytes(restored(linked, into: into) + "/sub"))
                XCTAssertEqual(names.map { String(decoding: $0, as: UTF8.self) }, [name], "backup \(night): only \(name)")
                XCTAssertEqual(try RawFileSystem.readFile(RawFileSystem.bytes(restored(linked, into: into) + "/sub/" + name)),
                               expected, "backup \(night), \(name)")
            }
            let both = path("target-\(night)-both")
            assertExit(try run(["restore", id, linked + "/sub", "--dest", linkedDest, "--target", both]), 0)
            let first = try XCTUnwrap(RawFileSystem.lstat(restored(linked, into: both) + "/sub/numbers.txt"))
            let second = try XCTUnwrap(RawFileSystem.lstat(restored(linked, into: both) + "/sub/numbers-hardlink.txt"))
            XCTAssertEqual(first.st_ino, second.st_ino, "backup \(night): the folder brings both names, one file")
        }
    }

    func testPathMatchingNothingIsAnError() throws {
        let missing = source + "/no-such-file.txt"
        let outcome = try run(["restore", "latest", missing, "--dest", dest, "--target", target])
        assertExit(outcome, 1)
        XCTAssertTrue(outcome.stderrText.contains("no-such-file.txt"), "the message must name the path:\n\(outcome)")
        XCTAssertEqual(try restoredFiles(), [], "nothing may be restored")

        let pattern = try run(["restore", "latest", "*.pdf", "--dest", dest, "--target", target])
        assertExit(pattern, 1)
        XCTAssertTrue(pattern.stderrText.contains("*.pdf"), "the message must name the pattern:\n\(pattern)")
    }

    func testDryRunWritesNothing() throws {
        let outcome = try run(["restore", "latest", "--dest", dest, "--target", target, "--dry-run"])
        assertExit(outcome, 0)
        XCTAssertTrue(outcome.stdoutText.contains("notes.txt"), "a dry run lists what it would restore:\n\(outcome)")
        XCTAssertEqual(try restoredFiles(), [])
    }

    // MARK: Helpers

    /// Regular files under the restored source, relative to it, sorted.
    private func restoredFiles() throws -> [String] {
        let root = restored(source, into: target)
        guard RawFileSystem.exists(root) else { return [] }
        return try TreeComparison.snapshot(of: root, xattrName: nil)
            .filter { $0.value.kind == .file }
            .map { RawFileSystem.display($0.key) }
            .sorted()
    }
}
