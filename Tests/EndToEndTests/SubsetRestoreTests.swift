import Foundation
import XCTest

/// `keepsake restore ID PATH...`: one file, one folder, a pattern, and a path that
/// matches nothing.
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
