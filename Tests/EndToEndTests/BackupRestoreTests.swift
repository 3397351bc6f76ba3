import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// backup → list → restore → compare, over a tree with every awkward name and file type,
/// and the `--stdin` stream backup.
// test-tag(threads): backup readers and the restore writer, in the binary
final class BackupRestoreTests: EndToEndTestCase {
    // MARK: Round trip

    func testRoundTripKeepsEveryNameTypeAndAttribute() throws {
        let tree = try Fixtures.makeAwkwardTree(at: path("src"))
        let dest = path("dest")
        let source = try TreeComparison.snapshot(of: tree.root)
        XCTAssertGreaterThan(RawFileSystem.bytes(tree.root).count + 1 + tree.longPath.count, 255,
                             "the long path fixture must exceed 255 bytes")

        let id = try backup([tree.root], dest: dest)

        // The table of backups mentions the new id.
        let table = try run(["list", "--dest", dest])
        assertExit(table, 0)
        XCTAssertTrue(table.stdoutText.contains(id), "the backup table does not mention \(id):\n\(table)")

        // `list latest` names every path, raw bytes included.
        let prefix = Array(tree.root.utf8.dropFirst())
        let expectedPaths = Set(source.keys.map { $0.isEmpty ? prefix : prefix + [UInt8(ascii: "/")] + $0 })
        let listed = try listedPaths("latest", dest: dest)
        XCTAssertEqual(listed.count, Set(listed).count, "list --json names a path twice")
        let missing = expectedPaths.subtracting(listed).map(RawFileSystem.display).sorted()
        let extra = Set(listed).subtracting(expectedPaths).map(RawFileSystem.display).sorted()
        XCTAssertTrue(missing.isEmpty && extra.isEmpty, "list latest --json: missing \(missing), unexpected \(extra)")
        let text = try run(["list", "--dest", dest, "latest"])
        assertExit(text, 0)
        let lines = Set(text.stdoutText.split(separator: "\n", omittingEmptySubsequences: true).map(String.init))
        for path in expectedPaths {
            XCTAssertTrue(lines.contains(RawFileSystem.display(path)), "list latest does not show \(RawFileSystem.display(path))")
        }

        // GNU tar sees the hard link stored once, as a link entry.
        let archive = try onlyArchive(in: dest)
        let verbose = try toolSucceeds("tar", ["-tvf", archive])
        let linkLines = verbose.stdoutText.split(separator: "\n").filter { $0.hasPrefix("h") }
        XCTAssertEqual(linkLines.count, tree.hardLinks.count - 1,
                       "expected the content once and \(tree.hardLinks.count - 1) hard-link entries:\n\(verbose.stdoutText)")
        XCTAssertTrue(linkLines.allSatisfy { $0.contains(" link to ") }, "\(linkLines)")

        // Restore and compare (as root, --same-owner keeps the setuid bit too).
        let target = path("target")
        let restore = try run(["restore", "latest", "--dest", dest, "--target", target] + (geteuid() == 0 ? ["--same-owner"] : []))
        assertExit(restore, 0)
        let restoredRoot = restored(tree.root, into: target)
        var options = TreeComparison.Options()
        options.xattrName = tree.xattrSupported ? "user.test" : nil
        try assertTreesEqual(expected: tree.root, actual: restoredRoot, options: options)

        // Hard links share one inode again.
        let rootBytes = RawFileSystem.bytes(restoredRoot)
        let links = tree.hardLinks.map { RawFileSystem.lstat(RawFileSystem.join(rootBytes, $0)) }
        XCTAssertTrue(links.allSatisfy { $0 != nil }, "a hard-linked name is missing")
        XCTAssertEqual(Set(links.compactMap { $0?.st_ino }).count, 1, "restored hard links do not share an inode")
        XCTAssertEqual(links.first??.st_nlink, 3)

        // The sparse file stays sparse.
        let original = try XCTUnwrap(RawFileSystem.lstat(RawFileSystem.join(RawFileSystem.bytes(tree.root), tree.sparseFile)))
        let sparse = try XCTUnwrap(RawFileSystem.lstat(RawFileSystem.join(rootBytes, tree.sparseFile)))
        XCTAssertEqual(sparse.st_size, 64 << 20)
        // The branches that need something of the machine are checked where it has it; the
        // test skips at the end naming what was left out (a failure under CI).
        var unchecked: [String] = []
        if original.st_blocks * 512 < 1 << 20 {
            XCTAssertLessThan(sparse.st_blocks * 512, 1 << 20,
                              "the restored 64 MiB sparse file uses \(sparse.st_blocks * 512) bytes on disk: holes were filled")
        } else {
            unchecked.append("holes (the file system of /tmp made the source sparse file dense)")
        }

        // The extended attribute (only where /tmp accepts user xattrs).
        if tree.xattrSupported {
            let value = RawFileSystem.getXattr(RawFileSystem.join(rootBytes, tree.xattrFile), name: "user.test")
            XCTAssertEqual(value, tree.xattrValue, "user.test was not restored")
        } else {
            unchecked.append("the user.test xattr (the file system of /tmp refuses user xattrs)")
        }
        // Another owner and a setuid bit are in the tree only when it is made by root.
        if geteuid() != 0 { unchecked.append("owners and the setuid bit (needs root)") }
        if !unchecked.isEmpty { throw XCTSkip("not checked: " + unchecked.joined(separator: "; ")) }
    }

    func testRestoreByIdPrefixVerifiesEveryFile() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "alpha\n", "b/c.txt": "gamma\n"])
        let dest = path("dest")
        let id = try backup([source], dest: dest)
        let target = path("target")
        let restore = try run(["restore", String(id.prefix(20)), "--dest", dest, "--target", target, "--json"])
        assertExit(restore, 0, "restoring by a unique id prefix")
        let object = try json(restore)
        XCTAssertEqual(object["backup_id"] as? String, id)
        XCTAssertEqual(object["files"] as? Int, 2)
        XCTAssertEqual(object["verified"] as? Bool, true)
        XCTAssertEqual((object["damaged"] as? [Any])?.count, 0)
        try assertTreesEqual(expected: source, actual: restored(source, into: target))
    }

    func testLatestIsTheNewestOfBackupsMadeInOneSecond() throws {
        let source = path("src")
        let dest = path("dest")
        var made: [String] = []
        for round in 1...5 {
            try Fixtures.makeTree(at: source, files: ["round.txt": "round \(round)\n"])
            made.append(try backup([source], dest: dest, options: ["--tag", "round\(round)"]))
        }
        let listing = try json(try run(["list", "--dest", dest, "--json"]))
        let listed = (listing["backups"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
        XCTAssertEqual(listed, made, "the backups are not listed oldest first (made in this order: \(made))")
        let target = path("target")
        assertExit(try run(["restore", "latest", "--dest", dest, "--target", target]), 0)
        XCTAssertEqual(try String(contentsOfFile: restored(source, into: target) + "/round.txt", encoding: .utf8), "round 5\n",
                       "'latest' did not restore the newest backup (made: \(made), listed: \(listed))")
    }

    func testRelativeSourceAndCurrentFolderAsTarget() throws {
        let source = path("src")
        try Fixtures.makeMixedTree(at: source)
        let dest = path("dest")
        let made = try run(["backup", ".", "--dest", dest, "--json"], currentDirectory: source)
        assertExit(made, 0)
        XCTAssertEqual(try json(made)["sources"] as? [String], [source], "a relative source is recorded as an absolute path")
        let here = path("here")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(here))
        assertExit(try run(["restore", "latest", "--dest", dest, "--target", "."], currentDirectory: here), 0)
        try assertTreesEqual(expected: source, actual: restored(source, into: here))
    }

    func testSingleFileAndSeveralSources() throws {
        let first = path("first")
        let second = path("second")
        try Fixtures.makeTree(at: first, files: ["a.txt": "a\n", "inner/b.txt": "b\n"])
        try Fixtures.makeTree(at: second, files: ["c.txt": "c\n"])
        let lone = path("lone.txt")
        try RawFileSystem.writeFile(RawFileSystem.bytes(lone), contents: Array("lone\n".utf8))
        let dest = path("dest")
        // first/inner is inside first: stored once.
        try backup([first, second, lone, first + "/inner"], dest: dest)
        let listed = try listedPaths("latest", dest: dest).map(RawFileSystem.display)
        XCTAssertEqual(listed.count, Set(listed).count, "a nested source was stored twice: \(listed)")
        let target = path("target")
        assertExit(try run(["restore", "latest", "--dest", dest, "--target", target]), 0)
        try assertTreesEqual(expected: first, actual: restored(first, into: target))
        try assertTreesEqual(expected: second, actual: restored(second, into: target))
        XCTAssertEqual(try String(contentsOfFile: restored(lone, into: target), encoding: .utf8), "lone\n")
    }

    // MARK: Standard input

    func testStdinBackupRestoresTheStream() throws {
        var data = Data("-- a database dump\nINSERT INTO t VALUES (1, 'x');\n".utf8)
        data.append(contentsOf: Fixtures.pseudoRandomBytes(count: 300_000, seed: 9))
        data.append(contentsOf: [0, 0, 0, 10])
        let dest = path("dest")
        let made = try run(["backup", "--stdin", "--stdin-name", "db.sql", "--dest", dest, "--json"], stdin: data)
        assertExit(made, 0)
        let object = try json(made)
        XCTAssertNotNil(object["id"] as? String)
        XCTAssertEqual(object["files"] as? Int, 1)

        XCTAssertEqual(try listedPaths("latest", dest: dest).map(RawFileSystem.display), ["db.sql"])

        let target = path("target")
        assertExit(try run(["restore", "latest", "--dest", dest, "--target", target]), 0)
        let restoredData = try Data(contentsOf: URL(fileURLWithPath: target + "/db.sql"))
        XCTAssertEqual(restoredData, data, "the restored stream differs from what was piped in")
    }

    func testStdinNameInKeepsakesMetadataFolderIsRestorableOrRefused() throws {
        // `.keepsake/` at the archive root holds Keepsake's own manifest and checksums. A
        // stream named into it must either be refused up front or come back on restore.
        let data = Data("-- dump\n".utf8)
        let dest = path("dest")
        let made = try run(["backup", "--stdin", "--stdin-name", ".keepsake/dump.sql", "--dest", dest], stdin: data)
        if made.exitCode == 0 {
            let verify = try run(["verify", "--dest", dest])
            assertExit(verify, 0, "a backup that was committed with exit 0 must verify")
            let target = path("target")
            let restore = try run(["restore", "latest", "--dest", dest, "--target", target])
            assertExit(restore, 0, "a backup that was committed with exit 0 must restore")
            XCTAssertEqual(try? Data(contentsOf: URL(fileURLWithPath: target + "/.keepsake/dump.sql")), data)
        } else {
            XCTAssertTrue(made.stderrText.contains(".keepsake/dump.sql"), "the refusal names the stdin name:\n\(made)")
            XCTAssertFalse((try? names(in: dest))?.contains { $0.hasSuffix(".manifest.jsonl.zst") } ?? false,
                           "a refused backup must not be committed")
        }
    }

    func testStdinNameMustStayRelative() throws {
        let outcome = try run(["backup", "--stdin", "--stdin-name", "../escape.sql", "--dest", path("dest")],
                              stdin: Data("x".utf8))
        XCTAssertNotEqual(outcome.exitCode, 0, "a stdin name with '..' must be refused:\n\(outcome)")
        XCTAssertTrue(outcome.stderrText.contains("../escape.sql"), "\(outcome)")
    }

    func testSetuidBitsAreDroppedUnlessSameOwnerIsAsked() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["tool": "#!/bin/sh\n"])
        try toolSucceeds("chmod", ["4755", source + "/tool"])
        let dest = path("dest")
        try backup([source], dest: dest)
        let plain = try run(["restore", "latest", "--dest", dest, "--target", path("plain")])
        assertExit(plain, 0)
        XCTAssertTrue(plain.stderrText.contains("setuid/setgid bits dropped"), plain.stderrText)
        XCTAssertEqual(RawFileSystem.lstat(RawFileSystem.bytes(restored(source, into: path("plain")) + "/tool")).map { $0.st_mode & 0o7777 }, 0o755)
        guard geteuid() == 0 else { throw XCTSkip("restoring the setuid bit with --same-owner needs root") }
        assertExit(try run(["restore", "latest", "--dest", dest, "--target", path("kept"), "--same-owner"]), 0)
        XCTAssertEqual(RawFileSystem.lstat(RawFileSystem.bytes(restored(source, into: path("kept")) + "/tool")).map { $0.st_mode & 0o7777 }, 0o4755)
    }

    /// Deeper than the folders a restore keeps open (64): the rest are opened each time.
    func testTreeDeeperThanTheKeptFoldersRestoresWhole() throws {
        let source = path("deep")
        var files: [String: String] = ["top.txt": "top\n"]
        var folder = ""
        for level in 1...90 {
            folder += "l\(level)/"
            if level % 15 == 0 { files[folder + "file-\(level).txt"] = "level \(level)\n" }
        }
        files["l1/l2/sibling.txt"] = "sibling\n"
        try Fixtures.makeTree(at: source, files: files)
        let dest = path("dest")
        try backup([source], dest: dest)
        let target = path("target")
        assertExit(try run(["restore", "latest", "--dest", dest, "--target", target]), 0)
        try assertTreesEqual(expected: source, actual: restored(source, into: target))
    }

    /// Thousands of folders with one file each, restored with only 128 descriptors allowed:
    /// the file writer holds a bounded number of folders open however far ahead the reading
    /// gets, so the restore completes.
    func testManyFoldersRestoreWithFewDescriptors() throws {
        let source = path("wide")
        var files: [String: String] = [:]
        for index in 0..<3000 {
            files["group-\(index % 30)/folder-\(index)/file.txt"] = "file \(index)\n"
        }
        try Fixtures.makeTree(at: source, files: files)
        let dest = path("dest")
        try backup([source], dest: dest)
        let target = path("target")
        let outcome = try ProcessRunner.run("prlimit", ["--nofile=128", keepsake.executable, "restore", "latest",
                                                        "--dest", dest, "--target", target],
                                            environment: keepsake.environment([:]))
        assertExit(outcome, 0)
        try assertTreesEqual(expected: source, actual: restored(source, into: target))
    }
}
