import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Crafted archives try to write outside the restore target: `..`, absolute paths,
/// symlinks (planted by the archive or already in the target) and hard links. Nothing
/// may land outside, the exit code is 4 and stderr names the entry.
final class SafetyTests: EndToEndTestCase {
    // MARK: State

    /// work/jail holds the target and nothing else; `..` from the target lands here.
    private var jail = ""
    private var target = ""
    /// An empty folder outside the target that symlinks point at.
    private var outside = ""
    private var passwordBefore: (content: [UInt8], info: stat)?

    override func setUpWithError() throws {
        try super.setUpWithError()
        jail = path("jail")
        target = jail + "/target"
        outside = path("outside-dir")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(target))
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(outside))
        if let info = RawFileSystem.lstat("/etc/passwd") {
            passwordBefore = (try RawFileSystem.readFile(RawFileSystem.bytes("/etc/passwd")), info)
        }
    }

    // MARK: Tests

    func testDotDotEntry() throws {
        try assertRefused([.file("../evil", contents: "escaped")], entry: "../evil")
    }

    func testDotDotInsideEntry() throws {
        try assertRefused([.directory("a"), .file("a/../../evil", contents: "escaped")], entry: "a/../../evil")
    }

    func testAbsoluteEntry() throws {
        try assertRefused([.file(outside + "/evil", contents: "escaped")], entry: outside + "/evil")
    }

    func testWriteThroughPlantedSymlink() throws {
        try assertRefused([.symlink("link", target: outside), .file("link/evil", contents: "escaped")], entry: "link/evil")
    }

    func testWriteThroughSymlinkToParent() throws {
        try assertRefused([.symlink("up", target: ".."), .file("up/evil", contents: "escaped")], entry: "up/evil")
    }

    func testWriteThroughSymlinkPlantedDeeper() throws {
        try assertRefused([.directory("d"), .symlink("d/link", target: "../../../outside-dir"),
                           .file("d/link/evil", contents: "escaped")], entry: "d/link/evil")
    }

    func testHardLinkToSystemFile() throws {
        try assertRefused([.hardLink("passwd-link", target: "/etc/passwd"), .file("passwd-link", contents: "root::0:0::/:/bin/sh\n")],
                          entry: "passwd-link", overwrite: "always")
        if let linked = RawFileSystem.lstat(target + "/passwd-link"), let original = RawFileSystem.lstat("/etc/passwd") {
            XCTAssertNotEqual(linked.st_ino, original.st_ino, "the target holds a hard link to /etc/passwd")
        }
    }

    func testHardLinkOutOfTheTarget() throws {
        try RawFileSystem.writeFile(RawFileSystem.bytes(outside + "/victim"), contents: Array("precious\n".utf8))
        try assertRefused([.hardLink("victim-link", target: "../../outside-dir/victim"),
                           .file("victim-link", contents: "overwritten")],
                          entry: "victim-link", overwrite: "always", outsideStaysEmpty: false)
        XCTAssertEqual(try String(contentsOfFile: outside + "/victim", encoding: .utf8), "precious\n")
        XCTAssertEqual(RawFileSystem.lstat(outside + "/victim")?.st_nlink, 1, "a hard link to a file outside was made")
    }

    func testPreExistingSymlinkInTargetIsNeverFollowed() throws {
        try RawFileSystem.makeSymlink(RawFileSystem.bytes(target + "/pre"), target: RawFileSystem.bytes(outside))
        try assertRefused([.file("pre/evil", contents: "escaped")], entry: "pre/evil")
        XCTAssertEqual(RawFileSystem.readLink(RawFileSystem.bytes(target + "/pre")), RawFileSystem.bytes(outside),
                       "the existing symlink was changed")
    }

    func testPreExistingSymlinkAsFileIsNotWrittenThrough() throws {
        // An archive file at the very path of an existing symlink must replace the link
        // (with --overwrite always) or keep it, but never write into what it points to.
        try RawFileSystem.writeFile(RawFileSystem.bytes(outside + "/victim"), contents: Array("precious\n".utf8))
        try RawFileSystem.makeSymlink(RawFileSystem.bytes(target + "/pre"), target: RawFileSystem.bytes(outside + "/victim"))
        let archive = try CraftedArchive.write([.file("pre", contents: "overwritten")], to: work, name: "crafted-pre")
        _ = try run(["restore", archive, "--target", target, "--overwrite", "always"])
        XCTAssertEqual(try String(contentsOfFile: outside + "/victim", encoding: .utf8), "precious\n",
                       "restore wrote through a symlink that was already in the target")
    }

    func testEveryTrickInOneCompressedArchive() throws {
        let members: [CraftedArchive.Member] = [
            .file("fine.txt", contents: "fine"),
            .file("../evil", contents: "escaped"),
            .file(outside + "/evil", contents: "escaped"),
            .symlink("link", target: outside),
            .file("link/evil", contents: "escaped"),
            .symlink("up", target: ".."),
            .file("up/evil", contents: "escaped"),
            .hardLink("passwd-link", target: "/etc/passwd"),
        ]
        for compression in CraftedArchive.Compression.allCases {
            let archive = try CraftedArchive.write(members, to: work, name: "all-\(compression.rawValue)", compression: compression)
            let outcome = try run(["restore", archive, "--target", target, "--overwrite", "always"])
            assertExit(outcome, 4, "\(compression.rawValue)")
            for entry in ["../evil", outside + "/evil", "link/evil", "up/evil", "passwd-link"] {
                XCTAssertTrue(outcome.stderrText.contains(entry), "\(compression.rawValue): stderr does not name \(entry):\n\(outcome)")
            }
            XCTAssertEqual(try String(contentsOfFile: target + "/fine.txt", encoding: .utf8), "fine",
                           "\(compression.rawValue): the harmless entry is still restored")
            try assertNothingOutside()
        }
    }

    func testCraftedArchiveListsWithoutHarm() throws {
        let archive = try CraftedArchive.write([.file("../evil", contents: "x"), .symlink("link", target: outside)],
                                               to: work, name: "crafted-list")
        let outcome = try run(["list", archive])
        assertExit(outcome, 0)
        try assertNothingOutside()
    }

    // MARK: Helpers

    /// Restores an archive of `members` (plain and gzip) and checks it was refused.
    private func assertRefused(_ members: [CraftedArchive.Member], entry: String, overwrite: String = "never",
                               outsideStaysEmpty: Bool = true, file: StaticString = #filePath, line: UInt = #line) throws {
        for compression in [CraftedArchive.Compression.none, .gzip] {
            let archive = try CraftedArchive.write(members, to: work, name: "crafted-\(compression.rawValue)", compression: compression)
            let outcome = try run(["restore", archive, "--target", target, "--overwrite", overwrite])
            assertExit(outcome, 4, "an unsafe entry must give exit 4 (\(compression.rawValue))", file: file, line: line)
            XCTAssertTrue(outcome.stderrText.contains(entry), "stderr does not name the entry '\(entry)':\n\(outcome)",
                          file: file, line: line)
            try assertNothingOutside(outsideStaysEmpty: outsideStaysEmpty, file: file, line: line)
        }
    }

    /// Nothing appeared beside the target or in the outside folder, and /etc/passwd is untouched.
    private func assertNothingOutside(outsideStaysEmpty: Bool = true, file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertEqual(try names(in: jail), ["target"], "something was written beside the target", file: file, line: line)
        if outsideStaysEmpty {
            XCTAssertEqual(try names(in: outside), [], "something was written into \(outside)", file: file, line: line)
        }
        XCTAssertFalse(RawFileSystem.exists(work + "/evil"), file: file, line: line)
        XCTAssertFalse(RawFileSystem.exists("/evil"), file: file, line: line)
        if let before = passwordBefore {
            let now = try XCTUnwrap(RawFileSystem.lstat("/etc/passwd"), file: file, line: line)
            XCTAssertEqual(try RawFileSystem.readFile(RawFileSystem.bytes("/etc/passwd")), before.content,
                           "/etc/passwd changed", file: file, line: line)
            XCTAssertEqual(now.st_nlink, before.info.st_nlink, "/etc/passwd gained a hard link", file: file, line: line)
            XCTAssertEqual(now.st_mtim.tv_sec, before.info.st_mtim.tv_sec, file: file, line: line)
            XCTAssertEqual(now.st_mtim.tv_nsec, before.info.st_mtim.tv_nsec, file: file, line: line)
        }
    }
}
