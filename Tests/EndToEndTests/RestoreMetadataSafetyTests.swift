import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Metadata a restore must not hand out blindly: extended attributes outside `user.*`
/// (a restored `security.capability` lets a program read every file), and modes set by name
/// on a temporary file that someone who can write the target folder swapped for a symlink.
final class RestoreMetadataSafetyTests: EndToEndTestCase {
    // MARK: Extended attributes

    func testPrivilegedExtendedAttributesNeedRootAndSameOwner() throws {
        guard geteuid() == 0 else { throw XCTSkip("needs root to set file capabilities and trusted.* attributes") }
        let source = path("src")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(source))
        let program = source + "/cat"
        try FileManager.default.copyItem(atPath: "/bin/cat", toPath: program)
        try toolSucceeds("setcap", ["cap_dac_read_search+ep", program])
        XCTAssertEqual(RawFileSystem.setXattr(RawFileSystem.bytes(program), name: "user.note", value: Array("kept".utf8)), 0)
        XCTAssertEqual(RawFileSystem.setXattr(RawFileSystem.bytes(program), name: "trusted.note", value: Array("root".utf8)), 0)
        let dest = path("dest")
        try backup([source], dest: dest)

        // Root, but without --same-owner: only user.* comes back, and the warning names the rest.
        let plain = path("plain")
        let outcome = try run(["restore", "latest", "--dest", dest, "--target", plain])
        assertExit(outcome, 0)
        let restoredPlain = RawFileSystem.bytes(restored(program, into: plain))
        XCTAssertEqual(RawFileSystem.getXattr(restoredPlain, name: "user.note"), Array("kept".utf8))
        XCTAssertNil(RawFileSystem.getXattr(restoredPlain, name: "security.capability"),
                     "a file capability was restored without --same-owner")
        XCTAssertNil(RawFileSystem.getXattr(restoredPlain, name: "trusted.note"))
        XCTAssertEqual(try toolSucceeds("getcap", [restored(program, into: plain)]).stdoutText, "")
        XCTAssertTrue(outcome.stderrText.contains("security.capability") && outcome.stderrText.contains("trusted.note")
                      && outcome.stderrText.contains("--same-owner"), "the warning names what was dropped:\n\(outcome)")

        // Root with --same-owner: everything, as recorded.
        let exact = path("exact")
        assertExit(try run(["restore", "latest", "--dest", dest, "--target", exact, "--same-owner"]), 0)
        let restoredExact = RawFileSystem.bytes(restored(program, into: exact))
        XCTAssertTrue(try toolSucceeds("getcap", [restored(program, into: exact)]).stdoutText.contains("cap_dac_read_search"))
        XCTAssertEqual(RawFileSystem.getXattr(restoredExact, name: "trusted.note"), Array("root".utf8))
        XCTAssertEqual(RawFileSystem.getXattr(restoredExact, name: "user.note"), Array("kept".utf8))
    }

    // MARK: Names swapped under a restore

    /// A lone archive's files wait under temporary names until its manifest (the last
    /// entry) is read, then get the manifest's mode. Someone who can write the target
    /// swaps a waiting file's name for a symlink to a root-owned 0600 file: the restore
    /// must not change that file, and must not place the symlink.
    func testAWaitingFileSwappedForASymlinkIsNotChmoddedThrough() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a/small.txt": "small\n"])
        try RawFileSystem.setMode(RawFileSystem.bytes(source + "/a/small.txt"), 0o777)
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(source + "/b"))
        // Incompressible content after the small file keeps the restore busy before the manifest.
        try toolSucceeds("sh", ["-c", "head -c 200000000 /dev/urandom > \"$1\"", "sh", source + "/b/big.bin"])
        let dest = path("dest")
        try backup([source], dest: dest, options: ["--compression", "none"])
        // The archive alone, without the manifest beside it.
        let lone = path("lone")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(lone))
        let archive = lone + "/" + URL(fileURLWithPath: try onlyArchive(in: dest)).lastPathComponent
        try FileManager.default.copyItem(atPath: try onlyArchive(in: dest), toPath: archive)

        let victim = path("victim")
        try RawFileSystem.writeFile(RawFileSystem.bytes(victim), contents: Array("secret\n".utf8), mode: 0o600)
        let target = path("target")
        let folder = restored(source, into: target) + "/a"
        let running = try keepsake.start(["restore", archive, "--target", target])
        defer { running.kill() }
        var swapped = false
        let deadline = Date().addingTimeInterval(60)
        while !swapped && running.isRunning && Date() < deadline {
            let waiting = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { $0.hasPrefix(".keepsake-") }
            if let name = waiting.first {
                let planted = folder + "/.planted"
                try RawFileSystem.makeSymlink(RawFileSystem.bytes(planted), target: RawFileSystem.bytes(victim))
                XCTAssertEqual(rename(planted, folder + "/" + name), 0, "the swap failed: \(String(cString: strerror(errno)))")
                swapped = true
            } else {
                usleep(500)
            }
        }
        let outcome = try running.finish()
        XCTAssertTrue(swapped, "the waiting file never appeared:\n\(outcome)")
        XCTAssertEqual(RawFileSystem.lstat(victim).map { $0.st_mode & 0o7777 }, 0o600,
                       "the restore changed the mode of the file a swapped-in symlink points to")
        XCTAssertEqual(try RawFileSystem.readFile(RawFileSystem.bytes(victim)), Array("secret\n".utf8))
        assertExit(outcome, 3, "the swapped path is not written")
        XCTAssertTrue(outcome.stderrText.contains("a/small.txt") && outcome.stderrText.contains("replaced"),
                      "the warning names the path:\n\(outcome)")
        XCTAssertNil(RawFileSystem.lstat(folder + "/small.txt"), "the symlink was placed under the file's name")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder), [], "nothing is left behind")
        XCTAssertNotNil(RawFileSystem.lstat(restored(source, into: target) + "/b/big.bin"), "the rest is restored")
    }
}
