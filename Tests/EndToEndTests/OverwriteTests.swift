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
        assertExit(outcome, 0)
        XCTAssertEqual(try content("f.txt"), "local edit\n", "the default policy must leave existing files alone")
        XCTAssertEqual(try content("g.txt"), "second\n", "missing files are restored")
        let object = try json(outcome)
        XCTAssertEqual(object["skipped_existing"] as? Int, 1, "the kept file is counted:\n\(outcome)")

        let explicit = try run(["restore", "latest", "--dest", dest, "--target", target, "--overwrite", "never"])
        assertExit(explicit, 0)
        XCTAssertEqual(try content("f.txt"), "local edit\n")
        XCTAssertTrue(explicit.stdoutText.contains("Kept"), "the summary says files were kept:\n\(explicit)")
    }

    func testIfNewerKeepsANewerLocalFile() throws {
        try edit(seconds: backupTime + 1000)
        let outcome = try run(["restore", "latest", "--dest", dest, "--target", target, "--overwrite", "if-newer"])
        assertExit(outcome, 0)
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
