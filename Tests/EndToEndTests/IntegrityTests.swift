import Foundation
import XCTest

/// A flipped byte or a truncated archive is found by verify and stops restore from
/// landing damaged content.
// test-tag(threads): verify over the parallel decoder
final class IntegrityTests: EndToEndTestCase {
    // MARK: State

    private var source = ""
    private var dest = ""

    override func setUpWithError() throws {
        try super.setUpWithError()
        source = path("src")
        dest = path("dest")
        // Incompressible content, so the middle of the archive is file data.
        try Fixtures.makeIncompressibleTree(at: source, count: 8, size: 128 * 1024)
        try Fixtures.makeTree(at: source + "/text", files: ["a.txt": "alpha\n", "b.txt": "beta\n"])
    }

    // MARK: Verify

    func testIntactBackupsVerify() throws {
        let id = try backup([source], dest: dest)
        let outcome = try run(["verify", "--dest", dest])
        assertExit(outcome, 0)
        XCTAssertTrue(outcome.stdoutText.contains(id), "verify names what it checked:\n\(outcome)")
    }

    func testFlippedByteIsFoundByVerify() throws {
        let good = try backup([source], dest: dest)
        try Fixtures.makeTree(at: source + "/more", files: ["c.txt": "c\n"])
        let bad = try backup([source], dest: dest, options: ["--tag", "second"])
        let archive = try archivePath(of: bad)
        try Fixtures.flipByte(in: archive)
        let outcome = try run(["verify", "--dest", dest])
        assertExit(outcome, 4)
        XCTAssertTrue(outcome.combinedText.contains(bad), "verify must name the damaged backup:\n\(outcome)")
        let named = try run(["verify", "--dest", dest, good])
        assertExit(named, 0, "the other backup is intact")
    }

    func testFlippedByteInUncompressedArchiveIsFoundByVerify() throws {
        let id = try backup([source], dest: dest, options: ["--compression", "none"])
        try Fixtures.flipByte(in: try archivePath(of: id))
        let outcome = try run(["verify", "--dest", dest, "--json"])
        assertExit(outcome, 4)
        let object = try json(outcome)
        XCTAssertEqual(object["damaged"] as? Int, 1)
        let backups = object["backups"] as? [[String: Any]] ?? []
        XCTAssertEqual(backups.first?["id"] as? String, id)
        XCTAssertEqual(backups.first?["intact"] as? Bool, false)
    }

    func testTruncatedArchiveIsFoundByVerify() throws {
        let id = try backup([source], dest: dest)
        try Fixtures.truncate(try archivePath(of: id), toFraction: 0.5)
        let outcome = try run(["verify", "--dest", dest])
        assertExit(outcome, 4)
        XCTAssertTrue(outcome.combinedText.contains(id), "verify must name the truncated backup:\n\(outcome)")
    }

    func testFlippedByteInLoneArchiveIsFoundByVerifyFile() throws {
        let id = try backup([source], dest: dest)
        let lone = path("lone.tar.zst")
        try FileManager.default.copyItem(atPath: try archivePath(of: id), toPath: lone)
        assertExit(try run(["verify", lone]), 0, "the intact copy verifies")
        try Fixtures.flipByte(in: lone)
        let outcome = try run(["verify", lone], environment: ["KEEPSAKE_DEST": path("no-destination")])
        assertExit(outcome, 4)
        XCTAssertTrue(outcome.combinedText.contains("lone.tar.zst") || outcome.combinedText.contains(id),
                      "verify FILE must name the archive:\n\(outcome)")
    }

    func testMissingArchiveIsReported() throws {
        let id = try backup([source], dest: dest)
        let archive = try archivePath(of: id)
        let name = (archive as NSString).lastPathComponent
        try FileManager.default.removeItem(atPath: archive)
        let verify = try run(["verify", "--dest", dest])
        assertExit(verify, 4)
        XCTAssertTrue(verify.combinedText.contains(id), "verify names the backup whose archive is gone:\n\(verify)")
        let restore = try run(["restore", "latest", "--dest", dest, "--target", path("target")])
        XCTAssertNotEqual(restore.exitCode, 0, "\(restore)")
        XCTAssertTrue(restore.stderrText.contains(name), "the message names the missing archive file exactly:\n\(restore)")
    }

    // MARK: Restore

    func testRestoreOfFlippedByteBackupLandsNoDamagedContent() throws {
        let id = try backup([source], dest: dest)
        try Fixtures.flipByte(in: try archivePath(of: id))
        try assertDamagedRestore(["restore", "latest", "--dest", dest])
    }

    func testRestoreOfFlippedByteUncompressedBackupLandsNoDamagedContent() throws {
        let id = try backup([source], dest: dest, options: ["--compression", "none"])
        try Fixtures.flipByte(in: try archivePath(of: id))
        try assertDamagedRestore(["restore", "latest", "--dest", dest])
    }

    func testRestoreOfTruncatedBackupLandsNoDamagedContent() throws {
        let id = try backup([source], dest: dest)
        try Fixtures.truncate(try archivePath(of: id), toFraction: 0.6)
        try assertDamagedRestore(["restore", "latest", "--dest", dest])
    }

    func testRestoreOfDamagedLoneArchiveLandsNoDamagedContent() throws {
        let id = try backup([source], dest: dest, options: ["--compression", "none"])
        let lone = path("lone.tar")
        try FileManager.default.copyItem(atPath: try archivePath(of: id), toPath: lone)
        try Fixtures.flipByte(in: lone)
        try assertDamagedRestore(["restore", lone])
    }

    // MARK: Helpers

    /// The archive of backup `id` in `dest`.
    private func archivePath(of id: String) throws -> String {
        let matches = try names(in: dest).filter { $0.contains(id) && $0.contains(".tar") }
        XCTAssertEqual(matches.count, 1, "one archive for \(id): \(matches)")
        return dest + "/" + (try XCTUnwrap(matches.first))
    }

    /// Restores with `arguments` + a target: exit 4, and every file that landed under its
    /// final name equals the original; no temporary file is left behind.
    private func assertDamagedRestore(_ arguments: [String], file: StaticString = #filePath, line: UInt = #line) throws {
        let target = path("target")
        let outcome = try run(arguments + ["--target", target])
        assertExit(outcome, 4, "restoring a damaged archive", file: file, line: line)
        XCTAssertTrue(outcome.stderrText.lowercased().contains("damaged"), "stderr must report the damage:\n\(outcome)",
                      file: file, line: line)
        let root = restored(source, into: target)
        guard RawFileSystem.exists(root) else { return }
        let original = try TreeComparison.snapshot(of: source, xattrName: nil)
        let landed = try TreeComparison.snapshot(of: root, xattrName: nil)
        for (relative, entry) in landed where entry.kind != .directory {
            let name = RawFileSystem.display(relative)
            XCTAssertFalse(name.split(separator: "/").last?.hasPrefix(".keepsake") ?? false,
                           "a temporary file was left behind: \(name)", file: file, line: line)
            guard let want = original[relative] else {
                XCTFail("\(name) is not in the original tree", file: file, line: line)
                continue
            }
            XCTAssertEqual(entry.kind, want.kind, name, file: file, line: line)
            if entry.kind == .file {
                XCTAssertTrue(try RawFileSystem.filesEqual(want.absolutePath, entry.absolutePath),
                              "\(name) landed with damaged content", file: file, line: line)
            }
        }
    }
}
