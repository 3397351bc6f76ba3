import Foundation
@testable import KeepsakeModel
@testable import KeepsakeStorage
import KeepsakeSupport
import XCTest

@testable import BackupCore

/// `ManifestDiff`: entries compared by path, hash and metadata, on hand-made entries and on
/// the manifests of real backups.
final class ManifestDiffTests: KeepsakeTestCase {
    // MARK: Helpers

    private let hashA = String(repeating: "a", count: 64)
    private let hashB = String(repeating: "b", count: 64)

    private func file(_ path: String, size: Int64 = 10, sha: String? = nil, mode: UInt32 = 0o644,
                      mtime: Int64 = 1_000, uid: UInt32 = 1000) -> ManifestEntry {
        ManifestEntry(path: PathBytes.from(path), type: .file, size: size, mode: mode, uid: uid, gid: uid,
                      mtimeNanoseconds: mtime, sha256: sha ?? hashA)
    }

    private func row(_ diff: ManifestDiff, _ path: String, file: StaticString = #filePath, line: UInt = #line) -> ManifestDiff.Row? {
        let found = diff.rows.first { $0.path == PathBytes.from(path) }
        XCTAssertNotNil(found, "no row for \(path) in \(diff.rows.map(\.displayPath))", file: file, line: line)
        return found
    }

    // MARK: Categories

    func testAddedRemovedAndUnchanged() {
        let diff = ManifestDiff(before: [file("same"), file("gone", size: 3)], after: [file("same"), file("new", size: 7)])
        XCTAssertEqual(diff.rows.map(\.displayPath), ["gone", "new"])
        XCTAssertEqual(row(diff, "gone")?.status, .removed)
        XCTAssertEqual(row(diff, "gone")?.sizeBefore, 3)
        XCTAssertNil(row(diff, "gone")?.sizeAfter)
        XCTAssertEqual(row(diff, "new")?.status, .added)
        XCTAssertNil(row(diff, "new")?.sizeBefore)
        XCTAssertEqual(row(diff, "new")?.sizeAfter, 7)
        XCTAssertEqual(diff.count(.added), 1)
        XCTAssertEqual(diff.count(.removed), 1)
        XCTAssertEqual(diff.count(.modified), 0)
        XCTAssertEqual(diff.count(.metadata), 0)
    }

    func testContentChanges() {
        let diff = ManifestDiff(
            before: [file("grew", size: 10, sha: hashA), file("rewritten", size: 10, sha: hashA)],
            after: [file("grew", size: 20, sha: hashB, mtime: 2_000), file("rewritten", size: 10, sha: hashB)])
        XCTAssertEqual(row(diff, "grew")?.status, .modified)
        XCTAssertEqual(row(diff, "grew")?.changes, [.size, .content, .mtime])
        XCTAssertEqual(row(diff, "rewritten")?.status, .modified, "same size, other hash: content changed")
        XCTAssertEqual(row(diff, "rewritten")?.changes, [.content])
    }

    func testTypeChangeIsModified() {
        let folder = ManifestEntry(path: PathBytes.from("thing"), type: .directory, mode: 0o755)
        let link = ManifestEntry(path: PathBytes.from("other"), type: .symlink, linkTarget: PathBytes.from("x"))
        let fifo = ManifestEntry(path: PathBytes.from("other"), type: .fifo)
        let diff = ManifestDiff(before: [file("thing"), link], after: [folder, fifo])
        XCTAssertEqual(row(diff, "thing")?.status, .modified)
        XCTAssertEqual(row(diff, "thing")?.changes, [.type])
        XCTAssertEqual(row(diff, "thing")?.sizeAfter, nil, "a folder has no content size")
        XCTAssertEqual(row(diff, "other")?.changes, [.type])
    }

    func testMetadataOnlyChangesSayWhich() {
        let oldLink = ManifestEntry(path: PathBytes.from("link"), type: .symlink, mode: 0o777, linkTarget: PathBytes.from("a"))
        var newLink = oldLink
        newLink.linkTarget = PathBytes.from("b")
        let diff = ManifestDiff(
            before: [file("chmod"), file("chown"), file("touch"), oldLink],
            after: [file("chmod", mode: 0o600), file("chown", uid: 0), file("touch", mtime: 5_000), newLink])
        XCTAssertEqual(diff.rows.map(\.status), [.metadata, .metadata, .metadata, .metadata])
        XCTAssertEqual(row(diff, "chmod")?.changes, [.mode])
        XCTAssertEqual(row(diff, "chown")?.changes, [.owner])
        XCTAssertEqual(row(diff, "touch")?.changes, [.mtime])
        XCTAssertEqual(row(diff, "link")?.changes, [.target])
    }

    func testDeviceNumberIsContent() {
        let before = ManifestEntry(path: PathBytes.from("dev/x"), type: .characterDevice, rdev: 1)
        var after = before
        after.rdev = 2
        XCTAssertEqual(ManifestDiff(before: [before], after: [after]).rows.first?.changes, [.device])
        XCTAssertEqual(ManifestDiff(before: [before], after: [after]).rows.first?.status, .modified)
    }

    func testStatusChangeTimeInodeAndDeviceAreIgnored() {
        var moved = file("f")
        moved.ctimeNanoseconds = 99
        moved.inode = 12345
        moved.device = 7
        moved.userName = "someone-else"
        XCTAssertTrue(ManifestDiff(before: [file("f")], after: [moved]).isEmpty)
    }

    // MARK: Where content is stored

    func testStoredInIsNotAChange() throws {
        let holder = try XCTUnwrap(BackupID("20240101T000000Z-0000abcd"))
        var incremental = file("kept")
        incremental.storedIn = holder
        var touched = file("touched", mtime: 7_000)
        touched.storedIn = holder
        var rewritten = file("rewritten")
        rewritten.storedIn = holder
        let diff = ManifestDiff(before: [file("kept"), file("touched"), file("rewritten", sha: hashB)],
                                after: [incremental, touched, rewritten])
        XCTAssertEqual(diff.rows.map(\.displayPath), ["rewritten", "touched"], "'kept' differs only in where it is stored")
        XCTAssertEqual(row(diff, "touched")?.status, .metadata)
        XCTAssertEqual(row(diff, "rewritten")?.status, .modified)
        XCTAssertEqual(row(diff, "rewritten")?.changes, [.content])
    }

    // MARK: Hard links

    func testHardLinks() {
        func hardlink(_ path: String, to target: String, sha: String? = nil) -> ManifestEntry {
            ManifestEntry(path: PathBytes.from(path), type: .hardlink, size: 10, mode: 0o644, uid: 1000, gid: 1000,
                          mtimeNanoseconds: 1_000, linkTarget: PathBytes.from(target), sha256: sha ?? hashA)
        }
        let diff = ManifestDiff(
            before: [file("a"), hardlink("b", to: "a"), file("c"), hardlink("d", to: "a"), hardlink("e", to: "a"),
                     hardlink("f", to: "a")],
            after: [file("a"), hardlink("b", to: "a"), hardlink("c", to: "a"), file("d"), hardlink("e", to: "c"),
                    hardlink("f", to: "a", sha: hashB)])
        XCTAssertNil(diff.rows.first { $0.displayPath == "a" || $0.displayPath == "b" }, "unchanged links: no row")
        XCTAssertEqual(row(diff, "c")?.status, .metadata, "a file that became a further name of the same content")
        XCTAssertEqual(row(diff, "c")?.changes, [.hardlink])
        XCTAssertEqual(row(diff, "d")?.changes, [.hardlink])
        XCTAssertEqual(row(diff, "e")?.status, .metadata)
        XCTAssertEqual(row(diff, "e")?.changes, [.hardlink])
        XCTAssertEqual(row(diff, "f")?.status, .modified, "a hard link's content is compared like a file's")
        XCTAssertEqual(row(diff, "f")?.changes, [.content])
        XCTAssertEqual(row(diff, "f")?.sizeBefore, 10)
    }

    // MARK: Paths

    func testNonUTF8PathsAreMatchedByBytes() {
        let first = Array("dir/bad".utf8) + [0xff] + Array(".txt".utf8)
        let second = Array("dir/bad".utf8) + [0xfe] + Array(".txt".utf8)
        func entry(_ path: [UInt8], sha: String) -> ManifestEntry {
            ManifestEntry(path: path, type: .file, size: 1, mtimeNanoseconds: 1, sha256: sha)
        }
        let diff = ManifestDiff(before: [entry(first, sha: hashA), entry(second, sha: hashA)],
                                after: [entry(first, sha: hashB), entry(second, sha: hashA)])
        XCTAssertEqual(diff.rows.count, 1)
        XCTAssertEqual(diff.rows.first?.path, first)
        XCTAssertEqual(diff.rows.first?.status, .modified)
        XCTAssertEqual(diff.rows.first?.displayPath, "dir/bad\\xff.txt")
    }

    func testRowsAreSortedByPathBytes() {
        let paths = ["z", "a/b", "a.txt", "a", "ä", "B"]
        let diff = ManifestDiff(before: [], after: paths.map { file($0) })
        XCTAssertEqual(diff.rows.map(\.displayPath), ["B", "a", "a.txt", "a/b", "z", "ä"])
    }

    func testLaterDuplicateWins() {
        let diff = ManifestDiff(before: [file("x", sha: hashB), file("x", sha: hashA)], after: [file("x", sha: hashA)])
        XCTAssertTrue(diff.isEmpty)
    }

    // MARK: Without hashes

    func testWithoutHashesSizeAndTimeDecide() {
        func bare(_ path: String, size: Int64, mtime: Int64) -> ManifestEntry {
            ManifestEntry(path: PathBytes.from(path), type: .file, size: size, mtimeNanoseconds: mtime)
        }
        // "grew" has a hash only in the newer backup: still no pair of hashes to compare.
        let diff = ManifestDiff(before: [bare("same", size: 5, mtime: 1), bare("touched", size: 5, mtime: 1), bare("grew", size: 5, mtime: 1)],
                                after: [bare("same", size: 5, mtime: 1), bare("touched", size: 5, mtime: 2), file("grew", size: 6, mtime: 1, uid: 0)])
        XCTAssertEqual(diff.rows.map(\.displayPath), ["grew", "touched"])
        XCTAssertEqual(row(diff, "touched")?.status, .modified, "without a hash a new time may mean new content")
        XCTAssertEqual(row(diff, "touched")?.changes, [.content, .mtime])
        XCTAssertEqual(row(diff, "grew")?.changes, [.size])
    }

    // MARK: Renames

    func testRenamedFilesPointAtEachOther() {
        var empty = file("empty-old", size: 0)
        empty.sha256 = String(repeating: "e", count: 64)
        var emptyNew = empty
        emptyNew.path = PathBytes.from("empty-new")
        let diff = ManifestDiff(before: [file("old/name", sha: hashA), empty, file("lost", sha: hashB)],
                                after: [file("new/name", sha: hashA), emptyNew])
        XCTAssertEqual(row(diff, "new/name")?.sameContentAs, PathBytes.from("old/name"))
        XCTAssertEqual(row(diff, "old/name")?.sameContentAs, PathBytes.from("new/name"))
        XCTAssertNil(row(diff, "lost")?.sameContentAs)
        XCTAssertNil(row(diff, "empty-new")?.sameContentAs, "empty files all look alike")
    }

    // MARK: Scale

    // test-tag(plain-only): 200,000 entries: the code of the other ManifestDiffTests, at a size
    func testLargeManifestsCompareInLinearTime() {
        let count = 200_000
        var before: [ManifestEntry] = []
        var after: [ManifestEntry] = []
        before.reserveCapacity(count)
        after.reserveCapacity(count)
        for index in 0..<count {
            let entry = ManifestEntry(path: PathBytes.from("home/u/files/\(index).txt"), type: .file, size: Int64(index),
                                      mtimeNanoseconds: 1, sha256: hashA)
            before.append(entry)
            var changed = entry
            if index % 1000 == 0 { changed.mode = 0o600 }
            after.append(changed)
        }
        // In reverse order, so nothing lines up by position: every entry is found by its path.
        // No timed assertion (speed lives in Scripts/bench); a quadratic diff would make 4·10¹⁰
        // comparisons here and never finish within CI's hour.
        after.reverse()
        let diff = ManifestDiff(before: before, after: after)
        XCTAssertEqual(diff.count(.metadata), count / 1000)
        XCTAssertEqual(diff.rows.count, count / 1000)
    }

    // MARK: Real backups

    func testManifestsOfRealBackups() throws {
        let root = try makeTemporaryDirectory("diff")
        defer { removeTemporaryDirectory(root) }
        let source = root + "/src"
        let storage = LocalFolderBackend(path: root + "/dest")
        try writeFile(source + "/keep.txt", "unchanged\n")
        try writeFile(source + "/edit.txt", "before\n")
        try writeFile(source + "/gone.txt", "deleted later\n")
        try writeFile(source + "/mode.txt", "chmod me\n")
        try writeFile(source + "/old-name.txt", "renamed later\n")
        try writeFile(source + "/sub/deep.txt", "deep\n")
        XCTAssertEqual(symlink("keep.txt", source + "/link"), 0)
        XCTAssertEqual(link(source + "/keep.txt", source + "/sub/hard.txt"), 0)

        func backup(_ seconds: Double) throws -> Manifest {
            let engine = BackupEngine(storage: storage, events: nil, cancellation: CancellationFlag())
            let result = try engine.run(BackupRequest(sources: [source], scan: try noExcludes(), toolVersion: "test",
                                                      now: fixedDate(seconds: seconds)))
            let catalog = BackupCatalog(storage: storage)
            return try catalog.manifest(of: try catalog.resolve(result.summary.id.rawValue))
        }
        let first = try backup(0)
        let again = try backup(10)
        XCTAssertTrue(ManifestDiff(from: first, to: again).isEmpty,
                      "an unchanged tree backed up twice (full or incremental) has no differences: "
                      + "\(ManifestDiff(from: first, to: again).rows.map(\.displayPath))")

        // Same size, new content; a deletion; a chmod; a rename; a new file; a new symlink target.
        try writeFile(source + "/edit.txt", "after!\n")
        XCTAssertEqual(unlink(source + "/gone.txt"), 0)
        XCTAssertEqual(chmod(source + "/mode.txt", 0o600), 0)
        XCTAssertEqual(rename(source + "/old-name.txt", source + "/sub/new-name.txt"), 0)
        try writeFile(source + "/added.txt", "brand new\n")
        XCTAssertEqual(unlink(source + "/link"), 0)
        XCTAssertEqual(symlink("sub/deep.txt", source + "/link"), 0)
        let second = try backup(20)

        let diff = ManifestDiff(from: again, to: second)
        let base = String(source.dropFirst())
        func status(_ relative: String) -> ManifestDiff.Status? {
            diff.rows.first { $0.displayPath == base + "/" + relative }?.status
        }
        XCTAssertEqual(status("added.txt"), .added)
        XCTAssertEqual(status("sub/new-name.txt"), .added)
        XCTAssertEqual(status("gone.txt"), .removed)
        XCTAssertEqual(status("old-name.txt"), .removed)
        XCTAssertEqual(status("edit.txt"), .modified)
        XCTAssertEqual(status("mode.txt"), .metadata)
        XCTAssertEqual(status("link"), .metadata)
        XCTAssertNil(status("keep.txt"))
        XCTAssertNil(status("sub/hard.txt"))
        XCTAssertNil(status("sub/deep.txt"))
        let edited = try XCTUnwrap(diff.rows.first { $0.displayPath == base + "/edit.txt" })
        XCTAssertTrue(edited.changes.contains(.content))
        XCTAssertFalse(edited.changes.contains(.size), "same length")
        XCTAssertEqual(diff.rows.first { $0.displayPath == base + "/mode.txt" }?.changes, [.mode])
        XCTAssertTrue(diff.rows.first { $0.displayPath == base + "/link" }?.changes.contains(.target) ?? false)
        XCTAssertEqual(diff.rows.first { $0.displayPath == base + "/sub/new-name.txt" }?.sameContentAs,
                       PathBytes.from(base + "/old-name.txt"))
        for row in diff.rows where row.before?.type == .directory {
            XCTAssertEqual(row.status, .metadata, "folders change only in time: \(row.displayPath)")
        }
    }
}
