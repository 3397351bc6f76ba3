import Foundation
import XCTest

/// Open formats both ways: GNU tar (and sha256sum) read our archives, and we restore
/// and list GNU tar's own tarballs.
final class InteropTests: EndToEndTestCase {
    // MARK: Our archives, their tools

    func testGNUTarExtractsOurArchiveIdentically() throws {
        let tree = try Fixtures.makeAwkwardTree(at: path("src"))
        let dest = path("dest")
        try backup([tree.root], dest: dest)
        let archive = try onlyArchive(in: dest)

        let listing = try toolSucceeds("tar", ["-tf", archive])
        XCTAssertTrue(listing.stdoutText.contains(String(tree.root.dropFirst()) + "/small.txt"), "\(listing)")
        XCTAssertTrue(listing.stdoutText.contains(".keepsake/manifest.jsonl"), "\(listing)")
        XCTAssertTrue(listing.stdoutText.contains(".keepsake/SHA256SUMS"), "\(listing)")

        let extracted = path("extracted")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(extracted))
        try toolSucceeds("tar", ["--xattrs", "--xattrs-include=*", "-xpf", archive, "-C", extracted])
        var options = TreeComparison.Options()
        options.xattrName = tree.xattrSupported ? "user.test" : nil
        try assertTreesEqual(expected: tree.root, actual: extracted + tree.root, options: options)

        let sums = try tool("sha256sum", ["-c", "--quiet", ".keepsake/SHA256SUMS"], currentDirectory: extracted)
        XCTAssertEqual(sums.exitCode, 0, "sha256sum -c .keepsake/SHA256SUMS fails in the tar-extracted tree:\n\(sums)")
        // Raw bytes: the list holds the name with byte 0xff, which is not UTF-8.
        let lines = try RawFileSystem.readFile(RawFileSystem.bytes(extracted + "/.keepsake/SHA256SUMS"))
        XCTAssertTrue(String(decoding: lines, as: UTF8.self).contains("small.txt"), "SHA256SUMS does not list small.txt")
        XCTAssertTrue(lines.split(separator: 10).contains { $0.starts(with: [92]) },
                      "the newline name must be listed in coreutils' escaped form (a line starting with a backslash)")
        guard tree.xattrSupported else {
            throw XCTSkip("the user.test xattr was not compared: the file system of /tmp refuses user xattrs")
        }
    }

    func testOurArchiveDecompressesWithStandardZstd() throws {
        let source = path("src")
        try Fixtures.makeMixedTree(at: source)
        let dest = path("dest")
        try backup([source], dest: dest)
        let archive = try onlyArchive(in: dest)
        let plain = path("plain.tar")
        try toolSucceeds("zstd", ["-q", "-d", archive, "-o", plain])
        let extracted = path("extracted")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(extracted))
        try toolSucceeds("tar", ["-xpf", plain, "-C", extracted])
        try assertTreesEqual(expected: source, actual: extracted + source)
    }

    func testPre1970FractionalTimesMatchGNUTar() throws {
        // 1969-12-31 23:58:20.25 UTC is -99.75 s: tv_sec -100, tv_nsec 250000000. A pax
        // record must say "mtime=-99.75" (the decimal value), as GNU tar writes it.
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["old.txt": "old\n"])
        let file = RawFileSystem.bytes(source + "/old.txt")
        try RawFileSystem.setModificationTime(file, seconds: -100, nanoseconds: 250_000_000)
        let dest = path("dest")
        try backup([source], dest: dest, options: ["--compression", "none"])
        let archive = try onlyArchive(in: dest)

        // Ours, read by GNU tar.
        let extracted = path("extracted")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(extracted))
        _ = try tool("tar", ["-xpf", archive, "-C", extracted])
        let byTar = try XCTUnwrap(RawFileSystem.lstat(extracted + source + "/old.txt"))
        XCTAssertEqual([byTar.st_mtim.tv_sec, byTar.st_mtim.tv_nsec], [-100, 250_000_000],
                       "GNU tar reads our pre-1970 time wrongly: the archive's pax mtime is not the decimal value")

        // GNU tar's, read by us.
        let tarball = path("gnu.tar")
        try toolSucceeds("tar", ["--format=pax", "-cf", tarball, "-C", work, "src"])
        let target = path("target")
        assertExit(try run(["restore", tarball, "--target", target]), 0)
        let byUs = try XCTUnwrap(RawFileSystem.lstat(target + "/src/old.txt"))
        XCTAssertEqual([byUs.st_mtim.tv_sec, byUs.st_mtim.tv_nsec], [-100, 250_000_000],
                       "we read GNU tar's pax mtime=-99.75 wrongly")

        // Our own round trip.
        let ours = path("ours")
        assertExit(try run(["restore", "latest", "--dest", dest, "--target", ours]), 0)
        let roundTrip = try XCTUnwrap(RawFileSystem.lstat(ours + source + "/old.txt"))
        XCTAssertEqual([roundTrip.st_mtim.tv_sec, roundTrip.st_mtim.tv_nsec], [-100, 250_000_000])
    }

    /// xattr names travel percent-encoded in the archive (`SCHILY.xattr.user.%C3%BCn%C3%AF`);
    /// a restore gives them back as they were, whether Keepsake's own reader reads the archive
    /// (zstd) or libarchive does (gzip). Before, `user.ünï` came back as `user.%C3%BCn%C3%AF`.
    func testXattrNamesWithSpecialBytesComeBackAsTheyWere() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["tagged.txt": "tagged\n"])
        let file = RawFileSystem.bytes(source + "/tagged.txt")
        let names = ["user.ünï", "user.a=b%c d", "user.%41", "user.plain"]
        for (index, name) in names.enumerated() {
            guard RawFileSystem.setXattr(file, name: name, value: Array("value \(index)".utf8)) == 0 else {
                throw XCTSkip("the file system of \(work) refuses user xattrs")
            }
        }
        for compression in ["zstd", "gzip"] {
            let dest = path("dest-\(compression)")
            try backup([source], dest: dest, options: ["--compression", compression])
            let target = path("restored-\(compression)")
            assertExit(try run(["restore", "latest", "--dest", dest, "--target", target]), 0)
            let restored = RawFileSystem.bytes(target + source + "/tagged.txt")
            for (index, name) in names.enumerated() {
                XCTAssertEqual(RawFileSystem.getXattr(restored, name: name), Array("value \(index)".utf8), "\(compression): \(name)")
            }
            XCTAssertNil(RawFileSystem.getXattr(restored, name: "user.%C3%BCn%C3%AF"), "\(compression): the encoded name")
        }
    }

    /// Half a second before 1970 is tv_sec -1, tv_nsec 500000000, written "mtime=-0.5".
    /// libarchive's reader dropped the sign (the file came back at +0.5 s); Keepsake's own
    /// reader, which reads its archives, keeps it, and so does GNU tar.
    func testATimeJustBeforeTheEpochComesBackWithItsSign() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["edge.txt": "edge\n"])
        let file = RawFileSystem.bytes(source + "/edge.txt")
        try RawFileSystem.setModificationTime(file, seconds: -1, nanoseconds: 500_000_000)
        let dest = path("dest")
        try backup([source], dest: dest)

        let ours = path("ours")
        assertExit(try run(["restore", "latest", "--dest", dest, "--target", ours]), 0)
        let restored = try XCTUnwrap(RawFileSystem.lstat(ours + source + "/edge.txt"))
        XCTAssertEqual([restored.st_mtim.tv_sec, restored.st_mtim.tv_nsec], [-1, 500_000_000])

        let extracted = path("extracted")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(extracted))
        _ = try tool("tar", ["--zstd", "-xpf", try onlyArchive(in: dest), "-C", extracted])
        let byTar = try XCTUnwrap(RawFileSystem.lstat(extracted + source + "/edge.txt"))
        XCTAssertEqual([byTar.st_mtim.tv_sec, byTar.st_mtim.tv_nsec], [-1, 500_000_000])
    }

    /// A sparse file whose name is long and not UTF-8: the name travels in the sparse
    /// format's own record (`GNU.sparse.name`), which GNU tar and libarchive restore under.
    /// libarchive's writer put the shortened ustar name there, so such a file came back from
    /// Keepsake's own restore as damage, and GNU tar named it wrongly.
    func testSparseFileWithALongNameThatIsNotUTF8RestoresEverywhere() throws {
        let source = path("src")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(source))
        let name = Array(String(repeating: "n", count: 110).utf8) + [0xff]
        let file = RawFileSystem.join(RawFileSystem.bytes(source), name)
        try RawFileSystem.writeSparseFile(file, size: 4 << 20, chunks: [(offset: 1 << 20, bytes: Array("island".utf8))])
        guard let info = RawFileSystem.lstat(file), info.st_blocks * 512 < 4 << 20 else {
            return XCTFail("the file system of \(work) did not keep the file sparse: the sparse form would go untested")
        }
        let dest = path("dest")
        try backup([source], dest: dest, options: ["--compression", "none"])

        let ours = path("ours")
        assertExit(try run(["restore", "latest", "--dest", dest, "--target", ours]), 0)
        XCTAssertTrue(try RawFileSystem.filesEqual(file, RawFileSystem.join(RawFileSystem.bytes(ours + source), name)))

        let extracted = path("extracted")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(extracted))
        _ = try tool("tar", ["-xpf", try onlyArchive(in: dest), "-C", extracted])
        XCTAssertTrue(try RawFileSystem.filesEqual(file, RawFileSystem.join(RawFileSystem.bytes(extracted + source), name)),
                      "GNU tar did not extract the sparse file under its own name")
    }

    // MARK: Their tarballs, our restore

    // GNU tar's default (gnu) format stores whole seconds; pax keeps nanoseconds.

    func testRestoresPlainTar() throws {
        try assertRestoresGNUTarball(flags: ["-cf"], name: "plain.tar", nanoseconds: false)
    }

    func testRestoresGzipTarball() throws {
        try assertRestoresGNUTarball(flags: ["-czf"], name: "archive.tar.gz", nanoseconds: false)
    }

    func testRestoresZstdTarball() throws {
        try assertRestoresGNUTarball(flags: ["--zstd", "-cf"], name: "archive.tar.zst", nanoseconds: false)
    }

    func testRestoresXzTarball() throws {
        try assertRestoresGNUTarball(flags: ["-cJf"], name: "archive.tar.xz", nanoseconds: false)
    }

    func testRestoresPaxTarball() throws {
        try assertRestoresGNUTarball(flags: ["--format=pax", "-cf"], name: "pax.tar", nanoseconds: true)
    }

    func testRestoresPaxZstdTarball() throws {
        try assertRestoresGNUTarball(flags: ["--format=pax", "--zstd", "-cf"], name: "pax.tar.zst", nanoseconds: true)
    }

    /// Issue 25 §2.5: the most common way to make a tarball, `tar -czf x.tar.gz -C DIR .`,
    /// writes `./` and `./name` entries. `./` is the target itself: the tarball restores
    /// whole (exit 0), lists, and a chosen path restores, and the target keeps its own mode.
    func testATarballOfDotRestoresIntoTheTargetItself() throws {
        let source = path("src")
        try Fixtures.makeMixedTree(at: source)
        try RawFileSystem.setMode(RawFileSystem.bytes(source), 0o700)
        let tarball = path("dot.tar.gz")
        try toolSucceeds("tar", ["-czf", tarball, "-C", source, "."])
        let entries = try toolSucceeds("tar", ["-tzf", tarball]).stdoutText.split(separator: "\n")
        XCTAssertEqual(entries.first, "./", "GNU tar writes the folder itself first")

        let target = path("target")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(target), mode: 0o755)
        let restore = try run(["restore", tarball, "--target", target])
        assertExit(restore, 0)
        XCTAssertFalse(restore.combinedText.contains("unsafe"), "\(restore)")
        XCTAssertFalse(restore.combinedText.contains("damaged"), "\(restore)")
        try assertTreesEqual(expected: source, actual: target, options: {
            var options = TreeComparison.Options()
            options.nanoseconds = false
            options.ignoreRootMode = true
            return options
        }())
        XCTAssertEqual(try XCTUnwrap(RawFileSystem.lstat(target)).st_mode & 0o7777, 0o755, "the target keeps its own mode")

        let listing = try run(["list", tarball])
        assertExit(listing, 0)
        XCTAssertTrue(listing.stdoutText.contains("./readme.txt") || listing.stdoutText.contains("readme.txt"), "\(listing)")
        let one = try run(["restore", tarball, "./readme.txt", "--target", path("one")])
        assertExit(one, 0)
        XCTAssertTrue(try RawFileSystem.filesEqual(RawFileSystem.bytes(source + "/readme.txt"),
                                                   RawFileSystem.bytes(path("one") + "/readme.txt")), "\(one)")
    }

    // MARK: Helpers

    /// Makes a tarball of a mixed tree with GNU tar, lists it with keepsake, restores it
    /// with no destination at all, and compares.
    private func assertRestoresGNUTarball(flags: [String], name: String, nanoseconds: Bool,
                                          file: StaticString = #filePath, line: UInt = #line) throws {
        let source = path("src")
        try Fixtures.makeMixedTree(at: source)
        let tarball = path(name)
        try toolSucceeds("tar", flags + [tarball, "-C", work, "src"], file: file, line: line)
        let noDestination: [String: String?] = ["KEEPSAKE_DEST": path("no-such-destination")]

        let listing = try run(["list", tarball], environment: noDestination)
        assertExit(listing, 0, file: file, line: line)
        let listed = Set(listing.stdoutText.split(separator: "\n").map(String.init))
        for expected in ["src", "src/readme.txt", "src/docs/report final.txt", "src/docs/사진_백업.txt", "src/docs/latest",
                         "src/empty", "src/data-copy.bin"] {
            XCTAssertTrue(listed.contains(expected) || listed.contains(expected + "/"),
                          "list \(name) does not show \(expected):\n\(listing)", file: file, line: line)
        }
        XCTAssertTrue(listing.stderrText.lowercased().contains("no keepsake manifest")
                      || listing.stderrText.lowercased().contains("no manifest"),
                      "list does not say the tarball has no manifest:\n\(listing)", file: file, line: line)

        let target = path("target")
        let restore = try run(["restore", tarball, "--target", target], environment: noDestination)
        assertExit(restore, 0, file: file, line: line)
        XCTAssertTrue(restore.combinedText.lowercased().contains("no manifest"),
                      "restore does not say there is no manifest to verify against:\n\(restore)", file: file, line: line)
        var options = TreeComparison.Options()
        options.nanoseconds = nanoseconds
        try assertTreesEqual(expected: source, actual: target + "/src", options: options, file: file, line: line)
        XCTAssertFalse(RawFileSystem.exists(path("no-such-destination")), "restoring a file must not create a destination",
                       file: file, line: line)

        let json = try self.json(try run(["restore", tarball, "--target", path("target-json"), "--json"],
                                         environment: noDestination), file: file, line: line)
        XCTAssertEqual(json["plain_tarball"] as? Bool, true, file: file, line: line)
        XCTAssertEqual(json["verified"] as? Bool, false, file: file, line: line)
    }
}
