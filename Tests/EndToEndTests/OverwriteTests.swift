import Foundation
import XCTest

/// `--overwrite never|if-newer|always` with files already in the target.
final class OverwriteTests: EndToEndTestCase {
    // MARK: State

    private var source = ""
    private var dest = ""
    private var target = ""
    /// The backed-up file's modification time (seconds).
    private let backupTime = 1_700_000_000

    override func setUpWithError() throws {
        try super.setUpWithError()
        source = path("src")
        dest = path("dest")
        target = path("target")
        try Fixtures.makeTree(at: source, files: ["f.txt": "from the backup\n", "g.txt": "second\n"])
        try RawFileSystem.setModificationTime(RawFileSystem.bytes(source + "/f.txt"), seconds: backupTime, nanoseconds: 5)
        try backup([source], dest: dest)
        assertExit(try run(["restore", "latest", "--dest", dest, "--target", target]), 0)
    }

    // MARK: Tests

    func testNeverKeepsExistingFilesAndCountsThem() throws {
        try edit(seconds: backupTime + 1000)
        try FileManager.default.removeItem(atPath: restoredFile("g.txt"))
        let outcome = try run(["restore", "latest", "--dest", dest, "--target", target, "--json"])
        assertExit(outcome, 3, "a kept file that differs from the backup makes the restore partial")
        XCTAssertEqual(try content("f.txt"), "local edit\n", "the default policy must leave existing files alone")
        XCTAssertEqual(try content("g.txt"), "second\n", "missing files are restored")
        let object = try json(outcome)
        XCTAssertEqual(object["skipped_existing"] as? Int, 1, "the kept file is counted:\n\(outcome)")

        let explicit = try run(["restore", "latest", "--dest", dest, "--target", target, "--overwrite", "never"])
        assertExit(explicit, 3)
        XCTAssertEqual(try content("f.txt"), "local edit\n")
        XCTAssertTrue(explicit.stdoutText.contains("Kept"), "the summary says files were kept:\n\(explicit)")
    }

    func testIfNewerKeepsANewerLocalFile() throws {
        try edit(seconds: backupTime + 1000)
        let outcome = try run(["restore", "latest", "--dest", dest, "--target", target, "--overwrite", "if-newer"])
        assertExit(outcome, 3, "the newer local copy that was kept differs from the backup's")
        XCTAssertEqual(try content("f.txt"), "local edit\n", "the local copy is newer than the backup's")
    }

    func testIfNewerReplacesAnOlderLocalFile() throws {
        try edit(seconds: backupTime - 1000)
        let outcome = try run(["restore", "latest", "--dest", dest, "--target", target, "--overwrite", "if-newer"])
        assertExit(outcome, 0)
        XCTAssertEqual(try content("f.txt"), "from the backup\n", "the backup's copy is newer than the local one")
        let info = try XCTUnwrap(RawFileSystem.lstat(restoredFile("f.txt")))
        XCTAssertEqual(info.st_mtim.tv_sec, backupTime)
        XCTAssertEqual(info.st_mtim.tv_nsec, 5)
    }

    func testAlwaysReplaces() throws {
        try edit(seconds: backupTime + 1000)
        let outcome = try run(["restore", "latest", "--dest", dest, "--target", target, "--overwrite", "always"])
        assertExit(outcome, 0)
        XCTAssertEqual(try content("f.txt"), "from the backup\n")
        try assertTreesEqual(expected: source, actual: restored(source, into: target))
    }

    /// Restoring again over an untouched restore writes nothing, says so, and succeeds:
    /// kept files that match the backup are no problem, and no option is suggested.
    func testRestoringAgainKeepsMatchingFilesAndSaysNothingWasWritten() throws {
        let outcome = try run(["restore", "latest", "--dest", dest, "--target", target, "--json"])
        assertExit(outcome, 0)
        let object = try json(outcome)
        XCTAssertEqual(object["written"] as? Int, 0, "\(object)")
        XCTAssertEqual(object["files"] as? Int, 0, "no file was restored: \(object)")
        XCTAssertEqual(object["kept"] as? Int, 2, "\(object)")
        XCTAssertEqual(object["kept_same"] as? Int, 2, "\(object)")
        XCTAssertEqual(object["kept_different"] as? [String], [], "\(object)")
        XCTAssertEqual(object["replaced"] as? Int, 0, "\(object)")

        let text = try run(["restore", "latest", "--dest", dest, "--target", target])
        assertExit(text, 0)
        XCTAssertTrue(text.stdoutText.contains("Restored: 0 files"), "nothing was written:\n\(text)")
        XCTAssertTrue(text.stdoutText.contains("Kept:") && text.stdoutText.contains("already the same"), "\(text)")
        XCTAssertFalse(text.combinedText.contains("--overwrite"), "nothing to replace, so no hint:\n\(text)")
    }

    /// A kept file that differs from the backup is named, counted apart from the ones that
    /// match, and makes the restore exit 3; the hint names only options that would help.
    func testKeptDifferingFileIsNamedWithExit3AndTheRightHint() throws {
        try edit(seconds: backupTime + 1000)
        let outcome = try run(["restore", "latest", "--dest", dest, "--target", target, "--json"])
        assertExit(outcome, 3)
        let object = try json(outcome)
        let f = String(restoredFile("f.txt").dropFirst(target.count + 1))
        XCTAssertEqual(object["kept_different"] as? [String], [f], "\(object)")
        XCTAssertEqual(object["kept_same"] as? Int, 1, "g.txt is the same: \(object)")
        XCTAssertEqual(object["exit_code"] as? Int, 3)

        let never = try run(["restore", "latest", "--dest", dest, "--target", target])
        assertExit(never, 3)
        XCTAssertTrue(never.stderrText.contains(f + ": kept; it differs"), "the differing file is named:\n\(never)")
        XCTAssertTrue(never.stdoutText.contains("1 differs from the backup's, 1 the same"), "\(never)")
        XCTAssertTrue(never.stdoutText.contains("--overwrite if-newer"), "\(never)")

        let ifNewer = try run(["restore", "latest", "--dest", dest, "--target", target, "--overwrite", "if-newer"])
        assertExit(ifNewer, 3)
        XCTAssertFalse(ifNewer.combinedText.contains("--overwrite if-newer"), "if-newer was given already:\n\(ifNewer)")
        XCTAssertTrue(ifNewer.stdoutText.contains("--overwrite always"), "\(ifNewer)")
        XCTAssertEqual(try content("f.txt"), "local edit\n")
    }

    func testAlwaysCountsWhatItReplaced() throws {
        try edit(seconds: backupTime + 1000)
        try FileManager.default.removeItem(atPath: restoredFile("g.txt"))
        let outcome = try run(["restore", "latest", "--dest", dest, "--target", target, "--overwrite", "always", "--json"])
        assertExit(outcome, 0)
        let object = try json(outcome)
        XCTAssertEqual(object["files"] as? Int, 2, "\(object)")
        XCTAssertEqual(object["written"] as? Int, 2, "\(object)")
        XCTAssertEqual(object["replaced"] as? Int, 1, "f.txt was replaced, g.txt was new: \(object)")
        XCTAssertEqual(object["replaced_different"] as? Int, 1, "f.txt held a local edit: \(object)")
        XCTAssertEqual(object["kept"] as? Int, 0, "\(object)")

        // Both now hold the backup's copy; one is edited again: two replaced, one differed.
        try edit(seconds: backupTime + 2000)
        let text = try run(["restore", "latest", "--dest", dest, "--target", target, "--overwrite", "always"])
        assertExit(text, 0)
        XCTAssertTrue(text.stdoutText.contains("Replaced: 2 existing files with the backup's copy (1 differed, 1 was already the same)"),
                      "\(text)")
        XCTAssertFalse(text.stdoutText.contains("Kept"), "\(text)")
        let again = try json(try run(["restore", "latest", "--dest", dest, "--target", target, "--overwrite", "always", "--json"]))
        XCTAssertEqual(again["replaced"] as? Int, 2, "\(again)")
        XCTAssertEqual(again["replaced_different"] as? Int, 0, "nothing differed any more: \(again)")
    }

    /// A plain tarball has no SHA-256s: what it replaces is counted as not compared, never
    /// as differing or the same.
    func testAlwaysOverAPlainTarballSaysWhatItCouldNotCompare() throws {
        let tarball = path("plain.tar.gz")
        try toolSucceeds("tar", ["-czf", tarball, "-C", source, "."])
        let into = path("into")
        assertExit(try run(["restore", tarball, "--target", into]), 0)
        let again = try run(["restore", tarball, "--target", into, "--overwrite", "always", "--json"])
        assertExit(again, 0)
        let object = try json(again)
        XCTAssertEqual(object["replaced"] as? Int, 2, "\(object)")
        XCTAssertEqual(object["replaced_uncompared"] as? Int, 2, "\(object)")
        XCTAssertEqual(object["replaced_different"] as? Int, 0, "\(object)")
    }

    /// `-n` tells what would be written from what would be kept, and writes nothing.
    func testDryRunTellsWrittenFromKept() throws {
        try edit(seconds: backupTime + 1000)
        try FileManager.default.removeItem(atPath: restoredFile("g.txt"))
        let outcome = try run(["restore", "latest", "--dest", dest, "--target", target, "-n", "--json"])
        assertExit(outcome, 0, "a dry run writes nothing, so what it would keep is no failure")
        let object = try json(outcome)
        let g = String(restoredFile("g.txt").dropFirst(target.count + 1))
        let f = String(restoredFile("f.txt").dropFirst(target.count + 1))
        XCTAssertEqual(object["files"] as? Int, 1, "only g.txt would be written: \(object)")
        XCTAssertEqual((object["planned"] as? [String] ?? []).filter { !$0.hasSuffix("src") && $0.contains(".txt") }, [g], "\(object)")
        XCTAssertEqual(object["kept"] as? Int, 1, "\(object)")
        XCTAssertEqual(object["kept_different"] as? [String], [f], "\(object)")
        XCTAssertFalse(RawFileSystem.exists(restoredFile("g.txt")), "a dry run writes nothing")

        let text = try run(["restore", "latest", "--dest", dest, "--target", target, "-n"])
        assertExit(text, 0)
        XCTAssertTrue(text.stdoutText.contains("Would write:        1 file"), "\(text)")
        XCTAssertTrue(text.stdoutText.contains("Would keep:         1 existing file"), "\(text)")
        XCTAssertFalse(text.stdoutText.split(separator: "\n").contains { $0.hasSuffix("f.txt") }, "f.txt is not listed as written:\n\(text)")

        let replacing = try json(try run(["restore", "latest", "--dest", dest, "--target", target, "-n", "--overwrite", "always", "--json"]))
        XCTAssertEqual(replacing["files"] as? Int, 2, "\(replacing)")
        XCTAssertEqual(replacing["replaced"] as? Int, 1, "\(replacing)")
        XCTAssertEqual(replacing["kept"] as? Int, 0, "\(replacing)")
    }

    /// A lone archive has no manifest beside it: a kept file is compared with the content in
    /// the archive itself.
    func testLoneArchiveComparesKeptFilesWithTheArchive() throws {
        let lone = path("lone")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(lone))
        let archive = try onlyArchive(in: dest)
        let copy = lone + "/" + (archive as NSString).lastPathComponent
        try FileManager.default.copyItem(atPath: archive, toPath: copy)
        let same = try json(try run(["restore", copy, "--target", target, "--json"]))
        XCTAssertEqual(same["exit_code"] as? Int, 0, "\(same)")
        XCTAssertEqual(same["kept_same"] as? Int, 2, "\(same)")

        try edit(seconds: backupTime + 1000)
        let different = try json(try run(["restore", copy, "--target", target, "--json"]))
        XCTAssertEqual(different["exit_code"] as? Int, 3, "\(different)")
        XCTAssertEqual((different["kept_different"] as? [String])?.count, 1, "\(different)")
    }

    func testInvalidPolicyIsAUsageError() throws {
        let outcome = try run(["restore", "latest", "--dest", dest, "--target", target, "--overwrite", "sometimes"])
        assertExit(outcome, 2)
        XCTAssertTrue(outcome.stderrText.contains("'sometimes'"), "\(outcome)")
    }

    // MARK: Helpers

    private func restoredFile(_ name: String) -> String { restored(source, into: target) + "/" + name }

    private func content(_ name: String) throws -> String {
        try String(contentsOfFile: restoredFile(name), encoding: .utf8)
    }

    /// Replaces the restored f.txt with a local edit dated `seconds`.
    private func edit(seconds: Int) throws {
        let file = RawFileSystem.bytes(restoredFile("f.txt"))
        try RawFileSystem.writeFile(file, contents: Array("local edit\n".utf8))
        try RawFileSystem.setModificationTime(file, seconds: seconds, nanoseconds: 0)
    }
}
