import Foundation
import XCTest

/// Sources that change while a backup reads them: files growing, shrinking, deleted, or
/// replaced by a symlink or a folder. The backup finishes, says what happened (exit 3),
/// and never follows a swapped-in symlink out of the source. Reading is slowed down with
/// KEEPSAKE_TEST_READ_PAUSE_MS so the changes land while the backup runs, and the test
/// watches /proc/PID/fd to know which file the backup has open.
final class MovingSourceTests: EndToEndTestCase {
    // MARK: Helpers

    /// True when process `pid` has `file` open.
    private func hasOpen(_ pid: Int32, _ file: String) -> Bool {
        guard let fds = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd") else { return false }
        return fds.contains { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)")) == file }
    }

    private func waitUntil(_ what: String, _ condition: () -> Bool) {
        let deadline = Date().addingTimeInterval(30)
        while !condition() {
            if Date() > deadline {
                XCTFail("timed out waiting until \(what)")
                return
            }
            usleep(5_000)
        }
    }

    private func writeBytes(_ path: String, count: Int, byte: UInt8) throws {
        try Data(repeating: byte, count: count).write(to: URL(fileURLWithPath: path))
    }

    // MARK: Tests

    func testChangesDuringTheBackupAreReportedAndNothingOutsideIsFollowed() throws {
        let source = path("src")
        let dest = path("dest")
        try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
        try writeBytes(source + "/a-shrinks", count: 8 << 20, byte: 0x61)
        try writeBytes(source + "/b-grows", count: 8 << 20, byte: 0x62)
        try writeBytes(source + "/c-deleted", count: 10, byte: 0x63)
        // The scan reads a folder's statuses when it lists the folder: what changes before the
        // backup reaches it lies in a folder listed later.
        try FileManager.default.createDirectory(atPath: source + "/z-later", withIntermediateDirectories: true)
        try writeBytes(source + "/z-later/d-becomes-symlink", count: 10, byte: 0x64)
        try writeBytes(source + "/z-later/e-becomes-folder", count: 10, byte: 0x65)
        try writeBytes(source + "/f-steady", count: 10, byte: 0x66)
        let secret = path("outside-secret")
        try Data("TOP SECRET OUTSIDE THE SOURCE".utf8).write(to: URL(fileURLWithPath: secret))

        let running = try keepsake.start(["backup", source, "--dest", dest, "--json"],
                                         environment: ["KEEPSAKE_TEST_READ_PAUSE_MS": "150"])
        let pid = running.processIdentifier
        waitUntil("the backup reads a-shrinks") { hasOpen(pid, source + "/a-shrinks") }
        // While a-shrinks is read: shrink it, and change the files the backup has not reached.
        try FileHandle(forWritingAtPath: source + "/a-shrinks").map { handle in
            try handle.truncate(atOffset: 1 << 20)
            try handle.close()
        }
        try FileManager.default.removeItem(atPath: source + "/c-deleted")
        try FileManager.default.removeItem(atPath: source + "/z-later/d-becomes-symlink")
        try FileManager.default.createSymbolicLink(atPath: source + "/z-later/d-becomes-symlink", withDestinationPath: secret)
        try FileManager.default.removeItem(atPath: source + "/z-later/e-becomes-folder")
        try FileManager.default.createDirectory(atPath: source + "/z-later/e-becomes-folder", withIntermediateDirectories: true)
        try writeBytes(source + "/z-later/e-becomes-folder/inside", count: 5, byte: 0x69)
        waitUntil("the backup reads b-grows") { hasOpen(pid, source + "/b-grows") }
        let handle = try XCTUnwrap(FileHandle(forWritingAtPath: source + "/b-grows"))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(repeating: 0x42, count: 1 << 20))
        try handle.close()

        running.closeInput()
        let outcome = try running.finish(timeout: 120)
        assertExit(outcome, 3, "changes during the backup give exit 3")
        let stderr = outcome.stderrText
        XCTAssertTrue(stderr.contains("a-shrinks") && stderr.contains("shrank"), stderr)
        XCTAssertTrue(stderr.contains("b-grows") && stderr.contains("changed while being read"), stderr)
        XCTAssertTrue(stderr.contains("c-deleted"), stderr)
        let result = try json(outcome)
        XCTAssertEqual((result["warnings"] as? [[String: Any]])?.count, 3, "\(result)")

        // The backup is committed and restores what it saw.
        let target = path("target")
        assertExit(try run(["restore", "latest", "--dest", dest, "--target", target]), 0)
        let restoredRoot = restored(source, into: target)
        let link = try FileManager.default.destinationOfSymbolicLink(atPath: restoredRoot + "/z-later/d-becomes-symlink")
        XCTAssertEqual(link, secret, "the symlink is stored as a symlink")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: restoredRoot + "/z-later/e-becomes-folder/inside")).count, 5)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: restoredRoot + "/f-steady")).count, 10)
        XCTAssertFalse(FileManager.default.fileExists(atPath: restoredRoot + "/c-deleted"))
        let shrunk = try Data(contentsOf: URL(fileURLWithPath: restoredRoot + "/a-shrinks"))
        XCTAssertEqual(shrunk.count, 8 << 20, "the size the header promised, the missing end as zeros")
        XCTAssertEqual(shrunk.prefix(1 << 20), Data(repeating: 0x61, count: 1 << 20))

        // Nothing from outside the source went into the archive.
        let archive = try onlyArchive(in: dest)
        let listing = try tool("tar", ["-xOf", archive, "--wildcards", "*"])
        XCTAssertFalse(listing.stdoutText.contains("TOP SECRET"), "the swapped-in symlink was followed")
    }

    /// Issue 25 §2.4: a file saved by write-then-rename after the scan saw it and before the
    /// backup opened it (the way editors save) was left out ("it was replaced while the
    /// backup ran"), though it existed before and after. The new version is stored, with its
    /// own mode, and the backup is clean (exit 0). (A name that no longer holds a regular
    /// file, or one of several hard-linked names, is still left out.)
    func testAFileSavedByRenameWhileTheBackupRunsIsStoredInItsNewVersion() throws {
        let source = path("src")
        let dest = path("dest")
        try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
        try writeBytes(source + "/a-first", count: 4 << 20, byte: 0x61)
        try writeBytes(source + "/b-saved", count: 1000, byte: 0x62)
        try writeBytes(source + "/c-steady", count: 10, byte: 0x63)

        // A pause before each file is opened: the scan has seen b-saved long before.
        let running = try keepsake.start(["backup", source, "--dest", dest, "--json"],
                                         environment: ["KEEPSAKE_TEST_READ_PAUSE_MS": "400"])
        waitUntil("the backup reads a-first") { hasOpen(running.processIdentifier, source + "/a-first") }
        try writeBytes(source + "/.b-saved.swp", count: 2000, byte: 0x42)
        XCTAssertEqual(chmod(source + "/.b-saved.swp", 0o600), 0)
        XCTAssertEqual(rename(source + "/.b-saved.swp", source + "/b-saved"), 0)
        running.closeInput()
        let outcome = try running.finish(timeout: 120)
        assertExit(outcome, 0, "a file saved by rename is no warning")
        XCTAssertFalse(outcome.stderrText.contains("replaced"), "\(outcome)")

        let target = path("target")
        assertExit(try run(["restore", "latest", "--dest", dest, "--target", target, "--same-permissions"]), 0)
        let saved = restored(source, into: target) + "/b-saved"
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: saved)), Data(repeating: 0x42, count: 2000), "the new version")
        XCTAssertEqual(try XCTUnwrap(RawFileSystem.lstat(saved)).st_mode & 0o7777, 0o600, "with its own mode")
        assertExit(try run(["verify", "--dest", dest]), 0)
    }
}
