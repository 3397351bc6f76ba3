import Foundation
import XCTest

/// An archive copied out of its destination restores and lists on its own, checked
/// against the manifest inside it (or the copy beside it).
final class LoneArchiveTests: EndToEndTestCase {
    // MARK: Tests

    func testLoneArchiveRestoresWithoutDestinationVerifiedByInnerManifest() throws {
        let (source, id, archive) = try makeBackup()
        let lone = path("elsewhere")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(lone))
        let copy = lone + "/" + (archive as NSString).lastPathComponent
        try FileManager.default.copyItem(atPath: archive, toPath: copy)
        XCTAssertEqual(try names(in: lone).count, 1, "only the archive, no manifest beside it")

        let target = path("target")
        let restore = try run(["restore", copy, "--target", target, "--json"], environment: noDestination)
        assertExit(restore, 0)
        let object = try json(restore)
        XCTAssertEqual(object["backup_id"] as? String, id, "the id comes from the manifest inside the archive")
        XCTAssertEqual(object["verified"] as? Bool, true, "files must be verified against the inner manifest:\n\(restore)")
        XCTAssertEqual(object["plain_tarball"] as? Bool, false)
        XCTAssertEqual(object["unverified_files"] as? Int, 0)
        try assertTreesEqual(expected: source, actual: restored(source, into: target))
        XCTAssertFalse(RawFileSystem.exists(path("no-destination")), "a file restore must not create a destination")
        XCTAssertFalse(RawFileSystem.exists(path("no-xdg")), "a file restore must not touch the default destination")

        let text = try run(["restore", copy, "--target", path("target-text")], environment: noDestination)
        assertExit(text, 0)
        XCTAssertTrue(text.stdoutText.contains("SHA-256"), "the summary should say every file was checked:\n\(text)")
    }

    func testLoneArchiveWithSidecarManifest() throws {
        let (source, id, archive) = try makeBackup()
        let lone = path("usb")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(lone))
        let sidecar = archive.replacingOccurrences(of: ".tar.zst", with: ".manifest.jsonl.zst")
        XCTAssertTrue(RawFileSystem.exists(sidecar), "no manifest beside the archive at \(sidecar)")
        for file in [archive, sidecar] {
            try FileManager.default.copyItem(atPath: file, toPath: lone + "/" + (file as NSString).lastPathComponent)
        }
        let copy = lone + "/" + (archive as NSString).lastPathComponent
        let target = path("target")
        let restore = try run(["restore", copy, "--target", target, "--json"], environment: noDestination)
        assertExit(restore, 0)
        let object = try json(restore)
        XCTAssertEqual(object["backup_id"] as? String, id)
        XCTAssertEqual(object["verified"] as? Bool, true)
        try assertTreesEqual(expected: source, actual: restored(source, into: target))
    }

    func testListAndVerifyLoneArchive() throws {
        let (source, _, archive) = try makeBackup()
        let lone = path("elsewhere")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(lone))
        let copy = lone + "/copy.tar.zst"
        try FileManager.default.copyItem(atPath: archive, toPath: copy)

        let listed = Set(try listedPaths(copy, dest: nil).map(RawFileSystem.display))
        let prefix = String(source.dropFirst())
        for relative in ["", "/readme.txt", "/docs/report final.txt", "/docs/사진_백업.txt", "/empty", "/data-copy.bin"] {
            XCTAssertTrue(listed.contains(prefix + relative), "list FILE misses \(prefix + relative): \(listed.sorted())")
        }
        XCTAssertFalse(listed.contains { $0.hasPrefix(".keepsake") }, "Keepsake's own entries are not user files")

        let verify = try run(["verify", copy], environment: noDestination)
        assertExit(verify, 0)
    }

    /// A lone incremental archive without its parent's archive beside it is not damaged:
    /// the files it holds itself are restored, and the one it needs is named by file name,
    /// with the count of the files that live there (exit 3). With the parent beside it, the
    /// same restore is whole. A full backup's archive needs nothing else.
    func testLoneIncrementalWithoutItsParentNamesTheArchiveItNeeds() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["changed.txt": "first\n", "same/one.txt": "one\n", "same/two.txt": "two\n"])
        let dest = path("dest")
        let parent = try backup([source], dest: dest)
        try Fixtures.makeTree(at: source, files: ["changed.txt": "second\n"])
        let child = try backup([source], dest: dest)
        let parentArchive = try XCTUnwrap(try names(in: dest).first { $0.contains(parent) && $0.hasSuffix(".tar.zst") })
        let childArchive = try XCTUnwrap(try names(in: dest).first { $0.contains(child) && $0.hasSuffix(".tar.zst") })
        let lone = path("usb")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(lone))
        try FileManager.default.copyItem(atPath: dest + "/" + childArchive, toPath: lone + "/" + childArchive)
        let stem = String(parentArchive.dropLast(".tar.zst".count))

        let target = path("target")
        let outcome = try run(["restore", lone + "/" + childArchive, "--target", target], environment: noDestination)
        assertExit(outcome, 3, "a missing parent is a file to bring, not damage")
        XCTAssertTrue(outcome.stderrText.contains("needs \(stem)'s archive (\(parentArchive)) next to this file"), "\(outcome)")
        XCTAssertTrue(outcome.stderrText.contains("2 files of this backup live in it"), "the count of what is missing:\n\(outcome)")
        XCTAssertFalse(outcome.combinedText.lowercased().contains("damaged"), "the archive is fine:\n\(outcome)")
        XCTAssertTrue(outcome.stdoutText.contains("Missing:"), "\(outcome)")
        let root = restored(source, into: target)
        XCTAssertEqual(try String(contentsOfFile: root + "/changed.txt", encoding: .utf8), "second\n", "its own files are restored")
        XCTAssertFalse(RawFileSystem.exists(root + "/same/one.txt"), "the parent's files are not there to restore")

        let object = try json(try run(["restore", lone + "/" + childArchive, "--target", path("target-json"), "--json"],
                                      environment: noDestination))
        XCTAssertEqual(object["exit_code"] as? Int, 3)
        XCTAssertTrue((object["damaged"] as? [Any] ?? [0]).isEmpty, "\(object)")
        XCTAssertNil(object["archive_problem"] as? String, "\(object)")
        let missing = object["missing_archives"] as? [[String: Any]] ?? []
        XCTAssertEqual(missing.count, 1, "\(object)")
        XCTAssertEqual(missing.first?["backup_id"] as? String, parent)
        XCTAssertEqual(missing.first?["file"] as? String, parentArchive)
        XCTAssertEqual((missing.first?["paths"] as? [String])?.count, 2)

        // The parent's archive brought beside it: whole.
        try FileManager.default.copyItem(atPath: dest + "/" + parentArchive, toPath: lone + "/" + parentArchive)
        let whole = try run(["restore", lone + "/" + childArchive, "--target", path("target-whole")], environment: noDestination)
        assertExit(whole, 0)
        try assertTreesEqual(expected: source, actual: restored(source, into: path("target-whole")))

        // In a destination, a parent archive that is gone is damage there (exit 4).
        try FileManager.default.removeItem(atPath: dest + "/" + parentArchive)
        let broken = try run(["restore", child, "--dest", dest, "--target", path("target-dest")])
        assertExit(broken, 4)
        XCTAssertTrue(broken.stderrText.contains("is missing from the destination"), "\(broken)")
    }

    // MARK: Helpers

    /// Environment with a destination that does not exist.
    private var noDestination: [String: String?] {
        ["KEEPSAKE_DEST": path("no-destination"), "XDG_DATA_HOME": path("no-xdg")]
    }

    /// A mixed tree backed up with zstd: (source, id, archive path).
    private func makeBackup() throws -> (String, String, String) {
        let source = path("src")
        try Fixtures.makeMixedTree(at: source)
        let dest = path("dest")
        let id = try backup([source], dest: dest)
        return (source, id, try onlyArchive(in: dest))
    }
}
